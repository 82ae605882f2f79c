// Rung 13: one image in 7.6 us (bench/results/lab07_h100_80gb_hbm3.csv, H100; 7.6 us in an earlier
// run too) -- a thread-block cluster of 16 CTAs, one per SM, shares the network.
// Why faster for one image: its latency is a chain of dependent steps (fetch, conv1, conv2, fc1,
// fc2, fc3), and rung 09's small-batch kernel walks the whole chain on one SM; here every step is
// split over the SMs of a cluster (sm_90), which hand results to each other through distributed
// shared memory and the cluster barrier (hardware, inside one kernel). More SMs shorten each step.
//
// Measured on an H100 SXM (lab07_ladder, L2 flushed before every run; device mode / graph replay):
//   1 image    rung 09 12.4 / 12.4 us   rung 13 7.7 / 7.6 us   (ncu: kernel 6.7-7.1 us vs 11.5-11.9)
//   8 images   rung 09 12.9 / 12.7 us   rung 13 8.2 / 8.2 us   (8-CTA clusters)
//   30 images  rung 09 13.1 / 12.9 us   rung 13 10.2 / 10.2 us; from 100 images on, FastLeNet's time
// Variants at 1 image (graph, one run, where 16 CTAs with shared conv1 took 7.6 us): conv1
// computed whole by every CTA 8.7 us (16 CTAs) / 9.1 us (8 CTAs); 8 CTAs with shared conv1 8.0 us.
// Every variant passed the full-split check (COURSE_LADDER_CLUSTER_ALL=1).
// Limiter (ncu, 1 image): latency. The SMs issue an instruction in 19 % of cycles (0.19 warps per
// scheduler), DRAM 1 % and SM 1 % busy: the time is the chain itself -- cold fetches, the DSMEM
// exchanges and the barriers between the steps.
//
// The kernel and the division of labour are in 13_cluster_one_image.cuh. This file packs the
// weights in the order the CTAs read them and launches one cluster per image
// (cudaLaunchKernelEx with a cluster-dimension attribute; it is captured into CUDA graphs like any
// launch). Up to kWideMaxImages images get 16 CTAs each, up to the GPU's resident count of
// 8-CTA clusters 8 each (one wave); larger batches go to lab07::FastLeNet (rung 09), which is
// built for throughput.
//
// Knobs, for measuring (read by prepare()):
//   COURSE_LADDER_CLUSTER=auto|8|16        CTAs per image (16 needs the non-portable cluster size)
//   COURSE_LADDER_CONV1=shared|redundant   conv1 split over the cluster and exchanged, or computed
//                                          whole by every CTA (no exchange, ~0.5 us of FFMAs each)
//   COURSE_LADDER_CLUSTER_ALL=1            every batch through a cluster kernel (to check it on
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

using ladder::support::knob;

namespace co = ladder::cluster_one_image;
using Kernel = void (*)(const float*, const float*, float*, int*);

// Up to this many images, 16 CTAs per image; then 8. Measured on the H100 (graph replay, either
// width forced): 1-6 images 7.6-7.7 us with 16 vs 7.9-8.0 us with 8; 8 images 9.2 us with 16 vs
// 8.2 us with 8 (a 16-CTA cluster needs 16 SMs of one GPC; from 8 images on they share SMs).
constexpr int kWideMaxImages = 6;

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

/// One cluster width: its kernel, the weights packed for it, and how many of its clusters the GPU
/// holds at once (cudaOccupancyMaxActiveClusters: a cluster needs kCluster SMs of one GPC).
struct ClusterKernel {
  int cluster = 0;
  Kernel kernel = nullptr;
  int smem_bytes = 0;
  int resident = 0;
  course::DeviceBuffer<float> packed;

  /// n clusters of `cluster` CTAs; the attribute lives in the caller's frame.
  cudaLaunchConfig_t config(int n, cudaStream_t stream, cudaLaunchAttribute& attribute) const {
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = static_cast<unsigned>(cluster);
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    cudaLaunchConfig_t c{};
    c.gridDim = dim3(static_cast<unsigned>(n) * static_cast<unsigned>(cluster));
    c.blockDim = dim3(co::kThreads);
    c.dynamicSmemBytes = static_cast<std::size_t>(smem_bytes);
    c.stream = stream;
    c.attrs = &attribute;
    c.numAttrs = 1;
    return c;
  }
};

template <int kCluster>
std::unique_ptr<ClusterKernel> make_cluster_kernel(const lab04::FoldedLeNet& net, bool share_conv1) {
  auto k = std::make_unique<ClusterKernel>();
  k->cluster = kCluster;
  k->kernel = share_conv1 ? co::cluster_lenet<kCluster, true> : co::cluster_lenet<kCluster, false>;
  k->smem_bytes = co::Layout<kCluster>::kSmemBytes;
  k->packed = course::DeviceBuffer<float>(pack_weights<kCluster>(net));
  if (kCluster > 8)  // above the portable maximum of 8 CTAs: the kernel has to opt in
    CUDA_CHECK(cudaFuncSetAttribute(k->kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CUDA_CHECK(cudaFuncSetAttribute(k->kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, k->smem_bytes));
  cudaLaunchAttribute attribute{};
  const cudaLaunchConfig_t one = k->config(1, nullptr, attribute);
  CUDA_CHECK(cudaOccupancyMaxActiveClusters(&k->resident, k->kernel, &one));
  if (k->resident < 1)
    throw course::Error("rung 13: not one cluster of " + std::to_string(kCluster) + " CTAs fits on this GPU");
  return k;
}

class ClusterOneImage final : public ladder::Rung {
 public:
  std::string unsupported_reason() const override { return ladder::support::clusters_unsupported(); }

  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    ladder::support::DeviceWeights::check_shapes(net);
    ladder::support::check_max_batch(max_batch);
    if (const std::string why = unsupported_reason(); !why.empty()) throw course::Error("rung 13: " + why);

    const std::string width = knob("COURSE_LADDER_CLUSTER", "auto", {"auto", "8", "16"});
    const bool share = knob("COURSE_LADDER_CONV1", "shared", {"shared", "redundant"}) == "shared";
    const bool always = knob("COURSE_LADDER_CLUSTER_ALL", "0", {"0", "1"}) == "1";
    wide_.reset();
    narrow_.reset();
    fallback_.reset();
    wide_max_ = narrow_max_ = 0;
    // One wave at most: a batch takes a cluster kernel only while all its clusters fit on the GPU
    // at once (a second wave would double the time; FastLeNet is the tool for more images).
    if (width != "8") {
      wide_ = make_cluster_kernel<16>(net, share);
      wide_max_ = std::min(width == "16" ? wide_->resident : kWideMaxImages, max_batch);
    }
    if (width != "16") {
      narrow_ = make_cluster_kernel<8>(net, share);
      narrow_max_ = std::min(narrow_->resident, max_batch);
    }
    if (always) (narrow_ ? narrow_max_ : wide_max_) = max_batch;  // ALL: no batch goes to FastLeNet
    max_batch_ = max_batch;
    if (std::max(wide_max_, narrow_max_) < max_batch) fallback_ = std::make_unique<lab07::FastLeNet>(net, max_batch);

    static bool told = false;  // once per process: the runner prepares a rung several times
    if (!told) {
      told = true;
      std::printf("  rung 13 (conv1 %s): ", share ? "shared" : "redundant");
      for (const ClusterKernel* k : {wide_.get(), narrow_.get()})
        if (k != nullptr)
          std::printf("%d-CTA clusters (%d B shared memory per CTA, %d resident) up to %d images; ", k->cluster,
                      k->smem_bytes, k->resident, k == wide_.get() ? wide_max_ : narrow_max_);
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
      throw course::Error("rung 13: d_images must be 8-byte aligned (the kernel copies 8 bytes at a time)");
    cudaLaunchAttribute attribute{};
    const cudaLaunchConfig_t config = k->config(n, stream, attribute);
    const float* packed = k->packed.get();
    CUDA_CHECK(cudaLaunchKernelEx(&config, k->kernel, d_images, packed, d_logits, d_labels));
  }

 private:
  std::unique_ptr<ClusterKernel> wide_, narrow_;  // 16 and 8 CTAs per image
  int wide_max_ = 0, narrow_max_ = 0;             // the largest batch each one takes
  int max_batch_ = 0;
  std::unique_ptr<lab07::FastLeNet> fallback_;
};

}  // namespace

COURSE_LADDER_RUNG(13, "cluster_one_image",
                   "one image spread over a 16-SM thread-block cluster (DSMEM, cluster barrier): each step of the chain is shorter",
                   ClusterOneImage);
