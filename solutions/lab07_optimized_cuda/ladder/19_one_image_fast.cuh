// Rung 19's kernels (the story and the host side are in 19_one_image_fast.cu).
//
// rows_lenet (COURSE_LADDER_ONE_IMAGE=rows; measured slower than rung 13: 8.0 against 7.7 us):
// one image per cluster of 5 CTAs, split by *rows of the output* instead of by channels, so that
// the CTAs exchange data once instead of twice.
//
// CTA r of an image's cluster owns row r of pool2 (5 x 5 pixels x 16 channels). Following the
// receptive field backwards, that row needs rows 2r..2r+5 of pool1 (6 of its 14 rows, all 6
// channels), which need padded image rows 4r..4r+15. So CTA r
//   1. issues every load at once (cp.async): the image, conv1's and all of conv2's weights, its
//      80 x 120 slice of fc1 and, CTA 0 only, fc2 and fc3;
//   2. computes *its own* 6 rows of pool1 (504 values, one per thread): the rows overlap with its
//      neighbours' (conv1 is recomputed, about 2.1x its work in total), but nothing is exchanged;
//   3. conv2 + pool2 for its row, all 16 channels: 80 features, split over 6 input channels;
//   4. fc1's partial sums over its 80 features, for all 120 outputs, stored into CTA 0's shared
//      memory (DSMEM) -- the one exchange;
//   5. CTA 0 adds the 5 partial rows, runs fc2, fc3, argmax (rung 13's code).
// Why it loses: 5 SMs do the work of 16, and recomputing conv1 gives each CTA 504 pooled values
// where rung 13's CTAs have 74; the exchange it saves costs less than that.
//
// async_cluster_lenet (the default), below: rung 13's kernel with both exchanges as st.async.
#pragma once

#include <cooperative_groups.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "13_cluster_one_image.cuh"
#include "st_async.cuh"  // smem_address, remote_address, store_counted, expect_bytes, wait_bytes

namespace ladder::one_image_fast {

namespace cg = cooperative_groups;
namespace co = ladder::cluster_one_image;  // LeNet's extents, window_5x5, pool_bias_relu, the tail layout

constexpr int kCluster = 5;                             // = pool2's rows
constexpr int kThreads = 512;                           // conv1: 504 items; conv2 and fc1: 480 threads
constexpr int kPool1Rows = 6;                           // pool1 rows 2r .. 2r+5
constexpr int kPool1Local = co::kC1 * kPool1Rows * co::kPool1;  // 504
constexpr int kConv2Threads = co::kC2 * co::kC1 * co::kPool2;   // (j, c, w) = 480
constexpr int kFeatures = co::kC2 * co::kPool2;                 // 80 per CTA
constexpr int kC2FromAll = co::kC2 * co::kFc1;                 // fc1 partials CTA 0 receives (either width)
constexpr int kFc1Quarters = 4;                                 // fc1: 4 threads per output, 20 inputs each
static_assert(kPool1Local <= kThreads && kConv2Threads <= kThreads && kFc1Quarters * co::kFc1 <= kThreads, "one round");

// Packed weights (floats; every part starts on a float4 boundary).
constexpr int kConv2All = co::round_up4(co::kC2 * co::kC1 * co::kTaps + co::kC2);  // 2,416
constexpr int kFc1Slice = kFeatures * co::kFc1;                                    // [80 inputs][120]
constexpr int kPConv2 = co::kConv1Floats;
constexpr int kPFc1 = kPConv2 + kConv2All;
constexpr int kPTail = kPFc1 + kCluster * kFc1Slice;
constexpr int kPackedFloats = kPTail + co::kTailFloats;

// Shared memory (floats).
constexpr int kSConv1 = 0;
constexpr int kSConv2 = kSConv1 + co::kConv1Floats;
constexpr int kSFc1 = kSConv2 + kConv2All;
constexpr int kSTail = kSFc1 + kFc1Slice;  // CTA 0 only
constexpr int kSImage = kSTail + co::kTailFloats;
constexpr int kSPool1 = kSImage + co::kPaddedPixels;
constexpr int kSConv2Part = kSPool1 + co::round_up4(kPool1Local);  // float4 [16][6][5]
constexpr int kSFeatures = kSConv2Part + 4 * kConv2Threads;
constexpr int kSFc1Quarter = kSFeatures + kFeatures;            // [4][120]
constexpr int kSFc1Part = kSFc1Quarter + kFc1Quarters * co::kFc1;  // [5 rows][120], CTA 0's is used
constexpr int kSH1 = kSFc1Part + kCluster * co::kFc1;
constexpr int kSH2 = kSH1 + co::kFc1;
constexpr int kSmemBytes = (kSH2 + co::round_up4(co::kFc2)) * static_cast<int>(sizeof(float));

/// The end of the chain, in CTA 0 of the cluster once every partial fc1 row is in its shared memory:
/// fc1's bias + ReLU over the kRows partial rows, fc2 and fc3 + argmax (rung 13's). Every thread
/// of the CTA calls it (it holds barriers). Both kernels of this file end with it.
template <int kRows>
__device__ __forceinline__ void fc_tail(int t, const float* s_tail, const float* s_fc1_part, float* s_h1, float* s_h2,
                                        float* __restrict__ logits, int* __restrict__ labels, int image) {
  if (t < co::kFc1) {
    float sum = s_tail[co::kTailFc1Bias + t];
#pragma unroll
    for (int row = 0; row < kRows; ++row) sum += s_fc1_part[row * co::kFc1 + t];
    s_h1[t] = fmaxf(sum, 0.0f);
  }
  __syncthreads();

  // fc2 (rung 13's): 4 lanes per output, 30 inputs each, two shuffles.
  const int warp = t / 32, lane = t % 32;
  if (warp < co::kFc2Warps) {
    const int o = warp * co::kFc2OutputsPerWarp + lane / co::kFc2Slices, slice = lane % co::kFc2Slices;
    constexpr int kPerSlice = co::kFc1 / co::kFc2Slices;
    float a0 = 0.0f, a1 = 0.0f;
    if (o < co::kFc2) {
      const float* w2 = s_tail + co::kTailFc2 + slice * kPerSlice * co::kFc2 + o;
      const float* h = s_h1 + slice * kPerSlice;
#pragma unroll
      for (int k = 0; k < kPerSlice; k += 2) {
        a0 = fmaf(h[k], w2[k * co::kFc2], a0);
        a1 = fmaf(h[k + 1], w2[(k + 1) * co::kFc2], a1);
      }
    }
    float sum = a0 + a1;
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (o < co::kFc2 && slice == 0) s_h2[o] = fmaxf(sum + s_tail[co::kTailFc2Bias + o], 0.0f);
  }
  __syncthreads();

  // fc3 + argmax in warp 0 (rung 13's butterfly: every lane ends with all ten sums).
  if (warp == 0) {
    float z[co::kClasses] = {};
    for (int k = lane; k < co::kFc2; k += 32) {
      const float h = s_h2[k];
#pragma unroll
      for (int o = 0; o < co::kClasses; ++o) z[o] = fmaf(h, s_tail[co::kTailFc3 + o * co::kFc2 + k], z[o]);
    }
#pragma unroll
    for (int o = 0; o < co::kClasses; ++o) {
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) z[o] += __shfl_xor_sync(0xffffffffu, z[o], offset);
      z[o] += s_tail[co::kTailFc3Bias + o];
    }
    co::store_logits_and_label(z, lane, logits, labels, image);
  }
}

__device__ __forceinline__ void copy_async(float* dst, const float* src, int n) {
  for (int i = static_cast<int>(threadIdx.x); i < n / 4; i += kThreads)
    __pipeline_memcpy_async(reinterpret_cast<float4*>(dst) + i, reinterpret_cast<const float4*>(src) + i, sizeof(float4));
}

/// images [n][28][28] -> logits [n][10], labels [n]; grid = n clusters of 5 CTAs, in x.
__global__ void __launch_bounds__(kThreads)
    rows_lenet(const float* __restrict__ images, const float* __restrict__ packed, float* __restrict__ logits,
               int* __restrict__ labels) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ float4 rows_smem[];
  float* const smem = reinterpret_cast<float*>(rows_smem);
  float* const s_conv1 = smem + kSConv1;
  float* const s_conv2 = smem + kSConv2;
  float* const s_fc1 = smem + kSFc1;
  float* const s_tail = smem + kSTail;
  float* const s_image = smem + kSImage;
  float* const s_pool1 = smem + kSPool1;
  float4* const s_conv2_part = reinterpret_cast<float4*>(smem + kSConv2Part);
  float* const s_features = smem + kSFeatures;
  float* const s_quarter = smem + kSFc1Quarter;
  float* const s_fc1_part = smem + kSFc1Part;
  float* const s_h1 = smem + kSH1;
  float* const s_h2 = smem + kSH2;

  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int image = static_cast<int>(blockIdx.x) / kCluster;
  const int t = static_cast<int>(threadIdx.x);

  __cluster_barrier_arrive_relaxed();  // phase 0: "this CTA runs"

  // Every load now: (image + conv weights), (my fc1 slice), (CTA 0: the tail).
  const float* src_image = images + static_cast<std::size_t>(image) * co::kImagePixels;
  for (int i = t; i < co::kImagePixels / 2; i += kThreads) {
    const int y = (2 * i) / co::kImage, x = 2 * i - y * co::kImage;
    __pipeline_memcpy_async(s_image + (y + 2) * co::kPadded + (x + 2), src_image + 2 * i, 2 * sizeof(float));
  }
  copy_async(s_conv1, packed, co::kConv1Floats);
  copy_async(s_conv2, packed + kPConv2, kConv2All);
  __pipeline_commit();
  copy_async(s_fc1, packed + kPFc1 + rank * kFc1Slice, kFc1Slice);
  __pipeline_commit();
  if (rank == 0) copy_async(s_tail, packed + kPTail, co::kTailFloats);
  __pipeline_commit();
  for (int i = t; i < co::kPaddedPixels; i += kThreads) {
    const int y = i / co::kPadded, x = i - y * co::kPadded;
    if (y < 2 || y >= co::kImage + 2 || x < 2 || x >= co::kImage + 2) s_image[i] = 0.0f;
  }
  __pipeline_wait_prior(2);
  __syncthreads();

  // conv1 + ReLU + pool1 for pool1 rows 2r .. 2r+5: item = (channel k, local row, column).
  if (t < kPool1Local) {
    const int k = t / (kPool1Rows * co::kPool1), p = t - k * (kPool1Rows * co::kPool1);
    const int row = p / co::kPool1, px = p - row * co::kPool1, py = 2 * rank + row;
    float acc[2][2] = {};
    co::window_5x5(s_image + 2 * py * co::kPadded + 2 * px, co::kPadded, s_conv1 + k * co::kTaps, acc);
    s_pool1[t] = co::pool_bias_relu(acc[0][0], acc[0][1], acc[1][0], acc[1][1], s_conv1[co::kC1 * co::kTaps + k]);
  }
  __syncthreads();

  // conv2 for pool2 row r: thread (j, c, w) = the 2x2 window under pooled pixel (r, w) of output
  // channel j over input channel c (local pool1 rows 0..5, columns 2w .. 2w+5), 100 FFMAs.
  if (t < kConv2Threads) {
    const int j = t / (co::kC1 * co::kPool2), c = (t / co::kPool2) % co::kC1, w = t % co::kPool2;
    float acc[2][2] = {};
    co::window_5x5(s_pool1 + c * (kPool1Rows * co::kPool1) + 2 * w, co::kPool1, s_conv2 + (j * co::kC1 + c) * co::kTaps, acc);
    s_conv2_part[t] = make_float4(acc[0][0], acc[0][1], acc[1][0], acc[1][1]);
  }
  __syncthreads();
  if (t < kFeatures) {  // feature (j, w): the 6 input channels added, pooled, bias, ReLU
    const int j = t / co::kPool2, w = t - j * co::kPool2;
    float4 sum = s_conv2_part[(j * co::kC1) * co::kPool2 + w];
#pragma unroll
    for (int c = 1; c < co::kC1; ++c) {
      const float4 part = s_conv2_part[(j * co::kC1 + c) * co::kPool2 + w];
      sum.x += part.x;
      sum.y += part.y;
      sum.z += part.z;
      sum.w += part.w;
    }
    s_features[t] = co::pool_bias_relu(sum.x, sum.y, sum.z, sum.w, s_conv2[co::kC2 * co::kC1 * co::kTaps + j]);
  }
  __pipeline_wait_prior(1);  // my fc1 slice
  __syncthreads();

  // fc1 over my 80 features: thread (q, o) sums features 20q .. 20q+19 for output o.
  if (t < kFc1Quarters * co::kFc1) {
    const int q = t / co::kFc1, o = t - q * co::kFc1;
    constexpr int kPer = kFeatures / kFc1Quarters;
    const float* x = s_features + q * kPer;
    const float* wcol = s_fc1 + q * kPer * co::kFc1 + o;
    float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
    for (int i = 0; i < kPer; i += 2) {
      a0 = fmaf(x[i], wcol[i * co::kFc1], a0);
      a1 = fmaf(x[i + 1], wcol[(i + 1) * co::kFc1], a1);
    }
    s_quarter[t] = a0 + a1;
  }
  __syncthreads();
  __cluster_barrier_wait();  // phase 0: CTA 0 runs, its shared memory may be written
  if (t < co::kFc1) {
    const float partial = (s_quarter[t] + s_quarter[co::kFc1 + t]) + (s_quarter[2 * co::kFc1 + t] + s_quarter[3 * co::kFc1 + t]);
    cluster.map_shared_rank(s_fc1_part, 0)[rank * co::kFc1 + t] = partial;
  }
  __cluster_barrier_arrive();  // phase 1, release: my partial row is in CTA 0
  if (rank != 0) return;

  __pipeline_wait_prior(0);  // fc2's and fc3's weights
  __syncthreads();
  __cluster_barrier_wait();  // acquire: all 5 partial rows are here

  fc_tail<kCluster>(t, s_tail, s_fc1_part, s_h1, s_h2, logits, labels, image);
#else
  (void)images, (void)packed, (void)logits, (void)labels;
#endif
}

// ---------------------------------------------------------------------------------------------
// The default kernel: rung 13's division of labour (16 or 8 CTAs split by channels), with its two
// exchanges done by st.async instead of stores + cluster barriers.
//
// Rung 13 publishes each exchange with barrier.cluster: every thread of all 16 CTAs arrives with
// release semantics (its remote stores must be complete first) and waits for all the others.
// Here every remote store is an st.async that carries its own completion: it adds its bytes to an
// mbarrier *in the receiving CTA*, and the receiver waits until that mbarrier has counted all the
// bytes it expects (1,176 floats of pool1; CTA 0 also 16 x 120 fc1 partials). A CTA waits only for
// its own data, not for every thread of the cluster to reach the same point, and no producer
// stalls on a release. The cluster barrier is left for "every CTA runs" (phase 0, which the
// mbarriers' initialisation needs anyway) and for keeping the senders alive until CTA 0 has its
// data (phase 1, off CTA 0's critical path). Skeleton alone (lab07_latency_floors, H100): 4.1 us
// against 5.3 us for rung 13's barriers; the whole kernel 7.0 us against 7.7 us.
// The st.async helpers are in st_async.cuh (rung 22 and the floors tool use them too).
// ---------------------------------------------------------------------------------------------

/// images [n][28][28] -> logits [n][10], labels [n]; grid = n clusters of kCluster CTAs, in x.
/// Shared-memory layout and packed weights: rung 13's Layout<kCluster>.
template <int kCluster>
__global__ void __launch_bounds__(co::kThreads)
    async_cluster_lenet(const float* __restrict__ images, const float* __restrict__ packed,
                        float* __restrict__ logits, int* __restrict__ labels) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using L = co::Layout<kCluster>;
  constexpr int kCh = L::kChannels;
  constexpr int kThreads13 = co::kThreads;
  extern __shared__ float4 async_smem[];
  __shared__ alignas(8) unsigned long long bars[2];  // [0]: pool1 complete; [1] (CTA 0): fc1 partials
  float* const smem = reinterpret_cast<float*>(async_smem);
  float* const s_conv1 = smem + L::kSConv1;
  float* const s_conv2 = smem + L::kSConv2;
  float* const s_fc1 = smem + L::kSFc1;
  float* const s_tail = smem + L::kSTail;
  float* const s_image = smem + L::kSImage;
  float* const s_pool1 = smem + L::kSPool1;
  float4* const s_conv2_part = reinterpret_cast<float4*>(smem + L::kSConv2Part);
  float* const s_features = smem + L::kSFeatures;
  float* const s_fc1_part = smem + L::kSFc1Part;
  float* const s_h1 = smem + L::kSH1;
  float* const s_h2 = smem + L::kSH2;

  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int image = static_cast<int>(blockIdx.x) / kCluster;
  const int t = static_cast<int>(threadIdx.x);
  const unsigned pool1_bar = smem_address(&bars[0]), fc1_bar = smem_address(&bars[1]);

  if (t == 0) {
    expect_bytes(pool1_bar, co::kPool1Floats * sizeof(float));
    if (rank == 0) expect_bytes(fc1_bar, kC2FromAll * sizeof(float));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to the others' st.async
  }
  __cluster_barrier_arrive_relaxed();  // phase 0: "this CTA runs" (thread 0 after its fence)

  const float* src_image = images + static_cast<std::size_t>(image) * co::kImagePixels;
  for (int i = t; i < co::kImagePixels / 2; i += kThreads13) {
    const int y = (2 * i) / co::kImage, x = 2 * i - y * co::kImage;
    __pipeline_memcpy_async(s_image + (y + 2) * co::kPadded + (x + 2), src_image + 2 * i, 2 * sizeof(float));
  }
  const float* my_part = packed + co::kConv1Floats + rank * L::kRankFloats;
  co::copy_async(s_conv1, packed, co::kConv1Floats);
  co::copy_async(s_conv2, my_part, L::kConv2Floats);
  __pipeline_commit();
  co::copy_async(s_fc1, my_part + L::kConv2Floats, L::kFc1Floats);
  __pipeline_commit();
  if (rank == 0) co::copy_async(s_tail, packed + L::kTailAt, co::kTailFloats);
  __pipeline_commit();
  for (int i = t; i < co::kPaddedPixels; i += kThreads13) {
    const int y = i / co::kPadded, x = i - y * co::kPadded;
    if (y < 2 || y >= co::kImage + 2 || x < 2 || x >= co::kImage + 2) s_image[i] = 0.0f;
  }
  __pipeline_wait_prior(2);
  __syncthreads();

  // conv1: my slice of pool1, sent to every CTA (myself included) as counted stores.
  {
    const int begin = rank * co::kPool1Floats / kCluster, end = (rank + 1) * co::kPool1Floats / kCluster;
    const int item = begin + t;
    const float value = item < end ? co::conv1_pooled(s_image, s_conv1, item) : 0.0f;
    __cluster_barrier_wait();  // phase 0: every CTA runs, its mbarriers are initialised
    if (item < end) {
      const unsigned local = smem_address(s_pool1 + item);
#pragma unroll
      for (int d = 0; d < kCluster; ++d) store_counted(remote_address(local, d), value, remote_address(pool1_bar, d));
    }
    wait_bytes(pool1_bar);  // all 1,176 values are in my s_pool1
  }

  // conv2 and pool2 for my channels (rung 13's code).
  if (t < kCh * co::kC1 * 32) {
    const int j = t / (co::kC1 * 32), c = (t / 32) % co::kC1, w = t % 32;
    if (w < co::kPool2Pixels) {
      const int wy = w / co::kPool2, wx = w - wy * co::kPool2;
      float acc[2][2] = {};
      co::window_5x5(s_pool1 + c * co::kPool1Pixels + 2 * wy * co::kPool1 + 2 * wx, co::kPool1,
                     s_conv2 + (j * co::kC1 + c) * co::kTaps, acc);
      s_conv2_part[(j * co::kC1 + c) * 32 + w] = make_float4(acc[0][0], acc[0][1], acc[1][0], acc[1][1]);
    }
  }
  __syncthreads();
  if (t < kCh * co::kPool2Pixels) {
    const int j = t / co::kPool2Pixels, w = t - j * co::kPool2Pixels;
    float4 sum = s_conv2_part[j * co::kC1 * 32 + w];
#pragma unroll
    for (int c = 1; c < co::kC1; ++c) {
      const float4 part = s_conv2_part[(j * co::kC1 + c) * 32 + w];
      sum.x += part.x;
      sum.y += part.y;
      sum.z += part.z;
      sum.w += part.w;
    }
    s_features[t] = co::pool_bias_relu(sum.x, sum.y, sum.z, sum.w, s_conv2[kCh * co::kC1 * co::kTaps + j]);
  }
  __pipeline_wait_prior(1);
  __syncthreads();

  // fc1 along K (rung 13's), the partial rows sent to CTA 0 as counted stores.
  if (t < kCh * co::kFc1) {
    const int fc1_j = t / co::kFc1, fc1_o = t - fc1_j * co::kFc1;
    const float* x = s_features + fc1_j * co::kPool2Pixels;
    const float* wcol = s_fc1 + fc1_j * co::kPool2Pixels * co::kFc1 + fc1_o;
    float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
    for (int i = 0; i + 1 < co::kPool2Pixels; i += 2) {
      a0 = fmaf(x[i], wcol[i * co::kFc1], a0);
      a1 = fmaf(x[i + 1], wcol[(i + 1) * co::kFc1], a1);
    }
    const float partial = fmaf(x[co::kPool2Pixels - 1], wcol[(co::kPool2Pixels - 1) * co::kFc1], a0) + a1;
    store_counted(remote_address(smem_address(s_fc1_part + (rank * kCh + fc1_j) * co::kFc1 + fc1_o), 0), partial,
                  remote_address(fc1_bar, 0));
  }
  // Phase 1 of the cluster barrier only keeps a CTA alive until CTA 0 has received its partial
  // row (an st.async still on its way when its sender exits is not something to rely on). CTA 0
  // arrives once its mbarrier is complete and never waits for it: off the critical path.
  if (rank != 0) {
    __cluster_barrier_arrive_relaxed();
    __cluster_barrier_wait();
    return;
  }

  __pipeline_wait_prior(0);
  __syncthreads();
  wait_bytes(fc1_bar);  // all 16 partial rows are here
  __cluster_barrier_arrive_relaxed();

  fc_tail<co::kC2>(t, s_tail, s_fc1_part, s_h1, s_h2, logits, labels, image);
#else
  (void)images, (void)packed, (void)logits, (void)labels;
#endif
}

}  // namespace ladder::one_image_fast
