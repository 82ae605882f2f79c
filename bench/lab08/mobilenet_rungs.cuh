// Two rungs of lab 08's MobileNetV2 ladder for bench/lab08_mobilenet.cu, built from the lab's own
// solution functions (labs/lab08_conv_algorithms.hpp) plus four one-line glue kernels:
//
//   UnfusedMobileNet  layer by layer through global memory: every 1x1 convolution one lab08::sgemm
//                     (+ bias), every depthwise layer lab08::depthwise_conv3x3 (+ bias + ReLU6),
//                     ReLU6 and the residual add as their own passes -- "what fusing buys".
//                     Activations are kept channel-major, [C, N, H, W] (CNHW): then a 1x1
//                     convolution over the whole batch is ONE matrix product W[K,C] X[C, N*H*W]
//                     with the bias per row, as lab08::sgemm computes it. The depthwise function
//                     wants NCHW, so it runs once per channel on that channel's N planes (at batch 1
//                     CNHW is NCHW, and one call does all channels).
//   V1MobileNet       NCHW, the seven blocks by the lab's first fused kernel (block_v1_fused_scalar.cuh),
//                     stem and head by lab08::conv2d_im2col_gemm: the block rung of the ladder.
//
// Both end with the same tail: ReLU6, mean over each 7x7 plane, the classifier as one sgemm with
// the bias per row ([10, N]), transposed to logits [N, 10].
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/mobilenet.hpp"
#include "lab08/block_v1_fused_scalar.cuh"
#include "labs/lab08_conv_algorithms.hpp"

namespace rungs {

namespace mn = course::mobilenet;

/// The folded network's tensors on the device, with the block weights as the lab's struct.
struct DeviceWeights {
  explicit DeviceWeights(const lab08::FoldedMobileNet& net) {
    stem_w = put(net.stem_weight);
    stem_b = put(net.stem_bias);
    for (const lab08::FoldedBlock& f : net.blocks) {
      lab08::InvertedResidualWeights w;
      w.expand_weight = put(f.expand_weight);
      w.expand_bias = put(f.expand_bias);
      w.depthwise_weight = put(f.depthwise_weight);
      w.depthwise_bias = put(f.depthwise_bias);
      w.project_weight = put(f.project_weight);
      w.project_bias = put(f.project_bias);
      blocks.push_back(w);
    }
    head_w = put(net.head_weight);
    head_b = put(net.head_bias);
    cls_w = put(net.classifier_weight);
    cls_b = put(net.classifier_bias);
  }
  const float* put(const course::Tensor& t) {
    if (t.numel() == 0) return nullptr;
    buffers.emplace_back(t.values());
    return buffers.back().get();
  }
  std::vector<course::DeviceBuffer<float>> buffers;
  const float *stem_w, *stem_b, *head_w, *head_b, *cls_w, *cls_b;
  std::vector<lab08::InvertedResidualWeights> blocks;
};

// ---- glue: one thread per element (or per plane) ----------------------------------------------
__global__ void relu6_kernel(float* x, long long count) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < count) x[i] = fminf(fmaxf(x[i], 0.0f), 6.0f);
}
__global__ void add_kernel(float* y, const float* x, long long count) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < count) y[i] += x[i];
}
/// out[i] = mean of the contiguous plane i of x (pixels floats): NCHW gives [N,C], CNHW [C,N].
__global__ void plane_mean_kernel(const float* x, float* out, int planes, int pixels) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= planes) return;
  float sum = 0.0f;
  for (int p = 0; p < pixels; ++p) sum += x[(long long)i * pixels + p];
  out[i] = sum / static_cast<float>(pixels);
}
/// out[c][r] = in[r][c] for in [rows, cols].
__global__ void transpose_kernel(const float* in, float* out, int rows, int cols) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) out[(i % cols) * rows + i / cols] = in[i];
}

inline unsigned blocks_for(long long count) { return static_cast<unsigned>((count + 255) / 256); }
inline void relu6(float* x, long long count, cudaStream_t s) {
  relu6_kernel<<<blocks_for(count), 256, 0, s>>>(x, count);
  CUDA_CHECK_LAST_LAUNCH();
}

/// ReLU6 of the head's output h (n*256 planes of 7x7, either layout), the mean of each plane into
/// `pooled`, then logits [n,10]. pooled_is_nchw: the planes are image-major ([n,256]) and are
/// transposed first to the [256,n] the classifier's sgemm wants.
inline void tail(const DeviceWeights& w, float* h, float* pooled, float* scratch, float* logits, int n,
                 bool pooled_is_nchw, cudaStream_t s) {
  const int planes = n * mn::kHeadChannels, pixels = 49;
  relu6(h, (long long)planes * pixels, s);
  plane_mean_kernel<<<blocks_for(planes), 256, 0, s>>>(h, pooled, planes, pixels);
  CUDA_CHECK_LAST_LAUNCH();
  if (pooled_is_nchw) {
    transpose_kernel<<<blocks_for(planes), 256, 0, s>>>(pooled, scratch, n, mn::kHeadChannels);
    CUDA_CHECK_LAST_LAUNCH();
    std::swap(pooled, scratch);
  }
  lab08::sgemm(mn::kNumClasses, n, mn::kHeadChannels, w.cls_w, pooled, w.cls_b, scratch, s);  // [10, n]
  transpose_kernel<<<blocks_for(n * mn::kNumClasses), 256, 0, s>>>(scratch, logits, mn::kNumClasses, n);
  CUDA_CHECK_LAST_LAUNCH();
}

/// Per image: the largest block activation (also the stem's output) and the largest expanded
/// and depthwise tensors (the head's output [256,7,7] goes to the expanded buffer).
struct Sizes {
  std::size_t act = std::size_t(mn::kStemChannels) * 28 * 28, expanded = std::size_t(mn::kHeadChannels) * 49,
              depthwise = 0;
  Sizes() {
    for (const mn::BlockSpec& b : mn::blocks()) {
      act = std::max(act, std::size_t(b.out_channels) * b.out_size() * b.out_size());
      expanded = std::max(expanded, std::size_t(b.hidden) * b.size * b.size);
      depthwise = std::max(depthwise, std::size_t(b.hidden) * b.out_size() * b.out_size());
    }
  }
};

class UnfusedMobileNet {
 public:
  UnfusedMobileNet(const DeviceWeights& w, int max_batch) : w_(w) {
    const Sizes s;
    const std::size_t n = max_batch;
    for (auto& a : act_) a = course::DeviceBuffer<float>(s.act * n);
    expanded_ = course::DeviceBuffer<float>(s.expanded * n);
    depthwise_ = course::DeviceBuffer<float>(std::max(s.depthwise, std::size_t(9) * 28 * 28) * n);  // + stem columns
    pooled_ = course::DeviceBuffer<float>(mn::kHeadChannels * n);
    small_ = course::DeviceBuffer<float>(mn::kHeadChannels * n);
  }

  void forward(const float* images, int n, float* logits, cudaStream_t s) {
    // Stem: [n,1,28,28] is also [1,n,28,28]; its columns [9, n*784] times the weight [16, 9].
    const int pixels = 28 * 28;
    lab08::im2col(images, depthwise_.get(), n, 1, 28, 28, 3, 3, 1, 1, s);
    lab08::sgemm(mn::kStemChannels, n * pixels, 9, w_.stem_w, depthwise_.get(), w_.stem_b, act_[0].get(), s);
    relu6(act_[0].get(), (long long)mn::kStemChannels * n * pixels, s);
    int cur = 0;
    for (std::size_t i = 0; i < mn::blocks().size(); ++i) {
      const mn::BlockSpec& b = mn::blocks()[i];
      const lab08::InvertedResidualWeights& w = w_.blocks[i];
      const int hw = b.size * b.size, pq = b.out_size() * b.out_size();
      const float* x = act_[cur].get();
      float* y = act_[1 - cur].get();
      const float* e = x;
      if (b.expand()) {
        lab08::sgemm(b.hidden, n * hw, b.in_channels, w.expand_weight, x, w.expand_bias, expanded_.get(), s);
        relu6(expanded_.get(), (long long)b.hidden * n * hw, s);
        e = expanded_.get();
      }
      if (n == 1) {
        lab08::depthwise_conv3x3(e, w.depthwise_weight, w.depthwise_bias, depthwise_.get(), 1, b.hidden, b.size,
                                 b.size, b.stride, true, s);
      } else {
        for (int c = 0; c < b.hidden; ++c)  // channel c's n planes as n one-channel images
          lab08::depthwise_conv3x3(e + (long long)c * n * hw, w.depthwise_weight + 9 * c, w.depthwise_bias + c,
                                   depthwise_.get() + (long long)c * n * pq, n, 1, b.size, b.size, b.stride, true, s);
      }
      lab08::sgemm(b.out_channels, n * pq, b.hidden, w.project_weight, depthwise_.get(), w.project_bias, y, s);
      if (b.residual()) {
        add_kernel<<<blocks_for((long long)b.out_channels * n * pq), 256, 0, s>>>(y, x, (long long)b.out_channels * n * pq);
        CUDA_CHECK_LAST_LAUNCH();
      }
      cur = 1 - cur;
    }
    lab08::sgemm(mn::kHeadChannels, n * 49, mn::blocks().back().out_channels, w_.head_w, act_[cur].get(), w_.head_b,
                 expanded_.get(), s);
    tail(w_, expanded_.get(), pooled_.get(), small_.get(), logits, n, false, s);
  }

 private:
  const DeviceWeights& w_;
  course::DeviceBuffer<float> act_[2], expanded_, depthwise_, pooled_, small_;
};

class V1MobileNet {
 public:
  V1MobileNet(const DeviceWeights& w, int max_batch) : w_(w) {
    const Sizes s;
    const std::size_t n = max_batch;
    for (auto& a : act_) a = course::DeviceBuffer<float>(s.act * n);
    head_ = course::DeviceBuffer<float>(std::size_t(mn::kHeadChannels) * 49 * n);
    pooled_ = course::DeviceBuffer<float>(mn::kHeadChannels * n);
    small_ = course::DeviceBuffer<float>(mn::kHeadChannels * n);
    const int last = mn::blocks().back().out_channels;
    const std::size_t ws = std::max(lab08::conv2d_im2col_gemm_workspace(max_batch, 1, 28, 28, 3, 3, 1, 1),
                                    lab08::conv2d_im2col_gemm_workspace(max_batch, last, 7, 7, 1, 1, 0, 1));
    workspace_ = course::DeviceBuffer<unsigned char>(std::max<std::size_t>(ws, 1));
  }

  void forward(const float* images, int n, float* logits, cudaStream_t s) {
    lab08::conv2d_im2col_gemm(images, w_.stem_w, w_.stem_b, act_[0].get(), workspace_.get(), workspace_.bytes(), n, 1,
                              28, 28, mn::kStemChannels, 3, 3, 1, 1, s);
    relu6(act_[0].get(), (long long)mn::kStemChannels * n * 28 * 28, s);
    int cur = 0;
    for (std::size_t i = 0; i < mn::blocks().size(); ++i) {
      const mn::BlockSpec& b = mn::blocks()[i];
      block_v1::inverted_residual_block(w_.blocks[i], act_[cur].get(), act_[1 - cur].get(), n, b.in_channels, b.hidden,
                                        b.out_channels, b.size, b.size, b.stride, s);
      cur = 1 - cur;
    }
    lab08::conv2d_im2col_gemm(act_[cur].get(), w_.head_w, w_.head_b, head_.get(), workspace_.get(), workspace_.bytes(),
                              n, mn::blocks().back().out_channels, 7, 7, mn::kHeadChannels, 1, 1, 0, 1, s);
    tail(w_, head_.get(), pooled_.get(), small_.get(), logits, n, true, s);
  }

 private:
  const DeviceWeights& w_;
  course::DeviceBuffer<float> act_[2], head_, pooled_, small_;
  course::DeviceBuffer<unsigned char> workspace_;
};

}  // namespace rungs
