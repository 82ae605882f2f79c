// Lab 05 exercise, part 3: the layers. Each function validates, builds its descriptors, and
// enqueues one or a few library calls on ctx.stream(); nothing here waits for the GPU.
// The contract is in common/include/labs/lab05_cudnn.hpp; the lecture is lectures/05-cudnn.md.
//
// alpha/beta: every cuDNN compute call blends y = alpha * result + beta * y. beta = 0 overwrites
// y (its old contents, NaN included, are ignored); beta = 1 accumulates into it.
#include <cstdint>
#include <string>

#include "course/cublas_check.hpp"
#include "course/cudnn_check.hpp"
#include "course/error.hpp"
#include "labs/lab05_cudnn.hpp"

namespace lab05 {
namespace {

/// Given: like CUDNN_CHECK, but the message also names the shapes the call was made for.
/// Use it as check(cudnnConvolutionForward(...), "cudnnConvolutionForward", "input [..], weight [..]").
[[maybe_unused]] void check(cudnnStatus_t status, const char* call, const std::string& shapes) {
  if (status != CUDNN_STATUS_SUCCESS)
    course::detail::throw_cudnn_error(status, (std::string(call) + " for " + shapes).c_str(), __FILE__, __LINE__);
}

}  // namespace

void conv2d_forward([[maybe_unused]] Context& ctx, [[maybe_unused]] const float* d_x,
                    [[maybe_unused]] const course::Shape& x_shape, [[maybe_unused]] const float* d_w,
                    [[maybe_unused]] const course::Shape& w_shape, [[maybe_unused]] const float* d_b,
                    [[maybe_unused]] const ConvParams& p, [[maybe_unused]] float* d_y) {
  // TODO 1: make_conv_descriptors, choose_conv_algorithm(ctx, ConvKey{x_shape, w_shape, p, false}, d),
  //   ctx.workspace(bytes), cudnnConvolutionForward with alpha 1, beta 0.
  // TODO 2: if d_b is not null, add it: a [1, K, 1, 1] tensor descriptor and cudnnAddTensor
  //   with alpha 1, beta 1 (it broadcasts over N, H, W).
  throw course::NotImplemented("lab05::conv2d_forward");
}

void conv_bias_relu_forward([[maybe_unused]] Context& ctx, [[maybe_unused]] const float* d_x,
                            [[maybe_unused]] const course::Shape& x_shape, [[maybe_unused]] const float* d_w,
                            [[maybe_unused]] const course::Shape& w_shape, [[maybe_unused]] const float* d_b,
                            [[maybe_unused]] const ConvParams& p, [[maybe_unused]] float* d_y) {
  // TODO 3: descriptors, reject a null bias ("bias"), the algorithm for the fused key, an
  //   activation descriptor (CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, coef 0), then ONE
  //   cudnnConvolutionBiasActivationForward: alpha1 = 1, alpha2 = 0 and z = y (a valid tensor is
  //   required even when its weight is 0).
  throw course::NotImplemented("lab05::conv_bias_relu_forward");
}

void relu_forward([[maybe_unused]] Context& ctx, [[maybe_unused]] const float* d_x,
                  [[maybe_unused]] const course::Shape& shape, [[maybe_unused]] float* d_y) {
  // TODO 4: accept 4-D, or 2-D [N, F] seen as [N, F, 1, 1] ("shape" in the error otherwise);
  //   cudnnActivationForward with a ReLU activation descriptor (in place is allowed).
  throw course::NotImplemented("lab05::relu_forward");
}

void max_pool2d([[maybe_unused]] Context& ctx, [[maybe_unused]] const float* d_x,
                [[maybe_unused]] const course::Shape& x_shape, [[maybe_unused]] const PoolParams& p,
                [[maybe_unused]] float* d_y) {
  // TODO 5: pool2d_output_shape, descriptors for x and y, a pooling descriptor
  //   (cudnnSetPooling2dDescriptor, CUDNN_POOLING_MAX), cudnnPoolingForward.
  throw course::NotImplemented("lab05::max_pool2d");
}

void linear_forward([[maybe_unused]] Context& ctx, [[maybe_unused]] const float* d_x,
                    [[maybe_unused]] const course::Shape& x_shape, [[maybe_unused]] const float* d_w,
                    [[maybe_unused]] const course::Shape& w_shape, [[maybe_unused]] const float* d_b,
                    [[maybe_unused]] bool relu, [[maybe_unused]] float* d_y) {
  // TODO 6: validate ("input", "weight", "features", "bias").
  // TODO 7: one cublasSgemm computing Y = X W^T for row-major buffers. cuBLAS is column-major,
  //   and a row-major [R, C] buffer IS the column-major [C, R] transpose: compute
  //   Y^T = W X^T (m = OUT, n = N, k = IN). Which operand needs CUBLAS_OP_T, and what are the
  //   three leading dimensions? The lecture works this through on a 2x3 example.
  // TODO 8: add the bias ([1, OUT, 1, 1] onto [N, OUT, 1, 1], cudnnAddTensor) and, if relu,
  //   apply ReLU in place.
  throw course::NotImplemented("lab05::linear_forward");
}

void softmax_forward([[maybe_unused]] Context& ctx, [[maybe_unused]] const float* d_logits,
                     [[maybe_unused]] const course::Shape& shape, [[maybe_unused]] float* d_probabilities) {
  // TODO 9: validate ("logits"), then cudnnSoftmaxForward with CUDNN_SOFTMAX_ACCURATE and
  //   CUDNN_SOFTMAX_MODE_INSTANCE on [N, K, 1, 1].
  throw course::NotImplemented("lab05::softmax_forward");
}

}  // namespace lab05
