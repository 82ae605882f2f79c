// Rung 19: one image, the fixed costs of the chain cut -- rung 13's cluster with its weights kept
// in L2 between requests. (Numbers: see the bottom of this comment and lecture 07, section 15f.)
//
// Why faster: at batch 1 nothing is bandwidth; the time is a chain of dependent steps, and the
// first link of rung 13's chain is a cold fetch. The benchmark flushes L2 before every run (as a
// server would see it after other work), so every CTA waits for DRAM before conv1 can start, and
// CTA 0 once more for fc2's and fc3's 41 KB. Those 245 KB of weights are the same for every
// request: an access-policy window (a launch attribute) marks them *persisting*, so they stay in a
// part of L2 that is set aside for them (cudaLimitPersistingL2CacheSize) and the flush's ordinary
// writes cannot evict them. Only the image still comes from DRAM, and the weights' first link of
// the chain is an L2 hit. The kernel is rung 13's (13_cluster_one_image.cuh), unchanged.
//
// The price: 1 MB of L2 set aside (of 50 MB on the H100) while the rung lives, a device-wide
// setting, restored (and the persisting lines released) when it is destroyed.
//
// Knobs, for measuring (read by prepare()):
//   COURSE_LADDER_L2_PERSIST=1|0            the weights persisting in L2 (default 1); 0 = rung 13
//   COURSE_LADDER_CLUSTER=auto|8|16         CTAs per image, as rung 13
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "13_cluster_one_image.cuh"
#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "labs/lab07_optimized_cuda.hpp"
#include "ladder.hpp"
#include "rung_support.hpp"

namespace {

namespace co = ladder::cluster_one_image;
using Kernel = void (*)(const float*, const float*, float*, int*);

constexpr int kWideMaxImages = 6;  // rung 13's measured switch from 16 to 8 CTAs per image

/// The folded network in the order Layout<kCluster> reads it (the same packing as rung 13's).
template <int kCluster>
std::vector<float> pack_weights(const lab04::FoldedLeNet& net) {
  using L = co::Layout<kCluster>;
  constexpr int kCh = L::kChannels;
  constexpr int kFlat = co::kC2 * co::kPool2Pixels;
  std::vector<float> packed(static_cast<std::size_t>(L::kPackedFloats), 0.0f);
  const auto at = [](const course::Tensor& w, int i) { return w[static_cast<std::size_t>(i)]; };
  const auto put = [&packed](int i, float v) { packed[static_cast<std::size_t>(i)] = v; };
  for (int k = 0; k < co::kC1; ++k) {
    for (int tap = 0; tap < co::kTaps; ++tap) put(k * co::kTaps + tap, at(net.conv1_weight, k * co::kTaps + tap));
    put(co::kC1 * co::kTaps + k, at(net.conv1_bias, k));
  }
  for (int rank = 0; rank < kCluster; ++rank) {
    const int conv2 = co::kConv1Floats + rank * L::kRankFloats, fc1 = conv2 + L::kConv2Floats;
    for (int j = 0; j < kCh; ++j) {
      const int channel = rank * kCh + j;
      for (int c = 0; c < co::kC1; ++c)
        for (int tap = 0; tap < co::kTaps; ++tap)
          put(conv2 + (j * co::kC1 + c) * co::kTaps + tap, at(net.conv2_weight, (channel * co::kC1 + c) * co::kTaps + tap));
      put(conv2 + kCh * co::kC1 * co::kTaps + j, at(net.conv2_bias, channel));
      for (int i = 0; i < co::kPool2Pixels; ++i)
        for (int o = 0; o < co::kFc1; ++o)
          put(fc1 + (j * co::kPool2Pixels + i) * co::kFc1 + o, at(net.fc1_weight, o * kFlat + channel * co::kPool2Pixels + i));
    }
  }
  const int tail = L::kTailAt;
  for (int o = 0; o < co::kFc1; ++o) put(tail + co::kTailFc1Bias + o, at(net.fc1_bias, o));
  for (int o = 0; o < co::kFc2; ++o) {
    for (int k = 0; k < co::kFc1; ++k) put(tail + co::kTailFc2 + k * co::kFc2 + o, at(net.fc2_weight, o * co::kFc1 + k));
    put(tail + co::kTailFc2Bias + o, at(net.fc2_bias, o));
  }
  for (int o = 0; o < co::kClasses; ++o) {
    for (int k = 0; k < co::kFc2; ++k) put(tail + co::kTailFc3 + o * co::kFc2 + k, at(net.fc3_weight, o * co::kFc2 + k));
    put(tail + co::kTailFc3Bias + o, at(net.fc3_bias, o));
  }
  return packed;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* text = std::getenv(name);
  return text == nullptr || *text == '\0' ? fallback : std::string(text);
}

struct ClusterKernel {
  int cluster = 0;
  Kernel kernel = nullptr;
  int smem_bytes = 0;
  int resident = 0;
  course::DeviceBuffer<float> packed;
};

template <int kCluster>
std::unique_ptr<ClusterKernel> make_cluster_kernel(const lab04::FoldedLeNet& net) {
  auto k = std::make_unique<ClusterKernel>();
  k->cluster = kCluster;
  k->kernel = co::cluster_lenet<kCluster, true>;
  k->smem_bytes = co::Layout<kCluster>::kSmemBytes;
  k->packed = course::DeviceBuffer<float>(pack_weights<kCluster>(net));
  if (kCluster > 8) CUDA_CHECK(cudaFuncSetAttribute(k->kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CUDA_CHECK(cudaFuncSetAttribute(k->kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, k->smem_bytes));
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = kCluster;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t one{};
  one.gridDim = dim3(kCluster);
  one.blockDim = dim3(co::kThreads);
  one.dynamicSmemBytes = static_cast<std::size_t>(k->smem_bytes);
  one.attrs = &attribute;
  one.numAttrs = 1;
  CUDA_CHECK(cudaOccupancyMaxActiveClusters(&k->resident, k->kernel, &one));
  if (k->resident < 1) throw course::Error("rung 19: not one cluster of " + std::to_string(kCluster) + " CTAs fits");
  return k;
}

class OneImageFast final : public ladder::Rung {
 public:
  ~OneImageFast() override { release_l2(); }

  std::string unsupported_reason() const override {
    int device = 0, clusters = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, device));
    return clusters != 0 ? "" : "this GPU cannot launch thread-block clusters (compute capability 9.0+ needed)";
  }

  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    ladder::support::DeviceWeights::check_shapes(net);
    ladder::support::check_max_batch(max_batch);
    if (const std::string why = unsupported_reason(); !why.empty()) throw course::Error("rung 19: " + why);
    const std::string width = env_or("COURSE_LADDER_CLUSTER", "auto");
    const std::string persist = env_or("COURSE_LADDER_L2_PERSIST", "1");
    if (width != "auto" && width != "8" && width != "16")
      throw course::Error("COURSE_LADDER_CLUSTER must be auto, 8 or 16, got '" + width + "'");
    if (persist != "0" && persist != "1") throw course::Error("COURSE_LADDER_L2_PERSIST must be 0 or 1, got '" + persist + "'");
    release_l2();
    wide_.reset();
    narrow_.reset();
    fallback_.reset();
    wide_max_ = narrow_max_ = 0;
    if (width != "8") {
      wide_ = make_cluster_kernel<16>(net);
      wide_max_ = std::min(width == "16" ? wide_->resident : kWideMaxImages, max_batch);
    }
    if (width != "16") {
      narrow_ = make_cluster_kernel<8>(net);
      narrow_max_ = std::min(narrow_->resident, max_batch);
    }
    max_batch_ = max_batch;
    if (std::max(wide_max_, narrow_max_) < max_batch) fallback_ = std::make_unique<lab07::FastLeNet>(net, max_batch);

    persist_ = persist == "1";
    if (persist_) {
      // Set aside enough L2 for both packings (the device rounds up to its granularity).
      std::size_t want = 0;
      for (const ClusterKernel* k : {wide_.get(), narrow_.get()})
        if (k != nullptr) want += k->packed.bytes();
      int device = 0, max_persist = 0;
      CUDA_CHECK(cudaGetDevice(&device));
      CUDA_CHECK(cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, device));
      if (max_persist <= 0) {
        persist_ = false;  // no persisting L2 on this GPU: rung 13's behaviour
      } else {
        CUDA_CHECK(cudaDeviceGetLimit(&old_limit_, cudaLimitPersistingL2CacheSize));
        CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize,
                                      std::max(old_limit_, std::min(want, static_cast<std::size_t>(max_persist)))));
        limit_changed_ = true;
      }
    }
    static bool told = false;
    if (!told) {
      told = true;
      std::printf("  rung 19: weights %s; ", persist_ ? "persisting in L2" : "cold (no persisting window)");
      for (const ClusterKernel* k : {wide_.get(), narrow_.get()})
        if (k != nullptr)
          std::printf("%d-CTA clusters up to %d images; ", k->cluster, k == wide_.get() ? wide_max_ : narrow_max_);
      std::printf("larger batches: lab07::FastLeNet\n");
    }
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    ladder::support::check_forward(d_images, n, max_batch_, d_logits, d_labels);
    const ClusterKernel* k = n <= wide_max_ ? wide_.get() : n <= narrow_max_ ? narrow_.get() : nullptr;
    if (k == nullptr) {
      fallback_->forward(d_images, n, d_logits, d_labels, stream);
      return;
    }
    if (reinterpret_cast<std::uintptr_t>(d_images) % (2 * sizeof(float)) != 0)
      throw course::Error("rung 19: d_images must be 8-byte aligned (the kernel copies 8 bytes at a time)");
    cudaLaunchAttribute attributes[2]{};
    attributes[0].id = cudaLaunchAttributeClusterDimension;
    attributes[0].val.clusterDim.x = static_cast<unsigned>(k->cluster);
    attributes[0].val.clusterDim.y = 1;
    attributes[0].val.clusterDim.z = 1;
    // The weights: hits keep their lines in the set-aside part of L2 (a graph capture keeps this
    // attribute on the kernel node). Everything else (the image, the outputs) is ordinary.
    attributes[1].id = cudaLaunchAttributeAccessPolicyWindow;
    attributes[1].val.accessPolicyWindow.base_ptr = const_cast<float*>(k->packed.get());
    attributes[1].val.accessPolicyWindow.num_bytes = k->packed.bytes();
    attributes[1].val.accessPolicyWindow.hitRatio = 1.0f;
    attributes[1].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attributes[1].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(n) * static_cast<unsigned>(k->cluster));
    config.blockDim = dim3(co::kThreads);
    config.dynamicSmemBytes = static_cast<std::size_t>(k->smem_bytes);
    config.stream = stream;
    config.attrs = attributes;
    config.numAttrs = persist_ ? 2 : 1;
    const float* packed = k->packed.get();
    CUDA_CHECK(cudaLaunchKernelEx(&config, k->kernel, d_images, packed, d_logits, d_labels));
  }

 private:
  void release_l2() {
    if (!limit_changed_) return;
    limit_changed_ = false;
    (void)cudaCtxResetPersistingL2Cache();  // persisting lines back to normal: later rungs see a plain L2
    (void)cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, old_limit_);
  }

  std::unique_ptr<ClusterKernel> wide_, narrow_;
  int wide_max_ = 0, narrow_max_ = 0, max_batch_ = 0;
  std::unique_ptr<lab07::FastLeNet> fallback_;
  bool persist_ = false, limit_changed_ = false;
  std::size_t old_limit_ = 0;
};

}  // namespace

COURSE_LADDER_RUNG(19, "one_image_fast",
                   "rung 13's cluster with the weights kept in L2 between requests (persisting window): no cold weight fetch",
                   OneImageFast);
