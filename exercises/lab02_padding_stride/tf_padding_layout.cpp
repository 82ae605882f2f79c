// Lab 02, part 2: TensorFlow's SAME/VALID padding rules (and back to explicit padding), and the
// two memory layouts of a 4-D activation, NCHW (PyTorch) and NHWC (TensorFlow, Tensor Cores).
// Read common/include/labs/lab02_padding_stride.hpp for the exact contract of each function.
#include <algorithm>
#include <string>

#include "course/error.hpp"
#include "labs/lab02_padding_stride.hpp"

namespace lab02 {

Padding1d tf_padding([[maybe_unused]] TfPadding mode, [[maybe_unused]] int input, [[maybe_unused]] int kernel,
                     [[maybe_unused]] int stride, [[maybe_unused]] int dilation) {
  // TODO 1: throw course::Error for input, kernel, stride or dilation < 1 (name the parameter).
  // TODO 2: VALID -> {0, 0}.
  // TODO 3: SAME: out = ceil(input / stride) (integer form: (input + stride - 1) / stride);
  //         total = max((out - 1) * stride + dilation * (kernel - 1) + 1 - input, 0);
  //         before = total / 2, after = total - before (the odd pixel goes AFTER).
  throw course::NotImplemented("lab02::tf_padding");
}

std::optional<TfPadding> tf_mode_for([[maybe_unused]] Padding1d explicit_padding, [[maybe_unused]] int input,
                                     [[maybe_unused]] int kernel, [[maybe_unused]] int stride,
                                     [[maybe_unused]] int dilation) {
  // TODO 1: validate the parameters (calling tf_padding does that for you).
  // TODO 2: {0, 0} -> Valid (checked first: it wins when SAME needs no padding either);
  //         equal to tf_padding(Same, ...) -> Same; anything else -> std::nullopt.
  throw course::NotImplemented("lab02::tf_mode_for");
}

std::size_t nchw_offset([[maybe_unused]] const course::Shape& nchw_shape, [[maybe_unused]] std::int64_t n,
                        [[maybe_unused]] std::int64_t c, [[maybe_unused]] std::int64_t h,
                        [[maybe_unused]] std::int64_t w) {
  // TODO 1: throw course::Error unless the shape is 4-D (print it with course::shape_to_string)
  //         and 0 <= n < N, 0 <= c < C, 0 <= h < H, 0 <= w < W.
  // TODO 2: return n*C*H*W + c*H*W + h*W + w.
  throw course::NotImplemented("lab02::nchw_offset");
}

std::size_t nhwc_offset([[maybe_unused]] const course::Shape& nchw_shape, [[maybe_unused]] std::int64_t n,
                        [[maybe_unused]] std::int64_t c, [[maybe_unused]] std::int64_t h,
                        [[maybe_unused]] std::int64_t w) {
  // TODO 1: the same checks as nchw_offset (the shape is still given as [N, C, H, W]).
  // TODO 2: return n*H*W*C + h*W*C + w*C + c.
  throw course::NotImplemented("lab02::nhwc_offset");
}

void nchw_to_nhwc([[maybe_unused]] const course::Tensor& nchw, [[maybe_unused]] course::Tensor& nhwc) {
  // TODO 1: nchw must be 4-D [N, C, H, W]; nhwc must have shape [N, H, W, C]
  //         (nhwc.expect_shape({N, H, W, C}, "nchw_to_nhwc: nhwc") reports it) and must not be
  //         the same tensor as nchw.
  // TODO 2: copy every element: nhwc[NHWC offset of (n,c,h,w)] = nchw[NCHW offset of (n,c,h,w)].
  throw course::NotImplemented("lab02::nchw_to_nhwc");
}

void nhwc_to_nchw([[maybe_unused]] const course::Tensor& nhwc, [[maybe_unused]] course::Tensor& nchw) {
  // TODO 1: nhwc must be 4-D [N, H, W, C]; nchw must have shape [N, C, H, W] and be another tensor.
  // TODO 2: the inverse copy of nchw_to_nhwc.
  throw course::NotImplemented("lab02::nhwc_to_nchw");
}

}  // namespace lab02
