// Lab 02, part 1: the general 2-D convolution -- zero padding on each side, stride, dilation.
//
// Lab 01's convolution is the special case pad = 0, stride = 1, dilation = 1. Everything new here
// is about WHERE each kernel tap lands in the input; the multiply-add itself does not change.
// Read common/include/labs/lab02_padding_stride.hpp for the exact contract of each function.
#include <string>

#include "course/error.hpp"
#include "labs/lab02_padding_stride.hpp"

namespace lab02 {

int conv_output_size([[maybe_unused]] int input, [[maybe_unused]] int kernel, [[maybe_unused]] int pad_before,
                     [[maybe_unused]] int pad_after, [[maybe_unused]] int stride, [[maybe_unused]] int dilation) {
  // TODO 1: reject invalid parameters with course::Error, naming the parameter in the message:
  //         input < 1 ("input"), kernel < 1 ("kernel"), stride < 1 ("stride"),
  //         dilation < 1 ("dilation"), pad_before or pad_after < 0 ("padding").
  // TODO 2: effective kernel = dilation * (kernel - 1) + 1; padded = input + pad_before + pad_after.
  //         If the effective kernel does not fit in the padded input, throw an error that says
  //         "output size" (it would be <= 0). Check this BEFORE dividing: C++ '/' truncates
  //         toward zero, so (-1) / 2 == 0 and you would return 1 instead of 0.
  // TODO 3: return (padded - effective kernel) / stride + 1.
  throw course::NotImplemented("lab02::conv_output_size");
}

course::Shape conv2d_output_shape([[maybe_unused]] const course::Shape& input,
                                  [[maybe_unused]] const course::Shape& weight,
                                  [[maybe_unused]] const Conv2dParams& p) {
  // TODO 1: input must be 4-D [N, C, H, W] and weight 4-D [K, C, R, S] with the same C;
  //         otherwise throw course::Error (say "input", "weight" or "channels"; print shapes
  //         with course::shape_to_string).
  // TODO 2: height uses (H, R, pad_top, pad_bottom, stride_h, dilation_h), width uses
  //         (W, S, pad_left, pad_right, stride_w, dilation_w) -- call conv_output_size for each.
  //         Tip: naming the field (e.g. "stride_w must be >= 1") makes the error easy to act on.
  // TODO 3: return {N, K, H_out, W_out}.
  throw course::NotImplemented("lab02::conv2d_output_shape");
}

void conv2d_forward([[maybe_unused]] const course::Tensor& input, [[maybe_unused]] const course::Tensor& weight,
                    [[maybe_unused]] const course::Tensor& bias, [[maybe_unused]] const Conv2dParams& p,
                    [[maybe_unused]] course::Tensor& output) {
  // TODO 1: validate: the shape from conv2d_output_shape, bias of shape [K] and output of that
  //         shape (Tensor::expect_shape(expected, "conv2d_forward: bias") does the message).
  // TODO 2: for every (n, k, oh, ow): start from bias[k]; the window's top-left input pixel is
  //         (oh * stride_h - pad_top, ow * stride_w - pad_left) -- negative means "in the padding".
  //         Tap (r, s) reads input row  oh * stride_h - pad_top  + r * dilation_h
  //                           and column ow * stride_w - pad_left + s * dilation_w.
  //         Taps outside [0, H) x [0, W) read zero: skip them (do not build a padded copy).
  // TODO 3: write every output element (the tests fill the output with NaN beforehand and call
  //         the function twice on the same buffer).
  throw course::NotImplemented("lab02::conv2d_forward");
}

}  // namespace lab02
