// Lab 08 tests, part 5 (part B of the lab): Winograd F(2x2, 3x3). First the chapter's worked
// example (lectures/08-conv-algorithms.md section 5; lectures/tools/winograd_example.py prints
// every number) through each of the four stages and the whole convolution, exactly; then each
// stage on its own against its golden transform in double
// (grader/reference/conv_algorithms_reference.hpp), on random data with odd sizes and channel
// counts that are multiples of nothing; then the convolution against the golden DIRECT
// convolution (golden::lab04_conv2d), with the error bound of lab08_test_support.hpp.
#include <string>
#include <vector>

#include "lab08_test_support.hpp"

using course::Shape;
using course::Tensor;

namespace {

// ---- the chapter's worked example: a 4x4 input tile d and a 3x3 filter g ---------------------
const std::vector<float> kTileD = {1, 2, 0, 1, 0, 1, 3, 2, 2, 1, 0, 1, 1, 0, 2, 3};
const std::vector<float> kFilterG = {1, 0, -1, 2, 1, 0, 0, 1, 1};
// U = G g G^T, V = B^T d B, M = U (.) V and Y = A^T M A as the chapter prints them, row by row
// (position xi = 4*i + j). Every value is a multiple of 1/4: exact in float, and so is every sum
// the GPU makes of them.
const std::vector<float> kChapterU = {1, 0, 0, -1, 1.5f, 1.25f, 0.25f, 0, -0.5f, -0.25f, -0.25f, 0, 0, 1, 0, 1};
const std::vector<float> kChapterV = {-1, 1, -1, 1, -1, 5, 1, -1, 5, -3, -3, 1, -2, 2, 0, 2};
const std::vector<float> kChapterM = {-1, 0, 0, -1, -1.5f, 6.25f, 0.25f, 0, -2.5f, 0.75f, 0.75f, 0, 0, 2, 0, 2};
const std::vector<float> kChapterY = {3, 7, 4, 6};

// The worked example inside a convolution with pad 1: a 5x5 image whose rows and columns 1..4
// hold d (row 0 and column 0 are zeros). Its tiles are 3 x 3 (tiles_h = tiles_w = (5 + 1) / 2);
// tile (1, 1), t = 4, has the patch rows 2*1 - 1 = 1 .. 4 and columns 1 .. 4: exactly d. Its
// outputs, rows and columns 2..3, are the chapter's Y.
Tensor worked_image() {
  Tensor x(Shape{1, 1, 5, 5}, 0.0f);
  for (int r = 0; r < 4; ++r)
    for (int s = 0; s < 4; ++s) x.at(0, 0, r + 1, s + 1) = kTileD[static_cast<std::size_t>(4 * r + s)];
  return x;
}

/// Column t of a [16, 1, T] tensor: the 16 positions of tile t.
Tensor tile_column(const Tensor& v, std::int64_t t) {
  Tensor out(Shape{16});
  for (std::int64_t xi = 0; xi < 16; ++xi)
    out[static_cast<std::size_t>(xi)] = v[static_cast<std::size_t>(xi * v.dim(2) + t)];
  return out;
}

std::int64_t tiles_of(std::int64_t n, std::int64_t h, std::int64_t w) { return n * ((h + 1) / 2) * ((w + 1) / 2); }

std::string nchw_text(int n, int c, int h, int w) {
  return std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

// ---- one stage or the whole convolution on random data ---------------------------------------

void check_filter_case(course::Rng& rng, int K, int C) {
  const Tensor w = rng.tensor({K, C, 3, 3});
  Tensor u = grader::poisoned({16, K, C});
  lab08_harness::winograd_filter_transform(w, u);
  grader::check_tensor("winograd_filter_transform (K " + std::to_string(K) + ", C " + std::to_string(C) + ")", u,
                       golden::lab08_winograd_filter_transform(w), lab08_tests::kWinogradTransformTolerance);
}

void check_input_case(course::Rng& rng, int N, int C, int H, int W) {
  const Tensor x = rng.tensor({N, C, H, W});
  Tensor v = grader::poisoned({16, C, tiles_of(N, H, W)});
  lab08_harness::winograd_input_transform(x, v);
  grader::check_tensor("winograd_input_transform (x " + nchw_text(N, C, H, W) + ", T " +
                           std::to_string(tiles_of(N, H, W)) + ")",
                       v, golden::lab08_winograd_input_transform(x), lab08_tests::kWinogradTransformTolerance);
}

void check_multiply_case(course::Rng& rng, int K, int C, int T) {
  const Tensor u = rng.tensor({16, K, C}), v = rng.tensor({16, C, T});
  Tensor m = grader::poisoned({16, K, T});
  lab08_harness::winograd_batched_multiply(u, v, m);
  grader::check_tensor("winograd_batched_multiply (K " + std::to_string(K) + ", C " + std::to_string(C) + ", T " +
                           std::to_string(T) + ")",
                       m, golden::lab08_winograd_batched_multiply(u, v), lab08_tests::gemm_tolerance(C));
}

void check_output_case(course::Rng& rng, int N, int K, int H, int W, bool with_bias) {
  const Tensor m = rng.tensor({16, K, tiles_of(N, H, W)});
  const Tensor bias = with_bias ? rng.tensor({K}) : Tensor();
  Tensor out = grader::poisoned({N, K, H, W});
  lab08_harness::winograd_output_transform(m, bias, N, H, W, out);
  grader::check_tensor("winograd_output_transform (output " + nchw_text(N, K, H, W) +
                           (with_bias ? ", bias" : ", d_bias = nullptr") + ")",
                       out, golden::lab08_winograd_output_transform(m, bias, N, H, W),
                       lab08_tests::kWinogradTransformTolerance);
}

std::uint64_t check_conv_case(const std::string& what, const Tensor& x, const Tensor& w, const Tensor& b) {
  const Tensor expected = golden::lab04_conv2d(x, w, b, 1, 1);
  Tensor out = grader::poisoned(expected.shape());
  std::uint64_t workspace = 0;
  lab08_harness::conv2d_winograd(x, w, b, out, workspace);
  lab08_tests::check_winograd_conv("conv2d_winograd, " + what + " (x " + lab08_tests::shape_text(x) + ", w " +
                                       lab08_tests::shape_text(w) + ", workspace " + std::to_string(workspace) +
                                       " bytes)",
                                   out, expected, golden::lab08_conv3x3_abs_sum(x, w, b));
  return workspace;
}

std::uint64_t check_random_conv(const std::string& what, course::Rng& rng, int N, int C, int H, int W, int K) {
  return check_conv_case(what, rng.tensor({N, C, H, W}), rng.tensor({K, C, 3, 3}), rng.tensor({K}));
}

}  // namespace

// ---- the worked example ------------------------------------------------------------------------

TEST_CASE("winograd: the worked example -- chapter 8's U = G g G^T, V = B^T d B, M and Y, exactly") {
  // Filter transform of g alone (K = C = 1): U [16, 1, 1] is the chapter's U.
  Tensor u = grader::poisoned({16, 1, 1});
  lab08_harness::winograd_filter_transform(Tensor(Shape{1, 1, 3, 3}, kFilterG), u);
  grader::check_tensor("winograd_filter_transform of the chapter's g: U = G g G^T, position xi = 4*i + j", u,
                       Tensor(Shape{16, 1, 1}, kChapterU), lab08_tests::kExact);

  // Input transform of the 5x5 image holding d: tile t = 4 (th = tw = 1, patch rows and columns
  // 2*1 - 1 = 1 .. 4) is d, so its column of V is the chapter's V. (A tile origin of 2*th instead
  // of 2*th - 1 takes rows 2 .. 5 instead and fails here.) The whole V is checked against the
  // golden transform too: all its values are small integers, exact.
  const Tensor x = worked_image();
  Tensor v = grader::poisoned({16, 1, 9});
  lab08_harness::winograd_input_transform(x, v);
  grader::check_tensor("winograd_input_transform of the chapter's d (tile 4 of a 5x5 image, patch rows and columns "
                       "1..4): V = B^T d B",
                       tile_column(v, 4), Tensor(Shape{16}, kChapterV), lab08_tests::kExact);
  grader::check_tensor("winograd_input_transform of the 5x5 image, all 9 tiles", v,
                       golden::lab08_winograd_input_transform(x), lab08_tests::kExact);

  // The element-wise stage with K = C = T = 1: M = U (.) V, the chapter's 16 products.
  Tensor m = grader::poisoned({16, 1, 1});
  lab08_harness::winograd_batched_multiply(Tensor(Shape{16, 1, 1}, kChapterU), Tensor(Shape{16, 1, 1}, kChapterV), m);
  grader::check_tensor("winograd_batched_multiply of the chapter's U and V (K = C = T = 1): M = U (.) V", m,
                       Tensor(Shape{16, 1, 1}, kChapterM), lab08_tests::kExact);

  // Output transform of the chapter's M as the single tile of a 1x1x2x2 output: Y = A^T M A.
  Tensor y = grader::poisoned({1, 1, 2, 2});
  lab08_harness::winograd_output_transform(Tensor(Shape{16, 1, 1}, kChapterM), Tensor(), 1, 2, 2, y);
  grader::check_tensor("winograd_output_transform of the chapter's M (d_bias = nullptr): Y = A^T M A", y,
                       Tensor(Shape{1, 1, 2, 2}, kChapterY), lab08_tests::kExact);
  Tensor yb = grader::poisoned({1, 1, 2, 2});
  lab08_harness::winograd_output_transform(Tensor(Shape{16, 1, 1}, kChapterM), Tensor(Shape{1}, {0.5f}), 1, 2, 2, yb);
  grader::check_tensor("winograd_output_transform of the chapter's M, bias 0.5", yb,
                       Tensor(Shape{1, 1, 2, 2}, {3.5f, 7.5f, 4.5f, 6.5f}), lab08_tests::kExact);
}

TEST_CASE("winograd: the worked example -- conv2d_winograd on the 5x5 image, exactly") {
  // Outputs (2..3, 2..3) are Y + bias; the other 21 are small integers too (every value on the
  // way is a multiple of 1/4), so the whole output must equal the direct convolution exactly.
  const Tensor x = worked_image();
  const Tensor w(Shape{1, 1, 3, 3}, kFilterG);
  const Tensor b(Shape{1}, {0.5f});
  Tensor out = grader::poisoned({1, 1, 5, 5});
  std::uint64_t workspace = 0;
  lab08_harness::conv2d_winograd(x, w, b, out, workspace);
  Tensor block(Shape{4});
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 2; ++c) block[static_cast<std::size_t>(2 * a + c)] = out.at(0, 0, 2 + a, 2 + c);
  grader::check_tensor("conv2d_winograd: outputs rows 2..3, columns 2..3 (tile 4) = the chapter's Y + 0.5", block,
                       Tensor(Shape{4}, {3.5f, 7.5f, 4.5f, 6.5f}), lab08_tests::kExact);
  grader::check_tensor("conv2d_winograd: the whole 5x5 output against the direct convolution", out,
                       golden::lab04_conv2d(x, w, b, 1, 1), lab08_tests::kExact);
}

// ---- each stage on its own ------------------------------------------------------------------

TEST_CASE("winograd_filter_transform: every K, C in {1, 3, 33, 65}") {
  course::Rng rng = grader::case_rng("winograd_filter_transform: sizes");
  for (int K : {1, 3, 33, 65})
    for (int C : {1, 3, 33, 65}) check_filter_case(rng, K, C);
  check_filter_case(rng, 256, 130);  // several blocks of threads
}

TEST_CASE("winograd_input_transform: odd and even H, W in {1, 2, 3, 5, 7, 13, 17}, C = 1, 3, 33, 65, batch 1 to 3") {
  course::Rng rng = grader::case_rng("winograd_input_transform: sizes");
  const int sizes[] = {1, 2, 3, 5, 7, 13, 17};
  const int channels[] = {1, 3, 33, 65};
  int i = 0;
  for (int h : sizes)
    for (int w : sizes) {
      check_input_case(rng, 1 + i % 3, channels[i % 4], h, w);
      ++i;
    }
}

TEST_CASE("winograd_input_transform: larger inputs -- 4x64x28x28, 2x3x224x223") {
  course::Rng rng = grader::case_rng("winograd_input_transform: large");
  check_input_case(rng, 4, 64, 28, 28);
  check_input_case(rng, 2, 3, 224, 223);
}

TEST_CASE("winograd_batched_multiply: every K, C, T in {1, 3, 33, 65, 129}") {
  course::Rng rng = grader::case_rng("winograd_batched_multiply: sizes");
  const int sizes[] = {1, 3, 33, 65, 129};
  for (int K : sizes)
    for (int C : sizes)
      for (int T : sizes) check_multiply_case(rng, K, C, T);
}

TEST_CASE("winograd_batched_multiply: ResNet-like products -- K 64 x C 64 x T 1,568; K 130 x C 257 x T 1,000") {
  course::Rng rng = grader::case_rng("winograd_batched_multiply: large");
  check_multiply_case(rng, 64, 64, 1568);
  check_multiply_case(rng, 130, 257, 1000);
}

TEST_CASE("winograd_output_transform: odd H, W -- edge tiles write only the outputs inside, with and without bias") {
  course::Rng rng = grader::case_rng("winograd_output_transform: sizes");
  const int sizes[] = {1, 2, 3, 5, 7, 13, 17};
  const int channels[] = {1, 3, 33, 65};
  int i = 0;
  for (int h : sizes)
    for (int w : sizes) {
      check_output_case(rng, 1 + i % 3, channels[i % 4], h, w, i % 2 == 0);
      ++i;
    }
}

// ---- the whole convolution ------------------------------------------------------------------

TEST_CASE("conv2d_winograd: zero weights -- the output is the bias, on every tile, edge tiles of odd sizes included") {
  // With zero weights every U, M and A^T M A is 0 exactly, so the output is exactly bias[k]
  // everywhere: a bias missed on some tiles (the last row or column of tiles of an odd size) shows
  // as an element equal to 0 instead.
  course::Rng rng = grader::case_rng("conv2d_winograd: bias");
  for (const auto& hw : {std::vector<int>{5, 7}, std::vector<int>{7, 5}, std::vector<int>{1, 1},
                         std::vector<int>{2, 3}, std::vector<int>{13, 17}, std::vector<int>{8, 8}}) {
    const int N = 2, C = 3, K = 5, H = hw[0], W = hw[1];
    const Tensor x = rng.tensor({N, C, H, W}), w(Shape{K, C, 3, 3}, 0.0f), b = rng.tensor({K});
    Tensor expected(Shape{N, K, H, W});
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k)
        for (int p = 0; p < H; ++p)
          for (int q = 0; q < W; ++q) expected.at(n, k, p, q) = b[static_cast<std::size_t>(k)];
    Tensor out = grader::poisoned({N, K, H, W});
    std::uint64_t workspace = 0;
    lab08_harness::conv2d_winograd(x, w, b, out, workspace);
    grader::check_tensor("conv2d_winograd with zero weights: output = bias[k] everywhere (x " + nchw_text(N, C, H, W) +
                             "; a missing bias shows as 0 at the listed elements)",
                         out, expected, lab08_tests::kExact);
  }
}

TEST_CASE("conv2d_winograd: every H, W in {1, 2, 3, 5, 7, 13, 17}, C and K in {1, 3, 33, 65}, batch 1 to 3") {
  course::Rng rng = grader::case_rng("conv2d_winograd: sizes");
  const int sizes[] = {1, 2, 3, 5, 7, 13, 17};
  const int channels[] = {1, 3, 33, 65};
  int i = 0;
  for (int h : sizes)
    for (int w : sizes) {
      check_random_conv("sizes", rng, 1 + i % 3, channels[i % 4], h, w, channels[(i / 4) % 4]);
      ++i;
    }
}

TEST_CASE("conv2d_winograd: several images and filters -- the output is NCHW, image by image") {
  course::Rng rng = grader::case_rng("conv2d_winograd: layout");
  check_random_conv("3 images, 5 filters", rng, 3, 2, 6, 7, 5);
  check_random_conv("4 images, 1 filter", rng, 4, 1, 9, 4, 1);
}

TEST_CASE("conv2d_winograd: ResNet-like 3x3 layers -- 4x64x14x14 -> 64, 2x32x28x28 -> 130") {
  course::Rng rng = grader::case_rng("conv2d_winograd: layers");
  check_random_conv("64 -> 64 channels, 14x14", rng, 4, 64, 14, 14, 64);
  check_random_conv("32 -> 130 channels, 28x28", rng, 2, 32, 28, 28, 130);
}

TEST_CASE("conv2d_winograd: under the sanitizers -- 2x33x9x11 -> 65 (partial tiles everywhere, several C slices)") {
  // Sized for compute-sanitizer (memcheck and racecheck run this case again): T = 2 * 5 * 6 = 60
  // tiles (the last row and column of tiles half outside), K = 65 and C = 33 are multiples of
  // nothing, and the reference's products walk C in slices of 16: 3 slices, the last one partial.
  course::Rng rng = grader::case_rng("conv2d_winograd: sanitizers");
  check_random_conv("sanitizers", rng, 2, 33, 9, 11, 65);
}
