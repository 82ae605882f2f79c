// Rungs 15 and 16's network: rung 12's weights in rung 12's k-orders (tensor_core_weights.cuh),
// stored as TF32 B fragments (15_tf32_kernels.cuh), and forward() launching the kernel that the
// rung chooses: lenet_tf32<OneTf32> (rung 15) or lenet_tf32<ThreeTf32<...>> (rung 16, "split":
// the weights' rounding rests are uploaded too). Anonymous namespace: each .cu gets its own copy.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "15_tf32_kernels.cuh"
#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "ladder.hpp"
#include "rung_support.hpp"
#include "tensor_core_weights.cuh"

namespace {

class Tf32LeNet : public ladder::Rung {
 public:
  using Kernel = void (*)(const float*, int, int, ladder::tf32::Weights, float*, int*);

  /// choose_kernel runs in prepare(), after the check that this GPU has TF32 tensor cores.
  Tf32LeNet(int rung, bool split, std::function<Kernel()> choose_kernel)
      : name_("rung " + std::to_string(rung)), split_(split), choose_kernel_(std::move(choose_kernel)) {}

  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    if (const std::string why = unsupported_reason(); !why.empty()) throw course::Error(name_ + ": " + why);
    if (max_batch < 1) throw course::Error(name_ + ": max_batch must be >= 1, got " + std::to_string(max_batch));
    ladder::support::DeviceWeights::check_shapes(net);
    namespace tc = ladder::tensor_cores;

    const auto upload = [&](Layer& layer, int ksteps, int ntiles, float (*b)(const lab04::FoldedLeNet&, int, int)) {
      const auto element = [&net, b](int k, int n) { return b(net, k, n); };
      layer.hi = course::DeviceBuffer<float4>(ladder::tf32::tf32_fragments(ksteps, ntiles, element, false));
      if (split_)
        layer.lo = course::DeviceBuffer<float4>(ladder::tf32::tf32_fragments(ksteps, ntiles, element, true));
    };
    upload(conv1_, tc::kConv1KSteps, 1, tc::conv1_b);
    upload(conv2_, tc::kConv2KSteps, tc::kConv2NTiles, tc::conv2_b);
    upload(fc1_, tc::kFc1KSteps, tc::kFc1NTiles, tc::fc1_b);
    upload(fc2_, tc::kFc2KSteps, tc::kFc2NTiles, tc::fc2_b);
    upload(fc3_, tc::kFc3KSteps, tc::kFc3NTiles, tc::fc3_b);
    // Biases stay FP32: they are added to the FP32 accumulators.
    conv1_bias_ = course::DeviceBuffer<float>(tc::padded_bias(net.conv1_bias, 8));
    conv2_bias_ = course::DeviceBuffer<float>(tc::padded_bias(net.conv2_bias, 16));
    fc1_bias_ = course::DeviceBuffer<float>(tc::padded_bias(net.fc1_bias, 8 * tc::kFc1NTiles));
    fc2_bias_ = course::DeviceBuffer<float>(tc::padded_bias(net.fc2_bias, 8 * tc::kFc2NTiles));
    fc3_bias_ = course::DeviceBuffer<float>(tc::padded_bias(net.fc3_bias, 8 * tc::kFc3NTiles));

    kernel_ = choose_kernel_();
    // 99.25 KB per block, two blocks per SM: above the 48 KB default, and both blocks need the
    // largest shared-memory carveout (228 KB on the H100; the next smaller one holds only one).
    const int shared_bytes = static_cast<int>(sizeof(ladder::tf32::SharedTiles));
    CUDA_CHECK(cudaFuncSetAttribute(kernel_, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
    CUDA_CHECK(cudaFuncSetAttribute(kernel_, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutMaxShared));
    int device = 0, sms = 0, per_sm = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_, ladder::tf32::kThreads,
                                                             static_cast<std::size_t>(shared_bytes)));
    if (per_sm < 1) throw course::Error(name_ + ": the kernel does not fit on this GPU (shared memory per block)");
    resident_blocks_ = sms * per_sm;
    max_batch_ = max_batch;
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    if (d_images == nullptr || d_logits == nullptr || d_labels == nullptr)
      throw course::Error(name_ + ": forward() got a null device pointer");
    if (reinterpret_cast<std::uintptr_t>(d_images) % alignof(float4) != 0)
      throw course::Error(name_ + ": d_images must be 16-byte aligned (the kernel reads float4)");
    if (n < 1 || n > max_batch_)
      throw course::Error(name_ + ": n must be in [1, " + std::to_string(max_batch_) + "], got " + std::to_string(n));
    // As rung 12: one wave of resident blocks, each a contiguous range of a multiple of 8 images.
    constexpr int kWarps = ladder::tf32::kWarps;
    const int per_block = (((n + resident_blocks_ - 1) / resident_blocks_) + kWarps - 1) / kWarps * kWarps;
    const int blocks = (n + per_block - 1) / per_block;
    const ladder::tf32::Weights weights{conv1_.fragments(), conv1_bias_.get(), conv2_.fragments(), conv2_bias_.get(),
                                        fc1_.fragments(),   fc1_bias_.get(),   fc2_.fragments(),   fc2_bias_.get(),
                                        fc3_.fragments(),   fc3_bias_.get()};
    kernel_<<<blocks, ladder::tf32::kThreads, sizeof(ladder::tf32::SharedTiles), stream>>>(d_images, n, per_block,
                                                                                         weights, d_logits, d_labels);
    CUDA_CHECK_LAST_LAUNCH();
  }

  /// Rung 15 (one TF32 product: 11 significant bits, as FP16) is checked on accuracy; rung 16
  /// (three products: about FP32's 24 bits) must pass the FP32 check, identical labels and logits
  /// within 1e-3 of the golden network.
  bool reduced_precision() const override { return !split_; }

  std::string unsupported_reason() const override {
    int device = 0, major = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    return major >= 8 ? "" : "TF32 tensor cores (mma.sync .tf32) need compute capability 8.0+";
  }

 private:
  struct Layer {
    course::DeviceBuffer<float4> hi, lo;  // lo stays empty for one product (its get() is then null)
    ladder::tf32::Fragments fragments() const { return {hi.get(), lo.get()}; }
  };
  std::string name_;
  bool split_;
  std::function<Kernel()> choose_kernel_;
  Kernel kernel_ = nullptr;
  Layer conv1_, conv2_, fc1_, fc2_, fc3_;
  course::DeviceBuffer<float> conv1_bias_, conv2_bias_, fc1_bias_, fc2_bias_, fc3_bias_;
  int resident_blocks_ = 0;
  int max_batch_ = 0;
};

}  // namespace
