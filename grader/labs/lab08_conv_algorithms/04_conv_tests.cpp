// Lab 08 tests, part 4: conv2d_im2col_gemm against the golden direct convolution
// (golden::lab04_conv2d, double accumulation, never a column matrix): a worked example, random
// shapes with padding and stride, MobileNetV2's convolutions (the 3x3 stem and the 1x1 expand,
// project and head layers), and a batch large enough for the reference's 128x128 tiles. The
// workspace is exactly what the student's conv2d_im2col_gemm_workspace asks for, filled with NaN
// and followed by a guard zone.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "course/mobilenet.hpp"
#include "lab08_test_support.hpp"

using course::Shape;
using course::Tensor;

namespace {

std::uint64_t check_conv_case(const std::string& what, const Tensor& x, const Tensor& w, const Tensor& b, int pad,
                              int stride) {
  const Tensor expected = golden::lab04_conv2d(x, w, b, pad, stride);
  Tensor out = grader::poisoned(expected.shape());
  std::uint64_t workspace = 0;
  lab08_harness::conv2d_im2col_gemm(x, w, b, pad, stride, out, workspace);
  grader::check_tensor(what + " (x " + lab08_tests::shape_text(x) + ", w " + lab08_tests::shape_text(w) + ", pad " +
                           std::to_string(pad) + ", stride " + std::to_string(stride) + ", workspace " +
                           std::to_string(workspace) + " bytes)",
                       out, expected, lab08_tests::gemm_tolerance(w.dim(1) * w.dim(2) * w.dim(3)));
  return workspace;
}

std::uint64_t check_random_conv(const std::string& what, course::Rng& rng, int n, int c, int h, int w, int k, int r,
                                int s, int pad, int stride) {
  return check_conv_case(what, rng.tensor({n, c, h, w}), rng.tensor({k, c, r, s}), rng.tensor({k}), pad, stride);
}

}  // namespace

TEST_CASE("conv2d_im2col_gemm: the worked example -- the depthwise example's image and filter as a dense convolution") {
  // One input and one output channel: a dense 3x3 convolution is then the depthwise one, so the
  // numbers are the hand-computed ones of 01_depthwise_tests.cpp, plus the bias 0.5.
  const Tensor x(Shape{1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  const Tensor w(Shape{1, 1, 3, 3}, {0, 0, 0, 0, 1, 2, 0, 10, 0});
  const Tensor b(Shape{1}, {0.5f});
  std::vector<float> by_hand = {55, 68, 81, 84, 107, 120, 133, 128, 159, 172, 185, 172, 41, 44, 47, 16};
  for (float& v : by_hand) v += 0.5f;
  Tensor out = grader::poisoned({1, 1, 4, 4});
  std::uint64_t workspace = 0;
  lab08_harness::conv2d_im2col_gemm(x, w, b, 1, 1, out, workspace);
  grader::check_tensor("pad 1, stride 1", out, Tensor(Shape{1, 1, 4, 4}, by_hand), lab08_tests::kExact);
  Tensor strided = grader::poisoned({1, 1, 2, 2});
  lab08_harness::conv2d_im2col_gemm(x, w, b, 1, 2, strided, workspace);
  grader::check_tensor("pad 1, stride 2", strided, Tensor(Shape{1, 1, 2, 2}, {55.5f, 81.5f, 159.5f, 185.5f}),
                       lab08_tests::kExact);
}

TEST_CASE("conv2d_im2col_gemm: several images and filters -- the output is NCHW, image by image") {
  course::Rng rng = grader::case_rng("conv2d_im2col_gemm: layout");
  check_random_conv("3 images, 5 filters", rng, 3, 2, 6, 7, 5, 3, 3, 1, 1);
  check_random_conv("3 images, 5 filters, stride 2", rng, 3, 2, 7, 6, 5, 3, 3, 1, 2);
}

TEST_CASE("conv2d_im2col_gemm: random shapes, kernels, paddings and strides") {
  course::Rng rng = grader::case_rng("conv2d_im2col_gemm: random");
  const int sizes[] = {1, 2, 3, 7, 13, 17};
  const int channels[] = {1, 3, 33};
  for (int i = 0; i < 30; ++i) {
    const int r = rng.integer(1, 5), s = rng.integer(1, 5), pad = rng.integer(0, 2), stride = rng.integer(1, 3);
    const int h = std::max(sizes[rng.integer(0, 5)], r - 2 * pad), w = std::max(sizes[rng.integer(0, 5)], s - 2 * pad);
    check_random_conv("random case " + std::to_string(i), rng, rng.integer(1, 3), channels[i % 3], h, w,
                      rng.integer(1, 70), r, s, pad, stride);
  }
}

TEST_CASE("conv2d_im2col_gemm: 1x1 convolutions -- pointwise (pad 0, stride 1), strided, padded") {
  course::Rng rng = grader::case_rng("conv2d_im2col_gemm: 1x1");
  check_random_conv("pointwise", rng, 3, 16, 14, 14, 96, 1, 1, 0, 1);
  check_random_conv("pointwise, odd sizes", rng, 2, 33, 7, 13, 65, 1, 1, 0, 1);
  check_random_conv("pointwise, one pixel", rng, 5, 7, 1, 1, 3, 1, 1, 0, 1);
  check_random_conv("1x1, stride 2", rng, 2, 8, 9, 9, 12, 1, 1, 0, 2);
  check_random_conv("1x1, pad 1", rng, 2, 8, 5, 5, 12, 1, 1, 1, 1);
}

TEST_CASE("conv2d_im2col_gemm: MobileNetV2's dense convolutions (course/mobilenet.hpp), batch 2") {
  namespace mn = course::mobilenet;
  course::Rng rng = grader::case_rng("conv2d_im2col_gemm: MobileNetV2");
  check_random_conv("stem 3x3", rng, 2, mn::kInputChannels, mn::kInputSize, mn::kInputSize, mn::kStemChannels, 3, 3, 1,
                    1);
  for (const auto& block : mn::blocks()) {
    if (block.expand())
      check_random_conv("expand 1x1", rng, 2, block.in_channels, block.size, block.size, block.hidden, 1, 1, 0, 1);
    const int out = block.out_size();
    check_random_conv("project 1x1", rng, 2, block.hidden, out, out, block.out_channels, 1, 1, 0, 1);
  }
  const auto& last = mn::blocks().back();
  check_random_conv("head 1x1", rng, 2, last.out_channels, last.out_size(), last.out_size(), mn::kHeadChannels, 1, 1,
                    0, 1);
}

TEST_CASE("conv2d_im2col_gemm: a large batch -- 16 x 8 x 32 x 32 -> 130 filters, 3x3, pad 1") {
  // 2 x 8 tiles of 128x128 per image, 256 in all: the reference's large tiles, with 2 rows of
  // filters in the last tile.
  course::Rng rng = grader::case_rng("conv2d_im2col_gemm: large");
  check_random_conv("large", rng, 16, 8, 32, 32, 130, 3, 3, 1, 1);
}

TEST_CASE("conv2d_im2col_gemm: under the sanitizers -- 33 images on the 128x128 tiles") {
  // 130 filters x 16*16 pixels: 2 x 2 tiles of 128x128 per image, 132 in all (the reference's
  // threshold for its large tiles); C*R*S = 27: 4 K slices, the last one partial.
  course::Rng rng = grader::case_rng("conv2d_im2col_gemm: sanitizers");
  check_random_conv("33 images", rng, 33, 3, 16, 16, 130, 3, 3, 1, 1);
}
