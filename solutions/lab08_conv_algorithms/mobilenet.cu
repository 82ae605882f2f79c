// Lab 08 solution, part C2: the whole MobileNetV2 on the GPU.
// The contract is documented in common/include/labs/lab08_conv_algorithms.hpp; the lecture is
// lectures/08-conv-algorithms.md (section 8).
//
// Nine launches per forward():
//   1. the stem (3x3, 1 -> 16 channels, + bias, ReLU6): a direct kernel, one thread per output --
//      with one input channel, im2col would only copy every pixel 9 times;
//   2-8. the seven blocks, each one fused kernel (inverted_residual_block, which picks its tile
//      per block shape: several whole 7x7 or 14x14 images per CTA, bands of rows at 28x28),
//      ping-ponging between two activation buffers;
//   9. head, pool and classifier in one kernel, kHeadImages images per CTA: their [64 x 49]
//      features are staged in shared memory; each of 256 threads computes one head channel's
//      1x1 convolution + bias + ReLU6 at all 49 pixels of an image (49 accumulators in registers,
//      the features read as broadcast float4s) and averages them into shared memory; then one
//      warp per (image, logit) sums the 256 pooled values against the classifier row. The head's
//      output [n,256,7,7] never goes to global memory.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <utility>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "course/mobilenet.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace lab08 {
namespace {

namespace mn = course::mobilenet;

void require(bool ok, const std::string& message) {
  if (!ok) throw course::Error("lab08::MobileNetV2: " + message);
}

void expect_shape(const course::Tensor& t, const course::Shape& shape, const std::string& name) {
  require(t.shape() == shape, name + " must be " + course::shape_to_string(shape) + ", got " +
                                  course::shape_to_string(t.shape()));
}

// Buffer order in weights_: stem weight, stem bias, then per block expand weight, expand bias
// (empty buffers when the block does not expand), depthwise weight, depthwise bias, project
// weight, project bias, then head weight, head bias, classifier weight, classifier bias.
constexpr int kPerBlock = 6;
int block_slot(int block, int field) { return 2 + block * kPerBlock + field; }

constexpr int kStemThreads = 256;
constexpr int kHeadThreads = mn::kHeadChannels;  // one thread per head channel
constexpr int kHeadImages = 4;                   // images per head CTA: the weights are read once for 4
constexpr int kHeadPixels = 7 * 7;               // the last block's output plane (checked in the constructor)
constexpr int kHeadPixelStride = 52;             // kHeadPixels rounded up to a float4; the tail is 0

std::size_t head_smem_bytes(int channels) {
  return sizeof(float) * static_cast<std::size_t>(channels) * kHeadImages * kHeadPixelStride;
}

}  // namespace

static __global__ void stem_kernel(const float* __restrict__ images, const float* __restrict__ weight,
                                   const float* __restrict__ bias, float* __restrict__ out, int total) {
  constexpr int S = mn::kInputSize, K = mn::kStemChannels;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int q = i % S, p = (i / S) % S, k = (i / (S * S)) % K, n = i / (S * S * K);
  const float* img = images + n * S * S;
  float sum = bias[k];
  for (int r = 0; r < 3; ++r) {
    const int h = p - 1 + r;
    if (h < 0 || h >= S) continue;
    for (int s = 0; s < 3; ++s) {
      const int w = q - 1 + s;
      if (w >= 0 && w < S) sum = fmaf(weight[k * 9 + r * 3 + s], img[h * S + w], sum);
    }
  }
  out[i] = fminf(fmaxf(sum, 0.0f), 6.0f);
}

static __global__ void __launch_bounds__(kHeadThreads)
    head_pool_classifier_kernel(const float* __restrict__ x, const float* __restrict__ head_w,
                                const float* __restrict__ head_b, const float* __restrict__ cls_w,
                                const float* __restrict__ cls_b, float* __restrict__ logits, int n, int channels) {
  constexpr int kRow = kHeadImages * kHeadPixelStride;  // floats per channel of the staged features
  extern __shared__ float4 features_float4[];
  float* features = reinterpret_cast<float*>(features_float4);  // [channels][kHeadImages][kHeadPixelStride]
  __shared__ float pooled[kHeadImages][mn::kHeadChannels];
  const int n0 = blockIdx.x * kHeadImages, images = min(kHeadImages, n - n0);
  for (int i = threadIdx.x; i < channels * kRow; i += kHeadThreads) {
    const int c = i / kRow, g = i % kRow / kHeadPixelStride, pix = i % kHeadPixelStride;
    features[i] = g < images && pix < kHeadPixels ? x[((n0 + g) * channels + c) * kHeadPixels + pix] : 0.0f;
  }
  __syncthreads();

  const int k = threadIdx.x;
  const float* w = head_w + k * channels;
  for (int g = 0; g < images; ++g) {
    float acc[kHeadPixelStride];
#pragma unroll
    for (int p = 0; p < kHeadPixelStride; ++p) acc[p] = head_b[k];
    for (int c = 0; c < channels; ++c) {
      const float wc = w[c];
      const float4* f = reinterpret_cast<const float4*>(features + c * kRow + g * kHeadPixelStride);
#pragma unroll
      for (int q = 0; q < kHeadPixelStride / 4; ++q) {
        const float4 v = f[q];  // the same address in every thread: a broadcast
        acc[4 * q + 0] = fmaf(wc, v.x, acc[4 * q + 0]);
        acc[4 * q + 1] = fmaf(wc, v.y, acc[4 * q + 1]);
        acc[4 * q + 2] = fmaf(wc, v.z, acc[4 * q + 2]);
        acc[4 * q + 3] = fmaf(wc, v.w, acc[4 * q + 3]);
      }
    }
    float total = 0.0f;
#pragma unroll
    for (int p = 0; p < kHeadPixels; ++p) total += fminf(fmaxf(acc[p], 0.0f), 6.0f);
    pooled[g][k] = total / static_cast<float>(kHeadPixels);
  }
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int pair = warp; pair < images * mn::kNumClasses; pair += kHeadThreads / 32) {
    const int g = pair / mn::kNumClasses, cls = pair % mn::kNumClasses;
    float sum = 0.0f;
    for (int c = lane; c < mn::kHeadChannels; c += 32) sum = fmaf(cls_w[cls * mn::kHeadChannels + c], pooled[g][c], sum);
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) logits[(n0 + g) * mn::kNumClasses + cls] = sum + cls_b[cls];
  }
}

MobileNetV2::MobileNetV2(const FoldedMobileNet& net, int max_batch) {
  const auto& specs = mn::blocks();
  expect_shape(net.stem_weight, {mn::kStemChannels, mn::kInputChannels, 3, 3}, "stem_weight");
  expect_shape(net.stem_bias, {mn::kStemChannels}, "stem_bias");
  require(net.blocks.size() == specs.size(), "blocks must hold " + std::to_string(specs.size()) + " blocks, got " +
                                                 std::to_string(net.blocks.size()));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const mn::BlockSpec& b = specs[i];
    const FoldedBlock& f = net.blocks[i];
    const std::string name = "blocks[" + std::to_string(i) + "].";
    if (b.expand()) {
      expect_shape(f.expand_weight, {b.hidden, b.in_channels}, name + "expand_weight");
      expect_shape(f.expand_bias, {b.hidden}, name + "expand_bias");
    } else {
      require(f.expand_weight.numel() == 0, name + "expand_weight must be empty (the block does not expand)");
      require(f.expand_bias.numel() == 0, name + "expand_bias must be empty (the block does not expand)");
    }
    expect_shape(f.depthwise_weight, {b.hidden, 1, 3, 3}, name + "depthwise_weight");
    expect_shape(f.depthwise_bias, {b.hidden}, name + "depthwise_bias");
    expect_shape(f.project_weight, {b.out_channels, b.hidden}, name + "project_weight");
    expect_shape(f.project_bias, {b.out_channels}, name + "project_bias");
  }
  const int last = specs.back().out_channels;
  require(specs.back().out_size() * specs.back().out_size() == kHeadPixels, "the head kernel expects a 7x7 plane");
  expect_shape(net.head_weight, {mn::kHeadChannels, last}, "head_weight");
  expect_shape(net.head_bias, {mn::kHeadChannels}, "head_bias");
  expect_shape(net.classifier_weight, {mn::kNumClasses, mn::kHeadChannels}, "classifier_weight");
  expect_shape(net.classifier_bias, {mn::kNumClasses}, "classifier_bias");

  require(max_batch >= 1, "max_batch must be >= 1, got " + std::to_string(max_batch));
  // The largest tensor per image anywhere in the network (the expanded tensors count: a block
  // rejects an N whose expanded tensor would not fit an int, even though this one never stores it).
  std::int64_t largest = std::int64_t{mn::kStemChannels} * mn::kInputSize * mn::kInputSize;
  std::int64_t activation = largest;
  for (const mn::BlockSpec& b : specs) {
    largest = std::max(largest, std::int64_t{b.hidden} * b.size * b.size);
    activation = std::max(activation, std::int64_t{b.out_channels} * b.out_size() * b.out_size());
  }
  require(largest * max_batch <= INT_MAX,
          "max_batch " + std::to_string(max_batch) + " too large: an activation would exceed INT_MAX elements");
  max_batch_ = max_batch;

  const auto upload = [this](const course::Tensor& t) {
    course::DeviceBuffer<float> buffer(t.numel());
    if (t.numel() > 0) buffer.upload(t.data(), t.numel());
    weights_.push_back(std::move(buffer));
  };
  upload(net.stem_weight);
  upload(net.stem_bias);
  for (const FoldedBlock& f : net.blocks)
    for (const course::Tensor* t : {&f.expand_weight, &f.expand_bias, &f.depthwise_weight, &f.depthwise_bias,
                                    &f.project_weight, &f.project_bias})
      upload(*t);
  upload(net.head_weight);
  upload(net.head_bias);
  upload(net.classifier_weight);
  upload(net.classifier_bias);

  for (int i = 0; i < 2; ++i) activations_.emplace_back(static_cast<std::size_t>(activation * max_batch));
  std::size_t workspace = 0;
  for (const mn::BlockSpec& b : specs)
    workspace = std::max(workspace, inverted_residual_workspace(max_batch, b.in_channels, b.hidden, b.out_channels,
                                                                b.size, b.size, b.stride));
  if (workspace > 0) workspace_ = course::DeviceBuffer<unsigned char>(workspace);
  // The head stages kHeadImages images' features: more than the default 48 KB of shared memory.
  CUDA_CHECK(cudaFuncSetAttribute(head_pool_classifier_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(head_smem_bytes(last))));
  CUDA_CHECK(cudaDeviceSynchronize());  // the uploads are complete before the constructor returns
}

void MobileNetV2::forward(const float* d_images, int n, float* d_logits, cudaStream_t stream) {
  require(d_images != nullptr, "d_images is null");
  require(d_logits != nullptr, "d_logits is null");
  require(n >= 1, "n must be >= 1, got " + std::to_string(n));
  require(n <= max_batch_, "n = " + std::to_string(n) + " exceeds max_batch = " + std::to_string(max_batch_));

  const int stem_total = n * mn::kStemChannels * mn::kInputSize * mn::kInputSize;
  stem_kernel<<<(stem_total + kStemThreads - 1) / kStemThreads, kStemThreads, 0, stream>>>(
      d_images, weights_[0].get(), weights_[1].get(), activations_[0].get(), stem_total);
  CUDA_CHECK_LAST_LAUNCH();

  const auto& specs = mn::blocks();
  int current = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const mn::BlockSpec& b = specs[i];
    const int bi = static_cast<int>(i);
    InvertedResidualWeights w;
    if (b.expand()) {
      w.expand_weight = weights_[block_slot(bi, 0)].get();
      w.expand_bias = weights_[block_slot(bi, 1)].get();
    }
    w.depthwise_weight = weights_[block_slot(bi, 2)].get();
    w.depthwise_bias = weights_[block_slot(bi, 3)].get();
    w.project_weight = weights_[block_slot(bi, 4)].get();
    w.project_bias = weights_[block_slot(bi, 5)].get();
    inverted_residual_block(w, activations_[current].get(), activations_[1 - current].get(), n, b.in_channels,
                            b.hidden, b.out_channels, b.size, b.size, b.stride, workspace_.get(), workspace_.bytes(),
                            stream);
    current = 1 - current;
  }

  const int head = block_slot(static_cast<int>(specs.size()), 0);
  const mn::BlockSpec& last = specs.back();
  head_pool_classifier_kernel<<<(n + kHeadImages - 1) / kHeadImages, kHeadThreads, head_smem_bytes(last.out_channels),
                                stream>>>(activations_[current].get(), weights_[head].get(), weights_[head + 1].get(),
                                          weights_[head + 2].get(), weights_[head + 3].get(), d_logits, n,
                                          last.out_channels);
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace lab08
