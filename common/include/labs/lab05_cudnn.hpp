// Lab 05 interface: the LeNet-5-BN of lab 04 on the GPU, with cuDNN 9 for the convolutions,
// pooling, activations and softmax and cuBLAS for the fully connected layers.
//
// The lecture is lectures/05-cudnn.md; the task is exercises/lab05_cudnn/README.md. Exercises
// and solutions both implement the functions below (descriptors.cpp, algorithms.cpp, layers.cpp,
// lenet.cpp); class Context is complete here and is the same for everyone.
//
// Conventions:
//  - every pointer named d_* is GPU memory; every layer function only ENQUEUES work on
//    ctx.stream() and returns without waiting (the caller synchronises);
//  - activations are NCHW float32 and fully packed, convolution weights KCRS, linear weights
//    [OUT, IN] (PyTorch's layouts, the same as labs 01-04);
//  - outputs are allocated by the caller with the size the *_output_shape functions give and may
//    hold garbage (the tests fill them with NaN), so every element must be written;
//  - a bad shape or a configuration cuDNN cannot run is reported by throwing course::Error whose
//    message names the argument and the problem (the words the tests look for are listed per
//    function), never by a crash, a raw cuDNN status or a silent wrong answer.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "course/cudnn_raii.hpp"
#include "course/device_buffer.hpp"
#include "course/tensor.hpp"
#include "labs/lab04_lenet_cpu.hpp"

namespace lab05 {

// ---------------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------------

/// Convolution geometry. cuDNN pads symmetrically: pad_h rows above AND below, pad_w columns
/// left AND right (PyTorch's convention; TensorFlow's uneven SAME padding needs an explicit pad).
struct ConvParams {
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;

  static ConvParams symmetric(int pad, int stride = 1, int dilation = 1) {
    ConvParams p;
    p.pad_h = p.pad_w = pad;
    p.stride_h = p.stride_w = stride;
    p.dilation_h = p.dilation_w = dilation;
    return p;
  }
  auto tie() const { return std::tie(pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w); }
};

/// Max-pooling window, padded symmetrically like ConvParams.
struct PoolParams {
  int kernel_h = 2, kernel_w = 2, stride_h = 2, stride_w = 2, pad_h = 0, pad_w = 0;

  static PoolParams square(int kernel, int stride, int pad = 0) {
    PoolParams p;
    p.kernel_h = p.kernel_w = kernel;
    p.stride_h = p.stride_w = stride;
    p.pad_h = p.pad_w = pad;
    return p;
  }
};

/// How choose_conv_algorithm picks: by running every candidate once and timing it
/// (cudnnFindConvolutionForwardAlgorithm) or from cuDNN's built-in heuristics without running
/// anything (cudnnGetConvolutionForwardAlgorithm_v7).
enum class AlgoSearch { Measured, Heuristic };

/// One convolution problem: everything that can change which algorithm is fastest. The key of
/// the per-shape algorithm cache. `fused` marks the conv+bias+ReLU call, which has its own rules.
struct ConvKey {
  course::Shape input, weight;
  ConvParams params;
  bool fused = false;

  bool operator<(const ConvKey& other) const {
    return std::tuple_cat(std::tie(input, weight, fused), params.tie()) <
           std::tuple_cat(std::tie(other.input, other.weight, other.fused), other.params.tie());
  }
};

/// The algorithm chosen for one ConvKey and the workspace that algorithm needs.
struct ConvAlgorithm {
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::size_t workspace_bytes = 0;
};

// ---------------------------------------------------------------------------------------------
// Context: given, complete. One per thread (cuDNN and cuBLAS handles are not thread-safe).
// ---------------------------------------------------------------------------------------------

/// The two library handles, the stream they enqueue on, one growing workspace and the per-shape
/// algorithm cache. Creating handles costs milliseconds, so a program makes one Context and keeps
/// it; creating one throws course::Error on a machine without a usable GPU.
class Context {
 public:
  /// The largest workspace choose_conv_algorithm may pick an algorithm for: a faster algorithm
  /// that wants more memory than this is passed over.
  static constexpr std::size_t kMaxWorkspaceBytes = std::size_t{256} << 20;

  explicit Context(cudaStream_t stream = nullptr, AlgoSearch search = AlgoSearch::Measured) : search_(search) {
    // Tensor cores would compute fp32 convolutions and GEMMs in TF32 (10-bit mantissa, ~1e-3
    // relative error): the course compares with fp32 references, so it asks for plain FMA math.
    CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
    set_stream(stream);
  }

  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasHandle_t cublas() const { return cublas_; }
  cudaStream_t stream() const { return stream_; }
  AlgoSearch search() const { return search_; }

  /// Makes both libraries enqueue their work on `stream` (nullptr: the default stream).
  void set_stream(cudaStream_t stream) {
    CUDNN_CHECK(cudnnSetStream(cudnn_, stream));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream));
    stream_ = stream;
  }

  /// Device scratch memory of at least `bytes` (nullptr for 0). The buffer only grows: a request
  /// that fits reuses it, so a network allocates once per new largest size, not once per call.
  /// Waits for the stream before freeing a smaller buffer that queued work may still read.
  void* workspace(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    if (bytes > workspace_.size()) {
      if (!workspace_.empty()) CUDA_CHECK(cudaStreamSynchronize(stream_));
      workspace_ = course::DeviceBuffer<unsigned char>(bytes);
    }
    return workspace_.get();
  }
  std::size_t workspace_capacity() const { return workspace_.size(); }

  /// The per-shape algorithm cache choose_conv_algorithm reads and fills.
  std::map<ConvKey, ConvAlgorithm>& conv_algorithms() { return conv_algorithms_; }
  const std::map<ConvKey, ConvAlgorithm>& conv_algorithms() const { return conv_algorithms_; }

 private:
  course::cudnn::Handle cudnn_;
  course::cudnn::CublasHandle cublas_;
  cudaStream_t stream_ = nullptr;
  AlgoSearch search_;
  course::DeviceBuffer<unsigned char> workspace_;
  std::map<ConvKey, ConvAlgorithm> conv_algorithms_;
};

// ---------------------------------------------------------------------------------------------
// descriptors.cpp
// ---------------------------------------------------------------------------------------------

/// The four descriptors of one convolution, set up and ready for cuDNN calls, plus the output
/// shape cuDNN computed from them.
struct ConvDescriptors {
  course::cudnn::TensorDescriptor x, y;
  course::cudnn::FilterDescriptor w;
  course::cudnn::ConvolutionDescriptor conv;
  course::Shape y_shape;
};

/// Validates a convolution of an NCHW input [N, C, H, W] with KCRS weights [K, C, R, S] and
/// builds its descriptors: float32, NCHW, cross-correlation (what deep-learning "convolution"
/// means), FMA math (no TF32), and y_shape [N, K, P, Q] as cuDNN computes it.
/// Throws course::Error when: the input is not 4-D with every extent >= 1 ("input"); the weight
/// is not 4-D with every extent >= 1 ("weight"); their channel counts differ ("channels"); a
/// padding is negative ("pad"); a stride or dilation is < 1 ("stride", "dilation"); the dilated
/// kernel does not fit in the padded input, so the output would be empty ("output").
ConvDescriptors make_conv_descriptors(const course::Shape& input, const course::Shape& weight, const ConvParams& p);

/// The output shape of that convolution (same checks and errors as make_conv_descriptors).
course::Shape conv2d_output_shape(const course::Shape& input, const course::Shape& weight, const ConvParams& p);

/// A fully packed float32 NCHW tensor descriptor of `shape` (4-D, every extent >= 1), or
/// course::Error naming `what`.
void set_nchw_descriptor(cudnnTensorDescriptor_t desc, const course::Shape& shape, const char* what);

/// Output shape of max pooling [N, C, H_out, W_out], per axis floor((in + 2*pad - kernel) /
/// stride) + 1. Throws course::Error when: the input is not 4-D with extents >= 1 ("input"); a
/// kernel or stride is < 1 ("kernel", "stride"); a pad is negative or larger than half its
/// kernel, so a window could lie entirely in the padding ("pad"); an extent would be <= 0 ("output").
course::Shape pool2d_output_shape(const course::Shape& input, const PoolParams& p);

// ---------------------------------------------------------------------------------------------
// algorithms.cpp
// ---------------------------------------------------------------------------------------------

/// The forward algorithm for `key` and its workspace size, from ctx.conv_algorithms() when the
/// key is there, otherwise searched and stored:
///  - key.fused: the fused conv+bias+activation call runs with
///    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, the one algorithm cuDNN documents for it;
///  - otherwise ctx.search() decides between measuring (cudnnFindConvolutionForwardAlgorithm) and
///    the heuristic (cudnnGetConvolutionForwardAlgorithm_v7). The first candidate (they come
///    sorted, best first) that succeeded, does not need tensor-core math, and needs at most
///    Context::kMaxWorkspaceBytes wins.
/// workspace_bytes is what cudnnGetConvolutionForwardWorkspaceSize says the chosen algorithm
/// needs. `d` are the descriptors of the same problem (make_conv_descriptors). Throws
/// course::Error naming the shapes when no candidate qualifies ("no convolution algorithm").
ConvAlgorithm choose_conv_algorithm(Context& ctx, const ConvKey& key, const ConvDescriptors& d);

// ---------------------------------------------------------------------------------------------
// layers.cpp
// ---------------------------------------------------------------------------------------------

/// y = conv(x, w) + b, b [K] or nullptr for no bias; y has conv2d_output_shape(x_shape, w_shape, p).
/// Errors as make_conv_descriptors.
void conv2d_forward(Context& ctx, const float* d_x, const course::Shape& x_shape, const float* d_w,
                    const course::Shape& w_shape, const float* d_b, const ConvParams& p, float* d_y);

/// y = max(0, conv(x, w) + b) in ONE cuDNN call (cudnnConvolutionBiasActivationForward); the
/// batch-norm is already folded into w and b (lab 04). Errors as conv2d_forward, and a null bias
/// is rejected ("bias": the fused call always adds one).
void conv_bias_relu_forward(Context& ctx, const float* d_x, const course::Shape& x_shape, const float* d_w,
                            const course::Shape& w_shape, const float* d_b, const ConvParams& p, float* d_y);

/// y = max(0, x) element-wise on a tensor of `shape` (4-D NCHW, or 2-D [N, F]); in place allowed
/// (d_y == d_x). Throws course::Error for any other shape ("shape").
void relu_forward(Context& ctx, const float* d_x, const course::Shape& shape, float* d_y);

/// Max pooling; y has pool2d_output_shape(x_shape, p). Errors as pool2d_output_shape.
void max_pool2d(Context& ctx, const float* d_x, const course::Shape& x_shape, const PoolParams& p, float* d_y);

/// Fully connected layer with cuBLAS: y[n, o] = b[o] + sum_i x[n, i] * w[o, i], then
/// max(0, .) if `relu`. x [N, IN] row-major, w [OUT, IN] (PyTorch), b [OUT], y [N, OUT].
/// Throws course::Error when x or w is not 2-D with extents >= 1 ("input", "weight"), when their
/// IN differ ("features"), or when d_b is null ("bias").
void linear_forward(Context& ctx, const float* d_x, const course::Shape& x_shape, const float* d_w,
                    const course::Shape& w_shape, const float* d_b, bool relu, float* d_y);

/// Row-wise softmax of logits [N, K] (cuDNN's accurate mode: the maximum is subtracted first).
/// Throws course::Error when the shape is not 2-D with extents >= 1 ("logits").
void softmax_forward(Context& ctx, const float* d_logits, const course::Shape& shape, float* d_probabilities);

// ---------------------------------------------------------------------------------------------
// lenet.cpp
// ---------------------------------------------------------------------------------------------

/// Choices that change how the network runs (the benchmark compares them), not what it computes.
struct LeNetOptions {
  bool fused = true;                         ///< conv+bias+ReLU in one call, or three calls
  AlgoSearch search = AlgoSearch::Measured;  ///< how the unfused convolutions pick algorithms
};

/// The folded LeNet-5-BN of lab 04 on cuDNN + cuBLAS:
///   conv1 (pad 2) + bias + ReLU -> maxpool 2 -> conv2 + bias + ReLU -> maxpool 2 -> flatten
///   -> fc1 + ReLU -> fc2 + ReLU -> fc3 -> logits [n, 10]
/// The constructor checks every parameter's shape, uploads the weights once and allocates the
/// activations for up to max_batch images; forward() allocates nothing (beyond a first-time
/// workspace) and only enqueues work on `stream`.
class CudnnLeNet {
 public:
  /// Throws course::Error when max_batch < 1 ("max_batch") or a parameter has the wrong shape
  /// (the message names it, e.g. "conv2_weight", "fc1_bias").
  CudnnLeNet(const lab04::FoldedLeNet& net, int max_batch, LeNetOptions options = {});
  ~CudnnLeNet();
  CudnnLeNet(const CudnnLeNet&) = delete;
  CudnnLeNet& operator=(const CudnnLeNet&) = delete;

  /// Logits [n, 10] of images [n, 1, 28, 28], both device pointers. Throws course::Error when
  /// n < 1 or n > max_batch ("batch").
  void forward(const float* d_images, int n, float* d_logits, cudaStream_t stream);

  int max_batch() const;

 private:
  struct Impl;  // defined in lenet.cpp: the student decides what the network keeps
  std::unique_ptr<Impl> impl_;
};

}  // namespace lab05
