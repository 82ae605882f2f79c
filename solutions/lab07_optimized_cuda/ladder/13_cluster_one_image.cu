// Rung 13: one image in a few microseconds -- a thread-block cluster of SMs shares the network.
// Why faster for one image: its latency is a chain of dependent steps (fetch, conv1, conv2, fc1,
// fc2, fc3), and rung 09's small-batch kernel walks the whole chain on one SM; here every step is
// split over the SMs of a cluster (sm_90), which hand results to each other through distributed
// shared memory and the cluster barrier (hardware, inside one kernel). More SMs shorten each step.
//
// The kernel and the division of labour are in 13_cluster_one_image.cuh. This file packs the
// weights in the order the CTAs read them and launches one cluster per image
// (cudaLaunchKernelEx with a cluster-dimension attribute; it is captured into CUDA graphs like any
// launch). A batch takes the cluster kernel while all its clusters fit on the GPU at once (one
// wave); a larger one goes to lab07::FastLeNet (rung 09), which is built for throughput.
//
// Knobs, for measuring (read by prepare()):
//   COURSE_LADDER_CLUSTER=8|16             CTAs per image (16 needs the non-portable cluster size)
//   COURSE_LADDER_CONV1=shared|redundant   conv1 split over the cluster and exchanged, or computed
//                                          whole by every CTA (no exchange, ~0.5 us of FFMAs each)
//   COURSE_LADDER_CLUSTER_ALL=1            every batch through the cluster kernel (to check it on
//                                          the full test splits; slower above one wave)
#include <cuda_runtime.h>

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

constexpr int kDefaultCluster = 16;
constexpr bool kDefaultShareConv1 = true;

/// The folded network in the packed order of 13_cluster_one_image.cuh (Layout<kCluster>).
template <int kCluster>
std::vector<float> pack_weights(const lab04::FoldedLeNet& net) {
  using L = co::Layout<kCluster>;
  constexpr int kCh = L::kChannels;
  constexpr int kFlat = co::kC2 * co::kPool2Pixels;  // fc1's inputs: channel * 25 + pooled pixel
  std::vector<float> packed(static_cast<std::size_t>(L::kPackedFloats), 0.0f);
  const auto at = [](const course::Tensor& w, int i) { return w[static_cast<std::size_t>(i)]; };

  for (int k = 0; k < co::kC1; ++k) {
    for (int tap = 0; tap < co::kTaps; ++tap) packed[static_cast<std::size_t>(k * co::kTaps + tap)] = at(net.conv1_weight, k * co::kTaps + tap);
    packed[static_cast<std::size_t>(co::kC1 * co::kTaps + k)] = at(net.conv1_bias, k);
  }
  for (int rank = 0; rank < kCluster; ++rank) {
    float* conv2 = packed.data() + co::kConv1Floats + rank * L::kRankFloats;
    float* fc1 = conv2 + L::kConv2Floats;
    for (int j = 0; j < kCh; ++j) {
      const int channel = rank * kCh + j;
      for (int c = 0; c < co::kC1; ++c)
        for (int tap = 0; tap < co::kTaps; ++tap)
          conv2[(j * co::kC1 + c) * co::kTaps + tap] = at(net.conv2_weight, (channel * co::kC1 + c) * co::kTaps + tap);
      conv2[kCh * co::kC1 * co::kTaps + j] = at(net.conv2_bias, channel);
      // fc1's columns of this channel's 25 features, input-major: [feature][output].
      for (int i = 0; i < co::kPool2Pixels; ++i)
        for (int o = 0; o < co::kFc1; ++o)
          fc1[(j * co::kPool2Pixels + i) * co::kFc1 + o] = at(net.fc1_weight, o * kFlat + channel * co::kPool2Pixels + i);
    }
  }
  float* tail = packed.data() + L::kTailAt;
  for (int o = 0; o < co::kFc1; ++o) tail[co::kTailFc1Bias + o] = at(net.fc1_bias, o);
  for (int o = 0; o < co::kFc2; ++o) {
    for (int k = 0; k < co::kFc1; ++k) tail[co::kTailFc2 + k * co::kFc2 + o] = at(net.fc2_weight, o * co::kFc1 + k);
    tail[co::kTailFc2Bias + o] = at(net.fc2_bias, o);
  }
  for (int o = 0; o < co::kClasses; ++o) {
    for (int k = 0; k < co::kFc2; ++k) tail[co::kTailFc3 + o * co::kFc2 + k] = at(net.fc3_weight, o * co::kFc2 + k);
    tail[co::kTailFc3Bias + o] = at(net.fc3_bias, o);
  }
  return packed;
}

/// An environment knob: `fallback` when unset or empty, else one of `allowed` (course::Error otherwise).
std::string knob(const char* name, const std::string& fallback, const std::vector<std::string>& allowed) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  for (const std::string& value : allowed)
    if (value == text) return value;
  std::string list;
  for (const std::string& value : allowed) list += (list.empty() ? "" : " or ") + value;
  throw course::Error(std::string(name) + " must be " + list + ", got '" + text + "'");
}

class ClusterOneImage final : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    ladder::support::DeviceWeights::check_shapes(net);
    ladder::support::check_max_batch(max_batch);
    int device = 0, clusters_supported = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&clusters_supported, cudaDevAttrClusterLaunch, device));
    if (clusters_supported == 0)
      throw course::Error("rung 13: this GPU cannot launch thread-block clusters (compute capability 9.0+ needed)");

    cluster_ = std::stoi(knob("COURSE_LADDER_CLUSTER", std::to_string(kDefaultCluster), {"8", "16"}));
    const bool share = knob("COURSE_LADDER_CONV1", kDefaultShareConv1 ? "shared" : "redundant",
                            {"shared", "redundant"}) == "shared";
    const bool always = knob("COURSE_LADDER_CLUSTER_ALL", "0", {"0", "1"}) == "1";
    if (cluster_ == 8) {
      packed_ = course::DeviceBuffer<float>(pack_weights<8>(net));
      smem_bytes_ = co::Layout<8>::kSmemBytes;
      kernel_ = share ? co::cluster_lenet<8, true> : co::cluster_lenet<8, false>;
    } else {
      packed_ = course::DeviceBuffer<float>(pack_weights<16>(net));
      smem_bytes_ = co::Layout<16>::kSmemBytes;
      kernel_ = share ? co::cluster_lenet<16, true> : co::cluster_lenet<16, false>;
      // 16 CTAs is above the portable maximum of 8: the kernel has to opt in.
      CUDA_CHECK(cudaFuncSetAttribute(kernel_, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    }
    CUDA_CHECK(cudaFuncSetAttribute(kernel_, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes_));

    // One wave: as many images as clusters fit on the GPU at once. Beyond that a second wave would
    // double the time, and FastLeNet's kernels are the better tool anyway.
    cudaLaunchAttribute attribute{};
    const cudaLaunchConfig_t one = launch_config(1, nullptr, attribute);
    int resident = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(&resident, kernel_, &one));
    if (resident < 1) throw course::Error("rung 13: not one cluster of " + std::to_string(cluster_) + " CTAs fits on this GPU");
    max_batch_ = max_batch;
    cluster_max_batch_ = always ? max_batch : std::min(max_batch, resident);
    fallback_.reset();
    if (cluster_max_batch_ < max_batch) fallback_ = std::make_unique<lab07::FastLeNet>(net, max_batch);

    static bool told = false;  // once per process: the runner prepares a rung several times
    if (!told) {
      told = true;
      std::printf("  rung 13: clusters of %d CTAs x %d threads, %d B shared memory each, conv1 %s; %d clusters "
                  "resident at once; batches up to %d images take the cluster kernel\n",
                  cluster_, co::kThreads, smem_bytes_, share ? "shared" : "redundant", resident, cluster_max_batch_);
    }
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    ladder::support::check_forward(d_images, n, max_batch_, d_logits, d_labels);
    if (n > cluster_max_batch_) {
      fallback_->forward(d_images, n, d_logits, d_labels, stream);
      return;
    }
    if (reinterpret_cast<std::uintptr_t>(d_images) % (2 * sizeof(float)) != 0)
      throw course::Error("rung 13: d_images must be 8-byte aligned (the kernel copies 8 bytes at a time)");
    cudaLaunchAttribute attribute{};
    const cudaLaunchConfig_t config = launch_config(n, stream, attribute);
    const float* packed = packed_.get();
    CUDA_CHECK(cudaLaunchKernelEx(&config, kernel_, d_images, packed, d_logits, d_labels));
  }

 private:
  /// n clusters of cluster_ CTAs; the attribute lives in the caller's frame.
  cudaLaunchConfig_t launch_config(int n, cudaStream_t stream, cudaLaunchAttribute& attribute) const {
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = static_cast<unsigned>(cluster_);
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(n) * static_cast<unsigned>(cluster_));
    config.blockDim = dim3(co::kThreads);
    config.dynamicSmemBytes = static_cast<std::size_t>(smem_bytes_);
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    return config;
  }

  course::DeviceBuffer<float> packed_;
  Kernel kernel_ = nullptr;
  int cluster_ = kDefaultCluster;
  int smem_bytes_ = 0;
  int max_batch_ = 0;
  int cluster_max_batch_ = 0;
  std::unique_ptr<lab07::FastLeNet> fallback_;
};

}  // namespace

COURSE_LADDER_RUNG(13, "cluster_one_image",
                   "one image spread over a 16-SM thread-block cluster (DSMEM + cluster barrier): a shorter dependent chain",
                   ClusterOneImage);
