// Lab 08 tests, part 1: depthwise_conv3x3 against the golden direct depthwise convolution
// (double accumulation): a worked example computed by hand, every small odd size, stride 2 on
// odd and even sizes (the last row and column), channel counts that are not multiples of
// anything, ReLU6, and MobileNetV2's own depthwise layers.
#include <string>
#include <vector>

#include "course/mobilenet.hpp"
#include "lab08_test_support.hpp"

using course::Shape;
using course::Tensor;

namespace {

void check_depthwise_case(const std::string& what, const Tensor& x, const Tensor& w, const Tensor& b, int stride,
                          bool relu6) {
  const Tensor expected = golden::lab08_depthwise3x3(x, w, b, stride, relu6);
  Tensor out = grader::poisoned(expected.shape());
  lab08_harness::depthwise_conv3x3(x, w, b, stride, relu6, out);
  grader::check_tensor(what + " (x " + lab08_tests::shape_text(x) + ", stride " + std::to_string(stride) +
                           (relu6 ? ", relu6" : "") + ")",
                       out, expected, lab08_tests::kDepthwiseTolerance);
}

void check_random_depthwise(const std::string& what, course::Rng& rng, int n, int c, int h, int w, int stride,
                            bool relu6, float scale = 1.0f) {
  check_depthwise_case(what, rng.tensor({n, c, h, w}, -scale, scale), rng.tensor({c, 1, 3, 3}), rng.tensor({c}),
                       stride, relu6);
}

// The worked example: x[h][w] = 4h + w + 1 on a 4x4 image, and a filter with three taps --
// centre 1, right of centre 2, below centre 10 -- so that out[p][q] = x[p][q] + 2 x[p][q+1]
// + 10 x[p+1][q], with the taps that leave the image counting 0. Asymmetric on purpose: a
// flipped or transposed filter gives other numbers.
const std::vector<float> kImage = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
const std::vector<float> kFilter = {0, 0, 0, 0, 1, 2, 0, 10, 0};
// Computed by hand, e.g. out[0][0] = 1 + 2*2 + 10*5 = 55, out[3][3] = 16 (both other taps outside).
const std::vector<float> kByHand = {55, 68, 81, 84, 107, 120, 133, 128, 159, 172, 185, 172, 41, 44, 47, 16};

}  // namespace

TEST_CASE("depthwise: the worked example -- a 1x1x4x4 image, one 3x3 filter, computed by hand") {
  const Tensor x(Shape{1, 1, 4, 4}, kImage);
  const Tensor w(Shape{1, 1, 3, 3}, kFilter);
  Tensor out = grader::poisoned({1, 1, 4, 4});
  lab08_harness::depthwise_conv3x3(x, w, Tensor(Shape{1}, {0.0f}), 1, false, out);
  grader::check_tensor("stride 1", out, Tensor(Shape{1, 1, 4, 4}, kByHand), lab08_tests::kExact);

  // Stride 2: P = Q = (4 - 1) / 2 + 1 = 2, the outputs at rows and columns 0 and 2 of the above.
  Tensor strided = grader::poisoned({1, 1, 2, 2});
  lab08_harness::depthwise_conv3x3(x, w, Tensor(Shape{1}, {0.0f}), 2, false, strided);
  grader::check_tensor("stride 2", strided, Tensor(Shape{1, 1, 2, 2}, {55, 81, 159, 185}), lab08_tests::kExact);

  // Bias -125 and ReLU6: 133 - 125 = 8 -> 6, 128 - 125 = 3 stays 3, 120 - 125 = -5 -> 0.
  Tensor clamped = grader::poisoned({1, 1, 4, 4});
  lab08_harness::depthwise_conv3x3(x, w, Tensor(Shape{1}, {-125.0f}), 1, true, clamped);
  grader::check_tensor("bias -125, relu6", clamped,
                       Tensor(Shape{1, 1, 4, 4}, {0, 0, 0, 0, 0, 0, 6, 3, 6, 6, 6, 6, 0, 0, 0, 0}),
                       lab08_tests::kExact);
}

TEST_CASE("depthwise: the worked example with a second channel and a second image -- each channel its own filter") {
  // Channel 1 holds the same image but a filter with only its centre, -1: out = -x + 0.5.
  std::vector<float> image2 = kImage;
  image2.insert(image2.end(), kImage.begin(), kImage.end());
  std::vector<float> filters = kFilter;
  const std::vector<float> centre = {0, 0, 0, 0, -1, 0, 0, 0, 0};
  filters.insert(filters.end(), centre.begin(), centre.end());
  std::vector<float> batch = image2;
  for (float v : image2) batch.push_back(2 * v);  // image 1 = 2 x image 0: twice the outputs, bias aside
  const Tensor x(Shape{2, 2, 4, 4}, batch);
  const Tensor w(Shape{2, 1, 3, 3}, filters);
  const Tensor b(Shape{2}, {1.0f, 0.5f});
  std::vector<float> expected;
  for (int n = 0; n < 2; ++n) {
    for (float v : kByHand) expected.push_back(static_cast<float>(n + 1) * v + 1.0f);
    for (float v : kImage) expected.push_back(-static_cast<float>(n + 1) * v + 0.5f);
  }
  Tensor out = grader::poisoned({2, 2, 4, 4});
  lab08_harness::depthwise_conv3x3(x, w, b, 1, false, out);
  grader::check_tensor("2 images x 2 channels", out, Tensor(Shape{2, 2, 4, 4}, expected), lab08_tests::kExact);
}

TEST_CASE("depthwise: every H, W in {1, 2, 3, 7, 13, 17}, stride 1 and 2, C = 1, 3, 33") {
  course::Rng rng = grader::case_rng("depthwise: sizes");
  const int sizes[] = {1, 2, 3, 7, 13, 17};
  const int channels[] = {1, 3, 33};
  int i = 0;
  for (int h : sizes)
    for (int w : sizes)
      for (int stride : {1, 2}) {
        const int c = channels[i % 3], n = 1 + i % 2;
        ++i;
        check_random_depthwise("sizes", rng, n, c, h, w, stride, i % 4 == 0);
      }
}

TEST_CASE("depthwise: stride 2 keeps the last row and column of odd sizes") {
  // (H - 1) / 2 + 1 rows: 4 for H = 7 (its window centred on row 6 has its bottom row in the
  // padding), 4 for H = 8, 9 for H = 17, 1 for H = 1 and 2.
  course::Rng rng = grader::case_rng("depthwise: stride 2 edges");
  const int shapes[][2] = {{7, 8}, {8, 7}, {7, 7}, {8, 8}, {9, 9}, {17, 16}, {1, 1}, {1, 17}, {17, 1}, {2, 3}, {33, 35}};
  for (const auto& hw : shapes) check_random_depthwise("stride 2 edges", rng, 2, 3, hw[0], hw[1], 2, false);
}

TEST_CASE("depthwise: tall planes -- several 8-row strips, and a last strip of 1 to 7 rows") {
  course::Rng rng = grader::case_rng("depthwise: tall");
  for (int h : {8, 9, 15, 16, 23, 31, 40, 57})
    for (int stride : {1, 2}) check_random_depthwise("tall", rng, 1, 5, h, 11, stride, false);
}

TEST_CASE("depthwise: ReLU6 clamps at both ends") {
  course::Rng rng = grader::case_rng("depthwise: relu6");
  // Inputs in [-4, 4]: sums reach beyond 6 and below 0.
  for (int stride : {1, 2}) check_random_depthwise("relu6", rng, 2, 7, 12, 10, stride, true, 4.0f);
}

TEST_CASE("depthwise: MobileNetV2's depthwise layers (course/mobilenet.hpp), batch 3") {
  course::Rng rng = grader::case_rng("depthwise: MobileNetV2");
  for (const auto& block : course::mobilenet::blocks())
    check_random_depthwise("MobileNetV2 block", rng, 3, block.hidden, block.size, block.size, block.stride, true, 2.0f);
}

TEST_CASE("depthwise: a large batch -- 8 x 32 x 56 x 56, stride 1 and 2") {
  course::Rng rng = grader::case_rng("depthwise: large");
  for (int stride : {1, 2}) check_random_depthwise("large", rng, 8, 32, 56, 56, stride, true);
}
