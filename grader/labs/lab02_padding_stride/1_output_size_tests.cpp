// Lab 02: the output-size formula, one dimension (conv_output_size) and the whole shape
// (conv2d_output_shape), with the lecture's worked examples and every kind of invalid parameter.
#include <limits>
#include <sstream>
#include <string>

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

TEST_CASE("conv_output_size: every small combination, valid or not") {
  // input <= 7, kernel <= 4, each padding <= 2, stride and dilation <= 3: 2,268 calls. The golden
  // reference evaluates the formula in floating point; a size <= 0 must be rejected.
  grader::Sweep sweep("conv_output_size over every small combination");
  for (int in = 1; in <= 7 && sweep.running(); ++in)
    for (int k = 1; k <= 4 && sweep.running(); ++k)
      for (int pb = 0; pb <= 2 && sweep.running(); ++pb)
        for (int pa = 0; pa <= 2 && sweep.running(); ++pa)
          for (int s = 1; s <= 3 && sweep.running(); ++s)
            for (int d = 1; d <= 3 && sweep.running(); ++d) {
              std::ostringstream what;
              what << "conv_output_size(input=" << in << ", kernel=" << k << ", pad_before=" << pb
                   << ", pad_after=" << pa << ", stride=" << s << ", dilation=" << d << ")";
              sweep.run(what.str(), [&]() -> std::string {
                const long long expected = golden::lab02_output_size(in, k, pb, pa, s, d);
                if (expected <= 0) return grader::rejection([&] { conv_output_size(in, k, pb, pa, s, d); });
                const int got = conv_output_size(in, k, pb, pa, s, d);
                return got == expected ? "" : "returned " + std::to_string(got) + ", expected " + std::to_string(expected);
              });
            }
  sweep.finish(2268);
}

TEST_CASE("conv_output_size: sizes beyond int are computed in 64-bit or rejected") {
  constexpr int kMax = std::numeric_limits<int>::max();  // 2^31 - 1
  // Valid, but input + padding or dilation * (kernel - 1) overflows an int on the way.
  CHECK(conv_output_size(kMax, 3, 0, 0, 1, 1) == kMax - 2);
  CHECK(conv_output_size(kMax, 1, 1, 0, 2, 1) == 1073741824);  // padded input 2^31: floor((2^31-1)/2)+1
  CHECK(conv_output_size(kMax, 2, 1, 1, 4, 1) == 536870912);   // floor((2^31+1-2)/4)+1
  CHECK(conv_output_size(kMax, 2, 0, 0, 1, kMax - 1) == 1);    // effective kernel exactly the input
  using grader::check_rejects;
  check_rejects("output size 3 * 2^31 (does not fit in an int)", [] { conv_output_size(kMax, 1, kMax, kMax, 1, 1); },
                "output size");
  check_rejects("output size 2^31 (one more than the largest int)", [] { conv_output_size(kMax, 1, 1, 0, 1, 1); },
                "output size");
  check_rejects("effective kernel 3e9 + 1 (wraps to a negative int)",
                [] { conv_output_size(2000000000, 3, 0, 0, 1, 1500000000); }, "output size");
  check_rejects("effective kernel (2^31-1)^2", [] { conv_output_size(kMax, kMax, 0, 0, 1, kMax); }, "output size");
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
  // Conv2dParams::symmetric (in the header, not yours) fills every side and both directions.
  const lab02::Conv2dParams q = lab02::Conv2dParams::symmetric(2, 3, 4);
  CHECK((q.pad_top == 2 && q.pad_bottom == 2 && q.pad_left == 2 && q.pad_right == 2));
  CHECK((q.stride_h == 3 && q.stride_w == 3 && q.dilation_h == 4 && q.dilation_w == 4));
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
  // Every extent at least 1, as in lab 01.
  check_rejects("negative batch", [&] { lab02::conv2d_output_shape({-1, 2, 8, 8}, w, {}); }, "input");
  check_rejects("empty batch", [&] { lab02::conv2d_output_shape({0, 2, 8, 8}, w, {}); }, "input");
  check_rejects("zero input width", [&] { lab02::conv2d_output_shape({1, 2, 8, 0}, {3, 2, 1, 1}, params(0, 0, 1, 1)); },
                "input");
  check_rejects("no channels on either side", [&] { lab02::conv2d_output_shape({1, 0, 8, 8}, {3, 0, 3, 3}, {}); },
                "input");
  check_rejects("no filters (K = 0)", [&] { lab02::conv2d_output_shape(x, {0, 2, 3, 3}, {}); }, "weight");
  check_rejects("negative K", [&] { lab02::conv2d_output_shape(x, {-3, 2, 3, 3}, {}); }, "weight");
  check_rejects("zero kernel height", [&] { lab02::conv2d_output_shape(x, {3, 2, 0, 3}, params(1, 1, 0, 0)); },
                "weight");
  // Extents that do not fit in an int must not be truncated by a cast.
  check_rejects("input height 2^32 + 8", [&] { lab02::conv2d_output_shape({1, 2, 4294967304LL, 8}, w, {}); });
  check_rejects("kernel width 2^32 + 3", [&] { lab02::conv2d_output_shape(x, {3, 2, 3, 4294967299LL}, {}); });
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
