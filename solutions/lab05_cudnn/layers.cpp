// Lab 05 solution, part 3: the layers. Each function validates, builds its descriptors, and
// enqueues one or a few library calls on ctx.stream(); nothing here waits for the GPU.
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

constexpr float kOne = 1.0f, kZero = 0.0f;

/// Like CUDNN_CHECK, but the message also names the shapes the call was made for.
void check(cudnnStatus_t status, const char* call, const std::string& shapes) {
  if (status != CUDNN_STATUS_SUCCESS)
    course::detail::throw_cudnn_error(status, (std::string(call) + " for " + shapes).c_str(), __FILE__, __LINE__);
}

std::string conv_shapes(const course::Shape& x, const course::Shape& w) {
  return "input " + course::shape_to_string(x) + ", weight " + course::shape_to_string(w);
}

/// [N, F] -> [N, F, 1, 1]: cuDNN's element-wise calls want 4-D descriptors.
course::Shape as_4d(const course::Shape& s) { return s.size() == 2 ? course::Shape{s[0], s[1], 1, 1} : s; }

bool is_2d_positive(const course::Shape& s) {
  return s.size() == 2 && s[0] >= 1 && s[1] >= 1 && s[0] <= INT32_MAX && s[1] <= INT32_MAX;
}

void relu_in_place(Context& ctx, cudnnTensorDescriptor_t desc, float* d_y, const std::string& shapes) {
  course::cudnn::ActivationDescriptor relu;
  // coef (the last argument) only matters for clipped ReLU and ELU.
  CUDNN_CHECK(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  check(cudnnActivationForward(ctx.cudnn(), relu, &kOne, desc, d_y, &kZero, desc, d_y), "cudnnActivationForward",
        shapes);
}

}  // namespace

void conv2d_forward(Context& ctx, const float* d_x, const course::Shape& x_shape, const float* d_w,
                    const course::Shape& w_shape, const float* d_b, const ConvParams& p, float* d_y) {
  const ConvDescriptors d = make_conv_descriptors(x_shape, w_shape, p);
  const ConvAlgorithm algo = choose_conv_algorithm(ctx, ConvKey{x_shape, w_shape, p, false}, d);
  void* workspace = ctx.workspace(algo.workspace_bytes);
  const std::string shapes = conv_shapes(x_shape, w_shape);
  check(cudnnConvolutionForward(ctx.cudnn(), &kOne, d.x, d_x, d.w, d_w, d.conv, algo.algo, workspace,
                                algo.workspace_bytes, &kZero, d.y, d_y),
        "cudnnConvolutionForward", shapes);
  if (d_b != nullptr) {
    // The bias is a [1, K, 1, 1] tensor; cudnnAddTensor broadcasts it over N, H and W.
    course::cudnn::TensorDescriptor bias;
    set_nchw_descriptor(bias, {1, w_shape[0], 1, 1}, "conv2d bias");
    check(cudnnAddTensor(ctx.cudnn(), &kOne, bias, d_b, &kOne, d.y, d_y), "cudnnAddTensor", shapes);
  }
}

void conv_bias_relu_forward(Context& ctx, const float* d_x, const course::Shape& x_shape, const float* d_w,
                            const course::Shape& w_shape, const float* d_b, const ConvParams& p, float* d_y) {
  const ConvDescriptors d = make_conv_descriptors(x_shape, w_shape, p);
  if (d_b == nullptr) throw course::Error("conv_bias_relu: bias must not be null (the fused call always adds one)");
  const ConvAlgorithm algo = choose_conv_algorithm(ctx, ConvKey{x_shape, w_shape, p, true}, d);
  void* workspace = ctx.workspace(algo.workspace_bytes);
  course::cudnn::TensorDescriptor bias;
  set_nchw_descriptor(bias, {1, w_shape[0], 1, 1}, "conv_bias_relu bias");
  course::cudnn::ActivationDescriptor relu;
  CUDNN_CHECK(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  // y = relu(alpha1 * conv(x) + alpha2 * z + bias). With alpha2 = 0 the z term drops out, but
  // cuDNN still wants a valid z: y itself (same shape) is the usual choice.
  check(cudnnConvolutionBiasActivationForward(ctx.cudnn(), &kOne, d.x, d_x, d.w, d_w, d.conv, algo.algo, workspace,
                                              algo.workspace_bytes, &kZero, d.y, d_y, bias, d_b, relu, d.y, d_y),
        "cudnnConvolutionBiasActivationForward", conv_shapes(x_shape, w_shape));
}

void relu_forward(Context& ctx, const float* d_x, const course::Shape& shape, float* d_y) {
  const bool ok = shape.size() == 4 || is_2d_positive(shape);
  if (!ok) throw course::Error("relu: shape must be 4-D NCHW or 2-D [N, F], got " + course::shape_to_string(shape));
  course::cudnn::TensorDescriptor desc;
  set_nchw_descriptor(desc, as_4d(shape), "relu shape");
  if (d_y != d_x) {
    const std::size_t bytes = course::shape_numel(shape) * sizeof(float);
    CUDA_CHECK(cudaMemcpyAsync(d_y, d_x, bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
  }
  relu_in_place(ctx, desc, d_y, "shape " + course::shape_to_string(shape));
}

void max_pool2d(Context& ctx, const float* d_x, const course::Shape& x_shape, const PoolParams& p, float* d_y) {
  const course::Shape y_shape = pool2d_output_shape(x_shape, p);
  course::cudnn::TensorDescriptor x, y;
  set_nchw_descriptor(x, x_shape, "max_pool2d input");
  set_nchw_descriptor(y, y_shape, "max_pool2d output");
  course::cudnn::PoolingDescriptor pool;
  CUDNN_CHECK(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, p.kernel_h, p.kernel_w,
                                          p.pad_h, p.pad_w, p.stride_h, p.stride_w));
  check(cudnnPoolingForward(ctx.cudnn(), pool, &kOne, x, d_x, &kZero, y, d_y), "cudnnPoolingForward",
        "input " + course::shape_to_string(x_shape));
}

void linear_forward(Context& ctx, const float* d_x, const course::Shape& x_shape, const float* d_w,
                    const course::Shape& w_shape, const float* d_b, bool relu, float* d_y) {
  const std::string shapes = "input " + course::shape_to_string(x_shape) + ", weight " + course::shape_to_string(w_shape);
  if (!is_2d_positive(x_shape)) throw course::Error("linear: input must be 2-D [N, IN], " + shapes);
  if (!is_2d_positive(w_shape)) throw course::Error("linear: weight must be 2-D [OUT, IN], " + shapes);
  if (x_shape[1] != w_shape[1]) throw course::Error("linear: input features differ from the weight's, " + shapes);
  if (d_b == nullptr) throw course::Error("linear: bias must not be null");
  const int batch = static_cast<int>(x_shape[0]), in = static_cast<int>(x_shape[1]), out = static_cast<int>(w_shape[0]);

  // cuBLAS is column-major: a row-major [R, C] matrix IS a column-major [C, R] one (its
  // transpose), no copy needed. Y = X W^T row-major means Y^T = W X^T column-major, where
  //   Y^T [out x batch], ld = out: the row-major Y as cuBLAS sees it;
  //   W   [out x in]  = op_T of the buffer that cuBLAS sees as W^T [in x out], ld = in;
  //   X^T [in x batch], ld = in: the row-major X as cuBLAS sees it.
  CUBLAS_CHECK(cublasSgemm(ctx.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, out, batch, in, &kOne, d_w, in, d_x, in, &kZero,
                           d_y, out));
  // Bias [1, OUT, 1, 1] broadcast over the batch, then the optional ReLU in place.
  course::cudnn::TensorDescriptor y, bias;
  set_nchw_descriptor(y, {batch, out, 1, 1}, "linear output");
  set_nchw_descriptor(bias, {1, out, 1, 1}, "linear bias");
  check(cudnnAddTensor(ctx.cudnn(), &kOne, bias, d_b, &kOne, y, d_y), "cudnnAddTensor", shapes);
  if (relu) relu_in_place(ctx, y, d_y, shapes);
}

void softmax_forward(Context& ctx, const float* d_logits, const course::Shape& shape, float* d_probabilities) {
  if (!is_2d_positive(shape)) throw course::Error("softmax: logits must be 2-D [N, K], got " + course::shape_to_string(shape));
  course::cudnn::TensorDescriptor desc;
  set_nchw_descriptor(desc, as_4d(shape), "softmax logits");
  // INSTANCE mode: one softmax over C*H*W = K values per image; ACCURATE subtracts the maximum.
  check(cudnnSoftmaxForward(ctx.cudnn(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &kOne, desc, d_logits,
                            &kZero, desc, d_probabilities),
        "cudnnSoftmaxForward", "logits " + course::shape_to_string(shape));
}

}  // namespace lab05
