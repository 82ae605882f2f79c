// Lab 03 exercise: max, average and global-average pooling on NCHW tensors.
//
// Read the interface first: common/include/labs/lab03_pooling_activations.hpp
// and the lecture: lectures/03-pooling-activations.md
// Grade just this lab with:  ./course grade lab03
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "course/error.hpp"
#include "labs/lab03_pooling_activations.hpp"

namespace lab03 {

course::Shape pool2d_output_shape([[maybe_unused]] const course::Shape& input,
                                  [[maybe_unused]] const Pool2dParams& p) {
  // TODO: reject an input that is not 4-D [N, C, H, W] (throw course::Error).
  // TODO: for each axis (h, then w) reject kernel < 1, stride < 1, pad < 0 and pad > kernel / 2,
  //       naming the parameter in the message ("kernel_h", "stride_w", "pad_h", ...).
  // TODO: reject a window that does not fit the padded input (in + 2*pad < kernel). Do this
  //       BEFORE dividing: C++ integer division truncates toward zero, so (-1) / 2 == 0.
  // TODO: return {N, C, (H + 2*pad_h - kernel_h) / stride_h + 1, (W + 2*pad_w - kernel_w) / stride_w + 1}.
  throw course::NotImplemented("lab03::pool2d_output_shape");
}

void max_pool2d([[maybe_unused]] const course::Tensor& input,
                [[maybe_unused]] const Pool2dParams& p, [[maybe_unused]] course::Tensor& output) {
  // TODO: check output.shape() against pool2d_output_shape(input.shape(), p)
  //       (output.expect_shape(...) throws the right error for you).
  // TODO: for every (n, c, oh, ow): the window starts at (oh*stride_h - pad_h, ow*stride_w - pad_w).
  //       Start from -infinity and take the max over the taps that fall inside the image only;
  //       padding must never win, not even over an all-negative window.
  throw course::NotImplemented("lab03::max_pool2d");
}

void avg_pool2d([[maybe_unused]] const course::Tensor& input,
                [[maybe_unused]] const Pool2dParams& p, [[maybe_unused]] course::Tensor& output) {
  // TODO: the same windows as max_pool2d, but sum the in-image taps (padding adds zeros).
  // TODO: divide by kernel_h*kernel_w when p.count_include_pad, otherwise by the number of
  //       in-image taps of this particular window (smaller at the borders).
  throw course::NotImplemented("lab03::avg_pool2d");
}

void global_avg_pool2d([[maybe_unused]] const course::Tensor& input,
                       [[maybe_unused]] course::Tensor& output) {
  // TODO: input must be 4-D with H, W >= 1; output must be [N, C, 1, 1].
  // TODO: each output is the mean of one H x W plane (in NCHW a plane is H*W contiguous floats).
  throw course::NotImplemented("lab03::global_avg_pool2d");
}

}  // namespace lab03
