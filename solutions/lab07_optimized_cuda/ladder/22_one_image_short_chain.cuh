// Rung 22's kernel (the story, the measurements and the host side are in 22_one_image_short_chain.cu):
// rung 19's 16-CTA cluster (conv2 split by output channel, two exchanges as st.async counted by
// mbarriers) with every step of the dependent chain made shorter.
//
//   * Weights in registers, fetched at the very start. Nothing a thread multiplies by depends on
//     the image, so every thread loads the weights of its own role (25 conv1 taps, 25 conv2 taps,
//     25 fc1 weights, 30 fc2 weights, 30 fc3 weights) straight from global memory into registers
//     while the image is still on its way: the steps then read only activations from shared memory.
//     In rung 19 CTA 0's fc2 reads its 40 KB of weights from shared memory one float at a time,
//     ~1,000 wavefronts of a shared-memory port that serves one per clock.
//   * Roles on separate warps, so that no thread holds more than two roles' weights:
//       warps 0-2   conv1 + pool1 (this CTA's 72-76 pooled values, whole float4 granules)
//       warps 3-7   conv2 + pool2 of this CTA's output channel: lane (w, c) = pooled pixel w over
//                   input channel c, the 6 input channels added with shuffles, no barrier
//       warps 8-11  fc1: thread o = this channel's 25 features times their weights for output o
//       warp 12     fc3 + argmax (CTA 0)
//       CTA 0 also: warps 0-3 add the 16 partial fc1 rows, warps 0-10 fc2 (4 lanes per output).
//   * fc2 reads h1 as float4s from 4 slices 36 floats apart: the 4 addresses a warp reads at once
//     fall in 4 different groups of banks. With 32 floats apart they shared one group, a 4-way
//     conflict on every load of fc2, and fc2 took 1,650 cycles instead of 600 (clock stamps).
//   * Exchanges in 16-byte messages (st.async .v4): pool1 is 294 float4 granules, so every CTA
//     receives 294 messages instead of 1,176; CTA 0 receives 16 x 30 fc1 messages instead of
//     16 x 120. The four values of a granule meet in one lane by shuffles. (Measured in the
//     skeleton: no faster than 4-byte messages, 3.97 us both -- an exchange costs its latency.)
//   * Named barriers (bar.sync/bar.arrive) between the warps that hand data over, instead of
//     __syncthreads over the whole CTA, outside CTA 0's tail.
#pragma once

#include <cooperative_groups.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "13_cluster_one_image.cuh"
#include "st_async.cuh"  // smem_address, remote_address, store_counted_v4, expect_bytes, wait_bytes

namespace ladder::one_image_short_chain {

namespace cg = cooperative_groups;
namespace co = ladder::cluster_one_image;  // LeNet's extents, pool_bias_relu
namespace rw = ladder::one_image_fast;

constexpr int kCluster = 16;  // one conv2 output channel per CTA
constexpr int kWarps = 13, kThreads = 32 * kWarps;
constexpr int kConv1Warp0 = 0, kConv2Warp0 = 3, kFc1Warp0 = 8, kFc3Warp = 12;
constexpr int kFc2Threads = 352;                              // 11 warps x 8 outputs x 4 slices
constexpr int kGranules = co::kPool1Floats / 4;               // 294 float4 of pool1
constexpr int kMaxItems = 4 * ((kGranules + kCluster - 1) / kCluster);  // 76 pooled values per CTA
constexpr int kTaps4 = 28;                                    // 25 taps + bias/pad: 7 float4
constexpr int kFeatures4 = 28;                                // 25 features + 3 zeros
constexpr int kH1Quads = 8;                                   // fc2's 4 slices of 30 inputs (+2 zeros) as float4s
constexpr int kH1Stride = 36;  // floats per slice: 16-byte rows, 4 banks apart, so the 4 slices' float4s share no bank
constexpr int kFc3Regs = 40;                                  // 3 inputs x 10 outputs + 10 biases
static_assert(kMaxItems <= 32 * (kConv2Warp0 - kConv1Warp0), "conv1 fits its warps");
static_assert(co::kPool2Pixels <= 5 * (kFc1Warp0 - kConv2Warp0), "conv2: 5 pooled pixels x 6 channels per warp");
static_assert(co::kFc1 <= 32 * (kFc3Warp - kFc1Warp0) && kFc2Threads <= kThreads, "fc roles fit");
static_assert(co::kPool1Floats % 4 == 0 && co::kFc1 % 4 == 0, "16-byte messages");

// The packed weights (floats, every part on a float4 boundary), built by pack() in the .cu file:
constexpr int kPConv1 = 0;                                        // [6][28]: taps, bias at 25
constexpr int kPConv2 = kPConv1 + co::kC1 * kTaps4;               // [16][6][28]: taps, bias j at [j][0][25]
constexpr int kPFc1 = kPConv2 + co::kC2 * co::kC1 * kTaps4;       // [16 ranks][7 q][120 o][4]: coalesced
constexpr int kPFc1Bias = kPFc1 + kCluster * (kFeatures4 / 4) * co::kFc1 * 4;
constexpr int kPFc2 = kPFc1Bias + co::kFc1;                       // [8 q][352 threads][4]
constexpr int kPFc2Bias = kPFc2 + 8 * kFc2Threads * 4;
constexpr int kPFc3 = kPFc2Bias + co::round_up4(co::kFc2);        // [10 q][32 lanes][4]
constexpr int kPackedFloats = kPFc3 + (kFc3Regs / 4) * 32 * 4;

/// Per-stage clock64() stamps of CTA 0 (COURSE_LADDER_STAMPS=1), in this order.
enum Stamp : int {
  kStart, kImageIn, kConv1Done, kPool1In, kFeaturesDone, kFc1Sent, kFc1In, kH1Done, kH2Done, kLogitsOut, kStampCount
};
constexpr int kStampRuns = 1024;  // a ring of [kStampRuns][kStampCount] long longs, then a counter

__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

/// The first 4 * kQuads floats of dst from global memory, 16 bytes at a time: quad q from
/// src + 4 * q * stride4 (stride4 > 1: a warp's lanes read consecutive float4s, coalesced).
/// ld.volatile: a load the compiler must issue where it is written, at the kernel's start, and
/// wait for only at its first use. (Measured against __ldg and ld.relaxed.gpu in one run:
/// 6.21-6.37 us, all three the same.)
template <int kQuads, int kN>
__device__ __forceinline__ void load4(float (&dst)[kN], const float* src, int stride4 = 1) {
  static_assert(4 * kQuads <= kN, "fits");
#pragma unroll
  for (int q = 0; q < kQuads; ++q)
    asm volatile("ld.volatile.global.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(dst[4 * q]), "=f"(dst[4 * q + 1]), "=f"(dst[4 * q + 2]), "=f"(dst[4 * q + 3])
                 : "l"(src + 4 * q * stride4));
}
__device__ __forceinline__ float load1(const float* src) {
  float v;
  asm volatile("ld.volatile.global.f32 %0, [%1];" : "=f"(v) : "l"(src));
  return v;
}

/// clock64() for the stamps; the caller branches on shared data read after its barrier first, so
/// that the clock is read after the barrier, not hoisted above it.
__device__ __forceinline__ long long clock_now() {
  long long c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c) :: "memory");
  return c;
}

/// The 2x2 outputs of a 5x5 convolution under one pooled value, taps in registers (rung 13's
/// window_5x5 with w from registers: each input row is three float2 loads, loaded once).
__device__ __forceinline__ void pooled_5x5(const float* patch, int stride, const float (&w)[kTaps4], float (&acc)[2][2]) {
  float rows[2][6];
  co::load_row6(patch, rows[1]);
#pragma unroll
  for (int r = 0; r < co::kK; ++r) {
#pragma unroll
    for (int j = 0; j < 6; ++j) rows[0][j] = rows[1][j];
    co::load_row6(patch + (r + 1) * stride, rows[1]);
#pragma unroll
    for (int s = 0; s < co::kK; ++s)
#pragma unroll
      for (int dy = 0; dy < 2; ++dy)
#pragma unroll
        for (int dx = 0; dx < 2; ++dx) acc[dy][dx] = fmaf(rows[dy][s + dx], w[r * co::kK + s], acc[dy][dx]);
  }
}

__device__ __forceinline__ float4 shfl_down4(float4 v, int delta) {
  return make_float4(__shfl_down_sync(0xffffffffu, v.x, delta), __shfl_down_sync(0xffffffffu, v.y, delta),
                     __shfl_down_sync(0xffffffffu, v.z, delta), __shfl_down_sync(0xffffffffu, v.w, delta));
}
__device__ __forceinline__ float4 add4(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }

/// images [n][28][28] -> logits [n][10], labels [n]; grid = n clusters of 16 CTAs in x, 416 threads.
/// kStamped: CTA 0 also writes clock64() per stage into stamps (kStampRuns x kStampCount, then a counter).
template <bool kStamped>
__global__ void __launch_bounds__(kThreads, 1)
    short_chain_lenet(const float* __restrict__ images, const float* __restrict__ packed, float* __restrict__ logits,
                      int* __restrict__ labels, long long* __restrict__ stamps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ alignas(16) float s_image[co::kPaddedPixels];
  __shared__ alignas(16) float s_pool1[co::kPool1Floats];
  __shared__ alignas(16) float s_features[kFeatures4];
  __shared__ alignas(16) float s_fc1_part[kCluster * co::kFc1];  // CTA 0: the 16 partial rows
  __shared__ alignas(16) float s_h1[4 * kH1Stride];
  __shared__ alignas(16) float s_h2[96];
  __shared__ alignas(8) unsigned long long bars[2];  // [0] pool1 complete; [1] (CTA 0) fc1 rows complete
  __shared__ long long s_stamp[kStampCount];

  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int image = static_cast<int>(blockIdx.x) / kCluster;
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
  const unsigned pool1_bar = rw::smem_address(&bars[0]), fc1_bar = rw::smem_address(&bars[1]);
  const auto stamp = [&](Stamp which) {
    if constexpr (kStamped) {
      if (rank == 0) s_stamp[which] = clock_now();
    }
  };
  if (t == 0) stamp(kStart);

  if (t == 0) {
    rw::expect_bytes(pool1_bar, co::kPool1Floats * sizeof(float));
    if (rank == 0) rw::expect_bytes(fc1_bar, kCluster * co::kFc1 * sizeof(float));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __cluster_barrier_arrive_relaxed();  // phase 0: "this CTA runs"

  // The image: cp.async in 8-byte pieces inside a zero border (rung 13's layout), by warps 0-11.
  constexpr int kWorkers = 32 * kFc3Warp;
  const float* src_image = images + static_cast<std::size_t>(image) * co::kImagePixels;
  if (t < kWorkers) {
    for (int i = t; i < co::kImagePixels / 2; i += kWorkers) {
      const int y = (2 * i) / co::kImage, x = 2 * i - y * co::kImage;
      __pipeline_memcpy_async(s_image + (y + 2) * co::kPadded + (x + 2), src_image + 2 * i, 2 * sizeof(float));
    }
  }
  __pipeline_commit();

  // Every weight this thread will multiply by, into registers, now (they do not depend on the image).
  const int g0 = rank * kGranules / kCluster, items = 4 * ((rank + 1) * kGranules / kCluster - g0);
  float wa[kTaps4] = {};    // conv1 (warps 0-2) / conv2 (3-7) / fc1 (8-11)
  float wb[kFc3Regs] = {};  // CTA 0: fc2 (warps 0-10, 32 used) / fc3 (warp 12)
  float fc1_bias = 0.0f, fc2_bias = 0.0f;
  const int c2_lane_w = lane / 6, c2_c = lane % 6;  // conv2: lane (w within the warp, input channel)
  if (warp < kConv2Warp0) {
    const int k = (4 * g0 + min(t, items - 1)) / co::kPool1Pixels;
    load4<7>(wa, packed + kPConv1 + k * kTaps4);
  } else if (warp < kFc1Warp0) {
    load4<7>(wa, packed + kPConv2 + (rank * co::kC1 + (lane < 30 ? c2_c : 0)) * kTaps4);
  } else if (warp < kFc3Warp) {
    const int o = min(t - 32 * kFc1Warp0, co::kFc1 - 1);
    load4<7>(wa, packed + kPFc1 + (rank * (kFeatures4 / 4) * co::kFc1 + o) * 4, co::kFc1);
  }
  if (rank == 0) {
    if (t < co::kFc1) fc1_bias = load1(packed + kPFc1Bias + t);
    if (t < kFc2Threads) {
      load4<8>(wb, packed + kPFc2 + 4 * t, kFc2Threads);
      fc2_bias = load1(packed + kPFc2Bias + min((t / 32) * 8 + lane / 4, co::kFc2 - 1));
    } else if (warp == kFc3Warp) {
      load4<kFc3Regs / 4>(wb, packed + kPFc3 + 4 * lane, 32);
    }
  }
  // Zero border and pads while the copies fly.
  if (t < kWorkers) {
    for (int i = t; i < co::kPaddedPixels; i += kWorkers) {
      const int y = i / co::kPadded, x = i - y * co::kPadded;
      if (y < 2 || y >= co::kImage + 2 || x < 2 || x >= co::kImage + 2) s_image[i] = 0.0f;
    }
  }
  if (t < kFeatures4 - co::kPool2Pixels) s_features[co::kPool2Pixels + t] = 0.0f;
  if (t < 4 * kH1Stride) s_h1[t] = 0.0f;  // the pad floats of each slice stay 0

  if (warp < kFc3Warp) {
    __pipeline_wait_prior(0);
    named_sync(2, kWorkers);  // the image and the zero border, in warps 0-11
    if (t == 0 && s_image[0] == 0.0f) stamp(kImageIn);  // (the zero border)
  }

  if (warp < kConv2Warp0) {
    // conv1 + ReLU + pool1: item 4*g0 + t of pool1's 1,176 values.
    const int item = 4 * g0 + min(t, items - 1);
    const int k = item / co::kPool1Pixels, p = item - k * co::kPool1Pixels;
    const int py = p / co::kPool1, px = p - py * co::kPool1;
    float acc[2][2] = {};
    pooled_5x5(s_image + 2 * py * co::kPadded + 2 * px, co::kPadded, wa, acc);
    const float value = co::pool_bias_relu(acc[0][0], acc[0][1], acc[1][0], acc[1][1], wa[co::kTaps]);
    if (t == 0) stamp(kConv1Done);
    // The 4 values of a granule into all 4 lanes of its group; lane j of the group sends the
    // granule to CTAs j, j+4, j+8, j+12 (16-byte st.async, counted by their pool1 mbarriers).
    const int base = lane & ~3, j = lane & 3;
    const float4 v = make_float4(__shfl_sync(0xffffffffu, value, base), __shfl_sync(0xffffffffu, value, base + 1),
                                 __shfl_sync(0xffffffffu, value, base + 2), __shfl_sync(0xffffffffu, value, base + 3));
    __cluster_barrier_wait();  // phase 0: every CTA runs, its mbarriers are initialised
    if ((t & ~3) < items) {
      const unsigned local = rw::smem_address(s_pool1 + 4 * g0 + (t & ~3));
#pragma unroll
      for (int m = 0; m < kCluster / 4; ++m) {
        const int d = j + 4 * m;
        rw::store_counted_v4(rw::remote_address(local, d), v, rw::remote_address(pool1_bar, d));
      }
    }
  } else if (warp < kFc1Warp0) {
    // conv2 + pool2 of output channel `rank`: lane (w, c), 30 lanes = 5 pooled pixels x 6 channels.
    const int w = min((warp - kConv2Warp0) * 5 + c2_lane_w, co::kPool2Pixels - 1);
    const int wy = w / co::kPool2, wx = w - wy * co::kPool2;
    rw::wait_bytes(pool1_bar);  // all of pool1 is here
    if (t == 32 * kConv2Warp0 && s_pool1[0] >= 0.0f) stamp(kPool1In);
    __cluster_barrier_wait();  // phase 0 (long complete: every CTA has sent to us)
    float acc[2][2] = {};
    pooled_5x5(s_pool1 + c2_c * co::kPool1Pixels + 2 * wy * co::kPool1 + 2 * wx, co::kPool1, wa, acc);
    // Add the 6 input channels: lanes c = 0..5 of a group, c = 0 ends with the sum.
    const float4 s1 = add4(make_float4(acc[0][0], acc[0][1], acc[1][0], acc[1][1]),
                           shfl_down4(make_float4(acc[0][0], acc[0][1], acc[1][0], acc[1][1]), 1));
    const float4 sum = add4(add4(s1, shfl_down4(s1, 2)), shfl_down4(s1, 4));
    if (lane < 30 && c2_c == 0) s_features[w] = co::pool_bias_relu(sum.x, sum.y, sum.z, sum.w, wa[co::kTaps]);
    named_arrive(1, 32 * (kFc3Warp - kConv2Warp0));  // the features, to the fc1 warps
  } else if (warp < kFc3Warp) {
    // fc1's partial sums over this channel's 25 features, for all 120 outputs.
    const int o = t - 32 * kFc1Warp0;
    named_sync(1, 32 * (kFc3Warp - kConv2Warp0));
    if (t == 32 * kFc1Warp0 && s_features[0] >= 0.0f) stamp(kFeaturesDone);  // (ReLU: always)
    float a[4] = {};
#pragma unroll
    for (int q = 0; q < kFeatures4 / 4; ++q) {
      const float4 x = reinterpret_cast<const float4*>(s_features)[q];
      a[0] = fmaf(x.x, wa[4 * q], a[0]);
      a[1] = fmaf(x.y, wa[4 * q + 1], a[1]);
      a[2] = fmaf(x.z, wa[4 * q + 2], a[2]);
      a[3] = fmaf(x.w, wa[4 * q + 3], a[3]);
    }
    const float partial = (a[0] + a[1]) + (a[2] + a[3]);
    const float4 v = make_float4(partial, __shfl_down_sync(0xffffffffu, partial, 1),
                                 __shfl_down_sync(0xffffffffu, partial, 2), __shfl_down_sync(0xffffffffu, partial, 3));
    __cluster_barrier_wait();  // phase 0
    if ((o & 3) == 0 && o < co::kFc1)
      rw::store_counted_v4(rw::remote_address(rw::smem_address(s_fc1_part + rank * co::kFc1 + o), 0), v,
                           rw::remote_address(fc1_bar, 0));
    if (t == 32 * kFc1Warp0) stamp(kFc1Sent);
  } else {
    __cluster_barrier_wait();  // phase 0 (the fc3 warp sends nothing)
  }

  // Phase 1 keeps every CTA (its st.async on their way) alive until CTA 0 has all of fc1's rows.
  if (rank != 0) {
    __cluster_barrier_arrive_relaxed();
    __cluster_barrier_wait();
    return;
  }

  // ---- CTA 0: fc1's 16 rows + bias + ReLU, fc2 + ReLU, fc3, argmax -------------------------
  if (t < co::kFc1) {
    rw::wait_bytes(fc1_bar);
    if (t == 0 && s_fc1_part[0] == s_fc1_part[0]) stamp(kFc1In);
    float r[kCluster];
#pragma unroll
    for (int i = 0; i < kCluster; ++i) r[i] = s_fc1_part[i * co::kFc1 + t];
    static_assert(kCluster == 16, "a 4-level tree");  // written out: a loop over widths left r[] in local memory
#pragma unroll
    for (int i = 0; i < 8; ++i) r[i] += r[i + 8];
#pragma unroll
    for (int i = 0; i < 4; ++i) r[i] += r[i + 4];
    r[0] += r[2], r[1] += r[3];
    r[0] += r[1];
    s_h1[(t / 30) * kH1Stride + t % 30] = fmaxf(r[0] + fc1_bias, 0.0f);
  }
  __syncthreads();
  __cluster_barrier_arrive_relaxed();  // phase 1: the others may leave
  if (t == 0 && s_h1[0] >= 0.0f) stamp(kH1Done);

  if (t < kFc2Threads) {
    // fc2: lane = (output o2 of the warp's 8, slice of 30 inputs); weights in wb[0..29].
    const int o2 = warp * 8 + lane / 4, slice = lane & 3;
    const float4* h = reinterpret_cast<const float4*>(s_h1 + slice * kH1Stride);
    float a[4] = {};
#pragma unroll
    for (int q = 0; q < kH1Quads; ++q) {
      const float4 x = h[q];
      a[0] = fmaf(x.x, wb[4 * q], a[0]);
      a[1] = fmaf(x.y, wb[4 * q + 1], a[1]);
      a[2] = fmaf(x.z, wb[4 * q + 2], a[2]);
      a[3] = fmaf(x.w, wb[4 * q + 3], a[3]);
    }
    float sum = (a[0] + a[1]) + (a[2] + a[3]);
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (slice == 0 && o2 < co::kFc2) s_h2[o2] = fmaxf(sum + fc2_bias, 0.0f);
  }
  __syncthreads();
  if (t == 0 && s_h2[0] >= 0.0f) stamp(kH2Done);

  if (warp == kFc3Warp) {
    // fc3: lane l takes inputs l, l+32, l+64 of all 10 outputs (weights wb[3 o + s]); a butterfly
    // leaves the same ten sums in every lane (rung 13's), then lane o stores logit o.
    const float h0 = s_h2[lane], h1 = s_h2[lane + 32], h2 = lane + 64 < co::kFc2 ? s_h2[lane + 64] : 0.0f;
    float z[co::kClasses];
#pragma unroll
    for (int o = 0; o < co::kClasses; ++o) z[o] = fmaf(h2, wb[3 * o + 2], fmaf(h1, wb[3 * o + 1], h0 * wb[3 * o]));
#pragma unroll
    for (int o = 0; o < co::kClasses; ++o) {
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) z[o] += __shfl_xor_sync(0xffffffffu, z[o], offset);
      z[o] += wb[30 + o];
    }
    co::store_logits_and_label(z, lane, logits, labels, image);
    if constexpr (kStamped) {
      if (lane == 0) {
        stamp(kLogitsOut);
        const long long slot = atomicAdd(reinterpret_cast<unsigned long long*>(stamps + kStampRuns * kStampCount), 1ull);
        long long* row = stamps + (slot % kStampRuns) * kStampCount;
        for (int i = 0; i < kStampCount; ++i) row[i] = s_stamp[i] - s_stamp[kStart];
      }
    }
  }
#else
  (void)images, (void)packed, (void)logits, (void)labels, (void)stamps;
#endif
}

}  // namespace ladder::one_image_short_chain
