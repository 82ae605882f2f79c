// Rung 18's kernel: rung 12's network with both convolutions on wgmma, the warpgroup MMA of
// Hopper (18_wgmma_primitives.cuh), the weights as the 64-row operand and eight images side by
// side along N, every image loaded by the copy engine.
//
// Why this shape (the first version of this rung did it the other way round, 0.0695 ms): a wgmma
// has 64 rows (M) and up to 256 columns (N). With one image's pixels as the rows and the weights
// as the columns, each image read the whole weight matrix again from shared memory (half of its
// ~96 KB of operand bytes) and filled only 35 of conv2's 64 rows. Here the weights are A, held in
// registers for the whole kernel (the A-fragment layout of mma.sync; no shared-memory bytes at
// all), and B, the only operand the tensor cores read from shared memory, is the activations of a
// group of eight images ("octet"), image innermost: a 16-byte row of B is 8 FP16 values of one
// image, and one core matrix (8 rows) is the same pixel of the eight images. By our count the
// operand bytes fall from ~96 KB to ~28 KB per image, and the issued products from 1.57 M to
// 0.91 M per image (useful: 357 k), 27 + 54 m64n88k16 per octet.
//
// M = 64 is still 4 x (or 8 x) the output channels, so each row of A is a weight row shifted to
// one output position of a small window (a Toeplitz matrix, as before, but now in A): the window
// is the pooling window, so that pooling is a max over rows of the accumulator -- one pair of
// rows lies in each thread (rows g and g + 8), the other pair in the neighbouring group of four
// lanes (one shuffle).
//   conv1 (1 -> 6, 5x5, pad 2): M = (c, dy, dx) = 8 channels x output rows 2py + dy (2) x
//     columns 4q + dx (4); K = (r, j): padded input row 2py + r (6), column 4q + j (8), 3 k-steps;
//     A[(c, dy, dx)][(r, j)] = w1[c][r - dy][j - dx]. N = (position (py, q), image): 98 positions
//     (14 x 7), as 9 chains of 11 (N = 88).
//     B: x1[a][u][q][image] = 16 bytes = padded row 2u + a, columns 4q .. 4q + 7, in two planes by
//     row parity: k-step s reads rows 2(py + s) + a, a = the k-block, so its descriptor starts
//     at position 7s of plane 0, K stride = one plane, N stride = 128 bytes (the next position).
//     Rows: m = 16w + 8dy + g, g = 4cb + 2dxhi + dxlo, c = 2w + cb: dy pools in the thread,
//     dxlo across lanes 4 apart; the result is pool1 pixel (py, 2q + dxhi).
//   conv2 (6 -> 16, 5x5): M = (o, dy, dx); K = (r, s): input row 2py + r (6), column 2px + s (6),
//     8 channels, 18 k-steps; A[(o, dy, dx)][(r, s, c)] = w2[o][c][r - dy][s - dx]. N = (position
//     (py, px) at pitch 7, image): 33 positions (25 used), 3 chains of 11.
//     B: pool1 in four planes by row and column parity, P[a][b][u][v][image] = pool1[2u + a][2v + b]
//     (16 bytes = 8 channels): k-step (r, jp) reads columns 2px + 2jp + b, b = the k-block, so
//     its descriptor starts at plane (r % 2, 0), position 7 (r / 2) + jp, K stride = one plane.
//     Rows: m = 16w + 8dx + g, g = 2ol + dy, o = 4w + ol: dx pools in the thread, dy across lanes.
// Bias and ReLU after the max (max(relu(x + b)) = relu(max(x) + b)). fc1-fc3 are rung 12's
// mma.sync code (12_tensor_cores_kernels.cuh) on chunks of 80 images, a warp's job one n-tile for
// all five m-tiles (fully_connected_chunk), their outputs in the dead staging buffers.
// What mattered for the time, measured on the H100 (each with rung 12 in the same run): chains in
// a run-time loop, one accumulator set, 0.0825 ms (positions divided by 7 at run time: 31 M
// instructions, most of them integer); unrolled, two accumulator sets (chain c + 1 runs during
// chain c's epilogue) 0.0577; FP16 epilogue, staging during conv2, 0.0545; fc chunks of 48, 0.0534;
// then one fc pass of 80 (its outputs in the staging buffers), the first copy issued before the
// shared-memory setup (which now zeroes 7 KB, not 210), the epilogue's max in FP32 and the ReLU in
// the conversion, all three together 0.0480 (rung 12 0.0866); on top the fc's A fragments by
// ldmatrix, 0.0476 against 0.0481 with the four loads, both in one run (rung 12 0.0868).
// Slower, not kept: fc k-loops unrolled by 4 (their L2 loads no longer all in flight) 0.0604;
// fc layers per warpgroup on its own 16 images, no block barrier, 0.0581.
// Not tried, as it cannot help at 10,000 images: another split of the images over the SMs. A
// warpgroup's octet costs the same however few of its 8 images exist, and 1,250 octets over 264
// warpgroups is 4.7 each: some warpgroup must do 5 octets, as every one does now (125 blocks).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "12_tensor_cores_kernels.cuh"
#include "18_wgmma_primitives.cuh"

namespace ladder::wgmma {

namespace tc = ladder::tensor_cores;

constexpr int kGroups = 2;  ///< warpgroups per block; each runs the convolutions of its own octets
constexpr int kThreads = 128 * kGroups;
static_assert(kThreads == tc::kThreads, "the fully connected layers are rung 12's, written for 8 warps");

constexpr int kImages = 8;          ///< images per octet: the 8 rows of a core matrix of B
constexpr int kPositions = 11;      ///< pixel positions per chain: N = 88
static_assert(kPositions * kImages * 64 / 128 == kAccumulators, "one chain is one m64n88k16 accumulator set");
constexpr int kCoreBytes = kImages * 16;  ///< one position of an octet

constexpr int kX1Quads = 7, kX1PlaneRows = 16;                            // 32 padded rows / 2
constexpr int kX1PlaneBytes = kX1PlaneRows * kX1Quads * kCoreBytes;       // 14,336
constexpr int kX1Bytes = 2 * kX1PlaneBytes + kCoreBytes;  ///< + the position only the 99th column reads
constexpr int kConv1KSteps = 3, kConv1Chains = 9, kConv1Positions = tc::kPool1Side * kX1Quads;  // 98

constexpr int kP1Pitch = 7;  ///< pool1 plane: 7 x 7 positions
/// Plane stride: one 16-byte row more than the plane, so that the two column-parity planes an
/// epilogue store instruction writes to start in different banks.
constexpr int kP1PlaneBytes = kP1Pitch * kP1Pitch * kCoreBytes + 16;  // 6,288
constexpr int kP1Bytes = 3 * kP1PlaneBytes + kP1Pitch * kP1Pitch * kCoreBytes;
constexpr int kConv2KSteps = 18, kConv2Chains = 3;
constexpr int kPool2Side = 5;

constexpr int kImageBytes = tc::kImagePixels * 4;  // 3,136: a multiple of 16, as bulk copies need
/// Images in the staging buffer 3,152 bytes apart (788 words, 20 mod 32): the eight 16-byte loads
/// of a quarter warp, one per image, then fall in eight different groups of four banks.
constexpr int kRawFloats = tc::kImagePixels + 4;

/// Images per pass of the fully connected layers: ten octets, five m-tiles of 16 (rung 12: 32).
/// The fc layers are a chain of round trips to L2 for their weights, paid once per chunk, and a
/// block of 80 images (10,000 on 132 SMs) then needs one pass, not two (48 + 32) or three. Only
/// pool2 (the fc input, written octet by octet) needs space of its own; the fc layers' outputs
/// live in the staging buffers (raw), which are dead by then (see fc_scratch()).
constexpr int kChunk = 80, kChunkMTiles = kChunk / 16;

constexpr int kAFragments = (kConv1KSteps + kConv2KSteps) * 128;  ///< uint4 per thread and k-step

/// Index of A fragment (k-step, thread of the warpgroup) in the packed weights (host: 18_wgmma.cu).
__host__ __device__ constexpr int a_fragment_index(int layer, int kstep, int thread) {
  return ((layer == 1 ? 0 : kConv1KSteps) + kstep) * 128 + thread;
}

/// Host side: the A fragment of (k-step s, thread of the warpgroup) of a matrix a(m, k), in the
/// layout mma_64x88x16 reads (warp w = thread / 32 takes rows 16w .. 16w + 15). half_bits(x): the
/// FP16 bits of x. Used by the rung (18_wgmma.cu) and by its self-test, so both pack alike.
template <typename A, typename HalfBits>
uint4 a_fragment(const A& a, const HalfBits& half_bits, int s, int thread) {
  const int row = 16 * (thread / 32) + (thread % 32) / 4, k = 16 * s + 2 * (thread % 4);
  const auto pair = [&](int m, int k0) {
    return static_cast<unsigned>(half_bits(a(m, k0))) | (static_cast<unsigned>(half_bits(a(m, k0 + 1))) << 16);
  };
  return make_uint4(pair(row, k), pair(row + 8, k), pair(row, k + 8), pair(row + 8, k + 8));
}

struct GroupTiles {
  float raw[kImages * kRawFloats];  ///< the octet's images (the copy engine writes them)
  uint4 x1[kX1Bytes / 16];          ///< conv1's B
  uint4 pool1[kP1Bytes / 16];       ///< conv2's B
};

struct Tiles {
  GroupTiles group[kGroups];
  std::uint32_t pool2[kChunk * tc::kPool2Stride];  ///< fc1's A, rung 12's layout
  std::uint64_t bars[kGroups];                     ///< one per group: its staging buffer
};

/// Rung 12's other fc tiles, in the two staging buffers: when a chunk's fc layers run, every
/// octet fetched so far has been waited for and staged into x1, so raw is free until the next
/// octet's fetch (after the chunk's last barrier). fc1_out's and fc2_out's padding columns, which
/// the next layer reads, must be zeroed for every chunk: a float's bits read as FP16 can be
/// infinite, and 0 * inf is NaN.
struct FcScratch {
  std::uint32_t* fc1_out;  ///< kChunk rows of tc::kFc1OutStride words
  std::uint32_t* fc2_out;  ///< kChunk rows of tc::kFc2OutStride words
  float* logits;           ///< kChunk rows of tc::kClasses
};
static_assert(kChunk * tc::kFc1OutStride * 4 <= static_cast<int>(sizeof(GroupTiles::raw)), "fc1_out fits in raw");
static_assert(kChunk * (tc::kFc2OutStride + tc::kClasses) * 4 <= static_cast<int>(sizeof(GroupTiles::raw)),
              "fc2_out and the logits fit in raw");
__device__ __forceinline__ FcScratch fc_scratch(Tiles& tiles) {
  auto* second = reinterpret_cast<std::uint32_t*>(tiles.group[kGroups - 1].raw);
  return {reinterpret_cast<std::uint32_t*>(tiles.group[0].raw), second,
          reinterpret_cast<float*>(second + kChunk * tc::kFc2OutStride)};
}

/// The octet's images (FP32, in raw) -> conv1's B (FP16, x1). One thread per (image row, image):
/// the row's seven float4 are loaded once and give the seven 16-byte entries of that row (each
/// entry: columns 4q - 2 .. 4q + 5). The eight images of a quarter warp write one 128-byte
/// position. The padding rows (planes' first and last rows) stay zero from the kernel's start.
__device__ __forceinline__ void stage_octet(GroupTiles& gt, int in_group) {
  for (int task = in_group; task < kImages * tc::kImageSide; task += 128) {
    const int image = task % kImages, y = task / kImages;
    const float4* row = reinterpret_cast<const float4*>(gt.raw + image * kRawFloats + y * tc::kImageSide);
    float4 v[kX1Quads];
#pragma unroll
    for (int q = 0; q < kX1Quads; ++q) v[q] = row[q];
    const int padded = y + 2;
    uint4* dst = gt.x1 + (padded % 2) * (kX1PlaneBytes / 16) + (padded / 2) * kX1Quads * kImages + image;
#pragma unroll
    for (int q = 0; q < kX1Quads; ++q) {
      const float2 left = q > 0 ? make_float2(v[q - 1].z, v[q - 1].w) : make_float2(0.0f, 0.0f);
      const float2 right = q < kX1Quads - 1 ? make_float2(v[q + 1].x, v[q + 1].y) : make_float2(0.0f, 0.0f);
      dst[q * kImages] = make_uint4(tc::pack_half2(left.x, left.y), tc::pack_half2(v[q].x, v[q].y),
                                    tc::pack_half2(v[q].z, v[q].w), tc::pack_half2(right.x, right.y));
    }
  }
}

/// Bias + max over the pooling rows + ReLU of accumulator column pair j (images 2t, 2t + 1), as
/// FP16: rows g and g + 8 in the thread (max in FP32, then the bias), then the lane 4 away (g xor
/// 1) by one shuffle of both images as a half2. Both lanes of the pair then hold the result; the
/// one with g even returns image 2t, the odd one image 2t + 1, so that every lane stores one value.
/// Bit for bit relu(max(x) + b) rounded to FP16, as if each x + b were rounded first: rounding is
/// monotonic, and max(x + b) = max(x) + b in floating point too. The ReLU comes with the
/// conversion (cvt.rn.relu, a clamp at 0, and relu(max) = max(relu)): 9 instructions a column
/// pair instead of 12 (four adds, two conversions, three max), ~400 fewer per warp and octet.
/// Every lane calls it (the shuffle).
__device__ __forceinline__ __half pooled(const float (&d)[kAccumulators], int j, float bias, bool odd) {
  const float lo = fmaxf(d[4 * j], d[4 * j + 2]) + bias, hi = fmaxf(d[4 * j + 1], d[4 * j + 3]) + bias;
  std::uint32_t bits;  // cvt's first source goes to the upper half: image 2t + 1
  asm("cvt.rn.relu.f16x2.f32 %0, %1, %2;" : "=r"(bits) : "f"(hi), "f"(lo));
  __half2 v = *reinterpret_cast<const __half2*>(&bits);
  v = __hmax2(v, __shfl_xor_sync(0xffffffffu, v, 4));
  return odd ? __high2half(v) : __low2half(v);
}

/// Chains 0 .. Chains - 1 of one layer with two accumulator sets: chain c + 1 is issued before
/// chain c's epilogue, so that the tensor cores work while the warps pool and store. Fully
/// unrolled, so that every position in the epilogues is a constant (no divisions at run time).
/// issue(c, d): the k-steps of chain c into d; epilogue(c, d): its results; during(): other work
/// for the warps while the first chain runs.
template <int Chains, typename Issue, typename Epilogue, typename During>
__device__ __forceinline__ void run_chains(const Issue& issue, const Epilogue& epilogue, const During& during) {
  float d[2][kAccumulators];
  wgmma_fence();
  issue(0, d[0]);
  wgmma_commit();
  during();
#pragma unroll
  for (int c = 0; c < Chains; ++c) {
    if (c + 1 < Chains) {
      wgmma_fence();
      issue(c + 1, d[(c + 1) % 2]);
      wgmma_commit();
      wgmma_wait<1>();
    } else {
      wgmma_wait<0>();
    }
    fence_registers(d[c % 2]);
    epilogue(c, d[c % 2]);
  }
}

/// conv1 + bias + ReLU + pool for the octet in gt.x1 -> gt.pool1. a1: this thread's A fragments.
__device__ __forceinline__ void conv1_relu_pool(GroupTiles& gt, const std::uint32_t (&a1)[kConv1KSteps][4], float bias,
                                                int g, int t) {
  const std::uint32_t x1 = smem_address(gt.x1);
  // This thread's channel 2w + g / 4, image 2t + g % 2 and half dxhi of the pooled column pair.
  __half* pool1 = reinterpret_cast<__half*>(gt.pool1) + ((g / 2) % 2) * (kP1PlaneBytes / 2) + (2 * t + g % 2) * 8 +
                  2 * (static_cast<int>(threadIdx.x) % 128 / 32) + g / 4;
  run_chains<kConv1Chains>(
      [&](int chain, float (&d)[kAccumulators]) {
#pragma unroll
        for (int s = 0; s < kConv1KSteps; ++s)
          mma_64x88x16(d, a1[s],
                       descriptor(x1 + (kPositions * chain + kX1Quads * s) * kCoreBytes, kX1PlaneBytes, kCoreBytes),
                       s > 0);
      },
      [&](int chain, const float (&d)[kAccumulators]) {
#pragma unroll
        for (int j = 0; j < kPositions; ++j) {
          const int pos = kPositions * chain + j, py = pos / kX1Quads, q = pos % kX1Quads;
          const __half v = pooled(d, j, bias, g % 2 != 0);
          // pool1 pixel (py, 2q + dxhi) -> plane (py % 2, dxhi), position (py / 2, q).
          if (pos < kConv1Positions)
            pool1[((py % 2) * 2 * kP1PlaneBytes + ((py / 2) * kP1Pitch + q) * kCoreBytes) / 2] = v;
        }
      },
      [] {});
}

/// conv2 + bias + ReLU + pool for gt.pool1 -> the octet's rows of pool2 (rung 12's layout: half
/// 16p + channel of image row i for pooled pixel p); during(): run while the first chain computes.
template <typename During>
__device__ __forceinline__ void conv2_relu_pool(GroupTiles& gt, const std::uint32_t (&a2)[kConv2KSteps][4], float bias,
                                                std::uint32_t* pool2_rows, int g, int t, const During& during) {
  const std::uint32_t planes = smem_address(gt.pool1);
  // This thread's image 2t + g % 2 and channel 4w + g / 2.
  __half* pool2 = reinterpret_cast<__half*>(pool2_rows) + (2 * t + g % 2) * 2 * tc::kPool2Stride +
                  4 * (static_cast<int>(threadIdx.x) % 128 / 32) + g / 2;
  run_chains<kConv2Chains>(
      [&](int chain, float (&d)[kAccumulators]) {
#pragma unroll
        for (int s = 0; s < kConv2KSteps; ++s) {
          const int r = s / 3, jp = s % 3;
          mma_64x88x16(d, a2[s],
                       descriptor(planes + (r % 2) * 2 * kP1PlaneBytes +
                                      (kPositions * chain + kP1Pitch * (r / 2) + jp) * kCoreBytes,
                                  kP1PlaneBytes, kCoreBytes),
                       s > 0);
        }
      },
      [&](int chain, const float (&d)[kAccumulators]) {
#pragma unroll
        for (int j = 0; j < kPositions; ++j) {
          const int pos = kPositions * chain + j, py = pos / kP1Pitch, px = pos % kP1Pitch;
          const __half v = pooled(d, j, bias, g % 2 != 0);
          if (py < kPool2Side && px < kPool2Side) pool2[16 * (kPool2Side * py + px)] = v;
        }
      },
      during);
}

/// One fully connected layer for MTiles m-tiles of a chunk -- rung 12's fully_connected() with
/// two changes: a warp's job is an n-tile for all m-tiles, so its mma.sync chains are independent
/// (MTiles times the work in flight per warp) and each weight fragment is loaded once for up to 80
/// images; and each A fragment comes in one ldmatrix.x4 instead of four 32-bit shared loads
/// (measured in the same run: 0.0476 against 0.0481 ms for 10,000 images, 0.0126 against 0.0133
/// for one). Rows past the chunk's count are computed from stale rows and dropped.
template <int KSTEPS, int NTILES, int MTiles, typename Epilogue>
__device__ __forceinline__ void fully_connected_chunk(const std::uint32_t* in, int in_stride, const uint2* frags,
                                                      const float* bias, int warp, int g, int t, int lane,
                                                      Epilogue epilogue) {
  // ldmatrix: lane l gives the address of row l % 8 of matrix l / 8; matrices 0..3 are (rows 0-7,
  // k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15): a[0..3] of mma.sync.
  // Rows are 16-byte aligned (strides 204, 68, 52 words), and 8 rows hit 8 different 4-bank groups.
  const std::uint32_t rows = smem_address(in + (lane % 8 + 8 * (lane / 8 % 2)) * in_stride + 4 * (lane / 16));
  for (int nt = warp; nt < NTILES; nt += tc::kWarps) {
    const int col = 8 * nt + 2 * t;
    const float bias_lo = __ldg(bias + col), bias_hi = __ldg(bias + col + 1);
    const uint2* b = frags + nt * KSTEPS * 32 + lane;
    float acc[MTiles][4] = {};
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      const uint2 frag = __ldg(b + ks * 32);
#pragma unroll
      for (int mt = 0; mt < MTiles; ++mt) {
        std::uint32_t a[4];
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                     : "r"(rows + 4u * static_cast<unsigned>(16 * mt * in_stride + 8 * ks)));
        tc::mma_16x8x16(acc[mt], a, frag);
      }
    }
#pragma unroll
    for (int mt = 0; mt < MTiles; ++mt) {
      epilogue(16 * mt + g, col, acc[mt][0] + bias_lo, acc[mt][1] + bias_hi);
      epilogue(16 * mt + g + 8, col, acc[mt][2] + bias_lo, acc[mt][3] + bias_hi);
    }
  }
}

/// fc1 -> fc2 -> fc3 of the chunk in pool2, MTiles m-tiles of it, logits into scratch.logits.
template <int MTiles>
__device__ __forceinline__ void fc_layers(Tiles& tiles, const FcScratch& scratch, const tc::Weights& fc, int tid,
                                          int g, int t, int lane) {
  const int fwarp = tid / 32;
  fully_connected_chunk<tc::kFc1KSteps, tc::kFc1NTiles, MTiles>(
      tiles.pool2, tc::kPool2Stride, fc.fc1, fc.fc1_bias, fwarp, g, t, lane, [&](int row, int col, float lo, float hi) {
        scratch.fc1_out[row * tc::kFc1OutStride + col / 2] = tc::pack_half2(tc::relu(lo), tc::relu(hi));
      });
  __syncthreads();
  fully_connected_chunk<tc::kFc2KSteps, tc::kFc2NTiles, MTiles>(
      scratch.fc1_out, tc::kFc1OutStride, fc.fc2, fc.fc2_bias, fwarp, g, t, lane,
      [&](int row, int col, float lo, float hi) {
        scratch.fc2_out[row * tc::kFc2OutStride + col / 2] = tc::pack_half2(tc::relu(lo), tc::relu(hi));
      });
  __syncthreads();
  fully_connected_chunk<tc::kFc3KSteps, tc::kFc3NTiles, MTiles>(
      scratch.fc2_out, tc::kFc2OutStride, fc.fc3, fc.fc3_bias, fwarp, g, t, lane,
      [&](int row, int col, float lo, float hi) {
        if (col < tc::kClasses) {
          scratch.logits[row * tc::kClasses + col] = lo;
          scratch.logits[row * tc::kClasses + col + 1] = hi;
        }
      });
}

/// The whole network; block b classifies images [b * per_block, min(n, (b + 1) * per_block)) in
/// chunks of 80 = ten octets (10,000 images: one chunk per block). Warpgroup G takes octets G, G + 2, ... of the block's range in
/// order; the next one is on its way in by bulk copy while the present one is computed.
/// conv_a: both layers' A fragments (a_fragment_index()); fc: rung 12's fragments and biases.
__global__ void __launch_bounds__(kThreads, 1)
    lenet_wgmma(const float* __restrict__ images, int n, int per_block, const uint4* __restrict__ conv_a,
                tc::Weights fc, float* __restrict__ logits, int* __restrict__ labels) {
#if COURSE_WGMMA_DEVICE
  extern __shared__ uint4 shared_raw[];
  Tiles& tiles = *reinterpret_cast<Tiles*>(shared_raw);
  const int tid = static_cast<int>(threadIdx.x);
  const int group = tid / 128, in_group = tid % 128, warp = in_group / 32;
  const int lane = tid % 32, g = lane / 4, t = lane % 4;
  GroupTiles& mine = tiles.group[group];
  std::uint64_t* bar = &tiles.bars[group];

  const int first = static_cast<int>(blockIdx.x) * per_block;
  const int end = min(n, first + per_block);
  const auto fetch = [&](int k) {  // this group's k-th octet -> mine.raw
    const int start = first + kImages * (group + kGroups * k);
    if (in_group != 0 || start >= end) return;
    const int count = min(kImages, end - start);
    barrier_expect_bytes(bar, static_cast<unsigned>(count * kImageBytes));
    for (int i = 0; i < count; ++i)
      bulk_copy(mine.raw + i * kRawFloats, images + static_cast<std::size_t>(start + i) * tc::kImagePixels,
                kImageBytes, bar);
  };
  // The first octet's images are on their way before anything else: each group's fetching thread
  // sets up its own barrier, so no block barrier stands before the copy. The other threads wait on
  // the barrier only after the __syncthreads below.
  if (in_group == 0) {
    barrier_init(bar, 1);
    fence_proxy_async();  // the barrier, before the copy engine sees it
  }
  fetch(0);
  tc::prefetch_to_l2(fc.fc1, tc::fragment_bytes<tc::kFc1KSteps, tc::kFc1NTiles>());
  tc::prefetch_to_l2(fc.fc2, tc::fragment_bytes<tc::kFc2KSteps, tc::kFc2NTiles>());
  tc::prefetch_to_l2(fc.fc3, tc::fragment_bytes<tc::kFc3KSteps, tc::kFc3NTiles>());
  std::uint32_t a1[kConv1KSteps][4], a2[kConv2KSteps][4];
#pragma unroll
  for (int s = 0; s < kConv1KSteps; ++s) {
    const uint4 f = __ldg(conv_a + a_fragment_index(1, s, in_group));
    a1[s][0] = f.x, a1[s][1] = f.y, a1[s][2] = f.z, a1[s][3] = f.w;
  }
#pragma unroll
  for (int s = 0; s < kConv2KSteps; ++s) {
    const uint4 f = __ldg(conv_a + a_fragment_index(2, s, in_group));
    a2[s][0] = f.x, a2[s][1] = f.y, a2[s][2] = f.z, a2[s][3] = f.w;
  }
  const float conv1_bias = fc.conv1_bias[2 * warp + g / 4], conv2_bias = fc.conv2_bias[4 * warp + g / 2];
  // Only what is read before anything writes it is zeroed: the padding rows of x1 (rows 0 and 15
  // of both row-parity planes: padded rows 0, 1, 30, 31) and the position after them. pool1 is
  // rewritten whole by every conv1, pool2's rows by conv2 (rows of missing images are stale and
  // give dropped results: every row and column of these products is independent of the others).
  for (int i = tid; i < kGroups * (4 * kX1Quads * kImages + kImages); i += kThreads) {
    const int per_group = 4 * kX1Quads * kImages + kImages, row = i % per_group;
    uint4* x1 = tiles.group[i / per_group].x1;
    const int plane = row / (2 * kX1Quads * kImages) % 2, side = row / (kX1Quads * kImages) % 2;
    x1[row < 4 * kX1Quads * kImages
           ? plane * (kX1PlaneBytes / 16) + side * (kX1PlaneRows - 1) * kX1Quads * kImages + row % (kX1Quads * kImages)
           : kX1Bytes / 16 - kImages + row % kImages] = make_uint4(0u, 0u, 0u, 0u);
  }
  fence_proxy_async();  // the zeros, before the tensor cores see them
  __syncthreads();      // ... and the barriers initialised, before anyone waits on them

  // Each octet is staged (x1 from raw) while conv2 of the one before runs on the tensor cores;
  // the first one before the loop.
  const auto has = [&](int k) { return first + kImages * (group + kGroups * k) < end; };
  if (has(0)) {
    barrier_wait(bar, 0);
    stage_octet(mine, in_group);
  }
  int k = 0;  // octets this group has done
  for (int chunk = first; chunk < end; chunk += kChunk) {
    const int count = min(kChunk, end - chunk);
    for (int octet = group; octet * kImages < count; octet += kGroups, ++k) {
      fence_proxy_async();
      group_sync(group);  // x1 holds octet k; raw read by everyone
      fetch(k + 1);
      conv1_relu_pool(mine, a1, conv1_bias, g, t);
      fence_proxy_async();
      group_sync(group);  // pool1 complete, and conv1's wgmma are done with x1
      conv2_relu_pool(mine, a2, conv2_bias, tiles.pool2 + octet * kImages * tc::kPool2Stride, g, t, [&] {
        if (has(k + 1)) {
          barrier_wait(bar, static_cast<unsigned>((k + 1) & 1));
          stage_octet(mine, in_group);
        }
      });
      // The next octet's conv1 rewrites pool1 only after the next group barrier.
    }
    __syncthreads();  // pool2 complete; the staging buffers are free (FcScratch)

    const FcScratch scratch = fc_scratch(tiles);
    // The padding columns the next layer reads: fc1_out's 120 .. 127, fc2_out's 88 .. 95.
    for (int i = tid; i < kChunk * 8; i += kThreads) {
      const int row = i / 8, word = i % 8;
      if (word < 4)
        scratch.fc1_out[row * tc::kFc1OutStride + 60 + word] = 0u;
      else
        scratch.fc2_out[row * tc::kFc2OutStride + 40 + word] = 0u;
    }
    // A chunk of at most 16 images (one image, the tail of a batch) needs one m-tile, not five.
    if (count > 16)
      fc_layers<kChunkMTiles>(tiles, scratch, fc, tid, g, t, lane);
    else
      fc_layers<1>(tiles, scratch, fc, tid, g, t, lane);
    __syncthreads();
    for (int i = tid; i < count * tc::kClasses; i += kThreads)
      logits[static_cast<std::size_t>(chunk) * tc::kClasses + i] = scratch.logits[i];
    if (tid < count) {
      const float* row = scratch.logits + tid * tc::kClasses;
      int best = 0;
      for (int c = 1; c < tc::kClasses; ++c)
        if (row[c] > row[best]) best = c;
      labels[chunk + tid] = best;
    }
    // The next chunk's convolutions rewrite pool2, and the copy engine the staging buffers: these
    // threads' accesses to them, before the fetching thread's next bulk copy (another proxy).
    fence_proxy_async();
    __syncthreads();
  }
#else
  (void)images, (void)n, (void)per_block, (void)conv_a, (void)fc, (void)logits, (void)labels;
  __trap();  // not the sm_90a build: the rung refuses to run before it gets here
#endif
}

}  // namespace ladder::wgmma
