// Trusted speed baseline for lab 08, part C: the course's MobileNetV2 (course/mobilenet.hpp) and
// its inverted residual block through cuDNN and cuBLAS calls only -- what a library user would
// write with lab 05's wrappers (course/cudnn_raii.hpp), and the yardstick bench/lab08_mobilenet.cu
// measures the lab's fused kernels against.
//
//   cudnn_reference::CudnnMobileNetV2 net(folded, max_batch);   // allocates, picks algorithms
//   net.forward(d_images, n, d_logits, stream);                  // only enqueues work
//
// Per block: 1x1 expand (cuDNN convolution or cuBLAS strided-batched GEMM, whichever the
// constructor measured faster), + bias (cudnnAddTensor), ReLU6 (cudnnActivationForward,
// CLIPPED_RELU with coefficient 6: cudnnConvolutionBiasActivationForward fuses only RELU and
// IDENTITY), depthwise 3x3 as a grouped convolution (groupCount = channels), + bias, ReLU6, 1x1
// project, + bias, + input when residual. Every intermediate goes through global memory: that is
// what the lab's fused block avoids.
//
// Exactness: FP32 everywhere. Convolutions use CUDNN_FMA_MATH (never TF32 tensor cores), cuBLAS
// CUBLAS_DEFAULT_MATH (FP32 SGEMM), and WINOGRAD_NONFUSED is never chosen: it is off by ~1e-2 in
// FP32 (bench/results/lab05_algorithm_accuracy_*.txt). Each convolution's algorithm is the
// fastest of cudnnFindConvolutionForwardAlgorithmEx's measured list (allowed ones only), found
// once in the constructor at max_batch (or a smaller search batch); forward() at any n reuses them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "course/cudnn_raii.hpp"
#include "course/device_buffer.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace cudnn_reference {

/// How the 1x1 convolutions run: whichever the constructor measured faster, or forced.
enum class Pointwise { kFastest, kCudnn, kCublas };

/// What the constructor chose for one layer, for the benchmark's table.
struct LayerChoice {
  std::string layer;       ///< "stem", "blocks.1.expand", "blocks.1.depthwise", "head", ...
  std::string chosen;      ///< "cuDNN IMPLICIT_GEMM", "cuBLAS SgemmStridedBatched"
  double cudnn_ms = -1.0;  ///< the chosen cuDNN algorithm's time at construction (-1: none)
  double cublas_ms = -1.0; ///< the cuBLAS GEMM's time at construction (-1: not a 1x1 layer)
};

namespace detail {
class Convolution;
class PointwiseConv;
class BiasActivation;
}  // namespace detail

/// Scratch a block's forward pass writes: its expanded and depthwise tensors and the workspace.
struct BlockScratch {
  float* expanded = nullptr;   ///< [N, hidden, H, W] (unused when hidden == in)
  float* depthwise = nullptr;  ///< [N, hidden, P, Q]
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

/// One inverted residual block (batch-norm folded; device weights owned by the caller).
class CudnnInvertedResidual {
 public:
  /// Describes the block for batch N, finds each convolution's algorithm on the given buffers
  /// (d_input, d_output and scratch are overwritten; scratch.workspace is the search's limit).
  CudnnInvertedResidual(cudnnHandle_t cudnn, cublasHandle_t cublas, const lab08::InvertedResidualWeights& weights,
                        int N, int in, int hidden, int out, int H, int W, int stride, const std::string& name,
                        const float* d_input, float* d_output, const BlockScratch& scratch);
  ~CudnnInvertedResidual();
  CudnnInvertedResidual(CudnnInvertedResidual&&) noexcept;
  CudnnInvertedResidual& operator=(CudnnInvertedResidual&&) noexcept;

  /// Re-describes the tensors for batch n (host calls only); returns the workspace it then needs.
  std::size_t set_batch(int n);
  void set_pointwise(Pointwise mode);
  std::size_t workspace_bytes() const;
  /// y = block(x) with the handles' current stream; scratch as sized for the constructor's N.
  void forward(const float* d_input, float* d_output, const BlockScratch& scratch) const;
  std::vector<LayerChoice> choices() const;

 private:
  cudnnHandle_t cudnn_;
  lab08::InvertedResidualWeights w_;
  int in_, hidden_, out_, H_, W_, stride_;
  std::string name_;
  std::unique_ptr<detail::PointwiseConv> expand_, project_;
  std::unique_ptr<detail::Convolution> depthwise_;
  std::unique_ptr<detail::BiasActivation> expand_act_, depthwise_act_, project_bias_;
};

/// A block on its own, owning its scratch: the benchmark's MobileNetV2@224 shapes.
class CudnnBlock {
 public:
  CudnnBlock(const lab08::InvertedResidualWeights& weights, int N, int in, int hidden, int out, int H, int W,
             int stride);
  ~CudnnBlock();
  void forward(const float* d_input, float* d_output, cudaStream_t stream);
  std::vector<LayerChoice> choices() const { return block_->choices(); }

 private:
  course::cudnn::Handle cudnn_;
  course::cudnn::CublasHandle cublas_;
  course::DeviceBuffer<float> expanded_, depthwise_;
  course::DeviceBuffer<unsigned char> workspace_;
  std::unique_ptr<CudnnInvertedResidual> block_;
};

/// The whole network: stem conv + bias + ReLU6, the 7 blocks, head 1x1 + bias + ReLU6, average
/// pool (cudnnPoolingForward over the 7x7 map), classifier (cublasSgemm) + bias.
class CudnnMobileNetV2 {
 public:
  /// Uploads the folded weights, allocates every buffer for max_batch images and picks every
  /// layer's algorithm (Pointwise::kFastest). Shapes are those of course::mobilenet::blocks().
  /// search_batch > 0 runs the searches at min(search_batch, max_batch) images instead of
  /// max_batch (the speed gate's baseline: a search at 10,000 images costs seconds per network,
  /// mostly in the FFT algorithms nobody picks); the algorithms found are then used at any n.
  CudnnMobileNetV2(const lab08::FoldedMobileNet& net, int max_batch, int search_batch = 0);
  ~CudnnMobileNetV2();

  /// d_images [n,1,28,28] -> d_logits [n,10] on `stream`; enqueues only (no allocation, no
  /// synchronisation), so it can be captured into a CUDA graph. Throws on n outside [1, max_batch].
  void forward(const float* d_images, int n, float* d_logits, cudaStream_t stream);
  /// Forces every 1x1 convolution onto cuDNN or cuBLAS (the benchmark's comparison rows).
  void set_pointwise(Pointwise mode);
  std::vector<LayerChoice> choices() const;
  int max_batch() const { return max_batch_; }

 private:
  std::size_t set_batch(int n);  ///< re-describes every tensor; returns the workspace then needed

  int max_batch_, batch_;
  course::cudnn::Handle cudnn_;
  course::cudnn::CublasHandle cublas_;
  std::vector<course::DeviceBuffer<float>> weights_;
  const float *stem_w_ = nullptr, *stem_b_ = nullptr, *head_w_ = nullptr, *head_b_ = nullptr;
  const float *classifier_w_ = nullptr, *classifier_b_ = nullptr;
  course::DeviceBuffer<float> act_[2], expanded_, depthwise_, pooled_;
  course::DeviceBuffer<unsigned char> workspace_;
  std::unique_ptr<detail::Convolution> stem_;
  std::unique_ptr<detail::BiasActivation> stem_act_, head_act_;
  std::vector<CudnnInvertedResidual> blocks_;
  std::unique_ptr<detail::PointwiseConv> head_;
  course::cudnn::TensorDescriptor head_out_, pooled_desc_, logits_desc_, classifier_bias_desc_;
  course::cudnn::PoolingDescriptor pool_;
};

}  // namespace cudnn_reference
