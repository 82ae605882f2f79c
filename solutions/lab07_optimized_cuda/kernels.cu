// Lab 07 solution: the optimized LeNet's kernels and their launchers (declared in kernels.cuh).
//
// Why it is fast (lectures/07-optimized-cuda.md measures every step):
//  - conv + bias + ReLU + max-pool are fused: a conv output is pooled in registers, so neither
//    conv1's 28x28 nor conv2's 10x10 outputs ever exist in memory;
//  - the conv weights live in __constant__ memory and every loop over them is unrolled, so each
//    weight is an immediate operand of its FFMA (no load instruction at all). That works because
//    all 32 threads of a warp read the same weight at the same moment: threads differ only in the
//    pixel and the image they compute, never in the weight they use;
//  - register blocking: a conv1 thread computes the 2x2 window under one pooled output for all
//    6 channels (24 sums) from a 6x6 input patch, i.e. 600 FFMAs for 18 shared-memory loads; a
//    conv2 thread computes all 16 channels of its pixel(s), 16 or 32 FFMAs per loaded value;
//  - a tile of images per block keeps the whole conv stack in shared memory (only the 400
//    features of an image go to global memory), and the fully connected layers run as a small
//    GEMM on a tile of 32 images, so each fc1 weight fetched into shared memory serves 32 images;
//  - small batches take another kernel: one block per image runs the whole network, with the fc1
//    weights copied into shared memory (cp.async) while the convolutions compute.
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "course/cuda_check.hpp"
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
constexpr int kConvTile = 8;        // images per conv_stack block: 8*196 and 8*100 items fill whole warps
constexpr int kConvThreads = 256;   // 3 blocks per SM (registers <= 85, 3 x 70 KB shared memory)
constexpr int kFcThreads = 128;     // fc1: 120 threads x (8 images x 4 outputs)
constexpr int kKChunk = 40;         // fc1 inputs per shared-memory chunk (400 = 10 chunks)
constexpr int kSmallThreads = 256;  // small batch: one block per image
static_assert(kFlat % kKChunk == 0, "fc1 chunks must cover the 400 inputs");
static_assert(kFcTile % kConvTile == 0, "a conv tile must not straddle two feature tiles");

// ---------------------------------------------------------------------------------------------
// Weights in __constant__ memory, in the order the unrolled loops consume them (so that one
// stretch of code reads one stretch of the constant bank).
// ---------------------------------------------------------------------------------------------
constexpr int kW1 = 0;                     // conv1 weight [r][s][k]: 150
constexpr int kB1 = kW1 + kK * kK * kC1;   // conv1 bias: 6
constexpr int kW2 = kB1 + kC1;             // conv2 weight [c][r][s][k]: 2,400
constexpr int kB2 = kW2 + kC1 * kK * kK * kC2;  // conv2 bias: 16
constexpr int kW3 = kB2 + kC2;             // fc3 weight [i][o]: 840
constexpr int kB3 = kW3 + kFc2 * kClasses;  // fc3 bias: 10
constexpr int kConstantFloats = kB3 + kClasses;
__constant__ float c_weights[kConstantFloats];

__host__ __device__ constexpr int conv1_w(int r, int s, int k) { return kW1 + (r * kK + s) * kC1 + k; }
__host__ __device__ constexpr int conv2_w(int c, int r, int s, int k) { return kW2 + ((c * kK + r) * kK + s) * kC2 + k; }

/// The first FFMA that needs a weight missing from the constant cache stalls its warp until the
/// line arrives, and the next line is only requested when the code reaches it: 14 KB fetched one
/// line after the other is microseconds. One uniform load per 256-byte line, spread over the
/// block's warps and all in flight together, brings the whole bank in at the cost of one miss.
__device__ void warm_constant_cache() {
  constexpr int kLine = 64;  // floats per 256 bytes
  const int warp = static_cast<int>(threadIdx.x) / 32, warps = static_cast<int>(blockDim.x) / 32;
  float sink = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int i = (warp + j * warps) * kLine;
    if (i < kConstantFloats) sink += c_weights[i];
  }
  asm volatile("" : : "f"(sink));  // keeps the loads: their values are not needed, their effect is
}

// ---------------------------------------------------------------------------------------------
// The convolution stages, shared by both paths. Work is split in "items" over the whole block
// (stride blockDim.x); blockDim.x must be a multiple of 32.
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

/// conv1 (pad 2) + bias + ReLU + 2x2 max-pool: s_in [count][32][32] -> s_pool1 [count][6][14][14].
/// One item = one pooled pixel of one image, all 6 channels: the 2x2 conv outputs under it need a
/// 6x6 input patch (18 float2 loads) and 600 FFMAs, 24 running sums in registers.
__device__ void conv1_pool(const float* s_in, int count, float* s_pool1) {
  for (int item = static_cast<int>(threadIdx.x); item < count * kPool1Pixels; item += static_cast<int>(blockDim.x)) {
    const int img = item / kPool1Pixels, p = item - img * kPool1Pixels;
    const int py = p / kPool1, px = p - py * kPool1;
    // Padded input row 2*py + iy, columns 2*px .. 2*px + 5 (even offset: float2-aligned).
    const float* patch = s_in + img * kPaddedPixels + 2 * py * kPadded + 2 * px;
    float acc[kC1][2][2] = {};
#pragma unroll
    for (int iy = 0; iy < kK + 1; ++iy) {
      float v[kK + 1];
      const float2* row = reinterpret_cast<const float2*>(patch + iy * kPadded);
#pragma unroll
      for (int j = 0; j < (kK + 1) / 2; ++j) {
        const float2 pair = row[j];
        v[2 * j] = pair.x;
        v[2 * j + 1] = pair.y;
      }
      // Input row iy feeds conv row dy through kernel row r = iy - dy.
#pragma unroll
      for (int dy = 0; dy < 2; ++dy) {
        const int r = iy - dy;
        if (r < 0 || r >= kK) continue;
#pragma unroll
        for (int s = 0; s < kK; ++s)
#pragma unroll
          for (int k = 0; k < kC1; ++k) {
            const float w = c_weights[conv1_w(r, s, k)];
            acc[k][dy][0] = fmaf(v[s], w, acc[k][dy][0]);
            acc[k][dy][1] = fmaf(v[s + 1], w, acc[k][dy][1]);
          }
      }
    }
    // max(a + b) = max(a) + b and ReLU commutes with max: one bias add and one ReLU per output.
#pragma unroll
    for (int k = 0; k < kC1; ++k) {
      const float m = fmaxf(fmaxf(acc[k][0][0], acc[k][0][1]), fmaxf(acc[k][1][0], acc[k][1][1]));
      s_pool1[img * kPool1Floats + k * kPool1Pixels + p] = fmaxf(m + c_weights[kB1 + k], 0.0f);
    }
  }
}

/// Loads kN consecutive floats; kN even means the address is float2-aligned (see conv2_pool).
template <int kN>
__device__ void load_row(const float* src, float (&v)[kN]) {
  if constexpr (kN % 2 == 0) {
    const float2* src2 = reinterpret_cast<const float2*>(src);
#pragma unroll
    for (int j = 0; j < kN / 2; ++j) {
      const float2 pair = src2[j];
      v[2 * j] = pair.x;
      v[2 * j + 1] = pair.y;
    }
  } else {
#pragma unroll
    for (int j = 0; j < kN; ++j) v[j] = src[j];
  }
}

/// conv2 + bias + ReLU + 2x2 max-pool: s_pool1 [count][6][14][14] -> store(img, feature, value)
/// for the 400 features (channel * 25 + pooled pixel) of every image.
/// One item = kCols horizontally adjacent conv2 outputs (kCols = 1 or 2) for all 16 channels; the
/// 4 / kCols items of one pooling window are neighbouring lanes and finish the max with shuffles.
template <int kCols, typename Store>
__device__ void conv2_pool(const float* s_pool1, int count, Store store) {
  static_assert(kCols == 1 || kCols == 2, "one or two conv outputs per thread");
  constexpr int kPerWindow = 4 / kCols;
  constexpr int kItemsPerImage = kPool2Pixels * kPerWindow;  // 100 or 50: a window never straddles images
  const int items = count * kItemsPerImage;
  // Whole warps run every round (the shuffles need all 32 lanes); lanes past the end compute a
  // copy of the last item and store nothing.
  const int slots = (items + 31) / 32 * 32;
  for (int slot = static_cast<int>(threadIdx.x); slot < slots; slot += static_cast<int>(blockDim.x)) {
    const int item = min(slot, items - 1);
    const int img = item / kItemsPerImage, rem = item - img * kItemsPerImage;
    const int win = rem / kPerWindow, part = rem - win * kPerWindow;
    const int wy = win / kPool2, wx = win - wy * kPool2;
    const int oy = 2 * wy + (kCols == 1 ? part >> 1 : part);
    const int ox = 2 * wx + (kCols == 1 ? part & 1 : 0);  // even for kCols == 2: float2 loads
    const float* src = s_pool1 + img * kPool1Floats + oy * kPool1 + ox;
    float acc[kC2][kCols] = {};
#pragma unroll
    for (int c = 0; c < kC1; ++c)
#pragma unroll
      for (int r = 0; r < kK; ++r) {
        float v[kK + kCols - 1];
        load_row(src + c * kPool1Pixels + r * kPool1, v);
#pragma unroll
        for (int s = 0; s < kK; ++s)
#pragma unroll
          for (int k = 0; k < kC2; ++k) {
            const float w = c_weights[conv2_w(c, r, s, k)];
#pragma unroll
            for (int dx = 0; dx < kCols; ++dx) acc[k][dx] = fmaf(v[s + dx], w, acc[k][dx]);
          }
      }
    float out[kC2];
#pragma unroll
    for (int k = 0; k < kC2; ++k) {
      float m = acc[k][0];
#pragma unroll
      for (int dx = 1; dx < kCols; ++dx) m = fmaxf(m, acc[k][dx]);
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      if (kPerWindow == 4) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      out[k] = fmaxf(m + c_weights[kB2 + k], 0.0f);
    }
    if (slot < items && part == 0) {
#pragma unroll
      for (int k = 0; k < kC2; ++k) store(img, k * kPool2Pixels + win, out[k]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Large batch
// ---------------------------------------------------------------------------------------------

constexpr int kConvSmemBytes = kConvTile * (kPaddedPixels + kPool1Floats) * static_cast<int>(sizeof(float));

/// Feature f of image g lives at ((g / kFcTile) * 400 + f) * kFcTile + g % kFcTile: a tile's
/// inputs are [400][kFcTile], so fc_stack copies a chunk of them with plain float4 loads.
__device__ std::size_t feature_index(int g, int f) {
  return (static_cast<std::size_t>(g / kFcTile) * kFlat + static_cast<std::size_t>(f)) * kFcTile +
         static_cast<std::size_t>(g % kFcTile);
}

/// Block b: images 8b .. 8b+7 -> their 400 features. Shared memory: the padded images and pool1.
template <int kCols>
__global__ void __launch_bounds__(kConvThreads, 3)
    conv_stack_kernel(const float* __restrict__ images, int n, float* __restrict__ features) {
  extern __shared__ float4 conv_smem[];
  float* s_in = reinterpret_cast<float*>(conv_smem);
  float* s_pool1 = s_in + kConvTile * kPaddedPixels;
  const int first = static_cast<int>(blockIdx.x) * kConvTile;
  const int count = min(kConvTile, n - first);
  warm_constant_cache();
  load_padded_images(images + static_cast<std::size_t>(first) * kImagePixels, count, kConvTile, s_in);
  conv1_pool(s_in, count, s_pool1);
  __syncthreads();
  conv2_pool<kCols>(s_pool1, count,
                    [=](int img, int f, float value) { features[feature_index(first + img, f)] = value; });
}

/// Block b: the 32 images of feature tile b -> logits and labels.
///  fc1 is a [32 x 400] x [400 x 120] GEMM: both operands stream through shared memory in chunks
///  of 40 inputs; each of 120 threads keeps an 8-image x 4-output block of sums (two float4 image
///  loads and one float4 weight load feed 32 FFMAs). fc2 does the same with 84 threads and its
///  weights read straight from global memory (40 KB, shared by every block through L1/L2). fc3
///  runs one thread per image with its weights in __constant__ memory (uniform across the warp).
__global__ void __launch_bounds__(kFcThreads)
    fc_stack_kernel(const float* __restrict__ features, int n, FcWeights w, float* __restrict__ logits,
                    int* __restrict__ labels) {
  __shared__ __align__(16) float s_chunk[kKChunk * (kFcTile + kFc1)];  // fc1 operands, then fc2's output
  __shared__ __align__(16) float s_h1[kFc1 * kFcTile];                 // fc1's output [120][32]
  static_assert(kFc2 * kFcTile <= kKChunk * (kFcTile + kFc1), "fc2's output reuses the chunk buffer");
  float4* s_x4 = reinterpret_cast<float4*>(s_chunk);                           // [40][32] images
  float4* s_w4 = reinterpret_cast<float4*>(s_chunk + kKChunk * kFcTile);       // [40][120] weights
  const float4* s_h1_4 = reinterpret_cast<const float4*>(s_h1);
  float* s_h2 = s_chunk;                                                        // [84][32]

  const int t = static_cast<int>(threadIdx.x);
  const int tile = static_cast<int>(blockIdx.x), first = tile * kFcTile, count = min(kFcTile, n - first);
  const float4* x_tile4 = reinterpret_cast<const float4*>(features + static_cast<std::size_t>(tile) * kFlat * kFcTile);
  const float4* w1_4 = reinterpret_cast<const float4*>(w.fc1_weight_t);

  // Thread t: images 8 * (t % 4) .. +7, outputs 4 * (t / 4) .. +3. In a warp the 32 lanes read
  // 4 image groups (broadcasts) and 8 consecutive float4 weights: no bank conflicts.
  const int ig = t & 3, og = t >> 2;
  float acc[8][4] = {};
  for (int k0 = 0; k0 < kFlat; k0 += kKChunk) {
    __syncthreads();  // every thread is done with the previous chunk
    for (int i = t; i < kKChunk * kFcTile / 4; i += kFcThreads) s_x4[i] = __ldg(x_tile4 + k0 * (kFcTile / 4) + i);
    for (int i = t; i < kKChunk * kFc1 / 4; i += kFcThreads) s_w4[i] = __ldg(w1_4 + k0 * (kFc1 / 4) + i);
    __syncthreads();
    if (og < kFc1 / 4) {
#pragma unroll 4
      for (int k = 0; k < kKChunk; ++k) {
        const float4 a0 = s_x4[k * (kFcTile / 4) + 2 * ig], a1 = s_x4[k * (kFcTile / 4) + 2 * ig + 1];
        const float4 b = s_w4[k * (kFc1 / 4) + og];
        const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        const float bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], bw[j], acc[i][j]);
      }
    }
  }
  if (og < kFc1 / 4) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float bias = __ldg(w.fc1_bias + 4 * og + j);
#pragma unroll
      for (int i = 0; i < 8; ++i) s_h1[(4 * og + j) * kFcTile + 8 * ig + i] = fmaxf(acc[i][j] + bias, 0.0f);
    }
  }
  __syncthreads();  // fc1's output complete; the chunk buffer is free for fc2's output

  if (og < kFc2 / 4) {
    const float4* w2_4 = reinterpret_cast<const float4*>(w.fc2_weight_t);
    float acc2[8][4] = {};
#pragma unroll 4
    for (int k = 0; k < kFc1; ++k) {
      const float4 a0 = s_h1_4[k * (kFcTile / 4) + 2 * ig], a1 = s_h1_4[k * (kFcTile / 4) + 2 * ig + 1];
      const float4 b = __ldg(w2_4 + k * (kFc2 / 4) + og);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc2[i][j] = fmaf(a[i], bw[j], acc2[i][j]);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float bias = __ldg(w.fc2_bias + 4 * og + j);
#pragma unroll
      for (int i = 0; i < 8; ++i) s_h2[(4 * og + j) * kFcTile + 8 * ig + i] = fmaxf(acc2[i][j] + bias, 0.0f);
    }
  }
  __syncthreads();

  if (t < count) {  // one thread per image of the tile: fc3, then argmax (lowest index on a tie)
    float z[kClasses];
#pragma unroll
    for (int o = 0; o < kClasses; ++o) z[o] = c_weights[kB3 + o];
#pragma unroll
    for (int i = 0; i < kFc2; ++i) {
      const float h = s_h2[i * kFcTile + t];
#pragma unroll
      for (int o = 0; o < kClasses; ++o) z[o] = fmaf(h, c_weights[kW3 + i * kClasses + o], z[o]);
    }
    const int g = first + t;
    int best = 0;
#pragma unroll
    for (int o = 0; o < kClasses; ++o) {
      logits[static_cast<std::size_t>(g) * kClasses + o] = z[o];
      if (z[o] > z[best]) best = o;
    }
    labels[g] = best;
  }
}

// ---------------------------------------------------------------------------------------------
// Small batch: one block per image
// ---------------------------------------------------------------------------------------------

// Shared memory of small_batch_kernel, in floats (every offset a multiple of 4: float4-aligned).
constexpr int kSmW1 = 0;                             // fc1 weight [400][120]: 192 KB
constexpr int kSmIn = kSmW1 + kFlat * kFc1;          // padded image [32][32]
constexpr int kSmPool1 = kSmIn + kPaddedPixels;      // [6][14][14]
constexpr int kSmFeat = kSmPool1 + kPool1Floats;     // [400]
constexpr int kSmPart = kSmFeat + kFlat;             // partial sums [8][120]
constexpr int kSmH1 = kSmPart + 8 * kFc1;            // [120]
constexpr int kSmH2 = kSmH1 + kFc1;                  // [84]
constexpr int kSmLogits = kSmH2 + 88;                // [10]
constexpr int kSmallSmemBytes = (kSmLogits + 16) * static_cast<int>(sizeof(float));
static_assert(kSmIn % 4 == 0 && kSmPool1 % 2 == 0, "float4 / float2 alignment of the small kernel's buffers");

/// Image b -> logits and label. One image has too little work for a tile, so the block spreads it
/// over 256 threads; its latency is the chain of layers. fc1's 192 KB of weights, the slowest
/// thing to fetch, are copied asynchronously (cp.async) while the convolutions compute.
__global__ void __launch_bounds__(kSmallThreads)
    small_batch_kernel(const float* __restrict__ images, FcWeights w, float* __restrict__ logits,
                       int* __restrict__ labels) {
  extern __shared__ float4 small_smem[];
  float* s = reinterpret_cast<float*>(small_smem);
  float4* s_w1_4 = reinterpret_cast<float4*>(s + kSmW1);
  float *s_in = s + kSmIn, *s_pool1 = s + kSmPool1, *s_feat = s + kSmFeat, *s_part = s + kSmPart;
  float *s_h1 = s + kSmH1, *s_h2 = s + kSmH2, *s_logits = s + kSmLogits;
  const int t = static_cast<int>(threadIdx.x);
  const int img = static_cast<int>(blockIdx.x);

  const float4* w1_4 = reinterpret_cast<const float4*>(w.fc1_weight_t);
  for (int i = t; i < kFlat * kFc1 / 4; i += kSmallThreads) __pipeline_memcpy_async(s_w1_4 + i, w1_4 + i, sizeof(float4));
  __pipeline_commit();
  warm_constant_cache();

  load_padded_images(images + static_cast<std::size_t>(img) * kImagePixels, 1, 1, s_in);
  conv1_pool(s_in, 1, s_pool1);
  __syncthreads();
  conv2_pool<1>(s_pool1, 1, [=](int, int f, float value) { s_feat[f] = value; });
  __pipeline_wait_prior(0);  // this thread's share of the fc1 weights has arrived...
  __syncthreads();           // ...and everyone's, and the features are complete

  // fc1: thread (o4, ks) sums 50 inputs for 4 outputs; 8 slices combined below.
  if (t < 8 * (kFc1 / 4)) {
    const int o4 = t % (kFc1 / 4), ks = t / (kFc1 / 4);
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 10
    for (int k = ks * (kFlat / 8); k < (ks + 1) * (kFlat / 8); ++k) {
      const float x = s_feat[k];
      const float4 b = s_w1_4[k * (kFc1 / 4) + o4];
      acc.x = fmaf(x, b.x, acc.x);
      acc.y = fmaf(x, b.y, acc.y);
      acc.z = fmaf(x, b.z, acc.z);
      acc.w = fmaf(x, b.w, acc.w);
    }
    reinterpret_cast<float4*>(s_part)[ks * (kFc1 / 4) + o4] = acc;
  }
  __syncthreads();
  if (t < kFc1) {
    float sum = __ldg(w.fc1_bias + t);
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) sum += s_part[ks * kFc1 + t];
    s_h1[t] = fmaxf(sum, 0.0f);
  }
  __syncthreads();

  // fc2: thread (o, ks) sums 40 inputs; consecutive threads read consecutive weights (coalesced).
  if (t < 3 * kFc2) {
    const int o = t % kFc2, ks = t / kFc2;
    float acc = 0.0f;
#pragma unroll 8
    for (int k = ks * (kFc1 / 3); k < (ks + 1) * (kFc1 / 3); ++k)
      acc = fmaf(s_h1[k], __ldg(w.fc2_weight_t + k * kFc2 + o), acc);
    s_part[ks * kFc2 + o] = acc;
  }
  __syncthreads();
  if (t < kFc2) s_h2[t] = fmaxf(__ldg(w.fc2_bias + t) + s_part[t] + s_part[kFc2 + t] + s_part[2 * kFc2 + t], 0.0f);
  __syncthreads();

  // fc3: 16 lanes per output, combined with shuffles (t < 160: five whole warps).
  if (t < 16 * kClasses) {
    const int o = t >> 4, lane = t & 15;
    float z = 0.0f;
    for (int i = lane; i < kFc2; i += 16) z = fmaf(s_h2[i], __ldg(w.fc3_weight + o * kFc2 + i), z);
#pragma unroll
    for (int offset = 8; offset > 0; offset >>= 1) z += __shfl_xor_sync(0xffffffffu, z, offset);
    if (lane == 0) s_logits[o] = z + __ldg(w.fc3_bias + o);
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

int conv_stack_columns = 1;  // TEMPORARY (dev_check.cu compares 1 and 2): conv2 outputs per thread

// ---------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------

void upload_constant_weights(const ConstantWeightsHost& host) {
  std::vector<float> packed(kConstantFloats);
  for (int k = 0; k < kC1; ++k) {
    for (int r = 0; r < kK; ++r)
      for (int s = 0; s < kK; ++s) packed[conv1_w(r, s, k)] = host.conv1_weight[(k * kK + r) * kK + s];
    packed[kB1 + k] = host.conv1_bias[k];
  }
  for (int k = 0; k < kC2; ++k) {
    for (int c = 0; c < kC1; ++c)
      for (int r = 0; r < kK; ++r)
        for (int s = 0; s < kK; ++s) packed[conv2_w(c, r, s, k)] = host.conv2_weight[((k * kC1 + c) * kK + r) * kK + s];
    packed[kB2 + k] = host.conv2_bias[k];
  }
  for (int o = 0; o < kClasses; ++o) {
    for (int i = 0; i < kFc2; ++i) packed[kW3 + i * kClasses + o] = host.fc3_weight[o * kFc2 + i];
    packed[kB3 + o] = host.fc3_bias[o];
  }
  CUDA_CHECK(cudaMemcpyToSymbol(c_weights, packed.data(), packed.size() * sizeof(float)));
}

void configure_kernels() {
  CUDA_CHECK(cudaFuncSetAttribute(conv_stack_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, kConvSmemBytes));
  CUDA_CHECK(cudaFuncSetAttribute(conv_stack_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, kConvSmemBytes));
  CUDA_CHECK(cudaFuncSetAttribute(small_batch_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmallSmemBytes));
}

std::size_t feature_buffer_floats(int max_batch) {
  const std::size_t tiles = (static_cast<std::size_t>(max_batch) + kFcTile - 1) / kFcTile;
  return tiles * kFcTile * kFlat;
}

void launch_conv_stack_cols(const float* d_images, int n, float* d_features, int cols, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>((n + kConvTile - 1) / kConvTile);
  if (cols == 2)
    conv_stack_kernel<2><<<blocks, kConvThreads, kConvSmemBytes, stream>>>(d_images, n, d_features);
  else
    conv_stack_kernel<1><<<blocks, kConvThreads, kConvSmemBytes, stream>>>(d_images, n, d_features);
  CUDA_CHECK_LAST_LAUNCH();
}

void launch_conv_stack(const float* d_images, int n, float* d_features, cudaStream_t stream) {
  launch_conv_stack_cols(d_images, n, d_features, conv_stack_columns, stream);
}

void launch_fc_stack(const float* d_features, int n, const FcWeights& w, float* d_logits, int* d_labels,
                     cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>((n + kFcTile - 1) / kFcTile);
  fc_stack_kernel<<<blocks, kFcThreads, 0, stream>>>(d_features, n, w, d_logits, d_labels);
  CUDA_CHECK_LAST_LAUNCH();
}

void launch_small_batch(const float* d_images, int n, const FcWeights& w, float* d_logits, int* d_labels,
                        cudaStream_t stream) {
  small_batch_kernel<<<static_cast<unsigned>(n), kSmallThreads, kSmallSmemBytes, stream>>>(d_images, w, d_logits,
                                                                                          d_labels);
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace lab07
