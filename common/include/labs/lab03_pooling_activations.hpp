// Lab 03 interface: pooling, element-wise activations and a numerically stable softmax.
//
// Exercises and solutions both implement exactly these functions (pooling.cpp, activations.cpp).
// Conventions shared with the other labs:
//  - activations are NCHW float32 ([batch, channels, height, width]);
//  - outputs are allocated by the caller with the right shape and may contain garbage (the
//    tests fill them with NaN), so every element must be written;
//  - every invalid argument is reported by throwing course::Error whose message names the
//    argument and the problem.
#pragma once

#include "course/tensor.hpp"

namespace lab03 {

/// Window geometry of a 2-D pooling layer. Padding is symmetric: pad_h rows above AND below,
/// pad_w columns left AND right (the PyTorch convention).
struct Pool2dParams {
  int kernel_h = 2, kernel_w = 2, stride_h = 2, stride_w = 2, pad_h = 0, pad_w = 0;
  /// Average pooling only: divide by the full window area kernel_h*kernel_w (true, PyTorch's
  /// default) or only by the number of taps that land inside the image (false).
  bool count_include_pad = true;

  /// A square window: kernel x kernel, stride x stride, pad on every side.
  static Pool2dParams square(int kernel, int stride, int pad = 0) {
    Pool2dParams p;
    p.kernel_h = kernel;
    p.kernel_w = kernel;
    p.stride_h = stride;
    p.stride_w = stride;
    p.pad_h = pad;
    p.pad_w = pad;
    return p;
  }
};

/// Output shape of 2-D pooling on an NCHW input: [N, C, P, Q] (output rows, columns) with, per axis,
///   out = floor((in + 2*pad - kernel) / stride) + 1
/// Throws course::Error when the input is not 4-D or has an extent < 1 (an empty plane has no
/// window with a real pixel in it; message names "input"), when a kernel or stride is < 1, when a pad
/// is < 0 or larger than half its kernel (pad > kernel/2, PyTorch's rule: otherwise a window
/// could lie entirely in the padding), or when an output extent would be <= 0.
course::Shape pool2d_output_shape(const course::Shape& input, const Pool2dParams& p);

/// Max pooling: each output is the largest input inside its window. Padding counts as
/// -infinity, so it never wins (an all-negative window returns its largest real value).
/// `output` must have shape pool2d_output_shape(input.shape(), p).
void max_pool2d(const course::Tensor& input, const Pool2dParams& p, course::Tensor& output);

/// Average pooling: the mean of the window, padding counted as zeros. The divisor is
/// kernel_h*kernel_w when p.count_include_pad, else the number of in-image taps.
/// `output` must have shape pool2d_output_shape(input.shape(), p).
void avg_pool2d(const course::Tensor& input, const Pool2dParams& p, course::Tensor& output);

/// Global average pooling: [N, C, H, W] -> [N, C, 1, 1], the mean of each H x W plane.
/// Throws course::Error for an input that is not 4-D or has an extent < 1, or a wrong output shape.
void global_avg_pool2d(const course::Tensor& input, course::Tensor& output);

// Element-wise activations on tensors of any shape. `input` and `output` must have equal
// shapes and may be the SAME tensor (in-place call).

/// max(0, x)
void relu(const course::Tensor& input, course::Tensor& output);
/// x for x >= 0, negative_slope * x otherwise.
void leaky_relu(const course::Tensor& input, float negative_slope, course::Tensor& output);
/// 1 / (1 + exp(-x)), computed without overflow or NaN for any finite x.
void sigmoid(const course::Tensor& input, course::Tensor& output);
/// tanh(x), saturating cleanly to +-1 for large |x|.
void tanh_activation(const course::Tensor& input, course::Tensor& output);

/// Row-wise softmax over the last dimension of a 2-D [N, L] tensor (L classes):
///   p[n][l] = exp(x[n][l] - M) / sum_j exp(x[n][j] - M),  M = max_j x[n][j]
/// Must not overflow for large logits (subtract the row max first). `probabilities` must have
/// the same [N, L] shape as `logits`; N and L must be >= 1 (course::Error naming "logits" otherwise).
void softmax(const course::Tensor& logits, course::Tensor& probabilities);

}  // namespace lab03
