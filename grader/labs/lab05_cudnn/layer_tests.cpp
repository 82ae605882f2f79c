// Lab 05 tests: every cuDNN / cuBLAS layer against the golden CPU references of labs 02-04, on
// the lecture's worked examples first and then on random shapes with padding, stride and dilation.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "lab05_test_support.hpp"

using course::Shape;
using course::Tensor;
using lab05::ConvParams;
using lab05::PoolParams;

namespace {

ConvParams conv_params(int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h, int dilation_w) {
  ConvParams p;
  p.pad_h = pad_h;
  p.pad_w = pad_w;
  p.stride_h = stride_h;
  p.stride_w = stride_w;
  p.dilation_h = dilation_h;
  p.dilation_w = dilation_w;
  return p;
}

std::string describe(const Shape& x, const Shape& w, const ConvParams& p) {
  return "x " + course::shape_to_string(x) + " w " + course::shape_to_string(w) + " pad " + std::to_string(p.pad_h) +
         "," + std::to_string(p.pad_w) + " stride " + std::to_string(p.stride_h) + "," + std::to_string(p.stride_w) +
         " dilation " + std::to_string(p.dilation_h) + "," + std::to_string(p.dilation_w);
}

struct ConvCase {
  Shape x, w;
  ConvParams p;
};

// Small to larger; every parameter away from its default somewhere, asymmetric H/W included.
const std::vector<ConvCase> kConvCases = {
    {{1, 1, 5, 5}, {1, 1, 3, 3}, ConvParams::symmetric(0)},
    {{2, 3, 8, 8}, {4, 3, 3, 3}, ConvParams::symmetric(1)},
    {{1, 1, 28, 28}, {6, 1, 5, 5}, ConvParams::symmetric(2)},         // LeNet conv1
    {{3, 6, 14, 14}, {16, 6, 5, 5}, ConvParams::symmetric(0)},        // LeNet conv2
    {{2, 3, 11, 9}, {5, 3, 3, 3}, ConvParams::symmetric(1, 2)},       // stride 2, odd sizes
    {{1, 2, 12, 12}, {3, 2, 3, 3}, ConvParams::symmetric(2, 1, 2)},   // dilation 2
    {{2, 4, 13, 10}, {3, 4, 3, 2}, conv_params(2, 1, 2, 3, 2, 1)},    // everything different per axis
    {{4, 8, 16, 16}, {12, 8, 1, 1}, ConvParams::symmetric(0)},        // 1x1
    {{1, 3, 7, 7}, {2, 3, 7, 7}, ConvParams::symmetric(3, 2, 1)},     // kernel as large as the image
};

}  // namespace

TEST_CASE("shapes: the lecture's output-shape examples") {
  CHECK(lab05_harness::conv2d_output_shape({1, 1, 28, 28}, {6, 1, 5, 5}, ConvParams::symmetric(2)) == Shape{1, 6, 28, 28});
  CHECK(lab05_harness::conv2d_output_shape({64, 6, 14, 14}, {16, 6, 5, 5}, ConvParams::symmetric(0)) ==
        Shape{64, 16, 10, 10});
  // (10 + 2*1 - (2*(3-1)+1)) / 2 + 1 = 7/2 + 1 = 4
  CHECK(lab05_harness::conv2d_output_shape({1, 3, 10, 10}, {4, 3, 3, 3}, ConvParams::symmetric(1, 2, 2)) ==
        Shape{1, 4, 4, 4});
  CHECK(lab05_harness::pool2d_output_shape({2, 6, 28, 28}, PoolParams::square(2, 2)) == Shape{2, 6, 14, 14});
  CHECK(lab05_harness::pool2d_output_shape({1, 1, 7, 7}, PoolParams::square(3, 2, 1)) == Shape{1, 1, 4, 4});
}

TEST_CASE("linear: the lecture's 2x3 example (Y^T = W X^T in column-major)") {
  const Tensor x(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor w(Shape{2, 3}, {1, 0, -1, 2, 1, 0});
  const Tensor b(Shape{2}, {0.5f, -1.0f});
  Tensor y = grader::poisoned({2, 2});
  lab05_harness::linear_forward(x, w, b, false, y);
  grader::check_tensor("linear 2x3 example", y, Tensor(Shape{2, 2}, {-1.5f, 3.0f, -1.5f, 12.0f}), lab05_tests::kExact);
  lab05_harness::linear_forward(x, w, b, true, y);
  grader::check_tensor("linear 2x3 example with ReLU", y, Tensor(Shape{2, 2}, {0.0f, 3.0f, 0.0f, 12.0f}),
                       lab05_tests::kExact);
}

TEST_CASE("conv2d: random shapes with padding, stride and dilation, with bias") {
  course::Rng rng = grader::case_rng("conv2d: random shapes");
  for (const ConvCase& c : kConvCases) {
    const Tensor x = rng.tensor(c.x), w = rng.tensor(c.w), b = rng.tensor({c.w[0]});
    const Tensor expected = golden::lab02_conv2d(x, w, b, lab05_tests::to_lab02(c.p));
    Tensor out = grader::poisoned(expected.shape());
    lab05_harness::conv2d_forward(x, w, b, c.p, out);
    grader::check_tensor("conv2d " + describe(c.x, c.w, c.p), out, expected, lab05_tests::kConvTolerance);
  }
}

TEST_CASE("conv2d: without bias (a null bias pointer)") {
  course::Rng rng = grader::case_rng("conv2d: without bias");
  const ConvCase c{{2, 3, 9, 9}, {4, 3, 3, 3}, ConvParams::symmetric(1, 2)};
  const Tensor x = rng.tensor(c.x), w = rng.tensor(c.w);
  const Tensor expected = golden::lab02_conv2d(x, w, Tensor(Shape{4}, 0.0f), lab05_tests::to_lab02(c.p));
  Tensor out = grader::poisoned(expected.shape());
  lab05_harness::conv2d_forward(x, w, Tensor(), c.p, out);
  grader::check_tensor("conv2d without bias " + describe(c.x, c.w, c.p), out, expected, lab05_tests::kConvTolerance);
}

TEST_CASE("conv_bias_relu: one fused call equals relu(conv + bias)") {
  course::Rng rng = grader::case_rng("conv_bias_relu: fused");
  for (const ConvCase& c : kConvCases) {
    const Tensor x = rng.tensor(c.x), w = rng.tensor(c.w), b = rng.tensor({c.w[0]});
    const Tensor expected = golden::relu(golden::lab02_conv2d(x, w, b, lab05_tests::to_lab02(c.p)));
    Tensor out = grader::poisoned(expected.shape());
    lab05_harness::conv_bias_relu_forward(x, w, b, c.p, out);
    grader::check_tensor("conv_bias_relu " + describe(c.x, c.w, c.p), out, expected, lab05_tests::kConvTolerance);
  }
}

TEST_CASE("relu: 4-D and 2-D, out of place and in place") {
  course::Rng rng = grader::case_rng("relu");
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{7, 84}}) {
    const Tensor x = rng.tensor(shape);
    for (bool in_place : {false, true}) {
      Tensor out = grader::poisoned(shape);
      lab05_harness::relu_forward(x, in_place, out);
      grader::check_tensor(std::string("relu ") + (in_place ? "in place " : "") + course::shape_to_string(shape), out,
                           golden::relu(x), lab05_tests::kExact);
    }
  }
}

TEST_CASE("max_pool2d: LeNet's 2x2 windows, overlapping windows and padding") {
  course::Rng rng = grader::case_rng("max_pool2d");
  const std::vector<std::pair<Shape, PoolParams>> cases = {
      {{1, 1, 4, 4}, PoolParams::square(2, 2)},     {{3, 6, 28, 28}, PoolParams::square(2, 2)},
      {{2, 16, 10, 10}, PoolParams::square(2, 2)},  {{2, 3, 9, 7}, PoolParams::square(3, 2)},
      {{1, 2, 7, 7}, PoolParams::square(3, 2, 1)},  {{2, 2, 6, 9}, PoolParams::square(3, 1, 1)},
  };
  for (const auto& [shape, p] : cases) {
    // All negative: a padded position that counted as 0 would win and show.
    const Tensor x = rng.tensor(shape, -5.0f, -0.5f);
    const Tensor expected = golden::max_pool2d(x, lab05_tests::to_golden(p));
    Tensor out = grader::poisoned(expected.shape());
    lab05_harness::max_pool2d(x, p, out);
    grader::check_tensor("max_pool2d " + course::shape_to_string(shape) + " kernel " + std::to_string(p.kernel_h) +
                             " stride " + std::to_string(p.stride_h) + " pad " + std::to_string(p.pad_h),
                         out, expected, lab05_tests::kExact);
  }
}

TEST_CASE("linear: random shapes (LeNet's three layers and odd sizes), with and without ReLU") {
  course::Rng rng = grader::case_rng("linear: random");
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1, 3}, {2, 3}}, {{5, 400}, {120, 400}}, {{7, 120}, {84, 120}}, {{64, 84}, {10, 84}}, {{3, 17}, {5, 17}}};
  for (const auto& [xs, ws] : cases) {
    const Tensor x = rng.tensor(xs), w = rng.tensor(ws), b = rng.tensor({ws[0]});
    const Tensor plain = golden::lab04_linear(x, w, b);
    for (bool relu : {false, true}) {
      Tensor out = grader::poisoned(plain.shape());
      lab05_harness::linear_forward(x, w, b, relu, out);
      grader::check_tensor("linear x " + course::shape_to_string(xs) + " w " + course::shape_to_string(ws) +
                               (relu ? " + ReLU" : ""),
                           out, relu ? golden::relu(plain) : plain, lab05_tests::kLinearTolerance);
    }
  }
}

TEST_CASE("softmax: rows of probabilities, also for logits far from 0") {
  course::Rng rng = grader::case_rng("softmax");
  Tensor logits = rng.tensor({5, 10}, -10.0f, 10.0f);
  for (std::size_t k = 0; k < 10; ++k) logits[10 + k] += 1000.0f;  // row 1: exp would overflow without the max
  Tensor probabilities = grader::poisoned(logits.shape());
  lab05_harness::softmax_forward(logits, probabilities);
  grader::check_tensor("softmax", probabilities, golden::softmax(logits), {1e-6, 1e-5});
}
