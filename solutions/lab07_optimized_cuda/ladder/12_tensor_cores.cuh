// Rung 12's network (the story is in 12_tensor_cores.cu): FP16 weights prepared as mma.sync B
// fragments, and forward() launching the whole-network kernel of 12_tensor_cores_kernels.cuh.
// A class of its own so that rung 14 can put it behind rung 10's host pipeline; it also reads
// uint8 pixels directly (forward_pixels). Anonymous namespace: each including .cu gets its own copy.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "12_tensor_cores_kernels.cuh"
#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/lenet.hpp"
#include "ladder.hpp"
#include "rung_support.hpp"
#include "tensor_core_weights.cuh"

namespace {

namespace ln = course::lenet;
namespace tc = ladder::tensor_cores;

std::uint32_t half_bits(float x) { return static_cast<__half_raw>(__float2half_rn(x)).x; }

/// B[k][n] (k < 16 * ksteps, n < 8 * ntiles) as m16n8k16 B fragments: for each n-tile, each
/// k-step, each lane (g, t): {B[2t][g], B[2t+1][g]} and {B[2t+8][g], B[2t+9][g]}, low half first.
std::vector<uint2> b_fragments(int ksteps, int ntiles, const std::function<float(int k, int n)>& b) {
  std::vector<uint2> frags;
  frags.reserve(static_cast<std::size_t>(ksteps) * static_cast<std::size_t>(ntiles) * 32);
  for (int nt = 0; nt < ntiles; ++nt)
    for (int ks = 0; ks < ksteps; ++ks)
      for (int lane = 0; lane < 32; ++lane) {
        const int n = 8 * nt + lane / 4, k = 16 * ks + 2 * (lane % 4);
        const auto pair = [&](int k0) { return half_bits(b(k0, n)) | (half_bits(b(k0 + 1, n)) << 16); };
        frags.push_back(make_uint2(pair(k), pair(k + 8)));
      }
  return frags;
}

/// The fully connected layers as B fragments and every layer's bias padded to whole tiles, on the
/// device: all that rung 12's kernel reads besides its two convolutions. Rung 18 runs rung 12's
/// fully connected layers, so it holds these too.
struct FcLayersAndBiases {
  course::DeviceBuffer<uint2> fc1, fc2, fc3;
  course::DeviceBuffer<float> conv1_bias, conv2_bias, fc1_bias, fc2_bias, fc3_bias;

  void upload(const lab04::FoldedLeNet& net) {
    fc1 = course::DeviceBuffer<uint2>(b_fragments(tc::kFc1KSteps, tc::kFc1NTiles, layer_b(net, tc::fc1_b)));
    fc2 = course::DeviceBuffer<uint2>(b_fragments(tc::kFc2KSteps, tc::kFc2NTiles, layer_b(net, tc::fc2_b)));
    fc3 = course::DeviceBuffer<uint2>(b_fragments(tc::kFc3KSteps, tc::kFc3NTiles, layer_b(net, tc::fc3_b)));
    conv1_bias = course::DeviceBuffer<float>(tc::padded_bias(net.conv1_bias, 8));
    conv2_bias = course::DeviceBuffer<float>(tc::padded_bias(net.conv2_bias, 16));
    fc1_bias = course::DeviceBuffer<float>(tc::padded_bias(net.fc1_bias, 8 * tc::kFc1NTiles));
    fc2_bias = course::DeviceBuffer<float>(tc::padded_bias(net.fc2_bias, 8 * tc::kFc2NTiles));
    fc3_bias = course::DeviceBuffer<float>(tc::padded_bias(net.fc3_bias, 8 * tc::kFc3NTiles));
  }

  /// The kernel's weights, with these and the two convolutions' fragments (nullptr: not read).
  tc::Weights weights(const uint2* conv1, const uint2* conv2) const {
    return {conv1, conv1_bias.get(), conv2, conv2_bias.get(), fc1.get(),
            fc1_bias.get(), fc2.get(), fc2_bias.get(), fc3.get(), fc3_bias.get()};
  }

  /// A layer's B[k][n] in the kernel's k-order (tensor_core_weights.cuh), as b_fragments takes it.
  static std::function<float(int, int)> layer_b(const lab04::FoldedLeNet& net,
                                                float (*b)(const lab04::FoldedLeNet&, int, int)) {
    return [&net, b](int k, int n) { return b(net, k, n); };
  }
};

class TensorCoreLeNet : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    if (max_batch < 1) throw course::Error("rung 12: max_batch must be >= 1, got " + std::to_string(max_batch));
    ladder::support::DeviceWeights::check_shapes(net);

    conv1_ = course::DeviceBuffer<uint2>(b_fragments(tc::kConv1KSteps, 1, FcLayersAndBiases::layer_b(net, tc::conv1_b)));
    conv2_ = course::DeviceBuffer<uint2>(
        b_fragments(tc::kConv2KSteps, tc::kConv2NTiles, FcLayersAndBiases::layer_b(net, tc::conv2_b)));
    rest_.upload(net);

    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const int per_sm = std::min(allow_shared_memory<tc::ImagesIn<float>>(), allow_shared_memory<tc::ImagesIn<std::uint8_t>>());
    if (per_sm < 1) throw course::Error("rung 12: the kernel does not fit on this GPU (shared memory per block)");
    resident_blocks_ = sms * per_sm;
    max_batch_ = max_batch;
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    if (d_images == nullptr) throw course::Error("rung 12: forward() got a null device pointer");
    if (reinterpret_cast<std::uintptr_t>(d_images) % alignof(float4) != 0)
      throw course::Error("rung 12: d_images must be 16-byte aligned (the kernel reads float4)");
    launch(tc::ImagesIn<float>{d_images}, n, d_logits, d_labels, stream);
  }

  /// The same network on uint8 pixels [n,28,28] (0..255) in device memory: the kernel divides by
  /// 255 as it stages each image, so no conversion pass and no float copy of the batch are needed.
  /// Same results as forward() on float(pixel) / 255.0f. For host pipelines (rung 14).
  static constexpr bool kReadsPixels = true;
  void forward_pixels(const std::uint8_t* d_pixels, int n, float* d_logits, int* d_labels, cudaStream_t stream) {
    if (d_pixels == nullptr) throw course::Error("rung 12: forward() got a null device pointer");
    if (reinterpret_cast<std::uintptr_t>(d_pixels) % alignof(uchar4) != 0)
      throw course::Error("rung 12: d_pixels must be 4-byte aligned (the kernel reads 4 pixels as one 32-bit word)");
    launch(tc::ImagesIn<std::uint8_t>{d_pixels}, n, d_logits, d_labels, stream);
  }

  int max_batch() const { return max_batch_; }
  bool reduced_precision() const override { return true; }

 protected:
  /// The weights as the kernels take them (also for a kernel of its own: rung 23's).
  tc::Weights weights() const { return rest_.weights(conv1_.get(), conv2_.get()); }

  /// The kernel for images from `Source` uses ~97 KB of shared memory per block or more (above the
  /// 48 KB default, so it has to be asked for, once per Source); returns how many blocks fit on an SM.
  template <typename Source>
  static int allow_shared_memory() {
    return allow_shared_memory(tc::lenet_tensor_cores<Source>, tc::shared_bytes<Source>());
  }
  /// The same for any kernel of kThreads threads with `bytes` of dynamic shared memory (rung 23's).
  template <typename Kernel>
  static int allow_shared_memory(Kernel kernel, int bytes) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, tc::kThreads, bytes));
    return per_sm;
  }

  /// One launch over n images from `source` (allow_shared_memory<Source>() called before).
  template <typename Source>
  void launch(Source source, int n, float* d_logits, int* d_labels, cudaStream_t stream) {
    if (d_logits == nullptr || d_labels == nullptr) throw course::Error("rung 12: forward() got a null device pointer");
    if (n < 1 || n > max_batch_)
      throw course::Error("rung 12: n must be in [1, " + std::to_string(max_batch_) + "], got " + std::to_string(n));
    // One wave of resident blocks, each a contiguous range of images; ranges are a multiple of 8
    // so that every warp of a block gets the same number of images.
    const int per_block = (((n + resident_blocks_ - 1) / resident_blocks_) + tc::kWarps - 1) / tc::kWarps * tc::kWarps;
    const int blocks = (n + per_block - 1) / per_block;
    tc::lenet_tensor_cores<Source><<<blocks, tc::kThreads, tc::shared_bytes<Source>(), stream>>>(
        source, n, per_block, weights(), d_logits, d_labels);
    CUDA_CHECK_LAST_LAUNCH();
  }

 private:
  course::DeviceBuffer<uint2> conv1_, conv2_;
  FcLayersAndBiases rest_;  // the fc layers and every bias
  int resident_blocks_ = 0;
  int max_batch_ = 0;
};

}  // namespace
