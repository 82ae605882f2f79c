// Lab 02: the output-size formula, one dimension (conv_output_size) and the whole shape
// (conv2d_output_shape), with the lecture's worked examples and every kind of invalid parameter.
#include "lab02_test_support.hpp"

namespace {

using lab02::conv_output_size;
using lab02_tests::params;

}  // namespace

TEST_CASE("conv_output_size: the lecture's worked examples") {
  CHECK(conv_output_size(28, 5, 2, 2, 1, 1) == 28);  // LeNet conv1: padding 2 keeps 28
  CHECK(conv_output_size(28, 5, 0, 0, 1, 1) == 24);  // no padding loses kernel-1 = 4
  CHECK(conv_output_size(7, 3, 0, 0, 2, 1) == 3);    // stride 2
  CHECK(conv_output_size(28, 5, 2, 2, 2, 1) == 14);  // padding and stride: floor(27/2) + 1
  CHECK(conv_output_size(7, 3, 0, 0, 1, 2) == 3);    // dilation 2: the kernel spans 5 pixels
  CHECK(conv_output_size(32, 3, 2, 2, 2, 2) == 16);  // all three: floor(31/2) + 1
  CHECK(conv_output_size(6, 3, 0, 1, 2, 1) == 3);    // asymmetric: one extra row at the bottom
  CHECK(conv_output_size(5, 3, 1, 1, 2, 1) == 3);    // the 5x5 numeric example
  CHECK(conv_output_size(5, 3, 1, 0, 2, 1) == 2);    // ... with top/left padding only
  CHECK(conv_output_size(7, 3, 0, 0, 1, 3) == 1);    // effective kernel 7 spans the whole input
}

TEST_CASE("conv_output_size: edge cases of the formula") {
  CHECK(conv_output_size(1, 1, 0, 0, 1, 1) == 1);     // 1x1 input, 1x1 kernel
  CHECK(conv_output_size(9, 1, 0, 0, 4, 1) == 3);     // 1x1 kernel, stride > kernel: pixels 0, 4, 8
  CHECK(conv_output_size(9, 1, 0, 0, 1, 5) == 9);     // dilation does nothing to a single tap
  CHECK(conv_output_size(3, 6, 2, 1, 1, 1) == 1);     // kernel exactly as large as the padded input
  CHECK(conv_output_size(3, 6, 2, 1, 5, 1) == 1);     // ... whatever the stride
  CHECK(conv_output_size(10, 2, 0, 0, 3, 1) == 3);    // windows at 0, 3, 6; pixel 9 is never read
  CHECK(conv_output_size(1, 3, 1, 1, 1, 1) == 1);     // a single pixel with padding
  CHECK(conv_output_size(1, 1, 3, 0, 1, 1) == 4);     // padding alone can make the output larger
  CHECK(conv_output_size(12, 4, 3, 0, 1, 3) == 6);    // effective kernel 10, one-sided padding
  CHECK(conv_output_size(1000, 3, 0, 0, 1000, 1) == 1);
}

TEST_CASE("conv_output_size: agrees with the formula for every small combination") {
  // Exhaustive over small values: the golden reference evaluates the formula in floating point.
  int checked = 0;
  for (int in = 1; in <= 9; ++in)
    for (int k = 1; k <= 5; ++k)
      for (int pb = 0; pb <= 2; ++pb)
        for (int pa = 0; pa <= 2; ++pa)
          for (int s = 1; s <= 3; ++s)
            for (int d = 1; d <= 3; ++d) {
              const long long expected = golden::lab02_output_size(in, k, pb, pa, s, d);
              if (expected <= 0) continue;  // rejected cases are tested below
              const int got = conv_output_size(in, k, pb, pa, s, d);
              if (got != expected) {
                FAIL_CHECK("conv_output_size(input=" << in << ", kernel=" << k << ", pad_before=" << pb
                                                     << ", pad_after=" << pa << ", stride=" << s << ", dilation=" << d
                                                     << ") = " << got << ", expected " << expected);
                return;
              }
              ++checked;
            }
  CHECK(checked > 1000);
}

TEST_CASE("conv_output_size: rejects invalid parameters, naming the problem") {
  using grader::check_rejects;
  check_rejects("stride 0", [] { conv_output_size(8, 3, 0, 0, 0, 1); }, "stride");
  check_rejects("negative stride", [] { conv_output_size(8, 3, 0, 0, -2, 1); }, "stride");
  check_rejects("dilation 0", [] { conv_output_size(8, 3, 0, 0, 1, 0); }, "dilation");
  check_rejects("kernel 0", [] { conv_output_size(8, 0, 0, 0, 1, 1); }, "kernel");
  check_rejects("negative padding before", [] { conv_output_size(8, 3, -1, 0, 1, 1); }, "padding");
  check_rejects("negative padding after", [] { conv_output_size(8, 3, 0, -1, 1, 1); }, "padding");
  check_rejects("input 0", [] { conv_output_size(0, 1, 1, 1, 1, 1); }, "input");
  // Output size <= 0: the (effective) kernel does not fit in the padded input.
  check_rejects("kernel larger than input", [] { conv_output_size(3, 5, 0, 0, 1, 1); }, "output size");
  check_rejects("dilated kernel larger than input", [] { conv_output_size(7, 3, 0, 0, 1, 4); }, "output size");
  check_rejects("kernel larger than padded input", [] { conv_output_size(3, 7, 1, 2, 1, 1); }, "output size");
  // The truncation trap: (4 - 5) / 2 is 0 in C++ but floor(-0.5) = -1, so the output size is 0,
  // not 1. An implementation that divides before checking accepts this.
  check_rejects("kernel 5 on input 4, stride 2", [] { conv_output_size(4, 5, 0, 0, 2, 1); }, "output size");
  check_rejects("dilation 2 kernel 3 on input 4, stride 3", [] { conv_output_size(4, 3, 0, 0, 3, 2); }, "output size");
}

TEST_CASE("conv2d_output_shape: shapes from both dimensions, batch and output channels") {
  CHECK(lab02::conv2d_output_shape({2, 1, 28, 28}, {6, 1, 5, 5}, lab02::Conv2dParams::symmetric(2)) ==
        course::Shape{2, 6, 28, 28});
  CHECK(lab02::conv2d_output_shape({1, 3, 7, 9}, {4, 3, 3, 3}, lab02::Conv2dParams::symmetric(0, 2)) ==
        course::Shape{1, 4, 3, 4});
  // Height and width each use their own padding, stride and dilation (an implementation that mixes
  // them up gets a different shape here).
  CHECK(lab02::conv2d_output_shape({3, 2, 10, 20}, {5, 2, 3, 4}, params(1, 0, 3, 2, 2, 3, 1, 2)) ==
        course::Shape{3, 5, 5, 7});
  CHECK(lab02::conv2d_output_shape({1, 1, 20, 10}, {1, 1, 4, 3}, params(3, 2, 1, 0, 3, 2, 2, 1)) ==
        course::Shape{1, 1, 7, 5});
}

TEST_CASE("Conv2dParams::symmetric fills every side and both directions") {
  const lab02::Conv2dParams p = lab02::Conv2dParams::symmetric(2, 3, 4);
  CHECK(p.pad_top == 2);
  CHECK(p.pad_bottom == 2);
  CHECK(p.pad_left == 2);
  CHECK(p.pad_right == 2);
  CHECK(p.stride_h == 3);
  CHECK(p.stride_w == 3);
  CHECK(p.dilation_h == 4);
  CHECK(p.dilation_w == 4);
}

TEST_CASE("conv2d_output_shape: rejects invalid shapes and parameters") {
  using grader::check_rejects;
  const course::Shape x{1, 2, 8, 8}, w{3, 2, 3, 3};
  check_rejects("3-D input", [&] { lab02::conv2d_output_shape({2, 8, 8}, w, {}); }, "input");
  check_rejects("5-D weight", [&] { lab02::conv2d_output_shape(x, {3, 2, 3, 3, 1}, {}); }, "weight");
  check_rejects("channel mismatch", [&] { lab02::conv2d_output_shape(x, {3, 4, 3, 3}, {}); }, "channels");
  check_rejects("stride_h 0", [&] { lab02::conv2d_output_shape(x, w, params(0, 0, 0, 0, 0, 1)); }, "stride");
  check_rejects("stride_w 0", [&] { lab02::conv2d_output_shape(x, w, params(0, 0, 0, 0, 1, 0)); }, "stride");
  check_rejects("dilation_h 0", [&] { lab02::conv2d_output_shape(x, w, params(0, 0, 0, 0, 1, 1, 0, 1)); }, "dilation");
  check_rejects("dilation_w 0", [&] { lab02::conv2d_output_shape(x, w, params(0, 0, 0, 0, 1, 1, 1, 0)); }, "dilation");
  check_rejects("pad_top < 0", [&] { lab02::conv2d_output_shape(x, w, params(-1, 0, 0, 0)); }, "pad");
  check_rejects("pad_right < 0", [&] { lab02::conv2d_output_shape(x, w, params(0, 0, 0, -1)); }, "pad");
  check_rejects("kernel taller than input", [&] { lab02::conv2d_output_shape({1, 2, 2, 8}, w, {}); }, "output size");
  check_rejects("dilated kernel wider than input",
                [&] { lab02::conv2d_output_shape(x, w, params(0, 0, 0, 0, 1, 1, 1, 4)); }, "output size");
}

TEST_CASE("the lecture's check-yourself answers") {
  // 1. [1,3,32,32] * [8,3,3,3], padding 1, stride 2
  CHECK(lab02::conv2d_output_shape({1, 3, 32, 32}, {8, 3, 3, 3}, lab02::Conv2dParams::symmetric(1, 2)) ==
        course::Shape{1, 8, 16, 16});
  // 2. 3x3 kernel, dilation 4, on 20 pixels
  CHECK(conv_output_size(20, 3, 0, 0, 1, 4) == 12);
  // 3. TF SAME for input 9, kernel 4, stride 2
  const lab02::Padding1d q3 = lab02::tf_padding(lab02::TfPadding::Same, 9, 4, 2);
  CHECK(q3.before == 1);
  CHECK(q3.after == 2);
  // 4. PyTorch padding=2, kernel 5, input 10: SAME at stride 1, no TF mode at stride 2 (same size)
  CHECK(lab02::tf_mode_for({2, 2}, 10, 5, 1) == lab02::TfPadding::Same);
  CHECK_FALSE(lab02::tf_mode_for({2, 2}, 10, 5, 2).has_value());
  CHECK(conv_output_size(10, 5, 2, 2, 2, 1) == 5);
  CHECK(conv_output_size(10, 5, 1, 2, 2, 1) == 5);
  // 6. NHWC offset of (1, 2, 3, 4) in [2, 3, 5, 6]; its NCHW offset is 172
  CHECK(lab02::nhwc_offset({2, 3, 5, 6}, 1, 2, 3, 4) == 158);
  CHECK(lab02::nchw_offset({2, 3, 5, 6}, 1, 2, 3, 4) == 172);
  // 8. a 4x4 kernel on 28 pixels: symmetric padding gives 27 or 29, never 28
  CHECK(conv_output_size(28, 4, 1, 1, 1, 1) == 27);
  CHECK(conv_output_size(28, 4, 2, 2, 1, 1) == 29);
  CHECK(conv_output_size(28, 4, 1, 2, 1, 1) == 28);
  // Also from the lecture: dilation 1 on 7 pixels, the first figure of the dilation section.
  CHECK(conv_output_size(7, 3, 0, 0, 1, 1) == 5);
}
