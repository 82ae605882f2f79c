// Rungs 15 and 16's kernel: rung 12's whole network in one kernel (12_tensor_cores_kernels.cuh:
// the same GEMMs, k-orders, jobs and epilogues) with FP32 activations and TF32 tensor cores,
// mma.sync m16n8k8 (TF32 inputs, FP32 accumulation). The arithmetic is a template parameter:
// OneTf32 (rung 15) multiplies operands rounded to TF32; ThreeTf32<> (rung 16) splits each
// operand into two TF32 parts and adds three products.
//
// The fragment layouts of m16n8k8 with .tf32 inputs (PTX ISA, "Matrix Fragments for mma.m16n8k8"),
// per lane with g = lane / 4 and t = lane % 4, one value per 32-bit register:
//   A (16 x 8, rows m, columns k)  a0 = A[g][t]   a1 = A[g+8][t]   a2 = A[g][t+4]   a3 = A[g+8][t+4]
//   B (8 x 8, k x n)               b0 = B[t][g]   b1 = B[t+4][g]
//   C (16 x 8, FP32)               c0, c1 = C[g][2t, 2t+1]   c2, c3 = C[g+8][2t, 2t+1]  (as m16n8k16)
// How rung 12's design carries over. There, an A register held a "pair" of neighbouring k of one
// row (k = 2j, 2j + 1), and lane t of an m16n8k16 step held pairs t and t + 4. Here each such
// 32-bit word of two FP16 becomes a 64-bit float2 of two FP32 at the same index, and each m16n8k16
// step becomes two m16n8k8 steps: one over the .x (even k) of pairs t and t + 4, one over the .y
// (odd k). Lane t multiplies the same k as before, so the sum is unchanged: rung 12's k-orders,
// weight permutations (tensor_core_weights.cuh), jobs and epilogues all stay, and two fragment
// registers are still one shared-memory load (LDS.64). A B fragment of one step of 16 is one float4
// per lane: {B[2t][g], B[2t+8][g]} (b0, b1 of the even step), then {B[2t+1][g], B[2t+9][g]} (odd).
// The conv1 input is the plain zero-padded image, one float per pixel: a pair of taps is two
// neighbouring floats, so rung 12's "pairs" buffer (every pixel stored twice) is not needed.
//
// Shared memory per block: FP32 doubles every activation tile, which would make rung 12's tiles
// 193 KB (one block per SM). Instead: chunks of 16 images (rung 12: 32) and the pool1 tiles share
// their bytes with the fully connected layers' outputs (pool1 is used only by the convolutions,
// the others only after them):
//   8 padded images        8 x 32 x 37 x 4 B              37,888
//   8 pool1 tiles          8 x 196 x 3 x 8 B              37,632   (fc1, fc2 outputs and logits:
//   pool2 (fc1's input)    16 x 204 x 8 B                 26,112    16,000 B, in the same bytes)
//   total                                                101,632 B (99.25 KB): 2 blocks of 8 warps
// per SM, as rung 12 (with the 228 KB carveout). The row strides keep rung 12's values in float2
// units; an LDS.64 is served per half-warp, and stride mod 16 = 12 or 4 puts a half-warp's 16
// float2 (4 rows x 4 consecutive) in distinct bank pairs.
// Registers: __launch_bounds__(256, 2) allows 128; ptxas (sm_90, CUDA 13.0) uses all of them and
// spills 24 bytes (rung 15), 64 (rung 16, integer split) or 40 (cvt split), with conv2's k-loop
// unrolled as far as spills least (kConv2Unroll). lab07_mma_selftest prints them for the GPU.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "12_tensor_cores_kernels.cuh"

namespace ladder::tf32 {

namespace tc = ladder::tensor_cores;

constexpr int kWarps = tc::kWarps, kThreads = tc::kThreads;
constexpr int kTf32Chunk = 16;  ///< images per pass of the fully connected layers: one m-tile
constexpr int kImageStride = tc::kPairStride, kImageRows = tc::kPairRows;  // 37 floats per row, 32 rows
constexpr int kPool1Entries = tc::kPool1Side * tc::kPool1Side * tc::kPool1Words;  // float2 per image

// ---------------------------------------------------------------------------------------------
// TF32 arithmetic
// ---------------------------------------------------------------------------------------------

/// x rounded to TF32 on the host exactly as cvt.rna.tf32.f32 does on the GPU: to 10 fraction bits,
/// ties away from zero, the 13 low bits zero. Adding half a unit of the kept last bit (0x1000) to
/// the sign-magnitude bits and truncating rounds the magnitude half up; a carry into the exponent
/// is the correct next binade. Inf and NaN are returned as they are.
inline float round_tf32_host(float x) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u) return x;
  bits = (bits + 0x1000u) & 0xffffe000u;
  float rounded = 0.0f;
  std::memcpy(&rounded, &bits, sizeof rounded);
  return rounded;
}

/// The GPU's rounding, as a float whose 13 low bits are zero. The mask costs one logic op: a TF32
/// value's low 13 bits are "don't care" to the tensor cores, so nothing promises that cvt clears
/// them, and ThreeTf32's x - hi is the exact rest only if they are zero.
__device__ __forceinline__ float round_tf32(float x) {
  std::uint32_t bits;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  bits = 0u;
  __trap();  // TF32 needs compute capability 8.0; prepare() refuses older GPUs before any launch
#else
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
#endif
  return __uint_as_float(bits & 0xffffe000u);
}

/// The same rounding in two integer instructions (add half a unit of the last kept bit, clear the
/// 13 low bits), bit for bit the same as round_tf32 for every finite x (lab07_mma_selftest checks
/// that on the GPU). ThreeTf32 splits every activation it loads, twice per value, so by default its
/// inner loop uses this: plain integer ops, whatever cvt.rna compiles to.
__device__ __forceinline__ float round_tf32_int(float x) {
  return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u);
}

/// D += A * B on the tensor cores, one warp: A 16x8 TF32, B 8x8 TF32, D 16x8 FP32.
__device__ __forceinline__ void mma_16x8x8(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                           std::uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();
#else
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

/// One B fragment of a step of 16 (see the top): hi = the weights rounded to TF32; lo = what the
/// rounding left, rounded again (ThreeTf32 only; OneTf32 never reads it).
struct BFragment {
  float4 hi, lo;
};

/// Rung 15: one product of TF32 operands. Activations are rounded once, when they are stored
/// (stage_image and the epilogues), weights once in prepare(): the inner loops load and multiply.
struct OneTf32 {
  static constexpr bool kSplit = false;
  static constexpr int kConv2Unroll = 2;  // conv2's k-loop: fewer spills than unrolled fully (ptxas -v)
  __device__ static float store(float x) { return round_tf32(x); }
  __device__ static void mma(float (&d)[4], float a0, float a1, float a2, float a3, const float (&b_hi)[2],
                             const float (&)[2]) {
    const std::uint32_t a[4] = {__float_as_uint(a0), __float_as_uint(a1), __float_as_uint(a2), __float_as_uint(a3)};
    mma_16x8x8(d, a, __float_as_uint(b_hi[0]), __float_as_uint(b_hi[1]));
  }
};

/// How ThreeTf32 rounds the activations it splits in its inner loop (the same bits either way):
/// two integer ops (round_tf32_int, the default) or cvt.rna (COURSE_LADDER_3XTF32_ROUNDING=cvt).
enum class SplitRounding { integer, cvt };

/// Rung 16: x = hi + lo with hi = tf32(x), lo = tf32(x - hi) (x - hi is exact in FP32), and
/// a * b ~ a_hi b_hi + a_hi b_lo + a_lo b_hi: what is dropped, a_lo b_lo and the rounding of the
/// lo parts, is about 2^-22 of a * b, FP32's own precision. Activations stay FP32 in shared memory
/// and are split as they are loaded; the weights' parts come from prepare().
/// The two small products go into the accumulator first: an addition's rounding error is relative
/// to its result, so adding small terms while the sum is still small (the first steps, or where
/// the sum has cancelled) loses less than adding them to the sum after the large product.
template <SplitRounding kRounding = SplitRounding::integer>
struct ThreeTf32 {
  static constexpr bool kSplit = true;
  // conv2's k-loop unrolled as far as spills least (ptxas -v, sm_90: 64 and 40 bytes).
  static constexpr int kConv2Unroll = kRounding == SplitRounding::integer ? 1 : tc::kConv2KSteps;
  __device__ static float store(float x) { return x; }
  __device__ static float round(float x) {
    if constexpr (kRounding == SplitRounding::integer) {
      return round_tf32_int(x);
    } else {
      return round_tf32(x);
    }
  }
  __device__ static void mma(float (&d)[4], float a0, float a1, float a2, float a3, const float (&b_hi)[2],
                             const float (&b_lo)[2]) {
    const float x[4] = {a0, a1, a2, a3};
    std::uint32_t hi[4], lo[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float h = round(x[i]);
      hi[i] = __float_as_uint(h);
      lo[i] = __float_as_uint(round(x[i] - h));
    }
    const std::uint32_t bh0 = __float_as_uint(b_hi[0]), bh1 = __float_as_uint(b_hi[1]);
    mma_16x8x8(d, lo, bh0, bh1);                                            // a_lo * b_hi
    mma_16x8x8(d, hi, __float_as_uint(b_lo[0]), __float_as_uint(b_lo[1]));  // a_hi * b_lo
    mma_16x8x8(d, hi, bh0, bh1);                                            // a_hi * b_hi
  }
};

/// One step of 16 k (rung 12's m16n8k16 step) as two m16n8k8 steps. a[0..3] are rung 12's four A
/// registers, now float2: rows g, g+8 of pair t, then rows g, g+8 of pair t+4.
template <typename P>
__device__ __forceinline__ void mma_k16(float (&d)[4], const float2 (&a)[4], const BFragment& b) {
  P::mma(d, a[0].x, a[1].x, a[2].x, a[3].x, {b.hi.x, b.hi.y}, {b.lo.x, b.lo.y});  // even k
  P::mma(d, a[0].y, a[1].y, a[2].y, a[3].y, {b.hi.z, b.hi.w}, {b.lo.z, b.lo.w});  // odd k
}

/// The weights of one layer as B fragments: fragment (n-tile, step of 16) is 32 float4 per part,
/// at [(ntile * ksteps + kstep) * 32 + lane], as rung 12's uint2. lo is null for OneTf32.
struct Fragments {
  const float4* hi;
  const float4* lo;
};

template <typename P>
__device__ __forceinline__ BFragment load_b(const Fragments& f, int index) {
  BFragment b;
  b.hi = __ldg(f.hi + index);
  if constexpr (P::kSplit) {
    b.lo = __ldg(f.lo + index);
  } else {
    b.lo = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  return b;
}

/// B[k][n] (k < 16 * ksteps, n < 8 * ntiles) as the float4 fragments above, on the host: each
/// value rounded to TF32 (low = false), or the rest of that rounding rounded to TF32 (low = true).
inline std::vector<float4> tf32_fragments(int ksteps, int ntiles, const std::function<float(int k, int n)>& b,
                                          bool low) {
  const auto part = [low](float x) {
    const float hi = round_tf32_host(x);
    return low ? round_tf32_host(x - hi) : hi;
  };
  std::vector<float4> frags;
  frags.reserve(static_cast<std::size_t>(ksteps) * static_cast<std::size_t>(ntiles) * 32);
  for (int nt = 0; nt < ntiles; ++nt)
    for (int ks = 0; ks < ksteps; ++ks)
      for (int lane = 0; lane < 32; ++lane) {
        const int n = 8 * nt + lane / 4, k = 16 * ks + 2 * (lane % 4);
        frags.push_back(make_float4(part(b(k, n)), part(b(k + 8, n)), part(b(k + 1, n)), part(b(k + 9, n))));
      }
  return frags;
}

// ---------------------------------------------------------------------------------------------
// The kernel
// ---------------------------------------------------------------------------------------------

struct Weights {
  Fragments conv1;  const float* conv1_bias;  // [2 steps],          bias [8]
  Fragments conv2;  const float* conv2_bias;  // [2 n-tiles][10],    bias [16]
  Fragments fc1;    const float* fc1_bias;    // [15][25],           bias [120]
  Fragments fc2;    const float* fc2_bias;    // [11][8],            bias [88]
  Fragments fc3;    const float* fc3_bias;    // [2][6],             bias [16]
};

struct FcTiles {
  float2 fc1_out[kTf32Chunk * tc::kFc1OutStride];  // float2 (row, w) = columns 2w, 2w + 1
  float2 fc2_out[kTf32Chunk * tc::kFc2OutStride];
  float logits[kTf32Chunk * tc::kClasses];
};

struct SharedTiles {
  float image[kWarps][kImageRows * kImageStride];  // each warp's zero-padded 32 x 32 image
  union {
    float2 pool1[kWarps][kPool1Entries];  // [14 x 14 pixels][3]: float2 c = channels 2c, 2c + 1
    FcTiles fc;
  } u;
  float2 pool2[kTf32Chunk * tc::kPool2Stride];  // fc1's A: [image][pixel p][16 channels], k = 16p + c
};
static_assert(sizeof(FcTiles) <= sizeof(float2) * kWarps * kPool1Entries, "the fc tiles fit in the pool1 tiles");
static_assert(sizeof(SharedTiles) % sizeof(uint4) == 0, "zeroed with 16-byte stores");

/// One image into the warp's padded image (its zero border was written once), as rung 12's
/// stage_image: lanes 0..27 each take 4 pixels of rows 4*step .. 4*step+3.
template <typename P>
__device__ __forceinline__ void stage_image(const float* image, float* padded, int lane) {
  const int row_in_step = lane / 7, quad = lane % 7;
#pragma unroll
  for (int step = 0; step < tc::kImageSide / 4; ++step) {
    const int y = 4 * step + row_in_step;
    if (lane < 28) {
      const float4 v = tc::load_four(image + y * tc::kImageSide, quad);
      float* dst = padded + (y + tc::kPad) * kImageStride + 4 * quad + tc::kPad;
      dst[0] = P::store(v.x);
      dst[1] = P::store(v.y);
      dst[2] = P::store(v.z);
      dst[3] = P::store(v.w);
    }
  }
}

/// conv1 + bias + ReLU + 2x2 max-pool for one image, rung 12's conv1_relu_pool on the plain image:
/// pair j of output pixel (y, x) is the floats at (y + r, x + 2u) and the next one, so lane (g, t)
/// reads three neighbouring floats per pair for its two rows (columns 2g and 2g + 1) and both k.
template <typename P>
__device__ __forceinline__ void conv1_relu_pool(const float* padded, float2* pool1, const BFragment (&b)[2],
                                                float bias_lo, float bias_hi, int g, int t) {
  int tap[tc::kConv1KSteps][2];
#pragma unroll
  for (int ks = 0; ks < tc::kConv1KSteps; ++ks)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int j = min(8 * ks + 4 * h + t, tc::kConv1TapPairs - 1);  // the padding pair re-reads pair 14
      tap[ks][h] = (j / 3) * kImageStride + 2 * (j % 3);
    }
#pragma unroll 2
  for (int job = 0; job < tc::kPool1Side * 2; ++job) {
    const int py = job / 2, half = job % 2;
    const float* top_row = padded + (2 * py) * kImageStride + 16 * half + 2 * g;
    const float* bottom_row = top_row + kImageStride;
    float top[4] = {0.0f, 0.0f, 0.0f, 0.0f}, bottom[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int ks = 0; ks < tc::kConv1KSteps; ++ks) {
      const int k0 = tap[ks][0], k8 = tap[ks][1];
      // Row g (column 2g) of pair j is {p[0], p[1]}; row g + 8 (column 2g + 1) is {p[1], p[2]}.
      const float2 a_top[4] = {
          make_float2(top_row[k0], top_row[k0 + 1]), make_float2(top_row[k0 + 1], top_row[k0 + 2]),
          make_float2(top_row[k8], top_row[k8 + 1]), make_float2(top_row[k8 + 1], top_row[k8 + 2])};
      const float2 a_bottom[4] = {
          make_float2(bottom_row[k0], bottom_row[k0 + 1]), make_float2(bottom_row[k0 + 1], bottom_row[k0 + 2]),
          make_float2(bottom_row[k8], bottom_row[k8 + 1]), make_float2(bottom_row[k8 + 1], bottom_row[k8 + 2])};
      mma_k16<P>(top, a_top, b[ks]);
      mma_k16<P>(bottom, a_bottom, b[ks]);
    }
    const int px = 8 * half + g;
    if (px < tc::kPool1Side && t < tc::kPool1Words) {  // t == 3 holds channels 6 and 7: padding
      const float lo = fmaxf(fmaxf(top[0], top[2]), fmaxf(bottom[0], bottom[2]));
      const float hi = fmaxf(fmaxf(top[1], top[3]), fmaxf(bottom[1], bottom[3]));
      pool1[(py * tc::kPool1Side + px) * tc::kPool1Words + t] =
          make_float2(P::store(tc::relu(lo + bias_lo)), P::store(tc::relu(hi + bias_hi)));
    }
  }
}

/// conv2 + bias + ReLU + 2x2 max-pool for one image: pool1 -> this image's row of pool2, exactly
/// rung 12's conv2_relu_pool with float2 words.
template <typename P>
__device__ __forceinline__ void conv2_relu_pool(const float2* pool1, float2* pool2_row, const Fragments& frags,
                                                const float (&bias)[4], int g, int t, int lane) {
  // Pair j = (5r + s) * 3 + channel pair -> word ((r * 14) + s) * 3 + channel pair = j + 27 * (j / 15).
  const auto tap = [t](int ks, int h) {
    const int j = min(8 * ks + 4 * h + t, tc::kConv2TapPairs - 1);
    return j + 27 * (j / 15);
  };
#pragma unroll 1
  for (int group = 0; group < 2; ++group) {
    int base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int p = min(16 * group + 8 * h + g, 24);
      base[h] = ((p / 5) * 2 * tc::kPool1Side + (p % 5) * 2) * tc::kPool1Words;
    }
    float acc[4][tc::kConv2NTiles][4] = {};
#pragma unroll (P::kConv2Unroll)
    for (int ks = 0; ks < tc::kConv2KSteps; ++ks) {
      const BFragment b0 = load_b<P>(frags, (0 * tc::kConv2KSteps + ks) * 32 + lane);
      const BFragment b1 = load_b<P>(frags, (1 * tc::kConv2KSteps + ks) * 32 + lane);
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const int shift = ((w / 2) * tc::kPool1Side + w % 2) * tc::kPool1Words;
        const float2* lo = pool1 + base[0] + shift;
        const float2* hi = pool1 + base[1] + shift;
        const int k0 = tap(ks, 0), k8 = tap(ks, 1);
        const float2 a[4] = {lo[k0], hi[k0], lo[k8], hi[k8]};
        mma_k16<P>(acc[w][0], a, b0);
        mma_k16<P>(acc[w][1], a, b1);
      }
    }
#pragma unroll
    for (int nt = 0; nt < tc::kConv2NTiles; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int p = 16 * group + 8 * h + g;
        if (p >= 25) continue;
        float lo = acc[0][nt][2 * h], hi = acc[0][nt][2 * h + 1];
#pragma unroll
        for (int w = 1; w < 4; ++w) {
          lo = fmaxf(lo, acc[w][nt][2 * h]);
          hi = fmaxf(hi, acc[w][nt][2 * h + 1]);
        }
        pool2_row[8 * p + 4 * nt + t] =
            make_float2(P::store(tc::relu(lo + bias[2 * nt])), P::store(tc::relu(hi + bias[2 * nt + 1])));
      }
  }
}

/// One fully connected layer for the chunk (one m-tile of 16 rows): rung 12's fully_connected with
/// float2 words. epilogue(row, column, c_lo, c_hi) gets two neighbouring columns, bias added.
template <typename P, int KSTEPS, int NTILES, typename Epilogue>
__device__ __forceinline__ void fully_connected(const float2* in, int in_stride, const Fragments& frags,
                                                const float* bias, int warp, int g, int t, int lane,
                                                Epilogue epilogue) {
  for (int nt = warp; nt < NTILES; nt += kWarps) {
    const int col = 8 * nt + 2 * t;
    const float bias_lo = __ldg(bias + col), bias_hi = __ldg(bias + col + 1);
    const float2* row_lo = in + g * in_stride + t;
    const float2* row_hi = row_lo + 8 * in_stride;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      const float2 a[4] = {row_lo[8 * ks], row_hi[8 * ks], row_lo[8 * ks + 4], row_hi[8 * ks + 4]};
      mma_k16<P>(acc, a, load_b<P>(frags, (nt * KSTEPS + ks) * 32 + lane));
    }
    epilogue(g, col, acc[0] + bias_lo, acc[1] + bias_hi);
    epilogue(g + 8, col, acc[2] + bias_lo, acc[3] + bias_hi);
  }
}

template <typename P, int KSTEPS, int NTILES>
__device__ __forceinline__ void prefetch_layer(const Fragments& f) {
  constexpr int bytes = KSTEPS * NTILES * 32 * static_cast<int>(sizeof(float4));
  tc::prefetch_to_l2(f.hi, bytes);
  if constexpr (P::kSplit) tc::prefetch_to_l2(f.lo, bytes);
}

/// The whole network, rung 12's lenet_tensor_cores with chunks of 16: block b classifies images
/// [b * per_block, min(n, (b + 1) * per_block)); each warp runs the convolutions of every 8th image
/// of a chunk, then all warps share the fully connected layers of the chunk.
template <typename P>
__global__ void __launch_bounds__(kThreads, 2)
    lenet_tf32(const float* __restrict__ images, int n, int per_block, Weights weights, float* __restrict__ logits,
               int* __restrict__ labels) {
  extern __shared__ uint4 shared_raw[];
  SharedTiles& tiles = *reinterpret_cast<SharedTiles*>(shared_raw);
  // All zero first: the images' padding is never written again.
  for (int i = static_cast<int>(threadIdx.x); i < static_cast<int>(sizeof(SharedTiles) / sizeof(uint4)); i += kThreads)
    shared_raw[i] = make_uint4(0u, 0u, 0u, 0u);

  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int g = lane / 4, t = lane % 4;
  const BFragment conv1_b[tc::kConv1KSteps] = {load_b<P>(weights.conv1, lane), load_b<P>(weights.conv1, 32 + lane)};
  const float conv1_bias_lo = weights.conv1_bias[2 * t], conv1_bias_hi = weights.conv1_bias[2 * t + 1];
  const float conv2_bias[4] = {weights.conv2_bias[2 * t], weights.conv2_bias[2 * t + 1],
                               weights.conv2_bias[8 + 2 * t], weights.conv2_bias[9 + 2 * t]};
  float* const image = tiles.image[warp];
  float2* const pool1 = tiles.u.pool1[warp];
  prefetch_layer<P, tc::kConv2KSteps, tc::kConv2NTiles>(weights.conv2);
  prefetch_layer<P, tc::kFc1KSteps, tc::kFc1NTiles>(weights.fc1);
  prefetch_layer<P, tc::kFc2KSteps, tc::kFc2NTiles>(weights.fc2);
  prefetch_layer<P, tc::kFc3KSteps, tc::kFc3NTiles>(weights.fc3);
  __syncthreads();

  const int first = static_cast<int>(blockIdx.x) * per_block;
  const int end = min(n, first + per_block);
  for (int chunk = first; chunk < end; chunk += kTf32Chunk) {
    const int count = min(kTf32Chunk, end - chunk);
    for (int i = warp; i < count; i += kWarps) {
      stage_image<P>(images + static_cast<std::size_t>(chunk + i) * tc::kImagePixels, image, lane);
      __syncwarp();  // image written -> conv1 reads it; also: conv2 of the last image done with pool1
      conv1_relu_pool<P>(image, pool1, conv1_b, conv1_bias_lo, conv1_bias_hi, g, t);
      __syncwarp();  // pool1 written -> conv2 reads it; also: conv1 done with the image before the next one
      conv2_relu_pool<P>(pool1, tiles.pool2 + i * tc::kPool2Stride, weights.conv2, conv2_bias, g, t, lane);
    }
    __syncthreads();  // pool2 complete; every warp done with its pool1, whose bytes the fc tiles reuse

    FcTiles& fc = tiles.u.fc;
    // The columns that fc2 and fc3 read but fc1 and fc2 do not write (120..127, 88..95): zero, so
    // that the zero weights there meet zeros, not the pool1 values left in these bytes.
    for (int i = static_cast<int>(threadIdx.x); i < kTf32Chunk * 4; i += kThreads) {
      fc.fc1_out[(i / 4) * tc::kFc1OutStride + 60 + i % 4] = make_float2(0.0f, 0.0f);
      fc.fc2_out[(i / 4) * tc::kFc2OutStride + 44 + i % 4] = make_float2(0.0f, 0.0f);
    }
    // Rows past `count` are computed from stale (finite) rows of pool2 and dropped.
    fully_connected<P, tc::kFc1KSteps, tc::kFc1NTiles>(
        tiles.pool2, tc::kPool2Stride, weights.fc1, weights.fc1_bias, warp, g, t, lane,
        [&](int row, int col, float lo, float hi) {
          fc.fc1_out[row * tc::kFc1OutStride + col / 2] = make_float2(P::store(tc::relu(lo)), P::store(tc::relu(hi)));
        });
    __syncthreads();
    fully_connected<P, tc::kFc2KSteps, tc::kFc2NTiles>(
        fc.fc1_out, tc::kFc1OutStride, weights.fc2, weights.fc2_bias, warp, g, t, lane,
        [&](int row, int col, float lo, float hi) {
          fc.fc2_out[row * tc::kFc2OutStride + col / 2] = make_float2(P::store(tc::relu(lo)), P::store(tc::relu(hi)));
        });
    __syncthreads();
    fully_connected<P, tc::kFc3KSteps, tc::kFc3NTiles>(
        fc.fc2_out, tc::kFc2OutStride, weights.fc3, weights.fc3_bias, warp, g, t, lane,
        [&](int row, int col, float lo, float hi) {
          if (col < tc::kClasses) {
            fc.logits[row * tc::kClasses + col] = lo;
            fc.logits[row * tc::kClasses + col + 1] = hi;
          }
        });
    __syncthreads();

    for (int i = static_cast<int>(threadIdx.x); i < count * tc::kClasses; i += kThreads)
      logits[static_cast<std::size_t>(chunk) * tc::kClasses + i] = fc.logits[i];
    if (static_cast<int>(threadIdx.x) < count) {
      const float* row = fc.logits + threadIdx.x * tc::kClasses;
      int best = 0;
      for (int c = 1; c < tc::kClasses; ++c)
        if (row[c] > row[best]) best = c;
      labels[chunk + static_cast<int>(threadIdx.x)] = best;
    }
    __syncthreads();  // the logits are read before the next chunk's conv1 overwrites them (pool1)
  }
}

}  // namespace ladder::tf32
