// lab07_latency_floors: what rungs 19 and 20 cannot go below, measured on this GPU the way the
// ladder runner measures (L2 flushed with a 2x-L2 memset before every run, CUDA events around the
// work, warm-up, the median of many runs).
//
// One image (rung 19): the dependent chain's fixed costs, one piece added at a time.
//   empty kernel          <<<1, 32>>>, no work: the events plus one launch on the GPU
//   empty cluster         16 CTAs x 416 threads, rung 13's shared memory, no work: a cluster launch
//   cluster barriers      + the cluster barrier phases of rung 13/19 with their DSMEM stores
//                         (every CTA stores a slice into all 16, then 120 floats into CTA 0), no math
//   + cold image          + each CTA copies the 3 KB image from DRAM first (cp.async, like the rungs)
//   + cold weights        + every CTA's weight slice and CTA 0's fc2/fc3 (rung 13's 245 KB), cold
//   + L2-resident weights the same, with the weights pinned in L2 by a persisting access window
//   one CTA, cold image   no cluster: the image from DRAM to shared memory, one float written back
//   phase 0 + 1 store     the cluster's "every CTA runs" barrier alone, then CTA 0 writes a float
//   st.async exchanges    rung 19's two exchanges (st.async counted by mbarriers), no loads, no math
//   st.async.v4           rung 22's: the same exchanges in 16-byte messages; and the fc1 exchange alone
// The difference between the last rows and the rung's time is its arithmetic and __syncthreads.
//   rung 19/22 kernels    the whole kernels on random weights: cold (as the ladder), warm code (L2
//                         flushed, then the kernel's code reloaded by a run on other buffers), warm
//
// Host to labels (rung 20): the bus.
//   H2D copy              one 7.84 MB copy (10,000 images of uint8 pixels) from pinned memory
//   D2H copy              40 KB (10,000 int labels) to pinned memory
//   zero-copy read        a kernel reading the same 7.84 MB straight from pinned host memory
//     + 32 B of labels    the same, writing 8 ints into pinned memory per 6,272 bytes read (rung 23)
// The host's side (steady_clock, as the ladder's host mode): an empty kernel launched and waited
// for, and one cudaPointerGetAttributes of a pinned buffer.
//
//   build/bench/lab07_latency_floors [--csv FILE]     exit 0, or 77 without a GPU / clusters
#include <cooperative_groups.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "19_one_image_fast.cuh"         // rung 19's st.async helpers
#include "22_one_image_short_chain.cuh"  // rung 22's 16-byte st.async
#include "tool_cuda_check.hpp"

namespace {

namespace cg = cooperative_groups;

constexpr int kCluster = 16, kThreads = 416;
constexpr int kImageFloats = 784, kPadded = 1024;
constexpr int kSliceFloats = 1176 / kCluster + 1;  // 74: each CTA's share of pool1
constexpr int kFc1 = 120;
// Rung 13's weights in floats: conv1 160, per CTA conv2 152 + fc1 slice 3,000, CTA 0's tail 10,328.
constexpr int kConv1Floats = 160, kRankFloats = 152 + 3000, kTailFloats = 10328;
constexpr int kPackedFloats = kConv1Floats + kCluster * kRankFloats + kTailFloats;
constexpr int kSmemFloats = 18432;  // about rung 13's 16-CTA layout (73.7 KB)

__global__ void empty_kernel() {}

__global__ void __launch_bounds__(kThreads) empty_cluster() {}

__device__ __forceinline__ void copy_floats(float* dst, const float* src, int n) {
  for (int i = static_cast<int>(threadIdx.x); i < n / 4; i += kThreads)
    __pipeline_memcpy_async(reinterpret_cast<float4*>(dst) + i, reinterpret_cast<const float4*>(src) + i, 16);
}

/// Rung 13's skeleton: the loads it issues (kLoads: 0 none, 1 the image, 2 the image and every
/// weight), its two cluster-barrier phases with their DSMEM stores, and nothing else.
template <int kLoads>
__global__ void __launch_bounds__(kThreads) cluster_skeleton(const float* images, const float* packed, float* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  float* s_image = smem;
  float* s_pool1 = smem + kPadded;
  float* s_part = s_pool1 + 1184;
  float* s_weights = s_part + kCluster * kFc1;
  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int t = static_cast<int>(threadIdx.x);
  __cluster_barrier_arrive_relaxed();
  if constexpr (kLoads >= 1) {
    for (int i = t; i < kImageFloats / 2; i += kThreads)
      __pipeline_memcpy_async(s_image + 2 * i, images + 2 * i, 8);
    if constexpr (kLoads >= 2) {
      copy_floats(s_weights, packed, kConv1Floats);
      copy_floats(s_weights + kConv1Floats, packed + kConv1Floats + rank * kRankFloats, kRankFloats / 4 * 4);
      if (rank == 0) copy_floats(s_weights + kConv1Floats + kRankFloats, packed + kPackedFloats - kTailFloats, kTailFloats);
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
  }
  const float value = kLoads >= 1 ? s_image[t % kImageFloats] + s_weights[t] * (kLoads >= 2) : 1.0f;
  __cluster_barrier_wait();
  if (t < kSliceFloats)
    for (int d = 0; d < kCluster; ++d) cluster.map_shared_rank(s_pool1, d)[rank * kSliceFloats + t] = value;
  __cluster_barrier_arrive();
  __cluster_barrier_wait();
  if (t < kFc1) cluster.map_shared_rank(s_part, 0)[rank * kFc1 + t] = s_pool1[t] + 1.0f;
  __cluster_barrier_arrive();
  if (rank != 0) return;
  __cluster_barrier_wait();
  if (t == 0) {
    float sum = 0.0f;
    for (int r = 0; r < kCluster; ++r) sum += s_part[r * kFc1];
    out[0] = sum;
  }
#else
  (void)images, (void)packed, (void)out;
#endif
}

/// The barrier-free end points: phase 0 alone ("every CTA runs") and one global store.
__global__ void __launch_bounds__(kThreads) cluster_phase0(float* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __cluster_barrier_arrive_relaxed();
  __cluster_barrier_wait();
  if (threadIdx.x == 0 && cg::this_cluster().block_rank() == 0) out[0] = 1.0f;
#else
  (void)out;
#endif
}

/// The end of both st.async skeletons: the other CTAs wait (phase 1) until CTA 0 has every partial
/// row counted on bar1; CTA 0 adds one value of each row and writes it.
__device__ __forceinline__ void end_in_cta0(int rank, int t, unsigned bar1, const float* s_part, float* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (rank != 0) {
    __cluster_barrier_arrive_relaxed();
    __cluster_barrier_wait();
    return;
  }
  ladder::one_image_fast::wait_bytes(bar1);
  __cluster_barrier_arrive_relaxed();
  if (t == 0) {
    float sum = 0.0f;
    for (int r = 0; r < kCluster; ++r) sum += s_part[r * kFc1];
    out[0] = sum;
  }
#else
  (void)rank, (void)t, (void)bar1, (void)s_part, (void)out;
#endif
}

/// Rung 19's skeleton: the same two exchanges as cluster_skeleton<0>, as st.async stores counted
/// by an mbarrier in the receiving CTA (19_one_image_fast.cuh), no arithmetic, no loads.
__global__ void __launch_bounds__(kThreads) async_skeleton(float* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace rw = ladder::one_image_fast;
  extern __shared__ float4 smem4[];
  __shared__ alignas(8) unsigned long long bars[2];
  float* smem = reinterpret_cast<float*>(smem4);
  float* s_pool1 = smem + kPadded;
  float* s_part = s_pool1 + 1184;
  const int rank = static_cast<int>(cg::this_cluster().block_rank());
  const int t = static_cast<int>(threadIdx.x);
  const unsigned bar0 = rw::smem_address(&bars[0]), bar1 = rw::smem_address(&bars[1]);
  if (t == 0) {
    rw::expect_bytes(bar0, kCluster * kSliceFloats * sizeof(float));
    if (rank == 0) rw::expect_bytes(bar1, kCluster * kFc1 * sizeof(float));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __cluster_barrier_arrive_relaxed();
  __cluster_barrier_wait();
  if (t < kSliceFloats) {
    const unsigned local = rw::smem_address(s_pool1 + rank * kSliceFloats + t);
    for (int d = 0; d < kCluster; ++d) rw::store_counted(rw::remote_address(local, d), 1.0f, rw::remote_address(bar0, d));
  }
  rw::wait_bytes(bar0);
  if (t < kFc1)
    rw::store_counted(rw::remote_address(rw::smem_address(s_part + rank * kFc1 + t), 0), s_pool1[t] + 1.0f,
                      rw::remote_address(bar1, 0));
  end_in_cta0(rank, t, bar1, s_part, out);
#else
  (void)out;
#endif
}

/// Rung 22's skeleton: its exchanges in 16-byte st.async messages (294 granules of pool1 into every
/// CTA; 30 per CTA of fc1's partial rows into CTA 0), no arithmetic, no loads. kPool1Exchange
/// false: only the second exchange, the floor of a design with one exchange.
template <bool kPool1Exchange>
__global__ void __launch_bounds__(kThreads) async_v4_skeleton(float* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace rw = ladder::one_image_fast;
  namespace sc = ladder::one_image_short_chain;
  __shared__ alignas(16) float s_pool1[1176];
  __shared__ alignas(16) float s_part[kCluster * kFc1];
  __shared__ alignas(8) unsigned long long bars[2];
  const int rank = static_cast<int>(cg::this_cluster().block_rank());
  const int t = static_cast<int>(threadIdx.x);
  const unsigned bar0 = rw::smem_address(&bars[0]), bar1 = rw::smem_address(&bars[1]);
  if (t == 0) {
    if (kPool1Exchange) rw::expect_bytes(bar0, 1176 * sizeof(float));
    if (rank == 0) rw::expect_bytes(bar1, kCluster * kFc1 * sizeof(float));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __cluster_barrier_arrive_relaxed();
  __cluster_barrier_wait();
  float value = 1.0f;
  if constexpr (kPool1Exchange) {
    const int g0 = rank * sc::kGranules / kCluster, items = 4 * ((rank + 1) * sc::kGranules / kCluster - g0);
    if ((t & ~3) < items) {
      const unsigned local = rw::smem_address(s_pool1 + 4 * g0 + (t & ~3));
      for (int m = 0; m < kCluster / 4; ++m) {
        const int d = (t & 3) + 4 * m;
        rw::store_counted_v4(rw::remote_address(local, d), make_float4(1, 1, 1, 1), rw::remote_address(bar0, d));
      }
    }
    rw::wait_bytes(bar0);
    value = s_pool1[t % 1176];
  }
  if (t < kFc1 && t % 4 == 0)
    rw::store_counted_v4(rw::remote_address(rw::smem_address(s_part + rank * kFc1 + t), 0), make_float4(value, 0, 0, 0),
                         rw::remote_address(bar1, 0));
  end_in_cta0(rank, t, bar1, s_part, out);
#else
  (void)out;
#endif
}

/// One CTA: the image from DRAM into shared memory, one float back out. The floor of a kernel
/// that reads its input and writes a result, with no cluster.
__global__ void __launch_bounds__(kThreads) one_cta_image(const float* images, float* out) {
  __shared__ float s_image[kImageFloats];
  for (int i = static_cast<int>(threadIdx.x); i < kImageFloats / 2; i += kThreads)
    __pipeline_memcpy_async(s_image + 2 * i, images + 2 * i, 8);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = s_image[100];
}

/// Sums n uint4 words from (host-mapped) memory: every byte crosses PCIe once, 16 bytes a load.
__global__ void zero_copy_read(const uint4* __restrict__ src, int n, unsigned* out) {
  unsigned sum = 0;
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += static_cast<int>(gridDim.x * blockDim.x)) {
    const uint4 v = src[i];
    sum += v.x ^ v.y ^ v.z ^ v.w;
  }
  if (sum == 0x12345678u) out[0] = sum;  // never (almost): keeps the loads
}

/// The same read, and for every 6,272 bytes (8 images) 8 ints written back into (host-mapped)
/// memory while the reads go on: rung 23's labels written per step, without the network.
__global__ void zero_copy_read_write(const uint4* __restrict__ src, int n, int* labels, unsigned* out) {
  constexpr int kStepWords = 392;  // 8 images of 784 bytes, in 16-byte words
  unsigned sum = 0;
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += static_cast<int>(gridDim.x * blockDim.x)) {
    const uint4 v = src[i];
    sum += v.x ^ v.y ^ v.z ^ v.w;
    if (i % kStepWords < 8) labels[i / kStepWords * 8 + i % kStepWords] = static_cast<int>(v.x & 7u);
  }
  if (sum == 0x12345678u) out[0] = sum;
}

struct Result {
  std::string what;
  double median_us = 0, min_us = 0;
  std::string note;
};

class Timer {
 public:
  explicit Timer(cudaStream_t stream) : stream_(stream) {
    TOOL_CUDA(cudaEventCreate(&start_));
    TOOL_CUDA(cudaEventCreate(&stop_));
    int l2 = 0;
    TOOL_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    flush_bytes_ = 2 * static_cast<std::size_t>(std::max(l2, 1 << 20));
    TOOL_CUDA(cudaMalloc(&flush_, flush_bytes_));
  }
  /// Median and minimum of `runs` event-timed runs of work(), each after an L2 flush (like course::GpuTimer)
  /// and then `before` (untimed: it runs between the flush and the first event).
  std::pair<double, double> time(const std::function<void()>& work, int runs, bool flush = true,
                                 const std::function<void()>& before = nullptr) {
    for (int i = 0; i < 10; ++i) work();
    TOOL_CUDA(cudaStreamSynchronize(stream_));
    std::vector<double> us;
    for (int i = 0; i < runs; ++i) {
      if (flush) TOOL_CUDA(cudaMemsetAsync(flush_, i & 0xff, flush_bytes_, stream_));
      if (before) before();
      TOOL_CUDA(cudaEventRecord(start_, stream_));
      work();
      TOOL_CUDA(cudaEventRecord(stop_, stream_));
      TOOL_CUDA(cudaEventSynchronize(stop_));
      TOOL_CUDA(cudaGetLastError());
      float ms = 0;
      TOOL_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
      us.push_back(1000.0 * ms);
    }
    std::sort(us.begin(), us.end());
    return {us[us.size() / 2], us.front()};
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  void* flush_ = nullptr;
  std::size_t flush_bytes_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string csv;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
      csv = argv[++i];
    } else {
      std::fprintf(stderr, "usage: lab07_latency_floors [--csv FILE]\n");
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("lab07_latency_floors: no GPU\n");
    return 77;
  }
  cudaDeviceProp prop{};
  TOOL_CUDA(cudaGetDeviceProperties(&prop, 0));
  int clusters = 0;
  TOOL_CUDA(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, 0));
  if (clusters == 0) {
    std::printf("lab07_latency_floors: %s cannot launch clusters (compute capability 9.0 needed)\n", prop.name);
    return 77;
  }
  std::printf("lab07_latency_floors: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);

  cudaStream_t stream = nullptr;
  TOOL_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Timer timer(stream);
  std::vector<Result> results;
  const auto add = [&](const std::string& what, std::pair<double, double> t, const std::string& note = "") {
    results.push_back({what, t.first, t.second, note});
    std::printf("  %-34s median %8.2f us  (min %8.2f)  %s\n", what.c_str(), t.first, t.second, note.c_str());
  };

  // ---- one image ---------------------------------------------------------------------------
  std::vector<float> host_weights(kPackedFloats), host_image(kImageFloats);
  for (int i = 0; i < kPackedFloats; ++i) host_weights[static_cast<std::size_t>(i)] = 0.001f * static_cast<float>(i % 97);
  for (int i = 0; i < kImageFloats; ++i) host_image[static_cast<std::size_t>(i)] = static_cast<float>(i % 255) / 255.0f;
  float *d_weights = nullptr, *d_image = nullptr, *d_out = nullptr;
  TOOL_CUDA(cudaMalloc(&d_weights, sizeof(float) * kPackedFloats));
  TOOL_CUDA(cudaMalloc(&d_image, sizeof(float) * kImageFloats));
  TOOL_CUDA(cudaMalloc(&d_out, 64));
  TOOL_CUDA(cudaMemcpy(d_weights, host_weights.data(), sizeof(float) * kPackedFloats, cudaMemcpyHostToDevice));
  TOOL_CUDA(cudaMemcpy(d_image, host_image.data(), sizeof(float) * kImageFloats, cudaMemcpyHostToDevice));

  const int smem = kSmemFloats * static_cast<int>(sizeof(float));
  const auto cluster_launch = [&](void (*kernel)(const float*, const float*, float*), bool persist) {
    cudaLaunchAttribute attrs[2]{};
    attrs[0].id = cudaLaunchAttributeClusterDimension;
    attrs[0].val.clusterDim.x = kCluster;
    attrs[0].val.clusterDim.y = 1;
    attrs[0].val.clusterDim.z = 1;
    attrs[1].id = cudaLaunchAttributeAccessPolicyWindow;
    attrs[1].val.accessPolicyWindow.base_ptr = d_weights;
    attrs[1].val.accessPolicyWindow.num_bytes = sizeof(float) * kPackedFloats;
    attrs[1].val.accessPolicyWindow.hitRatio = 1.0f;
    attrs[1].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attrs[1].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(kCluster);
    config.blockDim = dim3(kThreads);
    config.dynamicSmemBytes = static_cast<std::size_t>(smem);
    config.stream = stream;
    config.attrs = attrs;
    config.numAttrs = persist ? 2 : 1;
    TOOL_CUDA(cudaLaunchKernelEx(&config, kernel, static_cast<const float*>(d_image),
                                   static_cast<const float*>(d_weights), d_out));
  };
  const auto prepare_cluster_kernel = [&](const void* kernel) {
    TOOL_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    TOOL_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  };
  prepare_cluster_kernel(reinterpret_cast<const void*>(cluster_skeleton<0>));
  prepare_cluster_kernel(reinterpret_cast<const void*>(cluster_skeleton<1>));
  prepare_cluster_kernel(reinterpret_cast<const void*>(cluster_skeleton<2>));
  TOOL_CUDA(cudaFuncSetAttribute(empty_cluster, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  prepare_cluster_kernel(reinterpret_cast<const void*>(cluster_phase0));
  prepare_cluster_kernel(reinterpret_cast<const void*>(async_skeleton));
  prepare_cluster_kernel(reinterpret_cast<const void*>(async_v4_skeleton<true>));
  prepare_cluster_kernel(reinterpret_cast<const void*>(async_v4_skeleton<false>));
  TOOL_CUDA(cudaFuncSetAttribute(empty_cluster, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));

  constexpr int kRuns = 400;
  std::printf("one image (L2 flushed before every run, %d runs):\n", kRuns);
  add("nothing between the events", timer.time([] {}, kRuns));
  add("empty kernel <<<1,32>>>", timer.time([&] { empty_kernel<<<1, 32, 0, stream>>>(); }, kRuns));
  add("empty kernel, 16 x 416, 74 KB smem", timer.time([&] {
        empty_cluster<<<kCluster, kThreads, static_cast<std::size_t>(smem), stream>>>();
      }, kRuns), "no cluster");
  // One cluster of kCluster CTAs, launched as the rungs launch theirs (cudaLaunchKernelEx).
  const auto launch_cluster = [&](auto kernel, int threads, int dynamic_smem, auto... args) {
    cudaLaunchAttribute a{};
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = kCluster;
    a.val.clusterDim.y = 1;
    a.val.clusterDim.z = 1;
    cudaLaunchConfig_t c{};
    c.gridDim = dim3(kCluster);
    c.blockDim = dim3(static_cast<unsigned>(threads));
    c.dynamicSmemBytes = static_cast<std::size_t>(dynamic_smem);
    c.stream = stream;
    c.attrs = &a;
    c.numAttrs = 1;
    TOOL_CUDA(cudaLaunchKernelEx(&c, kernel, args...));
  };
  const auto plain_cluster = [&](auto kernel, auto... args) { launch_cluster(kernel, kThreads, smem, args...); };
  add("empty 16-CTA cluster", timer.time([&] { plain_cluster(empty_cluster); }, kRuns));
  add("one CTA: cold image in, 1 float out", timer.time([&] { one_cta_image<<<1, kThreads, 0, stream>>>(d_image, d_out); }, kRuns));
  add("16-CTA cluster: phase 0 + 1 store", timer.time([&] { plain_cluster(cluster_phase0, d_out); }, kRuns),
      "every CTA runs, then CTA 0 writes");
  add("st.async exchanges (rung 19)", timer.time([&] { plain_cluster(async_skeleton, d_out); }, kRuns),
      "2 exchanges counted by mbarriers");
  add("st.async.v4 exchanges (rung 22)", timer.time([&] { plain_cluster(async_v4_skeleton<true>, d_out); }, kRuns),
      "2 exchanges in 16-byte messages");
  add("st.async.v4, fc1 exchange only", timer.time([&] { plain_cluster(async_v4_skeleton<false>, d_out); }, kRuns),
      "1 exchange: the floor of one-exchange designs");
  add("cluster barriers + DSMEM stores", timer.time([&] { cluster_launch(cluster_skeleton<0>, false); }, kRuns),
      "2 exchange phases, no loads");
  add("  + cold image (3 KB)", timer.time([&] { cluster_launch(cluster_skeleton<1>, false); }, kRuns));
  add("  + cold weights (245 KB)", timer.time([&] { cluster_launch(cluster_skeleton<2>, false); }, kRuns));
  // Persisting lines need a set-aside part of L2 (a device-wide limit; given back at the end).
  std::size_t old_limit = 0;
  TOOL_CUDA(cudaDeviceGetLimit(&old_limit, cudaLimitPersistingL2CacheSize));
  TOOL_CUDA(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1u << 20));
  add("  + weights persisting in L2", timer.time([&] { cluster_launch(cluster_skeleton<2>, true); }, kRuns),
      "access-policy window, 1 MB set aside");
  TOOL_CUDA(cudaCtxResetPersistingL2Cache());
  TOOL_CUDA(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, old_limit));

  // ---- whole rungs: what is cold ------------------------------------------------------------
  // Rungs 19's and 22's kernels on random weights, three ways: cold (L2 flushed, as the ladder
  // times: the image, the weights *and the kernel's machine code* come from DRAM); warm code (L2
  // flushed, then the same kernel run once on a second copy of image and weights: its code is in
  // L2 again, its data is not); warm (no flush). Rung 22 also prints its per-step clock stamps.
  {
    namespace sc = ladder::one_image_short_chain;
    namespace co = ladder::cluster_one_image;
    namespace rw = ladder::one_image_fast;
    const auto random_copy = [](int floats, float scale) {
      std::vector<float> v(static_cast<std::size_t>(floats));
      unsigned x = 12345u + static_cast<unsigned>(floats);
      for (float& f : v) {
        x = x * 1664525u + 1013904223u;
        f = scale * (static_cast<float>(x >> 8) / 16777216.0f - 0.25f);
      }
      float* d = nullptr;
      TOOL_CUDA(cudaMalloc(&d, v.size() * sizeof(float)));
      TOOL_CUDA(cudaMemcpy(d, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
      return d;
    };
    float* images[2] = {random_copy(kImageFloats, 4.0f), random_copy(kImageFloats, 4.0f)};
    float* packed22[2] = {random_copy(sc::kPackedFloats, 0.2f), random_copy(sc::kPackedFloats, 0.2f)};
    float* packed19[2] = {random_copy(co::Layout<16>::kPackedFloats, 0.2f), random_copy(co::Layout<16>::kPackedFloats, 0.2f)};
    float* logits = nullptr;
    int* labels = nullptr;
    long long* stamps[2] = {nullptr, nullptr};
    const std::size_t stamp_words = static_cast<std::size_t>(sc::kStampRuns * sc::kStampCount + 1);
    TOOL_CUDA(cudaMalloc(&logits, 64 * sizeof(float)));
    TOOL_CUDA(cudaMalloc(&labels, 16 * sizeof(int)));
    for (auto& p : stamps) TOOL_CUDA(cudaMalloc(&p, stamp_words * sizeof(long long)));
    const int smem19 = co::Layout<16>::kSmemBytes;
    TOOL_CUDA(cudaFuncSetAttribute(rw::async_cluster_lenet<16>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    TOOL_CUDA(cudaFuncSetAttribute(rw::async_cluster_lenet<16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem19));
    const auto kernel22 = [](bool stamped) {
      return stamped ? sc::short_chain_lenet<true> : sc::short_chain_lenet<false>;
    };
    for (const bool stamped : {false, true})
      TOOL_CUDA(cudaFuncSetAttribute(kernel22(stamped), cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    const auto rung19 = [&](int copy) {
      launch_cluster(rw::async_cluster_lenet<16>, co::kThreads, smem19, static_cast<const float*>(images[copy]),
             static_cast<const float*>(packed19[copy]), logits, labels);
    };
    const auto rung22 = [&](int copy, bool stamped) {
      launch_cluster(kernel22(stamped), sc::kThreads, 0, static_cast<const float*>(images[copy]),
                     static_cast<const float*>(packed22[copy]), logits, labels, stamps[copy]);
    };
    const auto print_stamps = [&](const char* what) {
      std::vector<long long> host(stamp_words);
      TOOL_CUDA(cudaMemcpy(host.data(), stamps[0], stamp_words * sizeof(long long), cudaMemcpyDeviceToHost));
      const int runs = static_cast<int>(std::min<long long>(host.back(), sc::kStampRuns));
      std::printf("    rung 22 stamps, %s (CTA 0, cycles since its start, median of %d):", what, runs);
      for (int st = 1; st < sc::kStampCount && runs > 0; ++st) {
        std::vector<long long> v;
        for (int r = 0; r < runs; ++r) v.push_back(host[static_cast<std::size_t>(r * sc::kStampCount + st)]);
        std::nth_element(v.begin(), v.begin() + runs / 2, v.end());
        std::printf(" %lld", v[static_cast<std::size_t>(runs / 2)]);
      }
      std::printf("\n");
      TOOL_CUDA(cudaMemset(stamps[0], 0, stamp_words * sizeof(long long)));
    };
    std::printf("whole kernels, random weights (%d runs); stamps: image in, conv1, pool1 in, features, fc1 sent, "
                "fc1 rows in, h1, h2, logits:\n", kRuns);
    add("rung 19 kernel: cold", timer.time([&] { rung19(0); }, kRuns), "as the ladder: L2 flushed");
    add("rung 19 kernel: warm code", timer.time([&] { rung19(0); }, kRuns, true, [&] { rung19(1); }),
        "flushed, then its code reloaded");
    add("rung 19 kernel: warm", timer.time([&] { rung19(0); }, kRuns, false), "no flush");
    add("rung 22 kernel: cold", timer.time([&] { rung22(0, false); }, kRuns), "as the ladder: L2 flushed");
    add("rung 22 kernel: warm code", timer.time([&] { rung22(0, false); }, kRuns, true, [&] { rung22(1, false); }),
        "flushed, then its code reloaded");
    add("rung 22 kernel: warm", timer.time([&] { rung22(0, false); }, kRuns, false), "no flush");
    TOOL_CUDA(cudaMemset(stamps[0], 0, stamp_words * sizeof(long long)));
    (void)timer.time([&] { rung22(0, true); }, kRuns);
    print_stamps("cold");
    (void)timer.time([&] { rung22(0, true); }, kRuns, true, [&] { rung22(1, true); });
    print_stamps("warm code");
    (void)timer.time([&] { rung22(0, true); }, kRuns, false);
    print_stamps("warm");
    for (float* p : {images[0], images[1], packed22[0], packed22[1], packed19[0], packed19[1], logits}) cudaFree(p);
    cudaFree(labels);
    for (auto& p : stamps) cudaFree(p);
  }

  // ---- host to labels ----------------------------------------------------------------------
  constexpr int kImages = 10000;
  const std::size_t pixel_bytes = static_cast<std::size_t>(kImages) * 784;
  unsigned char* h_pixels = nullptr;
  int* h_labels = nullptr;
  TOOL_CUDA(cudaMallocHost(&h_pixels, pixel_bytes));
  TOOL_CUDA(cudaMallocHost(&h_labels, kImages * sizeof(int)));
  for (std::size_t i = 0; i < pixel_bytes; ++i) h_pixels[i] = static_cast<unsigned char>(i * 7 % 251);
  unsigned char* d_pixels = nullptr;
  int* d_labels = nullptr;
  TOOL_CUDA(cudaMalloc(&d_pixels, pixel_bytes));
  TOOL_CUDA(cudaMalloc(&d_labels, kImages * sizeof(int)));
  constexpr int kCopyRuns = 50;
  std::printf("host to device (%d runs):\n", kCopyRuns);
  const auto h2d = timer.time([&] {
    TOOL_CUDA(cudaMemcpyAsync(d_pixels, h_pixels, pixel_bytes, cudaMemcpyHostToDevice, stream));
  }, kCopyRuns);
  char note[96];
  std::snprintf(note, sizeof(note), "%.1f GB/s (median), %.1f GB/s (best)", pixel_bytes / h2d.first / 1e3,
                pixel_bytes / h2d.second / 1e3);
  add("H2D copy, 7.84 MB pinned", h2d, note);
  const auto d2h = timer.time([&] {
    TOOL_CUDA(cudaMemcpyAsync(h_labels, d_labels, kImages * sizeof(int), cudaMemcpyDeviceToHost, stream));
  }, kCopyRuns);
  add("D2H copy, 40 KB pinned", d2h);
  unsigned* d_sum = nullptr;
  TOOL_CUDA(cudaMalloc(&d_sum, sizeof(unsigned)));
  const uint4* mapped = nullptr;  // the device's address of the pinned buffer (the same one with UVA)
  TOOL_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(const_cast<uint4**>(&mapped)), h_pixels, 0));
  const int words = static_cast<int>(pixel_bytes / 16);
  for (const int blocks : {132, 264, 528}) {
    const auto zc = timer.time([&] { zero_copy_read<<<blocks, 256, 0, stream>>>(mapped, words, d_sum); }, kCopyRuns);
    std::snprintf(note, sizeof(note), "%.1f GB/s (median), %d blocks x 256", pixel_bytes / zc.first / 1e3, blocks);
    add("zero-copy read, 7.84 MB", zc, note);
  }

  int* mapped_labels = nullptr;
  TOOL_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped_labels), h_labels, 0));
  const auto zw = timer.time([&] {
    zero_copy_read_write<<<264, 256, 0, stream>>>(mapped, words, mapped_labels, d_sum);
  }, kCopyRuns);
  std::snprintf(note, sizeof(note), "%.1f GB/s (median), 264 blocks x 256", pixel_bytes / zw.first / 1e3);
  add("  + 32 B of labels per 6,272 B read", zw, note);

  // ---- the host's side of one call, steady_clock as the ladder's host mode ---------------------
  const auto host_time = [&](const std::function<void()>& work) {
    std::vector<double> us;
    for (int i = 0; i < 10 + kRuns; ++i) {
      const auto start = std::chrono::steady_clock::now();
      work();
      const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
      if (i >= 10) us.push_back(took.count());
    }
    std::sort(us.begin(), us.end());
    return std::make_pair(us[us.size() / 2], us.front());
  };
  std::printf("the host's side (steady_clock, %d runs):\n", kRuns);
  add("host: empty kernel, launch + sync", host_time([&] {
        empty_kernel<<<1, 32, 0, stream>>>();
        TOOL_CUDA(cudaStreamSynchronize(stream));
      }), "what every host-mode call pays at least");
  add("host: cudaPointerGetAttributes", host_time([&] {
        cudaPointerAttributes a{};
        TOOL_CUDA(cudaPointerGetAttributes(&a, h_pixels));
      }), "one lookup of a pinned buffer");

  if (!csv.empty()) {
    std::FILE* f = std::fopen(csv.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", csv.c_str());
      return 1;
    }
    std::fprintf(f, "what,median_us,min_us,note,device\n");
    for (const Result& r : results)
      std::fprintf(f, "\"%s\",%.3f,%.3f,\"%s\",\"%s\"\n", r.what.c_str(), r.median_us, r.min_us, r.note.c_str(), prop.name);
    std::fclose(f);
  }
  cudaFreeHost(h_pixels);
  cudaFreeHost(h_labels);
  return 0;
}
