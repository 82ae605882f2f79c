// Lab 05 tests: bad shapes and configurations cuDNN cannot run are rejected with a course::Error
// that names the problem -- not a crash, not a raw CUDNN_STATUS_BAD_PARAM, not a wrong answer.
#include <string>

#include "lab05_test_support.hpp"

using course::Shape;
using course::Tensor;
using lab05::ConvParams;
using lab05::PoolParams;

namespace {

void conv_rejects(const std::string& what, const Shape& x, const Shape& w, const ConvParams& p, const std::string& part) {
  grader::check_rejects("conv2d_output_shape: " + what, [&] { lab05_harness::conv2d_output_shape(x, w, p); }, part);
  // Through the forward call too (the harness asks the student's output-shape function first).
  Tensor out(Shape{1});
  grader::check_rejects("conv2d_forward: " + what,
                        [&] { lab05_harness::conv2d_forward(Tensor(x, 1.0f), Tensor(w, 1.0f), Tensor(), p, out); }, part);
}

}  // namespace

TEST_CASE("rejects: convolution shapes and parameters") {
  conv_rejects("3-D input", {1, 28, 28}, {6, 1, 5, 5}, ConvParams::symmetric(2), "input");
  conv_rejects("3-D weight", {1, 1, 28, 28}, {6, 5, 5}, ConvParams::symmetric(2), "weight");
  conv_rejects("channel mismatch", {2, 3, 8, 8}, {4, 2, 3, 3}, ConvParams::symmetric(1), "channels");
  conv_rejects("empty batch", {0, 1, 8, 8}, {4, 1, 3, 3}, ConvParams::symmetric(1), "input");
  conv_rejects("negative pad", {1, 1, 8, 8}, {1, 1, 3, 3}, ConvParams::symmetric(-1), "pad");
  conv_rejects("stride 0", {1, 1, 8, 8}, {1, 1, 3, 3}, ConvParams::symmetric(1, 0), "stride");
  conv_rejects("dilation 0", {1, 1, 8, 8}, {1, 1, 3, 3}, ConvParams::symmetric(1, 1, 0), "dilation");
  conv_rejects("kernel larger than the padded input", {1, 1, 4, 4}, {1, 1, 7, 7}, ConvParams::symmetric(1), "output");
  conv_rejects("dilated kernel larger than the input", {1, 1, 8, 8}, {1, 1, 3, 3}, ConvParams::symmetric(0, 1, 5),
               "output");
}

TEST_CASE("rejects: the fused call without a bias") {
  Tensor out = grader::poisoned({1, 2, 6, 6});
  grader::check_rejects("conv_bias_relu with a null bias", [&] {
    lab05_harness::conv_bias_relu_forward(Tensor(Shape{1, 1, 8, 8}, 1.0f), Tensor(Shape{2, 1, 3, 3}, 1.0f), Tensor(),
                                          ConvParams::symmetric(0), out);
  }, "bias");
}

TEST_CASE("rejects: pooling cuDNN cannot run, linear and softmax shapes") {
  const Shape x{1, 2, 8, 8};
  grader::check_rejects("pool kernel 0", [&] { lab05_harness::pool2d_output_shape(x, PoolParams::square(0, 1)); }, "kernel");
  grader::check_rejects("pool stride 0", [&] { lab05_harness::pool2d_output_shape(x, PoolParams::square(2, 0)); }, "stride");
  grader::check_rejects("pool pad larger than half the window",
                        [&] { lab05_harness::pool2d_output_shape(x, PoolParams::square(2, 2, 2)); }, "pad");
  grader::check_rejects("pool window larger than the input",
                        [&] { lab05_harness::pool2d_output_shape(x, PoolParams::square(9, 1)); }, "output");
  grader::check_rejects("pool 3-D input", [&] { lab05_harness::pool2d_output_shape({2, 8, 8}, PoolParams::square(2, 2)); },
                        "input");

  Tensor out = grader::poisoned({2, 4});
  grader::check_rejects("linear feature mismatch", [&] {
    lab05_harness::linear_forward(Tensor(Shape{2, 5}, 1.0f), Tensor(Shape{4, 6}, 1.0f), Tensor(Shape{4}, 0.0f), false, out);
  }, "features");
  grader::check_rejects("linear 3-D input", [&] {
    lab05_harness::linear_forward(Tensor(Shape{2, 5, 1}, 1.0f), Tensor(Shape{4, 5}, 1.0f), Tensor(Shape{4}, 0.0f), false, out);
  }, "input");
  grader::check_rejects("linear without bias", [&] {
    lab05_harness::linear_forward(Tensor(Shape{2, 5}, 1.0f), Tensor(Shape{4, 5}, 1.0f), Tensor(), false, out);
  }, "bias");
  Tensor probabilities(Shape{10});
  grader::check_rejects("softmax of 1-D logits",
                        [&] { lab05_harness::softmax_forward(Tensor(Shape{10}, 0.0f), probabilities); }, "logits");
  Tensor relu_out(Shape{2, 3, 4});
  grader::check_rejects("relu of a 3-D tensor",
                        [&] { lab05_harness::relu_forward(Tensor(Shape{2, 3, 4}, 0.0f), false, relu_out); }, "shape");
}

TEST_CASE("rejects: CudnnLeNet with wrong parameter shapes, no capacity, or a batch over capacity") {
  const lab04::FoldedLeNet good = lab05_tests::mnist_model().folded;
  const Tensor images(Shape{8, 1, 28, 28}, 0.5f);
  Tensor logits(Shape{8, 10});
  grader::check_rejects("max_batch 0", [&] { lab05_harness::lenet_forward_batched(good, images, 0, 8, true, logits); },
                        "max_batch");
  grader::check_rejects("8 images into a network built for 4",
                        [&] { lab05_harness::lenet_forward_batched(good, images, 4, 8, true, logits); }, "batch");

  lab04::FoldedLeNet bad = good;
  bad.conv2_weight = Tensor(Shape{16, 5, 5, 5}, 0.1f);
  grader::check_rejects("conv2 weight [16,5,5,5]", [&] { lab05_harness::lenet_forward(bad, images, logits); },
                        "conv2_weight");
  bad = good;
  bad.fc1_bias = Tensor(Shape{84}, 0.0f);
  grader::check_rejects("fc1 bias [84]", [&] { lab05_harness::lenet_forward(bad, images, logits); }, "fc1_bias");
  bad = good;
  bad.fc3_weight = Tensor(Shape{10, 120}, 0.0f);
  grader::check_rejects("fc3 weight [10,120]", [&] { lab05_harness::lenet_forward(bad, images, logits); }, "fc3_weight");
}
