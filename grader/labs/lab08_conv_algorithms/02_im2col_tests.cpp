// Lab 08 tests, part 2: im2col against the golden column matrix. im2col only copies values (and
// writes zeros for the padding), so the comparison is exact.
#include <algorithm>
#include <string>
#include <vector>

#include "lab08_test_support.hpp"

using course::Shape;
using course::Tensor;

namespace {

void check_im2col_case(const std::string& what, const Tensor& x, int R, int S, int pad, int stride) {
  const Tensor expected = golden::lab08_im2col(x, R, S, pad, stride);
  Tensor out = grader::poisoned(expected.shape());
  lab08_harness::im2col(x, R, S, pad, stride, out);
  grader::check_tensor(what + " (x " + lab08_tests::shape_text(x) + ", " + std::to_string(R) + "x" + std::to_string(S) +
                           " kernel, pad " + std::to_string(pad) + ", stride " + std::to_string(stride) + ")",
                       out, expected, lab08_tests::kExact);
}

// The worked example: the 3x3 image 1..9, a 3x3 kernel, pad 1, stride 1: 9 windows (columns,
// (p, q) row by row), 9 taps each (rows, (r, s) row by row). Row (r, s) holds x[p-1+r][q-1+s]
// for every window, 0 in the padding: row (1, 1), the centre tap, is the image itself.
const std::vector<float> kColumns = {
    0, 0, 0, 0, 1, 2, 0, 4, 5,  // (r, s) = (0, 0): up-left of each pixel
    0, 0, 0, 1, 2, 3, 4, 5, 6,  // (0, 1): up
    0, 0, 0, 2, 3, 0, 5, 6, 0,  // (0, 2): up-right
    0, 1, 2, 0, 4, 5, 0, 7, 8,  // (1, 0): left
    1, 2, 3, 4, 5, 6, 7, 8, 9,  // (1, 1): the pixel itself
    2, 3, 0, 5, 6, 0, 8, 9, 0,  // (1, 2): right
    0, 4, 5, 0, 7, 8, 0, 0, 0,  // (2, 0): down-left
    4, 5, 6, 7, 8, 9, 0, 0, 0,  // (2, 1): down
    5, 6, 0, 8, 9, 0, 0, 0, 0,  // (2, 2): down-right
};

}  // namespace

TEST_CASE("im2col: the worked example -- a 1x1x3x3 image, 3x3 kernel, pad 1, written out by hand") {
  const Tensor x(Shape{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor out = grader::poisoned({9, 9});
  lab08_harness::im2col(x, 3, 3, 1, 1, out);
  grader::check_tensor("pad 1, stride 1", out, Tensor(Shape{9, 9}, kColumns), lab08_tests::kExact);

  // Stride 2: P = Q = 2, the windows centred on pixels (0,0), (0,2), (2,0), (2,2): columns 0, 2,
  // 6 and 8 of the matrix above.
  std::vector<float> strided;
  for (int row = 0; row < 9; ++row)
    for (int col : {0, 2, 6, 8}) strided.push_back(kColumns[static_cast<std::size_t>(row * 9 + col)]);
  Tensor out2 = grader::poisoned({9, 4});
  lab08_harness::im2col(x, 3, 3, 1, 2, out2);
  grader::check_tensor("pad 1, stride 2", out2, Tensor(Shape{9, 4}, strided), lab08_tests::kExact);

  // No padding: one window, the whole image as one column.
  Tensor out3 = grader::poisoned({9, 1});
  lab08_harness::im2col(x, 3, 3, 0, 1, out3);
  grader::check_tensor("pad 0", out3, Tensor(Shape{9, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), lab08_tests::kExact);
}

TEST_CASE("im2col: two images and two channels -- rows by channel, columns by image") {
  course::Rng rng = grader::case_rng("im2col: layout");
  check_im2col_case("2 images, 2 channels", rng.tensor({2, 2, 4, 5}), 3, 3, 1, 1);
  check_im2col_case("non-square kernel", rng.tensor({2, 3, 6, 5}), 2, 3, 1, 1);
}

TEST_CASE("im2col: random shapes, kernels, paddings and strides (odd sizes, C = 1, 3, 33)") {
  course::Rng rng = grader::case_rng("im2col: random");
  const int sizes[] = {1, 2, 3, 7, 13, 17};
  const int channels[] = {1, 3, 33};
  for (int i = 0; i < 40; ++i) {
    const int r = rng.integer(1, 5), s = rng.integer(1, 5), pad = rng.integer(0, 2), stride = rng.integer(1, 3);
    int h = sizes[rng.integer(0, 5)], w = sizes[rng.integer(0, 5)];
    h = std::max(h, r - 2 * pad);  // the kernel must fit the padded input
    w = std::max(w, s - 2 * pad);
    check_im2col_case("random case " + std::to_string(i), rng.tensor({rng.integer(1, 3), channels[i % 3], h, w}), r, s,
                      pad, stride);
  }
}

TEST_CASE("im2col: edge cases -- 1x1 kernel, kernel = padded input, padding wider than the kernel") {
  course::Rng rng = grader::case_rng("im2col: edges");
  check_im2col_case("1x1 kernel, pad 0", rng.tensor({2, 3, 5, 4}), 1, 1, 0, 1);
  check_im2col_case("1x1 kernel, stride 2", rng.tensor({2, 3, 5, 4}), 1, 1, 0, 2);
  check_im2col_case("kernel = padded input", rng.tensor({1, 2, 3, 4}), 5, 6, 1, 1);
  check_im2col_case("pad 3 > what a 3x3 kernel needs", rng.tensor({1, 2, 4, 4}), 3, 3, 3, 1);
  check_im2col_case("1x1 image", rng.tensor({3, 2, 1, 1}), 3, 3, 1, 1);
}

TEST_CASE("im2col: a large batch -- 4 x 16 x 28 x 28, 3x3, pad 1, stride 1 and 2") {
  course::Rng rng = grader::case_rng("im2col: large");
  for (int stride : {1, 2}) check_im2col_case("large", rng.tensor({4, 16, 28, 28}), 3, 3, 1, stride);
}
