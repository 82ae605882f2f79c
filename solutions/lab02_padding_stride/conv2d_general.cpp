// Lab 02, part 1: the general 2-D convolution -- zero padding on each side, stride, dilation.
//
// Lab 01's convolution is the special case pad = 0, stride = 1, dilation = 1. Everything new here
// is about WHERE each kernel tap lands in the input; the multiply-add itself does not change.
#include <cstdint>
#include <limits>
#include <string>

#include "course/error.hpp"
#include "labs/lab02_padding_stride.hpp"

namespace lab02 {

int conv_output_size(int input, int kernel, int pad_before, int pad_after, int stride, int dilation) {
  const auto fail = [](const std::string& problem) { throw course::Error("conv_output_size: " + problem); };
  if (input < 1) fail("input size must be >= 1, got " + std::to_string(input));
  if (kernel < 1) fail("kernel size must be >= 1, got " + std::to_string(kernel));
  if (stride < 1) fail("stride must be >= 1, got " + std::to_string(stride));
  if (dilation < 1) fail("dilation must be >= 1, got " + std::to_string(dilation));
  if (pad_before < 0 || pad_after < 0)
    fail("padding must not be negative, got before=" + std::to_string(pad_before) +
         " after=" + std::to_string(pad_after));

  // 64-bit so that absurd parameters cannot overflow before we get to reject them.
  const long long padded = static_cast<long long>(input) + pad_before + pad_after;
  // A dilated kernel of `kernel` taps spans dilation*(kernel-1)+1 input pixels.
  const long long effective_kernel = static_cast<long long>(dilation) * (kernel - 1) + 1;
  // Checked BEFORE dividing: C++ integer division truncates toward zero, so (-1)/2 == 0 would
  // turn an impossible window into a bogus output size of 1 instead of floor(-0.5)+1 == 0.
  if (effective_kernel > padded)
    fail("output size would be <= 0: the effective kernel (" + std::to_string(effective_kernel) +
         " = dilation " + std::to_string(dilation) + " * (kernel " + std::to_string(kernel) +
         " - 1) + 1) is larger than the padded input (" + std::to_string(padded) + ")");
  // The first window starts at padded position 0; each further window starts `stride` later and
  // must still end inside the padded input. Both operands are >= 0 here, so / is floor.
  const long long size = (padded - effective_kernel) / stride + 1;
  // Two paddings of up to 2^31-1 can make the output larger than any int: refuse rather than
  // return a wrapped-around (negative or tiny) size.
  if (size > std::numeric_limits<int>::max())
    fail("output size " + std::to_string(size) + " does not fit in an int");
  return static_cast<int>(size);
}

namespace {

// Field-by-field checks so the message names the exact member of Conv2dParams that is wrong.
void check_params(const Conv2dParams& p) {
  const auto at_least = [](const char* name, int value, int minimum) {
    if (value < minimum)
      throw course::Error(std::string("conv2d: ") + name + " must be >= " + std::to_string(minimum) + ", got " +
                          std::to_string(value));
  };
  at_least("stride_h", p.stride_h, 1);
  at_least("stride_w", p.stride_w, 1);
  at_least("dilation_h", p.dilation_h, 1);
  at_least("dilation_w", p.dilation_w, 1);
  at_least("pad_top (padding)", p.pad_top, 0);
  at_least("pad_bottom (padding)", p.pad_bottom, 0);
  at_least("pad_left (padding)", p.pad_left, 0);
  at_least("pad_right (padding)", p.pad_right, 0);
}

// The same rule as lab 01: a shape is 4-D and every extent is at least 1 (an empty or negative
// batch, channel count or filter count is a caller's mistake, not an empty result).
void require_4d(const course::Shape& shape, const char* name, const char* layout) {
  if (shape.size() != 4)
    throw course::Error(std::string("conv2d: ") + name + " must be 4-D " + layout + ", got " +
                        course::shape_to_string(shape));
  for (std::int64_t extent : shape)
    if (extent < 1)
      throw course::Error(std::string("conv2d: every extent of ") + name + " " + layout + " must be at least 1, got " +
                          course::shape_to_string(shape));
}

// conv_output_size with the dimension's name added to any error it reports.
int output_extent(const char* dimension, std::int64_t input, std::int64_t kernel, int pad_before, int pad_after,
                  int stride, int dilation) {
  // conv_output_size takes ints: an extent beyond int would be silently truncated by the cast.
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  if (input > kIntMax || kernel > kIntMax)
    throw course::Error(std::string("conv2d ") + dimension + ": input extent " + std::to_string(input) +
                        " or kernel extent " + std::to_string(kernel) + " does not fit in an int");
  try {
    return conv_output_size(static_cast<int>(input), static_cast<int>(kernel), pad_before, pad_after, stride,
                            dilation);
  } catch (const course::Error& e) {
    throw course::Error(std::string("conv2d ") + dimension + ": " + e.what());
  }
}

}  // namespace

course::Shape conv2d_output_shape(const course::Shape& input, const course::Shape& weight, const Conv2dParams& p) {
  require_4d(input, "input", "[N, C, H, W]");
  require_4d(weight, "weight", "[K, C, R, S]");
  if (weight[1] != input[1])
    throw course::Error("conv2d: weight has " + std::to_string(weight[1]) + " input channels but the input has " +
                        std::to_string(input[1]) + " (weight " + course::shape_to_string(weight) + ", input " +
                        course::shape_to_string(input) + ")");
  check_params(p);
  const int out_h = output_extent("height", input[2], weight[2], p.pad_top, p.pad_bottom, p.stride_h, p.dilation_h);
  const int out_w = output_extent("width", input[3], weight[3], p.pad_left, p.pad_right, p.stride_w, p.dilation_w);
  return {input[0], weight[0], out_h, out_w};
}

void conv2d_forward(const course::Tensor& input, const course::Tensor& weight, const course::Tensor& bias,
                    const Conv2dParams& p, course::Tensor& output) {
  const course::Shape out_shape = conv2d_output_shape(input.shape(), weight.shape(), p);
  bias.expect_shape({weight.dim(0)}, "conv2d_forward: bias");
  output.expect_shape(out_shape, "conv2d_forward: output");

  const std::int64_t N = input.dim(0), C = input.dim(1), H = input.dim(2), W = input.dim(3);
  const std::int64_t K = weight.dim(0), R = weight.dim(2), S = weight.dim(3);
  const std::int64_t P = out_shape[2], Q = out_shape[3];

  // Flat row-major offsets into the raw arrays (lab 01's formulas): the innermost loop then does
  // one multiply-add per tap and nothing else, which matters once lab 04 runs the whole network.
  const float* in = input.data();
  const float* wt = weight.data();
  float* out = output.data();
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t oh = 0; oh < P; ++oh)
        for (std::int64_t ow = 0; ow < Q; ++ow) {
          // Top-left input pixel under this window. It may be negative: that is the padding.
          const std::int64_t h0 = oh * p.stride_h - p.pad_top;
          const std::int64_t w0 = ow * p.stride_w - p.pad_left;
          float sum = bias[static_cast<std::size_t>(k)];
          for (std::int64_t c = 0; c < C; ++c) {
            const float* in_plane = in + ((n * C + c) * H) * W;
            const float* w_plane = wt + ((k * C + c) * R) * S;
            for (std::int64_t r = 0; r < R; ++r) {
              const std::int64_t ih = h0 + r * p.dilation_h;
              // A tap on a padding pixel multiplies zero: skip it instead of storing zeros.
              if (ih < 0 || ih >= H) continue;
              const float* in_row = in_plane + ih * W;
              const float* w_row = w_plane + r * S;
              for (std::int64_t s = 0; s < S; ++s) {
                const std::int64_t iw = w0 + s * p.dilation_w;
                if (iw < 0 || iw >= W) continue;
                sum += in_row[iw] * w_row[s];
              }
            }
          }
          out[((n * K + k) * P + oh) * Q + ow] = sum;
        }
}


}  // namespace lab02
