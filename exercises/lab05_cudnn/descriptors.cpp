// Lab 05 exercise, part 1: descriptors. cuDNN never sees a shape as such: every tensor, filter,
// convolution and pooling window is described once in a descriptor, and the compute calls take
// the descriptors next to the raw device pointers.
// The contract is in common/include/labs/lab05_cudnn.hpp; the lecture is lectures/05-cudnn.md.
#include <cstdint>
#include <string>

#include "course/cudnn_check.hpp"
#include "course/error.hpp"
#include "labs/lab05_cudnn.hpp"

namespace lab05 {

void set_nchw_descriptor([[maybe_unused]] cudnnTensorDescriptor_t desc, [[maybe_unused]] const course::Shape& shape,
                         [[maybe_unused]] const char* what) {
  // TODO 1: check that `shape` is 4-D with every extent in 1..INT32_MAX (else course::Error
  //   starting with `what`), then cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW,
  //   CUDNN_DATA_FLOAT, n, c, h, w) inside CUDNN_CHECK.
  throw course::NotImplemented("lab05::set_nchw_descriptor");
}

ConvDescriptors make_conv_descriptors([[maybe_unused]] const course::Shape& input,
                                      [[maybe_unused]] const course::Shape& weight,
                                      [[maybe_unused]] const ConvParams& p) {
  // TODO 2: validate as the header says ("input", "weight", "channels", "pad", "stride",
  //   "dilation", "output"), BEFORE calling cuDNN: it would only answer CUDNN_STATUS_BAD_PARAM.
  //   The output is empty when dilation*(kernel-1)+1 > input + 2*pad on either axis.
  // TODO 3: fill a ConvDescriptors d:
  //   d.x      set_nchw_descriptor
  //   d.w      cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, R, S)
  //   d.conv   cudnnSetConvolution2dDescriptor(..., CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
  //            then cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH): no TF32
  //   d.y_shape from cudnnGetConvolution2dForwardOutputDim, and d.y from it.
  throw course::NotImplemented("lab05::make_conv_descriptors");
}

course::Shape conv2d_output_shape(const course::Shape& input, const course::Shape& weight, const ConvParams& p) {
  return make_conv_descriptors(input, weight, p).y_shape;  // given: the descriptors know the answer
}

course::Shape pool2d_output_shape([[maybe_unused]] const course::Shape& input, [[maybe_unused]] const PoolParams& p) {
  // TODO 4: validate ("input", "kernel", "stride", "pad": 0 <= pad <= kernel/2, "output") and
  //   return [N, C, (H + 2*pad_h - kernel_h) / stride_h + 1, (W + 2*pad_w - kernel_w) / stride_w + 1].
  throw course::NotImplemented("lab05::pool2d_output_shape");
}

}  // namespace lab05
