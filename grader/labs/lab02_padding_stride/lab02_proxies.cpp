// Test-program side of lab02_padding_stride: each function of the interface header forwards its call to
// the worker process that runs the student's code (grader/rpc/proxy.hpp).
#include "labs/lab02_padding_stride.hpp"
#include "lab02_rpc.hpp"
#include "rpc/proxy.hpp"

namespace lab02 {

int conv_output_size(int input, int kernel, int pad_before, int pad_after, int stride, int dilation) {
  return COURSE_RPC_FORWARD(lab02::conv_output_size, input, kernel, pad_before, pad_after, stride, dilation);
}

course::Shape conv2d_output_shape(const course::Shape& input, const course::Shape& weight, const Conv2dParams& p) {
  return COURSE_RPC_FORWARD(lab02::conv2d_output_shape, input, weight, p);
}

void conv2d_forward(const course::Tensor& input, const course::Tensor& weight, const course::Tensor& bias, const Conv2dParams& p, course::Tensor& output) {
  COURSE_RPC_FORWARD(lab02::conv2d_forward, input, weight, bias, p, output);
}

Padding1d tf_padding(TfPadding mode, int input, int kernel, int stride, int dilation) {
  return COURSE_RPC_FORWARD(lab02::tf_padding, mode, input, kernel, stride, dilation);
}

std::optional<TfPadding> tf_mode_for(Padding1d explicit_padding, int input, int kernel, int stride, int dilation) {
  return COURSE_RPC_FORWARD(lab02::tf_mode_for, explicit_padding, input, kernel, stride, dilation);
}

std::size_t nchw_offset(const course::Shape& nchw_shape, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return COURSE_RPC_FORWARD(lab02::nchw_offset, nchw_shape, n, c, h, w);
}

std::size_t nhwc_offset(const course::Shape& nchw_shape, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return COURSE_RPC_FORWARD(lab02::nhwc_offset, nchw_shape, n, c, h, w);
}

void nchw_to_nhwc(const course::Tensor& nchw, course::Tensor& nhwc) {
  COURSE_RPC_FORWARD(lab02::nchw_to_nhwc, nchw, nhwc);
}

void nhwc_to_nchw(const course::Tensor& nhwc, course::Tensor& nchw) {
  COURSE_RPC_FORWARD(lab02::nhwc_to_nchw, nhwc, nchw);
}

}  // namespace lab02
