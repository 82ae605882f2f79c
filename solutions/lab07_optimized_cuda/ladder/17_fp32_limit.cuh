// Rung 17's large-batch kernel (the story, the numbers and the host side are in 17_fp32_limit.cu).
//
// The same plan as rung 09's lenet_kernel (kernels.cu): a persistent grid of 3 blocks of 256
// threads per SM, each block an equal range of images, the convolutions on tiles of 8 images in
// shared memory (conv1: a thread per pooled pixel, all 6 channels; conv2: a thread per pooled
// output, 4 channels), the features through a per-block scratch area in L2, the fully connected
// layers on tiles of 32 images. The arithmetic is the same; what changes is where the data sits
// in shared memory, because rung 09's limit is the shared-memory pipe, not the FMA pipe:
//
//  1. Bank-conflict-free layouts (kInRow, kPool1Image below say how): padded image rows of 30
//     floats with the zero border shared between neighbouring rows, and pool1's images 1,188
//     floats apart with conv2's lanes running over the 8 images of a window first. Rung 09 spent
//     31 % of its shared-memory wavefronts on bank conflicts; this kernel 5 % (ncu).
//  2. The images go into shared memory with their zero border in one pass (one thread per padded
//     row, 15 conflict-free float2 stores), not zeros first, a barrier, then the pixels.
//  3. The next tile's pixels are prefetched into L2 (prefetch.global.L2) while conv2 runs, so a
//     tile's first loads wait for L2, not for DRAM (the benchmark flushes L2 before every run).
//  4. fc1's operand chunks (40 inputs x (32 images + 120 outputs)) are double-buffered with
//     cp.async: chunk c + 2 is in flight while chunk c is multiplied.
//  5. fc3 runs over 320 (output, image) pairs instead of one thread per image.
//
// lenet_fp32_limit<kVariant>: kAll is the rung; the others are the alternatives that were
// measured against it (17_fp32_limit.cu selects them with COURSE_LADDER_FP32_VARIANT).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace ladder::fp32_limit {

// LeNet's extents (course/lenet.hpp has the layer table).
constexpr int kImage = 28, kImagePixels = kImage * kImage;
constexpr int kPadded = 32, kPaddedPixels = kPadded * kPadded;  // conv1's pad 2 as zeros: no bounds checks
constexpr int kK = 5, kTaps = kK * kK;
constexpr int kC1 = 6, kPool1 = 14, kPool1Pixels = kPool1 * kPool1, kPool1Floats = kC1 * kPool1Pixels;
constexpr int kC2 = 16, kPool2 = 5, kPool2Pixels = kPool2 * kPool2;
constexpr int kFlat = 400, kFc1 = 120, kFc2 = 84, kClasses = 10;

// Launch shape: 256 threads, 3 blocks per SM (70 KB of shared memory each, <= 80 registers).
constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 3;
constexpr int kConvTile = 8;   // images per conv tile: one padded row of one image per thread
constexpr int kFcTile = 32;    // images per fully connected tile
constexpr int kKChunk = 40;    // fc1 inputs per cp.async chunk (400 = 10 chunks)
constexpr int kChunks = kFlat / kKChunk;
static_assert(kThreads == kConvTile * kPadded, "the image load gives every thread one padded row");
static_assert(kFlat % kKChunk == 0 && kFcTile % kConvTile == 0, "tiles must nest");

// The padded images, laid out so that conv1's loads meet no bank conflict. Rows are 30 floats:
// the 28 pixels, then 2 zeros that are the right border of this row AND the left border of the
// next (a window starting 2 columns left of a row reads the previous row's last two floats).
// Rung 09's rows of 32 put pooled rows py and py + 1 (64 floats apart, a multiple of the 32
// banks) on the same banks, so the lanes of a warp that crossed a pooled row collided; here the
// window of pooled pixel p starts at 60 py + 2 px = 2 p + 32 py: lane p reads banks 2p, 2p + 1
// (mod 32), all different across a half-warp's 64-bit loads. One image: 2 leading zeros, 32 rows
// of 30 (rows 0, 1, 30, 31 zero), padded to 968 floats = 8 (mod 32) so that the next image
// continues the same bank sequence (196 pixels x 2 = 392 = 8 mod 32).
constexpr int kInRow = 30;
constexpr int kInImage = 968;
static_assert(kInImage >= 2 + kPadded * kInRow && kInImage % 32 == (2 * kPool1Pixels) % 32, "see above");
// pool1 per image [6][14][14], images 1,188 floats apart (4 mod 32): conv2's lanes take the 8
// images of a tile for one window, then the next window (2 floats on), so a half-warp's 64-bit
// loads cover the 32 banks once (rung 09 ran its lanes along the windows, 28 floats per window
// row: 2- and 3-way conflicts).
constexpr int kPool1Image = 1188;
static_assert(kPool1Image >= kPool1Floats && kPool1Image % 32 == 4, "see above");

// Packed conv weights (17_fp32_limit.cu, pack_conv): for every tap the output channels are
// consecutive, so one float4 broadcast gives a warp four channels' weights.
constexpr int kC1Stride = 8;                               // conv1 channels padded 6 -> 8
constexpr int kPackB1 = kTaps * kC1Stride;                 // conv1 [25][8], then its bias [8]
constexpr int kPackConv1 = kPackB1 + kC1Stride;            // 208 floats
constexpr int kPackB2 = kC1 * kTaps * kC2;                 // conv2 [6][25][16], then its bias [16]
constexpr int kPackConv2 = kPackB2 + kC2;                  // 2,416 floats
constexpr int kPackedFloats = kPackConv1 + kPackConv2;
static_assert(kPackConv1 % 4 == 0 && kPackConv2 % 4 == 0, "float4-aligned parts");

// Shared memory, in floats. Conv phase: conv1 weights | padded images (conv2's weights once conv1
// is done with them) | pool1. FC phase: two fc1 chunks | fc1's output; fc2's output and fc3's
// weights reuse the chunks.
constexpr int kSmemIn = kPackConv1;
constexpr int kSmemPool1 = kSmemIn + kConvTile * kInImage;
constexpr int kSmemConvFloats = kSmemPool1 + kConvTile * kPool1Image;  // 17,456
constexpr int kChunkX = kKChunk * kFcTile, kChunkFloats = kChunkX + kKChunk * kFc1;  // 6,080
constexpr int kSmemH1 = 2 * kChunkFloats;                           // [120][32]
constexpr int kSmemFcFloats = kSmemH1 + kFc1 * kFcTile;             // 16,000
constexpr int kSmemFloats = kSmemConvFloats > kSmemFcFloats ? kSmemConvFloats : kSmemFcFloats;
constexpr int kSmemBytes = kSmemFloats * static_cast<int>(sizeof(float));  // 69,824 B
constexpr int kSmemW3 = kFc2 * kFcTile;                             // after fc2's output [84][32]
constexpr int kSmemLogits = kSmemW3 + (kFc2 + 1) * kClasses;        // [32][10]
static_assert(kPackConv2 <= kConvTile * kInImage, "conv2's weights fit where the images were");
static_assert(kSmemLogits + kFcTile * kClasses <= kSmemH1, "fc2/fc3 reuse only the chunk buffers");
static_assert(kSmemIn % 4 == 0 && kSmemPool1 % 2 == 0 && kInImage % 2 == 0, "float4 weights, float2 rows");

struct Weights {
  const float* conv;   ///< kPackedFloats: conv1's part, then conv2's
  const float* fc1_t;  ///< [400][120] (transposed: input-major)
  const float* fc1_b;  ///< [120]
  const float* fc2_t;  ///< [120][84]
  const float* fc2_b;  ///< [84]
  const float* fc3_t;  ///< [84][10]
  const float* fc3_b;  ///< [10]
};

// kAll is the rung: conv2 with 4 channels per thread (as rung 09). The others, for measuring:
// kConv2By8: 8 channels per thread (fewer shared-memory loads per FFMA, but half the items, 1.56
// rounds of 256 per tile); kNoFcPipeline: fc1's chunks one at a time (rung 09's way).
enum Variant : int { kAll = 0, kConv2By8 = 1, kNoFcPipeline = 2 };

/// v[0..kN) = src[0..kN), src 8-byte aligned.
template <int kN>
__device__ __forceinline__ void load_row(const float* src, float (&v)[kN]) {
  static_assert(kN % 2 == 0, "pairs");
#pragma unroll
  for (int j = 0; j < kN / 2; ++j) {
    const float2 p = reinterpret_cast<const float2*>(src)[j];
    v[2 * j] = p.x;
    v[2 * j + 1] = p.y;
  }
}

/// kN in {4, 6, 8}: one broadcast load per 4 channels (float4; the last two of 6 as a float2).
template <int kN>
__device__ __forceinline__ void load_taps(const float* src, float (&w)[kN]) {
  static_assert(kN == 4 || kN == 6 || kN == 8, "4, 6 or 8 channels");
#pragma unroll
  for (int j = 0; j < kN / 4; ++j) {
    const float4 q = reinterpret_cast<const float4*>(src)[j];
    w[4 * j] = q.x, w[4 * j + 1] = q.y, w[4 * j + 2] = q.z, w[4 * j + 3] = q.w;
  }
  if constexpr (kN == 6) {
    const float2 p = reinterpret_cast<const float2*>(src)[2];
    w[4] = p.x, w[5] = p.y;
  }
}

/// The 2x2 conv outputs under one pooled output for kCh channels: 25 taps, each input row loaded
/// once (row r + 1 of conv row 0 is row r of conv row 1).
template <int kCh>
__device__ __forceinline__ void window_5x5(const float* patch, int row_stride, const float* w, int tap_stride,
                                           float (&acc)[kCh][2][2]) {
  float rows[2][kK + 1];
  load_row(patch, rows[1]);
#pragma unroll
  for (int r = 0; r < kK; ++r) {
#pragma unroll
    for (int j = 0; j < kK + 1; ++j) rows[0][j] = rows[1][j];
    load_row(patch + (r + 1) * row_stride, rows[1]);
#pragma unroll
    for (int s = 0; s < kK; ++s) {
      float wk[kCh];
      load_taps(w + (r * kK + s) * tap_stride, wk);
#pragma unroll
      for (int k = 0; k < kCh; ++k)
#pragma unroll
        for (int dy = 0; dy < 2; ++dy)
#pragma unroll
          for (int dx = 0; dx < 2; ++dx) acc[k][dy][dx] = fmaf(rows[dy][s + dx], wk[k], acc[k][dy][dx]);
    }
  }
}

/// ReLU(max + bias) = max of ReLU(x + bias): one bias add and one ReLU per pooled output.
__device__ __forceinline__ float pool_bias_relu(const float (&a)[2][2], float bias) {
  return fmaxf(fmaxf(fmaxf(a[0][0], a[0][1]), fmaxf(a[1][0], a[1][1])) + bias, 0.0f);
}

/// images [count][28][28] (global, 16-byte aligned) -> s_in, kInImage floats per image (see
/// kInRow), zeros included, in one pass: thread t writes padded row t % 32 of image t / 32 as 15
/// float2 (rows 30 floats apart: a half-warp's stores hit 16 different bank pairs).
__device__ __forceinline__ void load_tile(const float* __restrict__ images, int count, float* s_in) {
  const int t = static_cast<int>(threadIdx.x);
  const int img = t / kPadded, row = t % kPadded, y = row - 2;
  float* base = s_in + img * kInImage;
  float2* dst = reinterpret_cast<float2*>(base + 2 + row * kInRow);
  if (row == 0) reinterpret_cast<float2*>(base)[0] = make_float2(0.0f, 0.0f);  // the leading zeros
  if (img < count && y >= 0 && y < kImage) {
    const float4* src = reinterpret_cast<const float4*>(images + static_cast<std::size_t>(img) * kImagePixels + y * kImage);
    float4 q[kImage / 4];
#pragma unroll
    for (int j = 0; j < kImage / 4; ++j) q[j] = __ldg(src + j);
#pragma unroll
    for (int j = 0; j < kImage / 4; ++j) {
      dst[2 * j] = make_float2(q[j].x, q[j].y);
      dst[2 * j + 1] = make_float2(q[j].z, q[j].w);
    }
  } else {
#pragma unroll
    for (int j = 0; j < kImage / 2; ++j) dst[j] = make_float2(0.0f, 0.0f);
  }
  dst[kImage / 2] = make_float2(0.0f, 0.0f);  // columns 28, 29: the border between two rows
}

/// conv1 + bias + ReLU + pool for pooled pixel u (= image * 196 + pixel) of the tile, channels
/// k0 .. k0 + kCh - 1.
template <int kCh>
__device__ __forceinline__ void conv1_item(const float* s_in, const float* s_w1, int u, int k0, float* s_pool1) {
  const int img = u / kPool1Pixels, p = u - img * kPool1Pixels;
  const int py = p / kPool1, px = p - py * kPool1;
  float acc[kCh][2][2] = {};
  // Padded row 2 py, column 2 px: column c of padded row r is at 2 + 30 r + (c - 2).
  window_5x5<kCh>(s_in + img * kInImage + 2 * py * kInRow + 2 * px, kInRow, s_w1 + k0, kC1Stride, acc);
#pragma unroll
  for (int k = 0; k < kCh; ++k)
    s_pool1[img * kPool1Image + (k0 + k) * kPool1Pixels + p] = pool_bias_relu(acc[k], s_w1[kPackB1 + k0 + k]);
}

/// conv1 for `count` images: item u = image * 196 + pooled pixel, all 6 channels. (Cutting the
/// items of a partial last round into single channels, so that every round is full, measured
/// slower: 17_fp32_limit.cu.)
__device__ __forceinline__ void conv1_tile(const float* s_in, const float* s_w1, int count, float* s_pool1) {
  for (int u = static_cast<int>(threadIdx.x); u < count * kPool1Pixels; u += kThreads)
    conv1_item<kC1>(s_in, s_w1, u, 0, s_pool1);
}

/// conv2 + bias + ReLU + pool for window `win` of image `img`, channels c0 .. c0 + kCh - 1:
/// 6 input channels x 25 taps x 4 kCh FFMAs. store(img, feature, value).
template <int kCh, typename Store>
__device__ __forceinline__ void conv2_item(const float* s_pool1, const float* s_w2, int img, int win, int c0,
                                           Store store) {
  const int wy = win / kPool2, wx = win - wy * kPool2;
  const float* patch = s_pool1 + img * kPool1Image + 2 * wy * kPool1 + 2 * wx;  // even: float2-aligned
  float acc[kCh][2][2] = {};
#pragma unroll 1
  for (int c = 0; c < kC1; ++c)  // not unrolled: 25 taps x 4 kCh FFMAs are body enough
    window_5x5<kCh>(patch + c * kPool1Pixels, kPool1, s_w2 + c * kTaps * kC2 + c0, kC2, acc);
#pragma unroll
  for (int k = 0; k < kCh; ++k)
    store(img, (c0 + k) * kPool2Pixels + win, pool_bias_relu(acc[k], s_w2[kPackB2 + c0 + k]));
}

/// conv2 for `count` images. Item u = (group g of kCh channels, window, image), the image the
/// fastest index (bank-conflict-free loads, see kPool1Image; 8 consecutive features per store)
/// and g the slowest, so that a warp's lanes read the same weights.
template <int kCh, typename Store>
__device__ __forceinline__ void conv2_tile(const float* s_pool1, const float* s_w2, int count, Store store) {
  const int pairs = count * kPool2Pixels;
  for (int u = static_cast<int>(threadIdx.x); u < (kC2 / kCh) * pairs; u += kThreads) {
    const int g = u / pairs, rem = u - g * pairs;
    const int win = rem / count, img = rem - win * count;
    conv2_item<kCh>(s_pool1, s_w2, img, win, kCh * g, store);
  }
}

/// 16 bytes global -> shared without passing through registers. kL1: through L1 (.ca), for the
/// features, which this block's own stores wrote a moment ago (the path rung 09's plain loads
/// take); otherwise from L2 only (.cg), for fc1's weights, which would only evict L1's contents.
template <bool kL1>
__device__ __forceinline__ void copy_async16(void* dst_shared, const void* src_global) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(dst_shared));
  if constexpr (kL1)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src_global) : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src_global) : "memory");
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
/// Waits until at most kPending of this thread's commit groups are still in flight.
template <int kPending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

/// fc1 chunk `chunk` (inputs 40 chunk .. +39) of x_tile [400][32] and of fc1's weights into
/// buffer `buf`: 1,520 float4 copies with cp.async, one commit group.
__device__ __forceinline__ void issue_chunk(const float* __restrict__ x_tile, const float* __restrict__ w1_t,
                                            int chunk, float* buf) {
  const int t = static_cast<int>(threadIdx.x);
  float4* dst = reinterpret_cast<float4*>(buf);
  const float4* xs = reinterpret_cast<const float4*>(x_tile + chunk * kChunkX);
  const float4* ws = reinterpret_cast<const float4*>(w1_t + chunk * kKChunk * kFc1);
  for (int i = t; i < kChunkX / 4; i += kThreads) copy_async16<true>(dst + i, xs + i);
  for (int i = t; i < kKChunk * kFc1 / 4; i += kThreads) copy_async16<false>(dst + kChunkX / 4 + i, ws + i);
  commit_copies();
}

/// acc[i][j] += the chunk's [32 x 40] x [40 x 120] product for images 4 ig .. +3 and outputs
/// 4 og .. +3: a warp reads 8 consecutive float4 of images and 4 of weights, each a broadcast.
__device__ __forceinline__ void fc1_chunk_product(const float* buf, int ig, int og, float (&acc)[4][4]) {
  const float4* x4 = reinterpret_cast<const float4*>(buf);
  const float4* w4 = reinterpret_cast<const float4*>(buf + kChunkX);
#pragma unroll 8
  for (int k = 0; k < kKChunk; ++k) {
    const float4 a = x4[k * (kFcTile / 4) + ig];
    const float4 b = w4[k * (kFc1 / 4) + og];
    const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
  }
}

/// fc1 + ReLU, fc2 + ReLU, fc3, argmax for `count` <= 32 images with features x_tile [400][32]
/// (global, written by this block). Logits and labels of the `count` images only.
template <int kVariant>
__device__ void fc_tile(const float* __restrict__ x_tile, int count, const Weights& w, float* smem,
                        float* __restrict__ logits, int* __restrict__ labels) {
  const int t = static_cast<int>(threadIdx.x);
  const int ig = t & 7, og = t >> 3;  // 240 threads: og < 30
  float* s_h1 = smem + kSmemH1;
  float acc[4][4] = {};

  __syncthreads();  // the conv phase (or the previous FC tile) is done with the memory; features visible
  if constexpr (kVariant != kNoFcPipeline) {
    issue_chunk(x_tile, w.fc1_t, 0, smem);
    issue_chunk(x_tile, w.fc1_t, 1, smem + kChunkFloats);
    for (int c = 0; c < kChunks; ++c) {
      wait_copies<1>();  // this thread's copies of chunk c have landed ...
      __syncthreads();           // ... and everyone's
      if (og < kFc1 / 4) fc1_chunk_product(smem + (c & 1) * kChunkFloats, ig, og, acc);
      __syncthreads();  // everyone is done with buffer c & 1
      if (c + 2 < kChunks)
        issue_chunk(x_tile, w.fc1_t, c + 2, smem + (c & 1) * kChunkFloats);
      else
        commit_copies();  // an empty group keeps "all but the newest one" meaning chunk c + 1
    }
  } else {
    for (int c = 0; c < kChunks; ++c) {
      issue_chunk(x_tile, w.fc1_t, c, smem);
      wait_copies<0>();
      __syncthreads();
      if (og < kFc1 / 4) fc1_chunk_product(smem, ig, og, acc);
      __syncthreads();
    }
  }
  if (og < kFc1 / 4) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float bias = __ldg(w.fc1_b + 4 * og + j);
      reinterpret_cast<float4*>(s_h1)[(4 * og + j) * (kFcTile / 4) + ig] =
          make_float4(fmaxf(acc[0][j] + bias, 0.0f), fmaxf(acc[1][j] + bias, 0.0f), fmaxf(acc[2][j] + bias, 0.0f),
                      fmaxf(acc[3][j] + bias, 0.0f));
    }
  }
  __syncthreads();  // fc1's output complete; the chunk buffers are free

  float* s_h2 = smem;  // [84][32]
  float* s_w3 = smem + kSmemW3;
  float* s_logits = smem + kSmemLogits;
  for (int i = t; i < (kFc2 + 1) * kClasses; i += kThreads)
    s_w3[i] = i < kFc2 * kClasses ? __ldg(w.fc3_t + i) : __ldg(w.fc3_b + i - kFc2 * kClasses);
  if (og < kFc2 / 4) {  // 168 threads, the same 4 x 4 blocks, weights from L1/L2
    const float4* h1_4 = reinterpret_cast<const float4*>(s_h1);
    const float4* w2_4 = reinterpret_cast<const float4*>(w.fc2_t);
    float acc2[4][4] = {};
#pragma unroll 8
    for (int k = 0; k < kFc1; ++k) {
      const float4 a = h1_4[k * (kFcTile / 4) + ig];
      const float4 b = __ldg(w2_4 + k * (kFc2 / 4) + og);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc2[i][j] = fmaf(av[i], bv[j], acc2[i][j]);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float bias = __ldg(w.fc2_b + 4 * og + j);
      reinterpret_cast<float4*>(s_h2)[(4 * og + j) * (kFcTile / 4) + ig] =
          make_float4(fmaxf(acc2[0][j] + bias, 0.0f), fmaxf(acc2[1][j] + bias, 0.0f), fmaxf(acc2[2][j] + bias, 0.0f),
                      fmaxf(acc2[3][j] + bias, 0.0f));
    }
  }
  __syncthreads();

  // fc3: (output o, image i) pairs, o the slow index so that a warp shares its weights. Two
  // partial sums halve the chain of dependent FFMAs.
  for (int v = t; v < kClasses * kFcTile; v += kThreads) {
    const int o = v / kFcTile, i = v - o * kFcTile;
    float z0 = s_w3[kFc2 * kClasses + o], z1 = 0.0f;
#pragma unroll 6
    for (int k = 0; k < kFc2; k += 2) {
      z0 = fmaf(s_h2[k * kFcTile + i], s_w3[k * kClasses + o], z0);
      z1 = fmaf(s_h2[(k + 1) * kFcTile + i], s_w3[(k + 1) * kClasses + o], z1);
    }
    const float z = z0 + z1;
    s_logits[i * kClasses + o] = z;
    if (i < count) logits[static_cast<std::size_t>(i) * kClasses + o] = z;
  }
  __syncthreads();
  if (t < count) {  // argmax, the lowest index on a tie
    int best = 0;
    float best_z = s_logits[t * kClasses];
#pragma unroll
    for (int o = 1; o < kClasses; ++o) {
      const float z = s_logits[t * kClasses + o];
      if (z > best_z) {
        best_z = z;
        best = o;
      }
    }
    labels[t] = best;
  }
}

/// Block b: images [b n / G, (b + 1) n / G) (G = gridDim.x), pixels to labels. scratch: the
/// features, scratch_images (a multiple of 32) slots per block, [tile][400][32].
template <int kVariant>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    lenet_fp32_limit(const float* __restrict__ images, int n, Weights w, float* __restrict__ scratch,
                     int scratch_images, float* __restrict__ logits, int* __restrict__ labels) {
  constexpr int kConv2Channels = kVariant == kConv2By8 ? 8 : 4;
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  float* s_w1 = smem;
  float* s_in = smem + kSmemIn;
  float* s_w2 = s_in;
  float* s_pool1 = smem + kSmemPool1;
  const int t = static_cast<int>(threadIdx.x);
  const int blocks = static_cast<int>(gridDim.x), b = static_cast<int>(blockIdx.x);
  const int begin = static_cast<int>(static_cast<long long>(b) * n / blocks);
  const int end = static_cast<int>(static_cast<long long>(b + 1) * n / blocks);
  float* features = scratch + static_cast<std::size_t>(b) * static_cast<std::size_t>(scratch_images) * kFlat;

  for (int i = t; i < kPackConv1; i += kThreads) s_w1[i] = __ldg(w.conv + i);

  for (int first = begin; first < end; first += kConvTile) {
    const int count = min(kConvTile, end - first);
    __syncthreads();  // the previous tile's conv2 is done with s_w2 (= s_in)
    load_tile(images + static_cast<std::size_t>(first) * kImagePixels, count, s_in);
    __syncthreads();
    conv1_tile(s_in, s_w1, count, s_pool1);
    __syncthreads();  // pool1 complete, the images dead: conv2's weights take their place
    for (int i = t; i < kPackConv2 / 4; i += kThreads)
      reinterpret_cast<float4*>(s_w2)[i] = __ldg(reinterpret_cast<const float4*>(w.conv + kPackConv1) + i);
    {
      // The next tile's pixels (<= 25 KB, 196 lines of 128 B) towards L2 while conv2 computes.
      const int next = first + kConvTile;
      if (next < end) {
        const char* p = reinterpret_cast<const char*>(images + static_cast<std::size_t>(next) * kImagePixels);
        const int bytes = min(kConvTile, end - next) * kImagePixels * static_cast<int>(sizeof(float));
        for (int off = t * 128; off < bytes; off += kThreads * 128)
          asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off));
      }
    }
    __syncthreads();
    const int local = first - begin;
    conv2_tile<kConv2Channels>(s_pool1, s_w2, count, [=](int img, int f, float value) {
      const int i = local + img;
      features[(static_cast<std::size_t>(i / kFcTile) * kFlat + f) * kFcTile + i % kFcTile] = value;
    });
  }
  // fc_tile's first barrier orders the features' global writes before the block reads them back.
  for (int first = begin; first < end; first += kFcTile) {
    const int local = first - begin;
    fc_tile<kVariant>(features + static_cast<std::size_t>(local) * kFlat, min(kFcTile, end - first), w, smem,
                      logits + static_cast<std::size_t>(first) * kClasses, labels + first);
  }
}

}  // namespace ladder::fp32_limit
