// Lab 06 tests, part 2: conv2d_forward, one thread per output element, against the golden CPU
// convolution (double accumulation): the lecture's example, LeNet's two layers, random shapes with
// padding and with output counts that are not multiples of the block size, and N = 1.
#include <string>

#include "lab06_test_support.hpp"

using course::Shape;
using course::Tensor;

namespace {

void check_conv_case(const std::string& what, const Tensor& x, const Tensor& w, const Tensor& b, int pad) {
  const Tensor expected = golden::lab04_conv2d(x, w, b, pad, 1);
  Tensor out = grader::poisoned(expected.shape());
  lab06_harness::conv2d_forward(x, w, b, pad, out);
  grader::check_tensor(what + " (x " + course::shape_to_string(x.shape()) + ", w " + course::shape_to_string(w.shape()) +
                           ", pad " + std::to_string(pad) + ")",
                       out, expected, lab06_tests::kSumTolerance);
}

void check_random_conv(const std::string& what, course::Rng& rng, int n, int c, int h, int w, int k, int r, int s,
                       int pad) {
  check_conv_case(what, rng.tensor({n, c, h, w}), rng.tensor({k, c, r, s}), rng.tensor({k}), pad);
}

}  // namespace

TEST_CASE("conv2d_forward: the lecture's 3x3 image and 2x2 filter, without and with padding") {
  const Tensor x(Shape{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w(Shape{1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor b(Shape{1}, {1.0f});
  Tensor out = grader::poisoned({1, 1, 2, 2});
  lab06_harness::conv2d_forward(x, w, b, 0, out);
  grader::check_tensor("pad 0", out, Tensor(Shape{1, 1, 2, 2}, {38, 48, 68, 78}), lab06_tests::kExact);

  // pad 1: a 4x4 output. Corner (0,0) sees only x[0][0] = 1, under the filter's last tap (4).
  Tensor padded = grader::poisoned({1, 1, 4, 4});
  lab06_harness::conv2d_forward(x, w, b, 1, padded);
  CHECK(padded[0] == 5.0f);
  grader::check_tensor("pad 1", padded, golden::lab04_conv2d(x, w, b, 1, 1), lab06_tests::kExact);
}

TEST_CASE("conv2d_forward: LeNet's conv1 (pad 2) and conv2, N = 1 and N = 3") {
  course::Rng rng = grader::case_rng("conv2d_forward: LeNet");
  for (int n : {1, 3}) {
    check_random_conv("conv1", rng, n, 1, 28, 28, 6, 5, 5, 2);
    check_random_conv("conv2", rng, n, 6, 14, 14, 16, 5, 5, 0);
  }
}

TEST_CASE("conv2d_forward: random shapes and padding, outputs not a multiple of the block size") {
  course::Rng rng = grader::case_rng("conv2d_forward: random");
  // 1 x 3 x 9 x 9 = 243 outputs: one block, partly idle. 2 x 5 x 7 x 11 = 770: four blocks, the
  // last one almost empty.
  check_random_conv("243 outputs", rng, 1, 2, 11, 11, 3, 3, 3, 0);
  check_random_conv("770 outputs", rng, 2, 3, 9, 13, 5, 3, 3, 0);
  for (int i = 0; i < 20; ++i) {
    const int r = rng.integer(1, 5), s = rng.integer(1, 5), pad = rng.integer(0, 3);
    // Any input at least as large as the kernel minus the padding on both sides.
    const int h = rng.integer(std::max(1, r - 2 * pad), 16), w = rng.integer(std::max(1, s - 2 * pad), 16);
    check_random_conv("random conv case " + std::to_string(i), rng, rng.integer(1, 3), rng.integer(1, 4), h, w,
                      rng.integer(1, 6), r, s, pad);
  }
}

TEST_CASE("conv2d_forward: edge shapes -- 1x1 image and kernel, kernel as large as the padded input") {
  course::Rng rng = grader::case_rng("conv2d_forward: edges");
  check_random_conv("1x1 everything", rng, 1, 1, 1, 1, 1, 1, 1, 0);
  check_random_conv("kernel = padded input (1x1 output)", rng, 2, 3, 3, 4, 2, 5, 6, 1);
  check_random_conv("padding larger than the kernel needs", rng, 1, 2, 4, 4, 3, 3, 3, 3);
  check_random_conv("non-square kernel", rng, 2, 2, 8, 10, 4, 2, 5, 1);
}
