// Rung 13's kernel (the story and the host side are in 13_cluster_one_image.cu): one image per
// thread-block cluster of kCluster CTAs (8 or 16 SMs), which share the work through distributed
// shared memory (DSMEM) and the cluster barrier.
//
// CTA `rank` of an image's cluster:
//   1. issues every load it will ever need at once (cp.async into shared memory): the image, the
//      conv weights, the slice of fc1's weights it uses and, CTA 0 only, fc2's and fc3's weights,
//      so that no later step waits for DRAM (the benchmark flushes L2 before every run);
//   2. conv1 + bias + ReLU + pool1: either its 1/kCluster share of the 1,176 pooled values,
//      written into every CTA's shared memory (kShareConv1), or all of them itself (redundant);
//   3. conv2 + bias + ReLU + pool2 for its 16/kCluster output channels (25 features each);
//   4. fc1 split along K: the partial sums of its own 25-feature rows for all 120 outputs, no
//      gather needed; the 16 partial rows are stored into CTA 0's shared memory;
//   5. CTA 0 alone: fc1's sum + ReLU, fc2 + ReLU, fc3, argmax. The others have left already.
// Cluster barrier phases (arrive/wait split, so that arriving costs nothing on the critical path):
//   phase 0  "every CTA has started" -- a CTA's shared memory may only be written once it runs;
//   phase 1  (kShareConv1 only) every slice of pool1 has arrived everywhere;
//   phase 2  every partial row of fc1 is in CTA 0 (the CTAs arrive and exit; CTA 0 waits).
#pragma once

#include <cooperative_groups.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace ladder::cluster_one_image {

namespace cg = cooperative_groups;

// LeNet's extents (course/lenet.hpp has the layer table).
constexpr int kImage = 28, kImagePixels = kImage * kImage;
constexpr int kPadded = 32, kPaddedPixels = kPadded * kPadded;  // conv1's pad 2 as zeros: no bounds checks
constexpr int kK = 5, kTaps = kK * kK;
constexpr int kC1 = 6, kPool1 = 14, kPool1Pixels = kPool1 * kPool1, kPool1Floats = kC1 * kPool1Pixels;
constexpr int kC2 = 16, kPool2 = 5, kPool2Pixels = kPool2 * kPool2;
constexpr int kFc1 = 120, kFc2 = 84, kClasses = 10;

// 416 threads = 13 warps: the redundant conv1's 1,176 items in 3 rounds; every other step needs
// at most 384 threads (conv2 with 2 channels per CTA: 2 x 6 input channels x 32 lanes).
constexpr int kThreads = 416;
constexpr int kFc2Slices = 4;                        // fc2: 4 lanes per output, 30 inputs each
constexpr int kFc2OutputsPerWarp = 32 / kFc2Slices;  // 8
constexpr int kFc2Warps = (kFc2 + kFc2OutputsPerWarp - 1) / kFc2OutputsPerWarp;  // 11
static_assert(kFc2Warps * 32 <= kThreads && kFc1 % kFc2Slices == 0, "fc2's lanes must fit the block");

constexpr int round_up4(int x) { return (x + 3) / 4 * 4; }  // float4 granularity of every buffer

// The packed weights (one device buffer, built on the host by pack_weights in the .cu file):
//   conv1  [6][25] + bias [6]                                       (every CTA)
//   rank r: conv2 [channels][6][25] + bias [channels]; fc1 slice [channels * 25 inputs][120]
//   tail:  fc1 bias [120], fc2^T [120][84], fc2 bias [84], fc3 [10][84], fc3 bias [10]  (CTA 0)
// Each part starts on a float4 boundary (cp.async copies 16 bytes at a time).
constexpr int kConv1Floats = round_up4(kC1 * kTaps + kC1);  // 160
constexpr int kTailFc1Bias = 0;
constexpr int kTailFc2 = kTailFc1Bias + kFc1;              // [k][o]: lanes of consecutive o, consecutive banks
constexpr int kTailFc2Bias = kTailFc2 + kFc1 * kFc2;
constexpr int kTailFc3 = kTailFc2Bias + kFc2;              // [o][k]: lanes of consecutive k
constexpr int kTailFc3Bias = kTailFc3 + kClasses * kFc2;
constexpr int kTailFloats = round_up4(kTailFc3Bias + kClasses);
static_assert(kTailFc2 % 4 == 0 && kTailFc2Bias % 4 == 0 && kTailFc3 % 4 == 0, "tail parts");

template <int kCluster>
struct Layout {
  static_assert(kCluster == 8 || kCluster == 16, "a cluster of 8 or 16 CTAs (16 / kCluster conv2 channels each)");
  static constexpr int kChannels = kC2 / kCluster;  // conv2 output channels per CTA
  static constexpr int kFeatures = kChannels * kPool2Pixels;
  // Packed buffer, in floats.
  static constexpr int kConv2Floats = round_up4(kChannels * (kC1 * kTaps + 1));
  static constexpr int kFc1Floats = kFeatures * kFc1;
  static constexpr int kRankFloats = kConv2Floats + kFc1Floats;
  static constexpr int kTailAt = kConv1Floats + kCluster * kRankFloats;
  static constexpr int kPackedFloats = kTailAt + kTailFloats;
  // Shared memory, in floats (every offset a multiple of 4: float4-aligned).
  static constexpr int kSConv1 = 0;
  static constexpr int kSConv2 = kSConv1 + kConv1Floats;
  static constexpr int kSFc1 = kSConv2 + kConv2Floats;
  static constexpr int kSTail = kSFc1 + kFc1Floats;  // only CTA 0 fills it
  static constexpr int kSImage = kSTail + kTailFloats;
  static constexpr int kSPool1 = kSImage + kPaddedPixels;
  static constexpr int kSConv2Part = kSPool1 + kPool1Floats;  // float4 [channels][6][32]
  static constexpr int kSFeatures = kSConv2Part + kChannels * kC1 * 32 * 4;
  static constexpr int kSFc1Part = kSFeatures + round_up4(kFeatures);  // [16 rows][120], CTA 0's is used
  static constexpr int kSH1 = kSFc1Part + kC2 * kFc1;
  static constexpr int kSH2 = kSH1 + kFc1;
  static constexpr int kSmemBytes = (kSH2 + round_up4(kFc2)) * static_cast<int>(sizeof(float));
  static_assert(kChannels * kC1 * 32 <= kThreads && kChannels * kFc1 <= kThreads, "one round per step");
  static_assert(kPool1Floats / kCluster + 1 <= kThreads, "shared conv1: one item per thread");
};

/// n floats (a multiple of 4, both pointers 16-byte aligned) global -> shared, asynchronously.
__device__ __forceinline__ void copy_async(float* dst, const float* src, int n) {
  float4* dst4 = reinterpret_cast<float4*>(dst);
  const float4* src4 = reinterpret_cast<const float4*>(src);
  for (int i = static_cast<int>(threadIdx.x); i < n / 4; i += kThreads)
    __pipeline_memcpy_async(dst4 + i, src4 + i, sizeof(float4));
}

/// v[0..6) = src[0..6), src 8-byte aligned.
__device__ __forceinline__ void load_row6(const float* src, float (&v)[6]) {
  const float2* src2 = reinterpret_cast<const float2*>(src);
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    const float2 pair = src2[j];
    v[2 * j] = pair.x;
    v[2 * j + 1] = pair.y;
  }
}

/// The 2x2 outputs of a 5x5 convolution under one pooled output: acc[dy][dx] += sum over taps
/// (r, s) of patch[(dy + r) * stride + dx + s] * w[5 r + s]. `patch` has an even float offset and
/// `stride` is even, so every row of the 6x6 input patch is three float2 loads, each loaded once.
__device__ __forceinline__ void window_5x5(const float* patch, int stride, const float* w, float (&acc)[2][2]) {
  float rows[2][6];
  load_row6(patch, rows[1]);
#pragma unroll
  for (int r = 0; r < kK; ++r) {
#pragma unroll
    for (int j = 0; j < 6; ++j) rows[0][j] = rows[1][j];  // conv row 0 reads input row r ...
    load_row6(patch + (r + 1) * stride, rows[1]);          // ... conv row 1 input row r + 1
#pragma unroll
    for (int s = 0; s < kK; ++s) {
      const float wv = w[r * kK + s];
#pragma unroll
      for (int dy = 0; dy < 2; ++dy)
#pragma unroll
        for (int dx = 0; dx < 2; ++dx) acc[dy][dx] = fmaf(rows[dy][s + dx], wv, acc[dy][dx]);
    }
  }
}

/// max(a + b) = max(a) + b, and ReLU commutes with max: one bias add and one ReLU per pooled value.
__device__ __forceinline__ float pool_bias_relu(float a00, float a01, float a10, float a11, float bias) {
  return fmaxf(fmaxf(fmaxf(a00, a01), fmaxf(a10, a11)) + bias, 0.0f);
}

/// Pooled conv1 value `item` = channel * 196 + pooled pixel, from the padded image.
__device__ __forceinline__ float conv1_pooled(const float* s_image, const float* s_conv1, int item) {
  const int k = item / kPool1Pixels, p = item - k * kPool1Pixels;
  const int py = p / kPool1, px = p - py * kPool1;
  float acc[2][2] = {};
  window_5x5(s_image + 2 * py * kPadded + 2 * px, kPadded, s_conv1 + k * kTaps, acc);
  return pool_bias_relu(acc[0][0], acc[0][1], acc[1][0], acc[1][1], s_conv1[kC1 * kTaps + k]);
}

/// The end of fc3 in one warp whose every lane holds all ten logits in z: lane o stores logit o of
/// `image`, lane 0 its label, the argmax (the lowest index wins a tie, like torch.argmax).
__device__ __forceinline__ void store_logits_and_label(const float (&z)[kClasses], int lane, float* __restrict__ logits,
                                                       int* __restrict__ labels, int image) {
  float* out = logits + static_cast<std::size_t>(image) * kClasses;
  int best = 0;
  float best_z = z[0];
#pragma unroll
  for (int o = 0; o < kClasses; ++o) {
    if (lane == o) out[o] = z[o];  // unrolled: z stays in registers
    if (z[o] > best_z) {           // strict: the lowest index wins a tie
      best_z = z[o];
      best = o;
    }
  }
  if (lane == 0) labels[image] = best;
}

/// images [n][28][28] -> logits [n][10], labels [n]; grid = n clusters of kCluster CTAs, in x.
template <int kCluster, bool kShareConv1>
__global__ void __launch_bounds__(kThreads)
    cluster_lenet(const float* __restrict__ images, const float* __restrict__ packed, float* __restrict__ logits,
                  int* __restrict__ labels) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using L = Layout<kCluster>;
  constexpr int kCh = L::kChannels;
  extern __shared__ float4 cluster_smem[];
  float* const smem = reinterpret_cast<float*>(cluster_smem);
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
  const int image = static_cast<int>(blockIdx.x) / kCluster;  // a cluster is kCluster consecutive blocks
  const int t = static_cast<int>(threadIdx.x);

  // Phase 0: "this CTA runs". Waited for just before the first store into another CTA.
  __cluster_barrier_arrive_relaxed();

  // Every load now, in the order they are needed: 3 groups (image + conv weights; fc1's slice;
  // fc2 and fc3 for CTA 0). The image lands inside the zero border in 8-byte pieces: its rows
  // start at padded column 2, an 8-byte but not a 16-byte boundary.
  const float* src_image = images + static_cast<std::size_t>(image) * kImagePixels;
  for (int i = t; i < kImagePixels / 2; i += kThreads) {
    const int y = (2 * i) / kImage, x = 2 * i - y * kImage;
    __pipeline_memcpy_async(s_image + (y + 2) * kPadded + (x + 2), src_image + 2 * i, 2 * sizeof(float));
  }
  const float* my_part = packed + kConv1Floats + rank * L::kRankFloats;
  copy_async(s_conv1, packed, kConv1Floats);
  copy_async(s_conv2, my_part, L::kConv2Floats);
  __pipeline_commit();
  copy_async(s_fc1, my_part + L::kConv2Floats, L::kFc1Floats);
  __pipeline_commit();
  if (rank == 0) copy_async(s_tail, packed + L::kTailAt, kTailFloats);
  __pipeline_commit();  // (an empty group elsewhere: every thread commits the same three)
  for (int i = t; i < kPaddedPixels; i += kThreads) {  // the border; the copies fill the inside
    const int y = i / kPadded, x = i - y * kPadded;
    if (y < 2 || y >= kImage + 2 || x < 2 || x >= kImage + 2) s_image[i] = 0.0f;
  }
  __pipeline_wait_prior(2);  // this thread's image pieces and conv weights ...
  __syncthreads();           // ... and everyone's

  // conv1 + ReLU + pool1 -> s_pool1 [6][14][14] in every CTA.
  if constexpr (kShareConv1) {
    // My slice of the 1,176 values, one per thread, stored into all kCluster CTAs: consecutive
    // lanes write consecutive floats, so the remote stores travel as whole lines.
    const int begin = rank * kPool1Floats / kCluster, end = (rank + 1) * kPool1Floats / kCluster;
    const int item = begin + t;
    const float value = item < end ? conv1_pooled(s_image, s_conv1, item) : 0.0f;
    __cluster_barrier_wait();  // phase 0: every CTA runs, its shared memory may be written
    if (item < end)
      for (int d = 0; d < kCluster; ++d) cluster.map_shared_rank(s_pool1, d)[item] = value;
    __cluster_barrier_arrive();  // phase 1 (release: my stores are visible to whoever waits) ...
    __cluster_barrier_wait();    // ... (acquire: every slice is in my s_pool1)
  } else {
    for (int item = t; item < kPool1Floats; item += kThreads) s_pool1[item] = conv1_pooled(s_image, s_conv1, item);
    __syncthreads();
  }

  // conv2 for my kCh channels: thread (j, c, w) = the 2x2 window w of output channel j over input
  // channel c (100 FFMAs; a warp shares j and c, so it reads the same weights). Then 25 threads per
  // channel add the 6 input channels, pool, bias, ReLU.
  if (t < kCh * kC1 * 32) {
    const int j = t / (kC1 * 32), c = (t / 32) % kC1, w = t % 32;
    if (w < kPool2Pixels) {
      const int wy = w / kPool2, wx = w - wy * kPool2;
      float acc[2][2] = {};
      window_5x5(s_pool1 + c * kPool1Pixels + 2 * wy * kPool1 + 2 * wx, kPool1, s_conv2 + (j * kC1 + c) * kTaps, acc);
      s_conv2_part[(j * kC1 + c) * 32 + w] = make_float4(acc[0][0], acc[0][1], acc[1][0], acc[1][1]);
    }
  }
  __syncthreads();
  if (t < kCh * kPool2Pixels) {
    const int j = t / kPool2Pixels, w = t - j * kPool2Pixels;
    float4 sum = s_conv2_part[j * kC1 * 32 + w];
#pragma unroll
    for (int c = 1; c < kC1; ++c) {
      const float4 part = s_conv2_part[(j * kC1 + c) * 32 + w];
      sum.x += part.x;
      sum.y += part.y;
      sum.z += part.z;
      sum.w += part.w;
    }
    s_features[t] = pool_bias_relu(sum.x, sum.y, sum.z, sum.w, s_conv2[kCh * kC1 * kTaps + j]);
  }
  __pipeline_wait_prior(1);  // this thread's share of fc1's slice ...
  __syncthreads();           // ... and everyone's; the features are complete

  // fc1 along K: thread (j, o) sums my channel j's 25 features times their weights for output o.
  float partial = 0.0f;
  const int fc1_j = t / kFc1, fc1_o = t - fc1_j * kFc1;
  if (t < kCh * kFc1) {
    const float* x = s_features + fc1_j * kPool2Pixels;
    const float* wcol = s_fc1 + fc1_j * kPool2Pixels * kFc1 + fc1_o;
    float a0 = 0.0f, a1 = 0.0f;  // two chains: the FFMA latency halves
#pragma unroll
    for (int i = 0; i + 1 < kPool2Pixels; i += 2) {
      a0 = fmaf(x[i], wcol[i * kFc1], a0);
      a1 = fmaf(x[i + 1], wcol[(i + 1) * kFc1], a1);
    }
    partial = fmaf(x[kPool2Pixels - 1], wcol[(kPool2Pixels - 1) * kFc1], a0) + a1;
  }
  if constexpr (!kShareConv1) __cluster_barrier_wait();  // phase 0 (see above)
  if (t < kCh * kFc1) cluster.map_shared_rank(s_fc1_part, 0)[(rank * kCh + fc1_j) * kFc1 + fc1_o] = partial;
  __cluster_barrier_arrive();  // last phase, release: my partial rows are in CTA 0
  if (rank != 0) return;       // nobody reads this CTA's shared memory any more: it may leave

  __pipeline_wait_prior(0);  // fc2's and fc3's weights (long arrived) ...
  __syncthreads();           // ... visible to every thread of CTA 0
  __cluster_barrier_wait();  // acquire: all 16 partial rows of fc1 are here

  if (t < kFc1) {
    float sum = s_tail[kTailFc1Bias + t];
#pragma unroll
    for (int row = 0; row < kC2; ++row) sum += s_fc1_part[row * kFc1 + t];
    s_h1[t] = fmaxf(sum, 0.0f);
  }
  __syncthreads();

  // fc2: 4 lanes per output, 30 inputs each, added with two shuffles (whole warps take part).
  const int warp = t / 32, lane = t % 32;
  if (warp < kFc2Warps) {
    const int o = warp * kFc2OutputsPerWarp + lane / kFc2Slices, slice = lane % kFc2Slices;
    constexpr int kPerSlice = kFc1 / kFc2Slices;
    float a0 = 0.0f, a1 = 0.0f;
    if (o < kFc2) {
      const float* w2 = s_tail + kTailFc2 + slice * kPerSlice * kFc2 + o;
      const float* h = s_h1 + slice * kPerSlice;
#pragma unroll
      for (int k = 0; k < kPerSlice; k += 2) {
        a0 = fmaf(h[k], w2[k * kFc2], a0);
        a1 = fmaf(h[k + 1], w2[(k + 1) * kFc2], a1);
      }
    }
    float sum = a0 + a1;
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (o < kFc2 && slice == 0) s_h2[o] = fmaxf(sum + s_tail[kTailFc2Bias + o], 0.0f);
  }
  __syncthreads();

  // fc3 + argmax in warp 0: lane l takes inputs l, l + 32, l + 64 of all 10 outputs; a butterfly
  // leaves the same ten sums in every lane (x + y == y + x exactly), so lane o can store logit o
  // and lane 0 pick the label without another barrier.
  if (warp == 0) {
    float z[kClasses] = {};
    for (int k = lane; k < kFc2; k += 32) {
      const float h = s_h2[k];
#pragma unroll
      for (int o = 0; o < kClasses; ++o) z[o] = fmaf(h, s_tail[kTailFc3 + o * kFc2 + k], z[o]);
    }
#pragma unroll
    for (int o = 0; o < kClasses; ++o) {
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) z[o] += __shfl_xor_sync(0xffffffffu, z[o], offset);
      z[o] += s_tail[kTailFc3Bias + o];
    }
    store_logits_and_label(z, lane, logits, labels, image);
  }
#else
  (void)images, (void)packed, (void)logits, (void)labels;  // clusters need sm_90; the host checks first
#endif
}

}  // namespace ladder::cluster_one_image
