// Lab 02 interface: general 2-D convolution (asymmetric zero padding, stride, dilation),
// TensorFlow SAME/VALID padding rules, and NCHW <-> NHWC layout conversion.
//
// Students implement these functions in exercises/lab02_padding_stride/; later labs (the CPU
// LeNet of lab 04) call lab02::conv2d_forward, so the names and signatures are fixed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "course/tensor.hpp"

namespace lab02 {

/// Everything that decides where a convolution window lands, besides the kernel size.
struct Conv2dParams {
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;  // zero padding, may be asymmetric
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;

  /// The same padding on all four sides, the same stride and dilation in both directions
  /// (what PyTorch's nn.Conv2d(padding=p, stride=s, dilation=d) means).
  static Conv2dParams symmetric(int pad, int stride = 1, int dilation = 1);
};

inline Conv2dParams Conv2dParams::symmetric(int pad, int stride, int dilation) {
  Conv2dParams p;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = pad;
  p.stride_h = p.stride_w = stride;
  p.dilation_h = p.dilation_w = dilation;
  return p;
}

/// One spatial dimension: floor((in + pad_before + pad_after - dilation*(kernel-1) - 1) / stride) + 1.
/// Throws course::Error (naming the parameter) for input < 1, stride < 1, dilation < 1, kernel < 1,
/// negative padding, an output size <= 0, or an output size too large for an int (mention
/// "output size"). input + padding and dilation * (kernel - 1) can exceed an int: compute in 64-bit.
int conv_output_size(int input, int kernel, int pad_before, int pad_after, int stride, int dilation);

/// [N, C, H, W] input and [K, C, R, S] weight -> [N, K, P, Q] (output rows and columns, each from
/// conv_output_size; the letters are those of lectures/notation.md).
/// Throws course::Error for wrong ranks or an extent < 1 (as lab 01; the message names "input" or
/// "weight"), H, W, R or S larger than an int, mismatched channels ("channels") or invalid
/// parameters (naming the field, e.g. "stride_h").
course::Shape conv2d_output_shape(const course::Shape& input, const course::Shape& weight, const Conv2dParams& p);

/// output[n,k,p,q] = bias[k] + sum_{c,r,s} input[n, c, p*stride_h - pad_top + r*dilation_h,
///                                                   q*stride_w - pad_left + s*dilation_w] * weight[k,c,r,s]
/// (positions outside the input read as zero). `bias` has shape [K]; `output` must already have
/// the shape conv2d_output_shape(...) returns and is fully overwritten.
void conv2d_forward(const course::Tensor& input, const course::Tensor& weight, const course::Tensor& bias,
                    const Conv2dParams& p, course::Tensor& output);

/// TensorFlow-style padding for one dimension. VALID: {0,0}. SAME: out = ceil(in/stride),
/// total = max((out-1)*stride + dilation*(kernel-1) + 1 - in, 0), before = total/2,
/// after = total - before (the extra pixel goes after, i.e. bottom/right).
/// Throws course::Error for input, kernel, stride or dilation < 1, and when the SAME padding does
/// not fit in an int (compute in 64-bit: input + stride and dilation * kernel can exceed an int).
enum class TfPadding { Same, Valid };
struct Padding1d {
  int before = 0, after = 0;
};
Padding1d tf_padding(TfPadding mode, int input, int kernel, int stride, int dilation = 1);

/// "And back": which TF mode explicit padding corresponds to, if any
/// (Valid when both are 0 -- report Valid before Same if both would match). "Corresponds" means
/// the padding equals what tf_padding returns for that mode; std::nullopt when neither does.
/// Throws course::Error for negative padding ("padding") and whatever tf_padding rejects.
std::optional<TfPadding> tf_mode_for(Padding1d explicit_padding, int input, int kernel, int stride, int dilation = 1);

/// Flat index of element (n, c, h, w) of a tensor stored in NCHW order. Both offset functions
/// throw course::Error for a shape that is not 4-D or an index outside it.
std::size_t nchw_offset(const course::Shape& nchw_shape, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w);
/// Flat index of element (n, c, h, w) of the same tensor stored in NHWC order
/// (the shape is still given as [N, C, H, W]).
std::size_t nhwc_offset(const course::Shape& nchw_shape, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w);
/// `nhwc` must already have shape [N, H, W, C] for an [N, C, H, W] input (and be a different tensor).
/// Both conversions throw course::Error for an input that is not 4-D or has an extent < 1.
void nchw_to_nhwc(const course::Tensor& nchw, course::Tensor& nhwc);
/// `nchw` must already have shape [N, C, H, W] for an [N, H, W, C] input.
void nhwc_to_nchw(const course::Tensor& nhwc, course::Tensor& nchw);

}  // namespace lab02
