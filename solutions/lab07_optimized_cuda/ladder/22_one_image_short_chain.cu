// Rung 22: one image in as short a dependent chain as rung 19's cluster allows (issue #19: one
// image in <= 5 us of GPU time). Not reached: 6.2 us, against rung 19's 6.9 us.
//
// Rung 19 is a chain of five layers over 16 SMs with two exchanges between them. Its skeleton
// (launch, events, the two exchanges, the cold image) is ~4.6 us in lab07_latency_floors, so its
// arithmetic costs ~2.3 us on top: thousands of cycles for at most a few hundred dependent
// multiply-adds per thread. Rung 22 keeps rung 19's division of labour (conv1 split 16 ways and
// exchanged, one conv2 channel per CTA, fc1's partial rows into CTA 0) and shortens each step
// (22_one_image_short_chain.cuh):
//   - every weight a thread uses is loaded into its registers at the kernel's start, while the
//     image is still arriving (they do not depend on it): the steps read only activations from
//     shared memory; CTA 0's fc2 no longer reads 40 KB of weights from shared memory;
//   - roles on separate warps (conv1, conv2, fc1, fc3), so that no thread holds more than two
//     roles' weights; conv2's 6 input channels are added with shuffles, fc2 runs on 11 warps with
//     its weights in registers and a conflict-free layout of its input, fc3 on one warp;
//   - the exchanges in 16-byte st.async messages; named barriers between the warps that hand over.
//
// MEASURED on an H100 80GB HBM3 (lab07_ladder --batch 1 --repetitions 300, L2 flushed before every
// run, two rounds in one run; device / graph replay, us; full check passed, FP32, every label and
// logit of the golden network on both test splits, n = 1, 7, 37 and 10,000):
//   rung 13 (cluster barriers)          7.58 7.46 / 7.46 7.55
//   rung 19 (st.async + mbarriers)      6.91 6.91 / 6.78 6.88
//   rung 22 (this rung)                 6.27 6.24 / 6.27 6.24
// Where rung 22's time goes (COURSE_LADDER_STAMPS=1: clock64() in CTA 0 after every step, median
// of 304 runs, cycles at 1.98 GHz; the same run):
//   image and weights in 1,941 | conv1 976 | exchange 1 536 | conv2 805 | fc1 227 | exchange 2 489
//   | fc1 rows added 423 | fc2 606 | fc3 + argmax 445 = 6,448 cycles = 3.3 us from CTA 0's start
// to its logits; the other ~3.0 us are the events and the launch (an empty 16-CTA cluster: 3.1 us).
// 5 us would leave ~4,000 cycles from CTA 0's start: after the image and the two exchanges
// (~3,000) that is ~1,000 for six steps that take 3,500 now. Lecture 07, section 15f2.
//
// Measured and dropped (same runs): the weights by __ldg or ld.relaxed.gpu instead of ld.volatile:
// 6.21-6.37 us, the same; a "dry" pass in which the idle warp 12 ran every step's code once early,
// to warm the instruction cache: 6.3-6.5 us, slower -- and reloading the kernel's code into L2
// before a flushed run changes nothing (lab07_latency_floors, "warm code": 6.05 against 6.02 us),
// so instruction fetch is not where the time goes.
//
// Up to 7 images (the clusters that fit at once) each image gets its own cluster; larger batches
// go to lab07::FastLeNet (rung 09), as in rung 19.
//
// Knob, for measuring (read by prepare()):
//   COURSE_LADDER_STAMPS=1   CTA 0 writes clock64() after every step into a ring buffer; the rung
//                            prints the median cycles per step (and the SM clock) when destroyed.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "22_one_image_short_chain.cuh"
#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "labs/lab07_optimized_cuda.hpp"
#include "ladder.hpp"
#include "rung_support.hpp"

namespace {

namespace co = ladder::cluster_one_image;
namespace sc = ladder::one_image_short_chain;

/// The folded network in the order the kernel's threads load it into registers (sc::kP*).
std::vector<float> pack(const lab04::FoldedLeNet& net) {
  std::vector<float> p(static_cast<std::size_t>(sc::kPackedFloats), 0.0f);
  const auto at = [](const course::Tensor& w, int i) { return w[static_cast<std::size_t>(i)]; };
  const auto put = [&p](int i, float v) { p[static_cast<std::size_t>(i)] = v; };
  for (int k = 0; k < co::kC1; ++k) {  // conv1 [6][28]: 25 taps, bias at 25
    for (int tap = 0; tap < co::kTaps; ++tap) put(sc::kPConv1 + k * sc::kTaps4 + tap, at(net.conv1_weight, k * co::kTaps + tap));
    put(sc::kPConv1 + k * sc::kTaps4 + co::kTaps, at(net.conv1_bias, k));
  }
  for (int j = 0; j < co::kC2; ++j) {  // conv2 [16][6][28]: 25 taps, bias j at [j][0][25]
    for (int c = 0; c < co::kC1; ++c)
      for (int tap = 0; tap < co::kTaps; ++tap)
        put(sc::kPConv2 + (j * co::kC1 + c) * sc::kTaps4 + tap, at(net.conv2_weight, (j * co::kC1 + c) * co::kTaps + tap));
    put(sc::kPConv2 + j * co::kC1 * sc::kTaps4 + co::kTaps, at(net.conv2_bias, j));
  }
  constexpr int kQuads = sc::kFeatures4 / 4;
  for (int r = 0; r < sc::kCluster; ++r)  // fc1 [rank][quad][o][4]: CTA r's feature i = 4 q + e
    for (int i = 0; i < co::kPool2Pixels; ++i)
      for (int o = 0; o < co::kFc1; ++o)
        put(sc::kPFc1 + ((r * kQuads + i / 4) * co::kFc1 + o) * 4 + i % 4,
            at(net.fc1_weight, o * co::kC2 * co::kPool2Pixels + r * co::kPool2Pixels + i));
  for (int o = 0; o < co::kFc1; ++o) put(sc::kPFc1Bias + o, at(net.fc1_bias, o));
  for (int t = 0; t < sc::kFc2Threads; ++t) {  // fc2 [quad][thread][4]: thread (o2, slice), inputs slice*30 + i
    const int o2 = (t / 32) * 8 + (t % 32) / 4, slice = t % 4;
    for (int i = 0; i < 30 && o2 < co::kFc2; ++i)
      put(sc::kPFc2 + ((i / 4) * sc::kFc2Threads + t) * 4 + i % 4, at(net.fc2_weight, o2 * co::kFc1 + slice * 30 + i));
  }
  for (int o = 0; o < co::kFc2; ++o) put(sc::kPFc2Bias + o, at(net.fc2_bias, o));
  for (int lane = 0; lane < 32; ++lane) {  // fc3 [quad][lane][4]: m = 3 o + s is input lane + 32 s; 30 + o the biases
    const auto fc3 = [&](int m, float v) { put(sc::kPFc3 + ((m / 4) * 32 + lane) * 4 + m % 4, v); };
    for (int o = 0; o < co::kClasses; ++o) {
      for (int s = 0; s < 3; ++s)
        if (lane + 32 * s < co::kFc2) fc3(3 * o + s, at(net.fc3_weight, o * co::kFc2 + lane + 32 * s));
      fc3(30 + o, at(net.fc3_bias, o));
    }
  }
  return p;
}

using Kernel = void (*)(const float*, const float*, float*, int*, long long*);

class OneImageShortChain final : public ladder::Rung {
 public:
  ~OneImageShortChain() override { print_stamps(); }

  std::string unsupported_reason() const override { return ladder::support::clusters_unsupported(); }

  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    ladder::support::DeviceWeights::check_shapes(net);
    ladder::support::check_max_batch(max_batch);
    if (const std::string why = unsupported_reason(); !why.empty()) throw course::Error("rung 22: " + why);
    print_stamps();
    stamped_ = ladder::support::knob("COURSE_LADDER_STAMPS", "0", {"0", "1"}) == "1";
    kernel_ = stamped_ ? sc::short_chain_lenet<true> : sc::short_chain_lenet<false>;
    packed_ = course::DeviceBuffer<float>(pack(net));
    stamps_ = course::DeviceBuffer<long long>();
    if (stamped_) {
      stamps_ = course::DeviceBuffer<long long>(static_cast<std::size_t>(sc::kStampRuns * sc::kStampCount + 1));
      CUDA_CHECK(cudaMemset(stamps_.get(), 0, stamps_.bytes()));
    }
    CUDA_CHECK(cudaFuncSetAttribute(kernel_, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchAttribute attribute{};
    const cudaLaunchConfig_t one = config(1, nullptr, &attribute);
    int resident = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(&resident, kernel_, &one));
    if (resident < 1) throw course::Error("rung 22: not one cluster of 16 CTAs fits");
    max_images_ = std::min(resident, max_batch);
    max_batch_ = max_batch;
    fallback_.reset();
    if (max_images_ < max_batch) fallback_ = std::make_unique<lab07::FastLeNet>(net, max_batch);
    static bool told = false;  // once per process: the runner prepares a rung several times
    if (!told) {
      told = true;
      std::printf("  rung 22: 16-CTA clusters of %d threads (%d resident) up to %d images%s; larger batches: "
                  "lab07::FastLeNet\n", sc::kThreads, resident, max_images_, stamped_ ? ", per-step clock stamps" : "");
    }
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    ladder::support::check_forward(d_images, n, max_batch_, d_logits, d_labels);
    if (n > max_images_) {
      fallback_->forward(d_images, n, d_logits, d_labels, stream);
      return;
    }
    if (reinterpret_cast<std::uintptr_t>(d_images) % (2 * sizeof(float)) != 0)
      throw course::Error("rung 22: d_images must be 8-byte aligned (the kernel copies 8 bytes at a time)");
    cudaLaunchAttribute attribute{};
    const cudaLaunchConfig_t c = config(n, stream, &attribute);
    CUDA_CHECK(cudaLaunchKernelEx(&c, kernel_, d_images, static_cast<const float*>(packed_.get()), d_logits, d_labels,
                                  stamps_.get()));
  }

 private:
  static cudaLaunchConfig_t config(int n, cudaStream_t stream, cudaLaunchAttribute* cluster) {
    cluster->id = cudaLaunchAttributeClusterDimension;
    cluster->val.clusterDim.x = sc::kCluster;
    cluster->val.clusterDim.y = 1;
    cluster->val.clusterDim.z = 1;
    cudaLaunchConfig_t c{};
    c.gridDim = dim3(static_cast<unsigned>(n * sc::kCluster));
    c.blockDim = dim3(sc::kThreads);
    c.stream = stream;
    c.attrs = cluster;
    c.numAttrs = 1;
    return c;
  }

  /// COURSE_LADDER_STAMPS=1: the median cycles from CTA 0's start to the end of every step, over the
  /// (up to kStampRuns) last launches, and the SM clock to turn them into nanoseconds.
  void print_stamps() {
    if (!stamped_ || stamps_.get() == nullptr) return;
    stamped_ = false;
    std::vector<long long> host(static_cast<std::size_t>(sc::kStampRuns * sc::kStampCount + 1));
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(host.data(), stamps_.get(), host.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    const int runs = static_cast<int>(std::min<long long>(host.back(), sc::kStampRuns));
    if (runs == 0) return;
    int device = 0, khz = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
    static const char* names[sc::kStampCount] = {"start", "image+weights in", "conv1 done", "pool1 in (exchange 1)",
                                             "features (conv2) done", "fc1 sent", "fc1 rows in (exchange 2)",
                                             "h1 done", "h2 (fc2) done", "logits out (fc3)"};
    std::printf("  rung 22 stamps: CTA 0, cycles since its start, median of %d runs (max SM clock %.2f GHz):\n", runs,
                khz / 1e6);
    for (int s = 1; s < sc::kStampCount; ++s) {
      std::vector<long long> v;
      for (int r = 0; r < runs; ++r) v.push_back(host[static_cast<std::size_t>(r * sc::kStampCount + s)]);
      std::nth_element(v.begin(), v.begin() + runs / 2, v.end());
      std::printf("    %-26s %6lld\n", names[s], v[static_cast<std::size_t>(runs / 2)]);
    }
  }

  Kernel kernel_ = nullptr;
  course::DeviceBuffer<float> packed_;
  course::DeviceBuffer<long long> stamps_;
  bool stamped_ = false;
  int max_images_ = 0, max_batch_ = 0;
  std::unique_ptr<lab07::FastLeNet> fallback_;
};

}  // namespace

COURSE_LADDER_RUNG(22, "one_image_short_chain",
                   "rung 19's cluster with every weight in registers before the image lands, roles on separate warps, "
                   "16-byte exchanges: a shorter chain",
                   OneImageShortChain);
