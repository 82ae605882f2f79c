// Lab 01: conv2d_output_shape -- the stride-1, no-padding formula and the shapes it must reject.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lab01_test_support.hpp"

namespace {

using course::Shape;

struct ShapeExample {
  const char* what;
  Shape input, weight, expected;
};

}  // namespace

TEST_CASE("lab01 conv2d_output_shape: H_out = H - R + 1, W_out = W - S + 1") {
  const std::vector<ShapeExample> examples = {
      {"lecture example (4x4 image, 3x3 kernel)", {1, 1, 4, 4}, {1, 1, 3, 3}, {1, 1, 2, 2}},
      {"lecture two-channel example", {1, 2, 3, 3}, {1, 2, 2, 2}, {1, 1, 2, 2}},
      {"LeNet conv2 (6 -> 16, 5x5 on 14x14)", {1, 6, 14, 14}, {16, 6, 5, 5}, {1, 16, 10, 10}},
      {"28x28 image, 5x5 kernel, no padding", {4, 1, 28, 28}, {6, 1, 5, 5}, {4, 6, 24, 24}},
      {"non-square image and kernel", {2, 3, 7, 9}, {4, 3, 3, 2}, {2, 4, 5, 8}},
      {"1x1 kernel keeps the image size", {3, 2, 5, 6}, {7, 2, 1, 1}, {3, 7, 5, 6}},
      {"kernel as large as the image", {1, 2, 5, 4}, {3, 2, 5, 4}, {1, 3, 1, 1}},
      {"1x1 image, 1x1 kernel", {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}},
      {"one row, wide kernel", {2, 1, 1, 12}, {5, 1, 1, 7}, {2, 5, 1, 6}},
  };
  for (const ShapeExample& ex : examples) {
    // Called outside CHECK so that "not implemented" ends the test with one clear message.
    const Shape got = lab01::conv2d_output_shape(ex.input, ex.weight);
    CHECK_MESSAGE(got == ex.expected, ex.what << ": input " << course::shape_to_string(ex.input) << ", weight "
                                              << course::shape_to_string(ex.weight) << " -> expected "
                                              << course::shape_to_string(ex.expected) << ", got "
                                              << course::shape_to_string(got));
  }
}

TEST_CASE("lab01 conv2d_output_shape: rejects shapes with no valid output") {
  const auto rejects = [](const std::string& what, const Shape& input, const Shape& weight, const std::string& part) {
    grader::check_rejects(what, [&] { lab01::conv2d_output_shape(input, weight); }, part);
  };
  rejects("3-D input", {1, 4, 4}, {1, 1, 3, 3}, "input");
  rejects("5-D input", {1, 1, 1, 4, 4}, {1, 1, 3, 3}, "input");
  rejects("2-D weight", {1, 1, 4, 4}, {3, 3}, "weight");
  rejects("5-D weight", {1, 1, 4, 4}, {1, 1, 1, 3, 3}, "weight");
  rejects("empty input shape", {}, {1, 1, 1, 1}, "input");
  rejects("zero-sized batch", {0, 1, 4, 4}, {1, 1, 3, 3}, "input");
  rejects("zero-width input", {1, 1, 4, 0}, {1, 1, 1, 1}, "input");
  rejects("no filters (K = 0)", {1, 1, 4, 4}, {0, 1, 3, 3}, "weight");
  rejects("zero-height kernel", {1, 1, 4, 4}, {1, 1, 0, 3}, "weight");
  rejects("negative kernel width", {1, 1, 4, 4}, {1, 1, 3, -1}, "weight");
  rejects("weight with more channels than the input", {1, 3, 8, 8}, {2, 4, 3, 3}, "channels");
  rejects("weight with fewer channels than the input", {2, 6, 14, 14}, {16, 1, 5, 5}, "channels");
  rejects("kernel taller than the image", {1, 1, 4, 6}, {1, 1, 5, 3}, "kernel");
  rejects("kernel wider than the image", {1, 1, 6, 4}, {1, 1, 3, 5}, "kernel");
  rejects("kernel larger in both directions", {1, 2, 3, 3}, {1, 2, 4, 4}, "kernel");
}

namespace {

// Multiply-adds of one layer, from the student's output shape: N*K*H_out*W_out * C*R*S.
std::int64_t multiply_adds(const Shape& input, const Shape& weight) {
  const Shape out = lab01::conv2d_output_shape(input, weight);
  return out[0] * out[1] * out[2] * out[3] * weight[1] * weight[2] * weight[3];
}

// Flat offset of a 4-D index in a contiguous tensor, as course::Tensor actually stores it.
std::int64_t flat_offset(const Shape& shape, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  course::Tensor t(shape);
  return static_cast<std::int64_t>(&t.at(a, b, c, d) - t.data());
}

}  // namespace

TEST_CASE("lab01 lecture numbers: multiply-add counts and NCHW / KCRS offsets") {
  // Section 7's table; conv1's padding of 2 is expressed as a 32x32 (already padded) image.
  // (Computed before the CHECKs so that "not implemented" stops the test with one message.)
  const std::int64_t example = multiply_adds({1, 1, 4, 4}, {1, 1, 3, 3});
  const std::int64_t conv1 = multiply_adds({1, 1, 32, 32}, {6, 1, 5, 5});
  const std::int64_t conv2 = multiply_adds({1, 6, 14, 14}, {16, 6, 5, 5});
  CHECK(example == 36);
  CHECK(conv1 == 117600);
  CHECK(conv2 == 240000);
  // "Check yourself" 1 and 2.
  const Shape question_shape = lab01::conv2d_output_shape({8, 3, 32, 32}, {16, 3, 5, 5});
  CHECK(question_shape == Shape{8, 16, 28, 28});
  CHECK(multiply_adds({8, 3, 32, 32}, {16, 3, 5, 5}) == 7526400);

  // Section 5's offsets (and "check yourself" 3), against the layout course::Tensor really uses.
  CHECK(course::Tensor(Shape{1, 6, 14, 14}).strides() == std::vector<std::int64_t>{1176, 196, 14, 1});
  CHECK(flat_offset({1, 6, 14, 14}, 0, 2, 5, 7) == 469);
  CHECK(course::Tensor(Shape{16, 6, 5, 5}).strides() == std::vector<std::int64_t>{150, 25, 5, 1});
  CHECK(flat_offset({16, 6, 5, 5}, 3, 1, 2, 4) == 489);
  CHECK(flat_offset({2, 2, 2, 3}, 1, 0, 1, 2) == 17);
  CHECK(course::Tensor(Shape{2, 3, 5, 6}).strides() == std::vector<std::int64_t>{90, 30, 6, 1});
  CHECK(flat_offset({2, 3, 5, 6}, 1, 2, 3, 4) == 172);
}

TEST_CASE("lab01 conv2d_output_shape: every small shape (H, W <= 5, R, S <= 6), valid or not") {
  // Kernels up to 6 on images up to 5: every case where the kernel does not fit must be rejected,
  // every other one must follow the formula.
  grader::Sweep sweep("conv2d_output_shape over every small shape");
  int index = 0;
  for (std::int64_t h = 1; h <= 5 && sweep.running(); ++h)
    for (std::int64_t w = 1; w <= 5 && sweep.running(); ++w)
      for (std::int64_t r = 1; r <= 6 && sweep.running(); ++r)
        for (std::int64_t s = 1; s <= 6 && sweep.running(); ++s) {
          lab01_tests::ConvCase cc;
          lab01_tests::cycle_batch_and_channels(index++, cc);
          cc.h = h, cc.w = w, cc.r = r, cc.s = s;
          sweep.run(cc.describe(), [&]() -> std::string {
            if (r > h || s > w)
              return grader::rejection([&] { lab01::conv2d_output_shape(cc.input_shape(), cc.weight_shape()); });
            const Shape got = lab01::conv2d_output_shape(cc.input_shape(), cc.weight_shape());
            if (got == cc.output_shape()) return "";
            return "expected " + course::shape_to_string(cc.output_shape()) + ", got " + course::shape_to_string(got);
          });
        }
  sweep.finish(900);
}

TEST_CASE("lab01 conv2d_output_shape: random shapes follow the formula") {
  course::Rng rng = grader::case_rng("lab01 output shape random");
  for (int i = 0; i < 50; ++i) {
    const lab01_tests::ConvCase cc = lab01_tests::random_case(rng);
    const Shape got = lab01::conv2d_output_shape(cc.input_shape(), cc.weight_shape());
    const bool ok = got == cc.output_shape();
    CHECK_MESSAGE(ok, cc.describe() << " -> expected " << course::shape_to_string(cc.output_shape()) << ", got "
                                    << course::shape_to_string(got) << " (seed " << grader::seed() << ")");
    if (!ok) break;  // one wrong shape says enough
  }
}
