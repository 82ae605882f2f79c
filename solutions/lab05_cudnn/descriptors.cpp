// Lab 05 solution, part 1: descriptors. cuDNN never sees a shape as such: every tensor, filter,
// convolution and pooling window is described once in a descriptor, and the compute calls take
// the descriptors next to the raw device pointers.
#include <cstdint>
#include <string>

#include "course/cudnn_check.hpp"
#include "course/error.hpp"
#include "labs/lab05_cudnn.hpp"

namespace lab05 {
namespace {

bool is_4d_positive(const course::Shape& s) {
  if (s.size() != 4) return false;
  for (std::int64_t extent : s)
    if (extent < 1 || extent > INT32_MAX) return false;
  return true;
}

[[noreturn]] void fail(const std::string& message) { throw course::Error(message); }

}  // namespace

void set_nchw_descriptor(cudnnTensorDescriptor_t desc, const course::Shape& shape, const char* what) {
  if (!is_4d_positive(shape))
    fail(std::string(what) + ": expected a 4-D NCHW shape with every extent >= 1, got " +
         course::shape_to_string(shape));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(shape[0]),
                                         static_cast<int>(shape[1]), static_cast<int>(shape[2]),
                                         static_cast<int>(shape[3])));
}

ConvDescriptors make_conv_descriptors(const course::Shape& input, const course::Shape& weight, const ConvParams& p) {
  // Validate first, in the words of the header: cuDNN would only answer CUDNN_STATUS_BAD_PARAM.
  const std::string shapes = " (input " + course::shape_to_string(input) + ", weight " +
                             course::shape_to_string(weight) + ")";
  if (!is_4d_positive(input)) fail("conv2d: input must be 4-D NCHW with every extent >= 1" + shapes);
  if (!is_4d_positive(weight)) fail("conv2d: weight must be 4-D KCRS with every extent >= 1" + shapes);
  if (input[1] != weight[1])
    fail("conv2d: the weight's channels (" + std::to_string(weight[1]) + ") differ from the input's channels (" +
         std::to_string(input[1]) + ")" + shapes);
  if (p.pad_h < 0 || p.pad_w < 0) fail("conv2d: pad must be >= 0" + shapes);
  if (p.stride_h < 1 || p.stride_w < 1) fail("conv2d: stride must be >= 1" + shapes);
  if (p.dilation_h < 1 || p.dilation_w < 1) fail("conv2d: dilation must be >= 1" + shapes);
  const std::int64_t span_h = std::int64_t{p.dilation_h} * (weight[2] - 1) + 1;
  const std::int64_t span_w = std::int64_t{p.dilation_w} * (weight[3] - 1) + 1;
  if (span_h > input[2] + 2 * std::int64_t{p.pad_h} || span_w > input[3] + 2 * std::int64_t{p.pad_w})
    fail("conv2d: the output would be empty: the dilated kernel is larger than the padded input" + shapes);

  ConvDescriptors d;
  set_nchw_descriptor(d.x, input, "conv2d input");
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(weight[0]),
                                         static_cast<int>(weight[1]), static_cast<int>(weight[2]),
                                         static_cast<int>(weight[3])));
  // CROSS_CORRELATION: the window is not flipped, which is what every framework calls convolution.
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d.conv, p.pad_h, p.pad_w, p.stride_h, p.stride_w, p.dilation_h,
                                              p.dilation_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  // FMA only: on Ampere and later the default lets fp32 convolutions run in TF32 on tensor cores.
  CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH));

  int n = 0, k = 0, h = 0, w = 0;
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &k, &h, &w));
  d.y_shape = {n, k, h, w};
  set_nchw_descriptor(d.y, d.y_shape, "conv2d output");
  return d;
}

course::Shape conv2d_output_shape(const course::Shape& input, const course::Shape& weight, const ConvParams& p) {
  return make_conv_descriptors(input, weight, p).y_shape;
}

course::Shape pool2d_output_shape(const course::Shape& input, const PoolParams& p) {
  const std::string where = " (input " + course::shape_to_string(input) + ")";
  if (!is_4d_positive(input)) fail("max_pool2d: input must be 4-D NCHW with every extent >= 1" + where);
  if (p.kernel_h < 1 || p.kernel_w < 1) fail("max_pool2d: kernel must be >= 1" + where);
  if (p.stride_h < 1 || p.stride_w < 1) fail("max_pool2d: stride must be >= 1" + where);
  // A window lying entirely in the padding would have no input to take the maximum of.
  if (p.pad_h < 0 || p.pad_w < 0 || p.pad_h > p.kernel_h / 2 || p.pad_w > p.kernel_w / 2)
    fail("max_pool2d: pad must be between 0 and half the kernel (unsupported configuration)" + where);
  const std::int64_t h = (input[2] + 2 * p.pad_h - p.kernel_h);
  const std::int64_t w = (input[3] + 2 * p.pad_w - p.kernel_w);
  if (h < 0 || w < 0) fail("max_pool2d: the output would be empty: the window is larger than the padded input" + where);
  return {input[0], input[1], h / p.stride_h + 1, w / p.stride_w + 1};
}

}  // namespace lab05
