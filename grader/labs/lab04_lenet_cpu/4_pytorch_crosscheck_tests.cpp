// Lab 04 tests: the student's layers against values computed by PyTorch
// (grader/fixtures/lab04_layers.safetensors, written by data/tools/fixtures_lab04.py). The
// whole-network cross-check against PyTorch's logits is in 6_lenet_tests.cpp; the golden reference's
// own check against these fixtures is in grader/reference/tests/.
#include <cstdlib>
#include <string>

#include "course/safetensors.hpp"
#include "lab04_test_support.hpp"

using course::Tensor;

namespace {

constexpr const char* kFixtureFile = "lab04_layers.safetensors";

const Tensor& fx(const std::string& name) { return grader::fixture_tensor(kFixtureFile, name); }

double fixture_eps() { return std::strtod(grader::fixture_file(kFixtureFile).metadata.at("bn_eps").c_str(), nullptr); }

}  // namespace

TEST_CASE("pytorch: batch-norm in eval mode (nn.BatchNorm2d, eps 1e-3)") {
  const Tensor x = fx("bn_input");
  const Tensor expected = fx("bn_output");
  Tensor actual = grader::poisoned(x.shape());
  lab04::batchnorm_inference(x, fx("bn_gamma"), fx("bn_beta"), fx("bn_mean"), fx("bn_var"), fixture_eps(), actual);
  grader::check_tensor("student batch-norm vs PyTorch", actual, expected, lab04_tests::kLayerTolerance);
}

TEST_CASE("pytorch: folding (torch.nn.utils.fusion.fuse_conv_bn_weights) and conv -> batch-norm") {
  const Tensor w = fx("conv_weight");
  const Tensor b = fx("conv_bias");
  const double eps = fixture_eps();
  const Tensor x = fx("conv_input");
  Tensor folded_w = grader::poisoned(w.shape()), folded_b = grader::poisoned(b.shape());
  lab04::fold_batchnorm(w, b, fx("fold_gamma"), fx("fold_beta"), fx("fold_mean"), fx("fold_var"), eps, folded_w, folded_b);
  grader::check_tensor("student folded weight vs PyTorch", folded_w, fx("fold_weight"), lab04_tests::kLayerTolerance);
  grader::check_tensor("student folded bias vs PyTorch", folded_b, fx("fold_bias"), lab04_tests::kLayerTolerance);
  grader::check_tensor("conv with the student's folded parameters vs PyTorch's conv -> batch-norm",
                       golden::lab04_conv2d(x, folded_w, folded_b, 1, 1), fx("conv_bn_output"), {1e-4, 1e-4});
}

TEST_CASE("pytorch: linear layer (F.linear)") {
  const Tensor x = fx("linear_input");
  const Tensor expected = fx("linear_output");
  Tensor actual = grader::poisoned(expected.shape());
  lab04::linear_forward(x, fx("linear_weight"), fx("linear_bias"), actual);
  grader::check_tensor("student linear vs PyTorch", actual, expected, lab04_tests::kLinearTolerance);
}
