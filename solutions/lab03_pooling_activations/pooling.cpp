// Lab 03 solution: max, average and global-average pooling on NCHW tensors.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "course/error.hpp"
#include "labs/lab03_pooling_activations.hpp"

namespace lab03 {

namespace {

// Validates one axis and returns its output extent. `axis` is "h" or "w" so that the message
// names the exact parameter the caller got wrong.
std::int64_t pooled_extent(std::int64_t in, int kernel, int stride, int pad, const std::string& axis) {
  if (kernel < 1)
    throw course::Error("pool2d: kernel_" + axis + " must be >= 1, got " + std::to_string(kernel));
  if (stride < 1)
    throw course::Error("pool2d: stride_" + axis + " must be >= 1, got " + std::to_string(stride));
  if (pad < 0) throw course::Error("pool2d: pad_" + axis + " must be >= 0, got " + std::to_string(pad));
  // PyTorch's rule: with more padding than half the window, a window could lie entirely in the
  // padding, and a max over nothing but padding has no meaningful value.
  if (pad > kernel / 2)
    throw course::Error("pool2d: pad_" + axis + " = " + std::to_string(pad) + " is larger than half of kernel_" +
                        axis + " = " + std::to_string(kernel));
  // Check before dividing: C++ integer division truncates toward zero, so (-1)/2 == 0 and a
  // window larger than the padded input would wrongly produce one output.
  const std::int64_t span = in + 2 * static_cast<std::int64_t>(pad);
  if (span < kernel)
    throw course::Error("pool2d: input extent " + axis + " = " + std::to_string(in) + " plus padding is smaller than kernel_" +
                        axis + " = " + std::to_string(kernel) + ": the output would be empty");
  return (span - kernel) / stride + 1;
}

// Shared by max and average pooling: both read the same windows, only the reduction differs.
void check_pool_io(const course::Tensor& input, const Pool2dParams& p, const course::Tensor& output,
                   const char* function) {
  const course::Shape expected = pool2d_output_shape(input.shape(), p);
  output.expect_shape(expected, std::string(function) + ": output");
}

}  // namespace

course::Shape pool2d_output_shape(const course::Shape& input, const Pool2dParams& p) {
  if (input.size() != 4)
    throw course::Error("pool2d: input must be 4-D [N, C, H, W], got " + course::shape_to_string(input));
  // An empty plane padded on both sides could still hold a window, but that window would be all
  // padding: its max is -infinity and its average 0/0. Reject it, as lab 01 does every empty extent.
  for (std::int64_t extent : input)
    if (extent < 1)
      throw course::Error("pool2d: every extent of input [N, C, H, W] must be at least 1, got " +
                          course::shape_to_string(input));
  const std::int64_t h_out = pooled_extent(input[2], p.kernel_h, p.stride_h, p.pad_h, "h");
  const std::int64_t w_out = pooled_extent(input[3], p.kernel_w, p.stride_w, p.pad_w, "w");
  return {input[0], input[1], h_out, w_out};
}

void max_pool2d(const course::Tensor& input, const Pool2dParams& p, course::Tensor& output) {
  check_pool_io(input, p, output, "max_pool2d");
  const std::int64_t N = input.dim(0), C = input.dim(1), H = input.dim(2), W = input.dim(3);
  const std::int64_t H_out = output.dim(2), W_out = output.dim(3);

  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t oh = 0; oh < H_out; ++oh)
        for (std::int64_t ow = 0; ow < W_out; ++ow) {
          // Top-left corner of the window in input coordinates (may be negative: padding).
          const std::int64_t h0 = oh * p.stride_h - p.pad_h;
          const std::int64_t w0 = ow * p.stride_w - p.pad_w;
          // Padding behaves as -infinity: we simply never read it. Starting from -inf (not 0)
          // keeps an all-negative window from returning 0.
          float best = -std::numeric_limits<float>::infinity();
          for (std::int64_t ih = std::max<std::int64_t>(h0, 0); ih < std::min<std::int64_t>(h0 + p.kernel_h, H); ++ih)
            for (std::int64_t iw = std::max<std::int64_t>(w0, 0); iw < std::min<std::int64_t>(w0 + p.kernel_w, W); ++iw)
              best = std::max(best, input.at(n, c, ih, iw));
          output.at(n, c, oh, ow) = best;
        }
}

void avg_pool2d(const course::Tensor& input, const Pool2dParams& p, course::Tensor& output) {
  check_pool_io(input, p, output, "avg_pool2d");
  const std::int64_t N = input.dim(0), C = input.dim(1), H = input.dim(2), W = input.dim(3);
  const std::int64_t H_out = output.dim(2), W_out = output.dim(3);
  // In double: kernel_h * kernel_w can exceed an int (a huge window over a small padded input).
  const float full_window = static_cast<float>(static_cast<double>(p.kernel_h) * p.kernel_w);

  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t oh = 0; oh < H_out; ++oh)
        for (std::int64_t ow = 0; ow < W_out; ++ow) {
          const std::int64_t h0 = oh * p.stride_h - p.pad_h;
          const std::int64_t w0 = ow * p.stride_w - p.pad_w;
          // Clip the window to the image: padded taps are zeros, so they add nothing to the sum;
          // they only matter for the divisor.
          const std::int64_t h_begin = std::max<std::int64_t>(h0, 0), h_end = std::min<std::int64_t>(h0 + p.kernel_h, H);
          const std::int64_t w_begin = std::max<std::int64_t>(w0, 0), w_end = std::min<std::int64_t>(w0 + p.kernel_w, W);
          float sum = 0.0f;
          for (std::int64_t ih = h_begin; ih < h_end; ++ih)
            for (std::int64_t iw = w_begin; iw < w_end; ++iw) sum += input.at(n, c, ih, iw);
          const float in_image = static_cast<float>((h_end - h_begin) * (w_end - w_begin));
          output.at(n, c, oh, ow) = sum / (p.count_include_pad ? full_window : in_image);
        }
}

void global_avg_pool2d(const course::Tensor& input, course::Tensor& output) {
  if (input.rank() != 4)
    throw course::Error("global_avg_pool2d: input must be 4-D [N, C, H, W], got " +
                        course::shape_to_string(input.shape()));
  const std::int64_t N = input.dim(0), C = input.dim(1), H = input.dim(2), W = input.dim(3);
  if (N < 1 || C < 1 || H < 1 || W < 1)
    throw course::Error("global_avg_pool2d: every extent of input [N, C, H, W] must be at least 1, got " +
                        course::shape_to_string(input.shape()) + " (an empty plane has no average)");
  output.expect_shape({N, C, 1, 1}, "global_avg_pool2d: output");

  // In NCHW each (n, c) plane is H*W contiguous floats, so plane i starts at i*H*W.
  const std::int64_t plane = H * W;
  const float* src = input.data();
  for (std::int64_t i = 0; i < N * C; ++i) {
    // A double accumulator keeps the mean accurate for large planes (e.g. 56x56 = 3136 values).
    double sum = 0.0;
    for (std::int64_t j = 0; j < plane; ++j) sum += src[i * plane + j];
    output.data()[i] = static_cast<float>(sum / static_cast<double>(plane));
  }
}

}  // namespace lab03
