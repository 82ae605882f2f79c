// Shared pieces of lab 04's tests: random batch-norm parameters, one "case" per layer operation
// (used by the random tests AND by the instructor's hidden cases, so both run the same checks),
// and cached data sets / weights for the whole-network tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "course/compare.hpp"
#include "course/idx.hpp"
#include "course/lenet.hpp"
#include "course/rng.hpp"
#include "course/safetensors.hpp"
#include "course/tensor.hpp"
#include "lab04_reference.hpp"
#include "labs/lab04_lenet_cpu.hpp"
#include "sweep.hpp"
#include "testkit.hpp"

namespace lab04_tests {
namespace {

// Student code computes in float, the golden reference in double. Batch-norm and folding are a
// handful of float operations per element (error ~1e-7 relative); a linear layer sums up to a
// few hundred products. A wrong index, a missing term or a wrong eps is off by far more.
const course::Tolerance kLayerTolerance{1e-5, 1e-5};
const course::Tolerance kLinearTolerance{1e-4, 1e-4};

/// The statistics and affine parameters of one batch-norm layer with C channels.
struct BatchNormParams {
  course::Tensor gamma, beta, mean, var;
};

/// Values like those of a trained network, far from the identity (gamma != 1, mean != 0, ...)
/// so that any forgotten term shows. Variances go down to 1e-3, where eps matters.
inline BatchNormParams random_batchnorm(course::Rng& rng, std::int64_t channels) {
  const course::Shape shape{channels};
  BatchNormParams bn{rng.tensor(shape, 0.5f, 2.0f), rng.tensor(shape, -1.0f, 1.0f), rng.tensor(shape, -1.0f, 1.0f),
                     rng.tensor(shape, 0.001f, 3.0f)};
  return bn;
}

inline std::string dims(std::initializer_list<std::pair<const char*, std::int64_t>> named) {
  std::ostringstream out;
  for (const auto& [name, value] : named) out << name << "=" << value << " ";
  return out.str();
}

/// batchnorm_inference on a random [n,c,h,w] input vs the golden reference.
inline bool check_batchnorm_case(const std::string& what, std::int64_t n, std::int64_t c, std::int64_t h,
                                 std::int64_t w, double eps, course::Rng& rng) {
  const course::Tensor x = rng.tensor({n, c, h, w}, -3.0f, 3.0f);
  const BatchNormParams bn = random_batchnorm(rng, c);
  const course::Tensor expected = golden::lab04_batchnorm(x, bn.gamma, bn.beta, bn.mean, bn.var, eps);
  course::Tensor actual = grader::poisoned(x.shape());
  lab04::batchnorm_inference(x, bn.gamma, bn.beta, bn.mean, bn.var, eps, actual);
  return grader::check_tensor(what + " (" + dims({{"n", n}, {"c", c}, {"h", h}, {"w", w}}) + "eps=" +
                                  std::to_string(eps) + ")",
                              actual, expected, kLayerTolerance);
}

/// One folding problem: a conv [out, c, kernel, kernel] (pad, stride, with or without bias)
/// followed by batch-norm, applied to an input [n, c, h, w].
struct FoldCase {
  std::int64_t n = 1, c = 1, h = 1, w = 1, out = 1, kernel = 1;
  int pad = 0, stride = 1;
  double eps = 1e-5;
  bool bias = true;

  std::string describe() const {
    return dims({{"n", n}, {"c", c}, {"h", h}, {"w", w}, {"out", out}, {"kernel", kernel}, {"pad", pad},
                 {"stride", stride}}) +
           "eps=" + std::to_string(eps) + (bias ? " with bias" : " without bias");
  }
};

/// Folds with the student's fold_batchnorm and checks (1) the folded parameters against the
/// golden folding, (2) that the folded convolution reproduces conv -> batch-norm on a random
/// input (relative L2 error < 1e-5), both convolutions computed by the golden reference.
inline bool check_fold_case(const std::string& what, const FoldCase& fc, course::Rng& rng) {
  const course::Tensor x = rng.tensor({fc.n, fc.c, fc.h, fc.w});
  const course::Tensor weight = rng.tensor({fc.out, fc.c, fc.kernel, fc.kernel});
  const course::Tensor bias = fc.bias ? rng.tensor({fc.out}) : course::Tensor();
  const BatchNormParams bn = random_batchnorm(rng, fc.out);

  course::Tensor folded_weight = grader::poisoned(weight.shape());
  course::Tensor folded_bias = grader::poisoned({fc.out});
  lab04::fold_batchnorm(weight, bias, bn.gamma, bn.beta, bn.mean, bn.var, fc.eps, folded_weight, folded_bias);

  const golden::Lab04FoldedConv expected =
      golden::lab04_fold_batchnorm(weight, bias, bn.gamma, bn.beta, bn.mean, bn.var, fc.eps);
  const std::string label = what + " (" + fc.describe() + ")";
  bool ok = grader::check_tensor(label + ": folded_weight", folded_weight, expected.weight, kLayerTolerance);
  ok = grader::check_tensor(label + ": folded_bias", folded_bias, expected.bias, kLayerTolerance) && ok;
  if (!ok) return false;

  const course::Tensor unfolded = golden::lab04_batchnorm(golden::lab04_conv2d(x, weight, bias, fc.pad, fc.stride),
                                                          bn.gamma, bn.beta, bn.mean, bn.var, fc.eps);
  const course::Tensor folded = golden::lab04_conv2d(x, folded_weight, folded_bias, fc.pad, fc.stride);
  const double rel = course::relative_l2_error(folded.data(), unfolded.data(), unfolded.numel());
  CHECK_MESSAGE(rel < 1e-5, label << ": conv with the folded parameters differs from conv -> batch-norm, "
                                  << "relative L2 error " << rel << " (seed " << grader::seed() << ")");
  return rel < 1e-5;
}

/// linear_forward on a random [n, in] input with weight [out, in] vs the golden reference.
inline bool check_linear_case(const std::string& what, std::int64_t n, std::int64_t in, std::int64_t out,
                              course::Rng& rng) {
  const course::Tensor x = rng.tensor({n, in});
  const course::Tensor weight = rng.tensor({out, in});
  const course::Tensor bias = rng.tensor({out});
  course::Tensor actual = grader::poisoned({n, out});
  lab04::linear_forward(x, weight, bias, actual);
  return grader::check_tensor(what + " (" + dims({{"n", n}, {"in", in}, {"out", out}}) + ")", actual,
                              golden::lab04_linear(x, weight, bias), kLinearTolerance);
}

// ---------------------------------------------------------------------------------------------
// Whole-network data: loaded once per process (the loading, not the inference, is cached).
// ---------------------------------------------------------------------------------------------

/// A trained network with its test split and PyTorch's logits for the first 100 test images.
struct Model {
  course::lenet::Weights weights;
  course::Dataset test;
  course::Tensor pytorch_logits;  // [100, 10]
  std::int64_t recorded_correct = -1;
};

inline std::int64_t metadata_int(const course::lenet::Weights& w, const std::string& key) {
  const auto it = w.metadata.find(key);
  REQUIRE_MESSAGE(it != w.metadata.end(), "weights metadata has no '" << key << "'");
  return std::stoll(it->second);
}

inline const Model& mnist_model() {
  static const Model model = [] {
    Model m;
    const std::string dir = std::string(COURSE_DATA_DIR) + "/weights/";
    m.weights = course::lenet::load_weights(dir + "lenet_mnist.safetensors");
    const course::DatasetFiles files = course::mnist_files(COURSE_DATA_DIR);
    m.test = course::load_dataset(files.test_images, files.test_labels, "mnist");
    m.pytorch_logits = course::read_safetensors(dir + "lenet_mnist_fixture.safetensors").tensors.at("logits");
    m.recorded_correct = metadata_int(m.weights, "test_correct");
    return m;
  }();
  return model;
}

inline const Model& fashion_model() {
  static const Model model = [] {
    Model m;
    const std::string dir = std::string(COURSE_DATA_DIR) + "/weights/";
    m.weights = course::lenet::load_weights(dir + "lenet_fashion_mnist.safetensors");
    const course::DatasetFiles files = course::fashion_mnist_files();
    m.test = course::load_dataset(files.test_images, files.test_labels, "fashion-mnist");
    m.pytorch_logits = course::read_safetensors(dir + "lenet_fashion_mnist_fixture.safetensors").tensors.at("logits");
    m.recorded_correct = metadata_int(m.weights, "test_correct");
    return m;
  }();
  return model;
}

using grader::image_slice;

}  // namespace
}  // namespace lab04_tests
