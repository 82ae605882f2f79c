// Lab 07 solution: the optimized LeNet's kernels and their launchers (declared in kernels.cuh).
//
// Why it is fast (lectures/07-optimized-cuda.md measures every step):
//  - conv + bias + ReLU + max-pool are fused: a conv output is pooled in registers, so neither
//    conv1's 28x28 nor conv2's 10x10 outputs ever exist in memory;
//  - register blocking: a thread computes the 2x2 conv outputs under one pooled output for several
//    channels (conv1: all 6, 24 sums; conv2: 4 of the 16, 16 sums), so every input value loaded
//    from shared memory feeds 4 x channels FFMAs and every weight 4;
//  - the weights of a conv layer are read by all 32 lanes of a warp at the same time (lanes differ
//    only in the pixel and the image they compute): one shared-memory broadcast of a float4 gives
//    4 weights to the whole warp. (__constant__ weights with unrolled loops looked attractive, but
//    the compiler loads them with one ULDC per 2 weights, and walking 10 KB of conv2 weights
//    through the constant cache stalls: measured 0.42-0.54 ms for 10,000 images on an H100,
//    against 0.29 ms for the same kernels with the weights in shared memory);
//  - a tile of images per block keeps the whole conv stack in shared memory (only the 400
//    features of an image go to global memory), and the fully connected layers run as a small
//    GEMM on a tile of 32 images, so each fc1 weight fetched into shared memory serves 32 images;
//  - small batches take another kernel: one block per image runs the whole network, with the fc1
//    weights copied into shared memory (cp.async) while the convolutions compute.
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "kernels.cuh"

namespace lab07 {
namespace {

// Extents (course/lenet.hpp has the layer table).
constexpr int kImage = 28, kImagePixels = kImage * kImage;
constexpr int kPadded = 32, kPaddedPixels = kPadded * kPadded;  // 28 + 2 * pad 2: no bounds checks
constexpr int kK = 5;                                            // both convolutions are 5x5
constexpr int kC1 = 6, kPool1 = 14, kPool1Pixels = kPool1 * kPool1, kPool1Floats = kC1 * kPool1Pixels;
constexpr int kC2 = 16, kPool2 = 5, kPool2Pixels = kPool2 * kPool2;
constexpr int kFlat = 400, kFc1 = 120, kFc2 = 84, kClasses = 10;
static_assert(kC2 * kPool2Pixels == kFlat, "flatten size must be 400");

// Launch shapes.
constexpr int kConvTile = 8;        // images per conv tile of the large-batch kernel
constexpr int kConvThreads = 256;   // 3 blocks per SM (3 x 71 KB of shared memory)
constexpr int kKChunk = 40;         // fc1 inputs per shared-memory chunk (400 = 10 chunks)
constexpr int kSmallThreads = 256;  // small batch: one block per image
static_assert(kFlat % kKChunk == 0, "fc1 chunks must cover the 400 inputs");
static_assert(kFcTile % kConvTile == 0, "a conv tile must not straddle two feature tiles");

// ---------------------------------------------------------------------------------------------
// The conv weights, packed on the host (pack_conv_weights) in the order and alignment the loops
// read them: for every kernel tap (c, r, s) the output channels are consecutive, so one float4
// load gives a warp 4 channels' weights.
// ---------------------------------------------------------------------------------------------
constexpr int kC1Stride = 8;                                 // conv1 channels padded 6 -> 8 (float4 + float2)
constexpr int kPackW1 = 0;                                   // conv1 [r][s][8]
constexpr int kPackB1 = kPackW1 + kK * kK * kC1Stride;       // conv1 bias [8]
constexpr int kPackConv1 = kPackB1 + kC1Stride;              // conv1's part: 208 floats
constexpr int kPackW2 = 0;                                   // conv2 [c][r][s][16], after conv1's part
constexpr int kPackB2 = kPackW2 + kC1 * kK * kK * kC2;       // conv2 bias [16]
constexpr int kPackConv2 = kPackB2 + kC2;                    // conv2's part: 2,416 floats
constexpr int kPackedConvFloats = kPackConv1 + kPackConv2;
static_assert(kPackConv1 % 4 == 0 && kPackConv2 % 4 == 0, "float4-aligned parts");

// ---------------------------------------------------------------------------------------------
// The convolution stages, shared by both paths. Work is split in "items" over the whole block
// (stride blockDim.x).
// ---------------------------------------------------------------------------------------------

/// images [count][28][28] (global) -> s_in [capacity][32][32], zero border and zero images past
/// count: conv1's padding costs no bounds check, and a partial tile computes on zeros.
__device__ void load_padded_images(const float* __restrict__ images, int count, int capacity, float* s_in) {
  float4* s_in4 = reinterpret_cast<float4*>(s_in);
  for (int i = static_cast<int>(threadIdx.x); i < capacity * kPaddedPixels / 4; i += static_cast<int>(blockDim.x))
    s_in4[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  __syncthreads();  // the zeros land before the pixels that overwrite some of them
  for (int e = static_cast<int>(threadIdx.x); e < count * kImagePixels; e += static_cast<int>(blockDim.x)) {
    const int img = e / kImagePixels, rem = e - img * kImagePixels;
    const int y = rem / kImage, x = rem - y * kImage;
    s_in[img * kPaddedPixels + (y + 2) * kPadded + (x + 2)] = __ldg(images + e);  // consecutive e: coalesced
  }
  __syncthreads();
}

/// v[0..kN) = src[0..kN); src is 8-byte aligned (even float offset), so float2 loads.
template <int kN>
__device__ void load_pairs(const float* src, float (&v)[kN]) {
  static_assert(kN % 2 == 0, "pairs");
  const float2* src2 = reinterpret_cast<const float2*>(src);
#pragma unroll
  for (int j = 0; j < kN / 2; ++j) {
    const float2 pair = src2[j];
    v[2 * j] = pair.x;
    v[2 * j + 1] = pair.y;
  }
}

/// w[0..kN) = src[0..kN), kN in {2, 4, 6, 8, 16}: float4 loads (then one float2), src aligned to
/// match (the packing guarantees it).
template <int kN>
__device__ void load_weights(const float* src, float (&w)[kN]) {
  const float4* src4 = reinterpret_cast<const float4*>(src);
#pragma unroll
  for (int j = 0; j < kN / 4; ++j) {
    const float4 q = src4[j];
    w[4 * j] = q.x;
    w[4 * j + 1] = q.y;
    w[4 * j + 2] = q.z;
    w[4 * j + 3] = q.w;
  }
  if constexpr (kN % 4 == 2) {
    const float2 pair = reinterpret_cast<const float2*>(src)[kN / 2 - 1];
    w[kN - 2] = pair.x;
    w[kN - 1] = pair.y;
  }
}

/// The 2x2 conv outputs under one pooled output, for kCh channels: acc[k][dy][dx] += the 5x5
/// kernel over rows `row0` (input row 2*py + r for conv row 0, the next row for conv row 1).
/// `patch` points at the window's top-left input, `row_stride` is the input's row length and
/// `weights` at tap (r=0, s=0) of the first channel, taps `tap_stride` floats apart.
template <int kCh>
__device__ void conv_window_5x5(const float* patch, int row_stride, const float* weights, int tap_stride,
                                float (&acc)[kCh][2][2]) {
  float rows[2][kK + 1];
  load_pairs(patch, rows[1]);
#pragma unroll
  for (int r = 0; r < kK; ++r) {
    // Conv row 0 needs input row r, conv row 1 input row r + 1: each input row is loaded once.
#pragma unroll
    for (int j = 0; j < kK + 1; ++j) rows[0][j] = rows[1][j];
    load_pairs(patch + (r + 1) * row_stride, rows[1]);
#pragma unroll
    for (int s = 0; s < kK; ++s) {
      float w[kCh];
      load_weights(weights + (r * kK + s) * tap_stride, w);
#pragma unroll
      for (int k = 0; k < kCh; ++k)
#pragma unroll
        for (int dy = 0; dy < 2; ++dy)
#pragma unroll
          for (int dx = 0; dx < 2; ++dx) acc[k][dy][dx] = fmaf(rows[dy][s + dx], w[k], acc[k][dy][dx]);
    }
  }
}

/// max(a + b) = max(a) + b and ReLU commutes with max: one bias add and one ReLU per pooled output.
__device__ float pool_bias_relu(const float (&a)[2][2], float bias) {
  return fmaxf(fmaxf(fmaxf(a[0][0], a[0][1]), fmaxf(a[1][0], a[1][1])) + bias, 0.0f);
}

/// conv1 (pad 2) + bias + ReLU + 2x2 max-pool: s_in [count][32][32] -> s_pool1 [count][6][14][14].
/// One item = one pooled pixel of one image, all 6 channels: a 6x6 input patch (18 float2 loads),
/// 25 x (float4 + float2) weight broadcasts, 600 FFMAs into 24 sums.
__device__ void conv1_pool(const float* s_in, const float* s_w1, int count, float* s_pool1) {
  for (int item = static_cast<int>(threadIdx.x); item < count * kPool1Pixels; item += static_cast<int>(blockDim.x)) {
    const int img = item / kPool1Pixels, p = item - img * kPool1Pixels;
    const int py = p / kPool1, px = p - py * kPool1;
    float acc[kC1][2][2] = {};
    // Padded input rows 2*py .., columns 2*px .. 2*px + 5 (an even offset: float2-aligned).
    conv_window_5x5<kC1>(s_in + img * kPaddedPixels + 2 * py * kPadded + 2 * px, kPadded, s_w1 + kPackW1, kC1Stride, acc);
#pragma unroll
    for (int k = 0; k < kC1; ++k)
      s_pool1[img * kPool1Floats + k * kPool1Pixels + p] = pool_bias_relu(acc[k], s_w1[kPackB1 + k]);
  }
}

/// conv2 + bias + ReLU + 2x2 max-pool: s_pool1 [count][6][14][14] -> store(img, feature, value)
/// for the 400 features (channel * 25 + pooled pixel) of every image.
/// One item = one pooled output of one image for kCh of the 16 channels (4 * kCh sums); the
/// channel group is the slowest index of the item, so a warp's lanes read the same weights.
template <int kCh, typename Store>
__device__ void conv2_pool(const float* s_pool1, const float* s_w2, int count, Store store) {
  static_assert(kC2 % kCh == 0, "channel groups must cover the 16 channels");
  const int per_group = count * kPool2Pixels;
  for (int item = static_cast<int>(threadIdx.x); item < (kC2 / kCh) * per_group; item += static_cast<int>(blockDim.x)) {
    const int g = item / per_group, rem = item - g * per_group;
    const int img = rem / kPool2Pixels, win = rem - img * kPool2Pixels;
    const int wy = win / kPool2, wx = win - wy * kPool2;
    const float* patch = s_pool1 + img * kPool1Floats + 2 * wy * kPool1 + 2 * wx;  // even offset
    float acc[kCh][2][2] = {};
#pragma unroll 1
    for (int c = 0; c < kC1; ++c)  // not unrolled: the body is already 25 taps x 4 kCh FFMAs
      conv_window_5x5<kCh>(patch + c * kPool1Pixels, kPool1, s_w2 + kPackW2 + c * kK * kK * kC2 + g * kCh, kC2, acc);
#pragma unroll
    for (int k = 0; k < kCh; ++k) {
      const int channel = g * kCh + k;
      store(img, channel * kPool2Pixels + win, pool_bias_relu(acc[k], s_w2[kPackB2 + channel]));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Large batch: one kernel, one block per "slot" of the GPU (3 per SM), each block a contiguous
// range of about n / slots images. Every SM gets the same work, so no SM idles through a last
// partial wave (with one block per 8-image tile, 10,000 images are 3.16 waves: the SMs sat idle
// for a fifth of the time). A block runs its range through the conv stack 8 images at a time,
// keeps the features in its own scratch area of global memory (it reads them back itself; they
// stay in L2), then runs the fully connected layers on 32 images at a time.
// ---------------------------------------------------------------------------------------------

// Shared memory, in floats. Conv phase: conv1's weights | padded images (conv2's weights once
// conv1 is done with them) | pool1. FC phase, reusing it: fc1 operand chunks | fc1's output.
constexpr int kConvSmemFloats = kPackConv1 + kConvTile * (kPaddedPixels + kPool1Floats);
constexpr int kLeNetSmemBytes = kConvSmemFloats * static_cast<int>(sizeof(float));  // 71 KB: 3 blocks per SM
static_assert(kPackConv2 <= kConvTile * kPaddedPixels, "conv2's weights fit where the images were");
constexpr int kChunkFloats = kKChunk * (kFcTile + kFc1);  // [40][32] images + [40][120] weights
constexpr int kFcW3 = kFc2 * kFcTile;                     // fc3 weights, after fc2's output [84][32]
static_assert(kFcW3 + (kFc2 + 1) * kClasses <= kChunkFloats, "fc2's output and fc3's weights reuse the chunk buffer");
static_assert(kChunkFloats + kFc1 * kFcTile <= kConvSmemFloats, "the FC phase fits in the conv phase's memory");

/// Feature f of the block's local image i (tile i / 32): [tile][400][32], so that a chunk of fc1
/// inputs for 32 images is one contiguous run of floats (plain float4 copies).
__device__ std::size_t feature_index(int i, int f) {
  return (static_cast<std::size_t>(i / kFcTile) * kFlat + static_cast<std::size_t>(f)) * kFcTile +
         static_cast<std::size_t>(i % kFcTile);
}

/// fc1 + ReLU + fc2 + ReLU + fc3 + argmax for `count` <= 32 images whose features are x_tile
/// [400][32] (global). fc1 is a [32 x 400] x [400 x 120] GEMM: both operands stream through
/// shared memory in chunks of 40 inputs; each of 240 threads keeps a 4-image x 4-output block of
/// sums (one float4 of images and one float4 of weights feed 16 FFMAs). fc2 does the same with its
/// weights read from global memory (40 KB, in L1/L2 for every block); fc3 runs one thread per
/// image, its weights broadcast from shared memory.
__device__ void fc_tile(const float* __restrict__ x_tile, int count, const DeviceWeights& w, float* smem,
                        float* __restrict__ logits, int* __restrict__ labels) {
  float4* s_x4 = reinterpret_cast<float4*>(smem);                       // [40][32]
  float4* s_w4 = reinterpret_cast<float4*>(smem + kKChunk * kFcTile);   // [40][120]
  float* s_h1 = smem + kChunkFloats;                                    // [120][32]
  const float4* s_h1_4 = reinterpret_cast<const float4*>(s_h1);
  float* s_h2 = smem;                                                   // [84][32], after fc1
  float* s_w3 = smem + kFcW3;                                           // [84][10] + bias [10]
  const int t = static_cast<int>(threadIdx.x);
  const float4* x4 = reinterpret_cast<const float4*>(x_tile);
  const float4* w1_4 = reinterpret_cast<const float4*>(w.fc1_weight_t);

  // Thread t: images 4 * (t % 8) .. +3, outputs 4 * (t / 8) .. +3. A warp reads 8 consecutive
  // float4 of images and 4 of weights (each a broadcast to 8 lanes): no bank conflicts.
  const int ig = t & 7, og = t >> 3;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < kFlat; k0 += kKChunk) {
    __syncthreads();  // every thread is done with the previous chunk (or the previous phase)
    for (int i = t; i < kKChunk * kFcTile / 4; i += kConvThreads) s_x4[i] = x4[k0 * (kFcTile / 4) + i];
    for (int i = t; i < kKChunk * kFc1 / 4; i += kConvThreads) s_w4[i] = __ldg(w1_4 + k0 * (kFc1 / 4) + i);
    __syncthreads();
    if (og < kFc1 / 4) {
#pragma unroll 8
      for (int k = 0; k < kKChunk; ++k) {
        const float4 a = s_x4[k * (kFcTile / 4) + ig];
        const float4 b = s_w4[k * (kFc1 / 4) + og];
        const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
  }
  if (og < kFc1 / 4) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float bias = __ldg(w.fc1_bias + 4 * og + j);
      const float4 h = make_float4(fmaxf(acc[0][j] + bias, 0.0f), fmaxf(acc[1][j] + bias, 0.0f),
                                   fmaxf(acc[2][j] + bias, 0.0f), fmaxf(acc[3][j] + bias, 0.0f));
      reinterpret_cast<float4*>(s_h1)[(4 * og + j) * (kFcTile / 4) + ig] = h;
    }
  }
  __syncthreads();  // fc1's output complete; the chunk buffer is free

  for (int i = t; i < (kFc2 + 1) * kClasses; i += kConvThreads)
    s_w3[i] = i < kFc2 * kClasses ? __ldg(w.fc3_weight_t + i) : __ldg(w.fc3_bias + i - kFc2 * kClasses);
  if (og < kFc2 / 4) {
    const float4* w2_4 = reinterpret_cast<const float4*>(w.fc2_weight_t);
    float acc2[4][4] = {};
#pragma unroll 8
    for (int k = 0; k < kFc1; ++k) {
      const float4 a = s_h1_4[k * (kFcTile / 4) + ig];
      const float4 b = __ldg(w2_4 + k * (kFc2 / 4) + og);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc2[i][j] = fmaf(av[i], bv[j], acc2[i][j]);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float bias = __ldg(w.fc2_bias + 4 * og + j);
      const float4 h = make_float4(fmaxf(acc2[0][j] + bias, 0.0f), fmaxf(acc2[1][j] + bias, 0.0f),
                                   fmaxf(acc2[2][j] + bias, 0.0f), fmaxf(acc2[3][j] + bias, 0.0f));
      reinterpret_cast<float4*>(s_h2)[(4 * og + j) * (kFcTile / 4) + ig] = h;
    }
  }
  __syncthreads();

  if (t < count) {  // one thread per image: fc3, then argmax (lowest index on a tie)
    float z[kClasses];
#pragma unroll
    for (int o = 0; o < kClasses; ++o) z[o] = s_w3[kFc2 * kClasses + o];
#pragma unroll 4
    for (int i = 0; i < kFc2; ++i) {
      const float h = s_h2[i * kFcTile + t];
      float w3[kClasses];
      load_pairs(s_w3 + i * kClasses, w3);
#pragma unroll
      for (int o = 0; o < kClasses; ++o) z[o] = fmaf(h, w3[o], z[o]);
    }
    int best = 0;
    float best_z = z[0];  // not z[best]: a run-time index would move z to local memory
#pragma unroll
    for (int o = 0; o < kClasses; ++o) {
      logits[static_cast<std::size_t>(t) * kClasses + o] = z[o];
      if (z[o] > best_z) {  // strict: the lowest index wins a tie
        best_z = z[o];
        best = o;
      }
    }
    labels[t] = best;
  }
}

/// Block b: images [b * n / G, (b + 1) * n / G) (G = gridDim.x) from pixels to labels.
/// scratch: the features, scratch_images (a multiple of 32) image slots per block.
__global__ void __launch_bounds__(kConvThreads, 3)
    lenet_kernel(const float* __restrict__ images, int n, DeviceWeights w, float* __restrict__ scratch,
                 int scratch_images, float* __restrict__ logits, int* __restrict__ labels) {
  extern __shared__ float4 lenet_smem[];
  float* smem = reinterpret_cast<float*>(lenet_smem);
  float* s_w1 = smem;
  float* s_in = s_w1 + kPackConv1;
  float* s_w2 = s_in;
  float* s_pool1 = s_in + kConvTile * kPaddedPixels;
  const int t = static_cast<int>(threadIdx.x);
  const int blocks = static_cast<int>(gridDim.x), b = static_cast<int>(blockIdx.x);
  const int begin = static_cast<int>(static_cast<long long>(b) * n / blocks);
  const int end = static_cast<int>(static_cast<long long>(b + 1) * n / blocks);
  float* features = scratch + static_cast<std::size_t>(b) * static_cast<std::size_t>(scratch_images) * kFlat;

  for (int i = t; i < kPackConv1; i += kConvThreads) s_w1[i] = __ldg(w.conv + i);

  for (int first = begin; first < end; first += kConvTile) {
    const int count = min(kConvTile, end - first);
    __syncthreads();  // the previous tile's conv2 is done with s_w2 (= s_in)
    load_padded_images(images + static_cast<std::size_t>(first) * kImagePixels, count, kConvTile, s_in);  // syncs
    conv1_pool(s_in, s_w1, count, s_pool1);
    __syncthreads();  // pool1 complete, the images dead
    // conv2's weights go where the images were, once per tile: images and conv2 weights never
    // need the memory at the same time, and 3 blocks per SM need every byte. The copy comes from
    // L1/L2 (every block reads the same 9.7 KB); the other blocks on the SM hide its latency.
    for (int i = t; i < kPackConv2 / 4; i += kConvThreads)
      reinterpret_cast<float4*>(s_w2)[i] = __ldg(reinterpret_cast<const float4*>(w.conv + kPackConv1) + i);
    __syncthreads();
    const int local = first - begin;
    conv2_pool<4>(s_pool1, s_w2, count,
                  [=](int img, int f, float value) { features[feature_index(local + img, f)] = value; });
  }
  // fc_tile's first barrier orders the features' global writes before their reads by the block.
  for (int first = begin; first < end; first += kFcTile) {
    const int local = first - begin;
    fc_tile(features + static_cast<std::size_t>(local) * kFlat, min(kFcTile, end - first), w, smem,
            logits + static_cast<std::size_t>(first) * kClasses, labels + first);
  }
}

// ---------------------------------------------------------------------------------------------
// Small batch: one block per image
// ---------------------------------------------------------------------------------------------

// Shared memory of small_batch_kernel, in floats (every offset a multiple of 4: float4-aligned).
constexpr int kSmW1 = 0;                             // fc1 weight [400][120]: 192 KB
constexpr int kSmConv = kSmW1 + kFlat * kFc1;        // packed conv weights
constexpr int kSmIn = kSmConv + kPackConv1 + kPackConv2;  // padded image [32][32]
constexpr int kSmPool1 = kSmIn + kPaddedPixels;      // [6][14][14]
constexpr int kSmFeat = kSmPool1 + kPool1Floats;     // [400]
constexpr int kSmPart = kSmFeat + kFlat;             // partial sums [8][120]
constexpr int kSmH1 = kSmPart + 8 * kFc1;            // [120]
constexpr int kSmH2 = kSmH1 + kFc1;                  // [84]
constexpr int kSmLogits = kSmH2 + 88;                // [10]
constexpr int kSmallSmemBytes = (kSmLogits + 16) * static_cast<int>(sizeof(float));
static_assert(kSmConv % 4 == 0 && kSmIn % 4 == 0 && kSmPart % 4 == 0, "float4 alignment of the small kernel's buffers");
static_assert(kSmallSmemBytes <= 227 * 1024, "H100: at most 227 KB of shared memory per block");

/// Image b -> logits and label. One image has too little work for a tile, so the block spreads it
/// over 256 threads (conv2: 2 channels per thread, 200 threads) and its time is the chain of
/// layers plus every fetch from memory that the chain waits for. So every weight is requested at
/// the start: the conv weights and fc1's 192 KB are copied asynchronously into shared memory
/// (cp.async), fc2's and fc3's go straight into the registers of the threads that will use them;
/// all of it arrives while the convolutions compute.
__global__ void __launch_bounds__(kSmallThreads)
    small_batch_kernel(const float* __restrict__ images, DeviceWeights w, float* __restrict__ logits,
                       int* __restrict__ labels) {
  extern __shared__ float4 small_smem[];
  float* s = reinterpret_cast<float*>(small_smem);
  float *s_w1 = s + kSmConv, *s_w2 = s_w1 + kPackConv1;
  float *s_in = s + kSmIn, *s_pool1 = s + kSmPool1, *s_feat = s + kSmFeat, *s_part = s + kSmPart;
  float *s_h1 = s + kSmH1, *s_h2 = s + kSmH2, *s_logits = s + kSmLogits;
  const float4* s_fc1_4 = reinterpret_cast<const float4*>(s + kSmW1);
  const int t = static_cast<int>(threadIdx.x);
  const int img = static_cast<int>(blockIdx.x);

  // Two asynchronous copies: the conv weights (needed first), then fc1's weights.
  const float4* conv4 = reinterpret_cast<const float4*>(w.conv);
  for (int i = t; i < (kPackConv1 + kPackConv2) / 4; i += kSmallThreads)
    __pipeline_memcpy_async(small_smem + kSmConv / 4 + i, conv4 + i, sizeof(float4));
  __pipeline_commit();
  const float4* fc1_4 = reinterpret_cast<const float4*>(w.fc1_weight_t);
  for (int i = t; i < kFlat * kFc1 / 4; i += kSmallThreads)
    __pipeline_memcpy_async(small_smem + kSmW1 / 4 + i, fc1_4 + i, sizeof(float4));
  __pipeline_commit();
  // fc2: thread (o, ks) < 252 sums inputs 40 ks .. 40 ks + 39 of output o; fc3: thread (o, lane)
  // < 160 sums inputs lane, lane + 16, ... of output o. Coalesced loads, used at the end.
  const bool fc2_thread = t < 3 * kFc2, fc3_thread = t < 16 * kClasses;
  const int o2 = t % kFc2, ks2 = t / kFc2, o3 = t >> 4, lane3 = t & 15;
  float w2[kFc1 / 3], w3[6];
#pragma unroll
  for (int j = 0; j < kFc1 / 3; ++j) w2[j] = fc2_thread ? __ldg(w.fc2_weight_t + (ks2 * (kFc1 / 3) + j) * kFc2 + o2) : 0.0f;
#pragma unroll
  for (int j = 0; j < 6; ++j) {
    const int i = lane3 + 16 * j;
    w3[j] = fc3_thread && i < kFc2 ? __ldg(w.fc3_weight_t + i * kClasses + o3) : 0.0f;
  }
  const float b1 = t < kFc1 ? __ldg(w.fc1_bias + t) : 0.0f;
  const float b2 = t < kFc2 ? __ldg(w.fc2_bias + t) : 0.0f;
  const float b3 = fc3_thread ? __ldg(w.fc3_bias + o3) : 0.0f;

  __pipeline_wait_prior(1);  // this thread's conv weights are in; load_padded_images syncs the block
  load_padded_images(images + static_cast<std::size_t>(img) * kImagePixels, 1, 1, s_in);
  conv1_pool(s_in, s_w1, 1, s_pool1);
  __syncthreads();
  conv2_pool<2>(s_pool1, s_w2, 1, [=](int, int f, float value) { s_feat[f] = value; });
  __pipeline_wait_prior(0);  // this thread's share of the fc1 weights has arrived...
  __syncthreads();           // ...and everyone's, and the features are complete

  // fc1: thread (o4, ks) sums 50 inputs for 4 outputs; 8 slices combined below.
  if (t < 8 * (kFc1 / 4)) {
    const int o4 = t % (kFc1 / 4), ks = t / (kFc1 / 4);
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 10
    for (int k = ks * (kFlat / 8); k < (ks + 1) * (kFlat / 8); ++k) {
      const float x = s_feat[k];
      const float4 b = s_fc1_4[k * (kFc1 / 4) + o4];
      acc.x = fmaf(x, b.x, acc.x);
      acc.y = fmaf(x, b.y, acc.y);
      acc.z = fmaf(x, b.z, acc.z);
      acc.w = fmaf(x, b.w, acc.w);
    }
    reinterpret_cast<float4*>(s_part)[ks * (kFc1 / 4) + o4] = acc;
  }
  __syncthreads();
  if (t < kFc1) {
    float sum = b1;
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) sum += s_part[ks * kFc1 + t];
    s_h1[t] = fmaxf(sum, 0.0f);
  }
  __syncthreads();

  // fc2: 3 slices of 40 inputs per output, weights from registers.
  if (fc2_thread) {
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < kFc1 / 3; ++j) acc = fmaf(s_h1[ks2 * (kFc1 / 3) + j], w2[j], acc);
    s_part[ks2 * kFc2 + o2] = acc;
  }
  __syncthreads();
  if (t < kFc2) s_h2[t] = fmaxf(b2 + s_part[t] + s_part[kFc2 + t] + s_part[2 * kFc2 + t], 0.0f);
  __syncthreads();

  // fc3: 16 lanes per output, combined with shuffles (t < 160: five whole warps).
  if (fc3_thread) {
    float z = 0.0f;
#pragma unroll
    for (int j = 0; j < 6; ++j) {
      const int i = lane3 + 16 * j;
      if (i < kFc2) z = fmaf(s_h2[i], w3[j], z);
    }
#pragma unroll
    for (int offset = 8; offset > 0; offset >>= 1) z += __shfl_xor_sync(0xffffffffu, z, offset);
    if (lane3 == 0) s_logits[o3] = z + b3;
  }
  __syncthreads();
  if (t < kClasses) logits[static_cast<std::size_t>(img) * kClasses + t] = s_logits[t];
  if (t == 0) {
    int best = 0;
    for (int o = 1; o < kClasses; ++o)
      if (s_logits[o] > s_logits[best]) best = o;
    labels[img] = best;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------

std::vector<float> pack_conv_weights(const float* conv1_weight, const float* conv1_bias, const float* conv2_weight,
                                     const float* conv2_bias) {
  std::vector<float> packed(static_cast<std::size_t>(kPackedConvFloats), 0.0f);
  float* w1 = packed.data();
  float* w2 = packed.data() + kPackConv1;
  for (int k = 0; k < kC1; ++k) {
    for (int r = 0; r < kK; ++r)
      for (int s = 0; s < kK; ++s) w1[kPackW1 + (r * kK + s) * kC1Stride + k] = conv1_weight[(k * kK + r) * kK + s];
    w1[kPackB1 + k] = conv1_bias[k];
  }
  for (int k = 0; k < kC2; ++k) {
    for (int c = 0; c < kC1; ++c)
      for (int r = 0; r < kK; ++r)
        for (int s = 0; s < kK; ++s)
          w2[kPackW2 + ((c * kK + r) * kK + s) * kC2 + k] = conv2_weight[((k * kC1 + c) * kK + r) * kK + s];
    w2[kPackB2 + k] = conv2_bias[k];
  }
  return packed;
}

void configure_kernels() {
  CUDA_CHECK(cudaFuncSetAttribute(lenet_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kLeNetSmemBytes));
  CUDA_CHECK(cudaFuncSetAttribute(small_batch_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmallSmemBytes));
}

int large_batch_blocks() {
  int device = 0, sms = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, lenet_kernel, kConvThreads, kLeNetSmemBytes));
  if (per_sm < 1) throw course::Error("lab07: lenet_kernel cannot run on this GPU (shared memory or registers)");
  return sms * per_sm;
}

LargeBatchPlan plan_large_batch(int n, int max_blocks) {
  LargeBatchPlan plan;
  // At least one conv tile per block: with fewer images than slots, fewer (fuller) blocks.
  plan.blocks = std::max(1, std::min(max_blocks, (n + kConvTile - 1) / kConvTile));
  const int per_block = (n + plan.blocks - 1) / plan.blocks;
  plan.scratch_images = (per_block + kFcTile - 1) / kFcTile * kFcTile;
  return plan;
}

std::size_t scratch_floats(int max_batch, int max_blocks) {
  std::size_t most = 0;  // the plan's footprint grows with n, but not smoothly: check the extremes
  for (int n : {max_batch, std::min(max_batch, max_blocks * kConvTile)}) {
    const LargeBatchPlan plan = plan_large_batch(n, max_blocks);
    most = std::max(most, static_cast<std::size_t>(plan.blocks) * static_cast<std::size_t>(plan.scratch_images) * kFlat);
  }
  return most;
}

void launch_large_batch(const float* d_images, int n, const DeviceWeights& w, const LargeBatchPlan& plan,
                        float* d_scratch, float* d_logits, int* d_labels, cudaStream_t stream) {
  lenet_kernel<<<static_cast<unsigned>(plan.blocks), kConvThreads, kLeNetSmemBytes, stream>>>(
      d_images, n, w, d_scratch, plan.scratch_images, d_logits, d_labels);
  CUDA_CHECK_LAST_LAUNCH();
}

void launch_small_batch(const float* d_images, int n, const DeviceWeights& w, float* d_logits, int* d_labels,
                        cudaStream_t stream) {
  small_batch_kernel<<<static_cast<unsigned>(n), kSmallThreads, kSmallSmemBytes, stream>>>(d_images, w, d_logits,
                                                                                          d_labels);
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace lab07
