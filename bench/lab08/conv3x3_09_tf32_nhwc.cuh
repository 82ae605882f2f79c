// Version 9 of lab08_conv3x3: the TF32 implicit GEMM of version 8 reading a channels-last (NHWC)
// copy of the input, so that every operand reaches shared memory in 16-byte copies.
//
// Version 8 stops near 100 TFLOP/s at batch 256. Its profile (ncu, H100) points at the B gather,
// not at the tensor cores: in NCHW the 36 rows of a slice (4 channels x 9 taps) of one output pixel
// are 36 floats at 36 scattered addresses, so the gather is 36 four-byte cp.async per pixel and
// slice (L1/TEX waits dominate the stalls), and 9 taps x B_PIX pixels of pointers and masks cost
// registers (a 52-byte spill). Version 9 changes the data's order, not the arithmetic:
//
//   1. The input goes NCHW -> NHWC first (one transpose kernel through a 32 x 32 shared tile, both
//      sides coalesced), rounding to TF32 on the way, so the main loop needs no rounding add at all.
//      This pass is part of v9's timed row, and its time is in the row's note: our NCHW in -> NCHW
//      out against cuDNN's NCHW in -> NCHW out. cuDNN does the same internally: its TF32
//      IMPLICIT_PRECOMP_GEMM asks for a workspace the size of input + output + filter (e.g. 100.3
//      MiB at 14x14x256, batch 256 = 49 + 49 + 2.25 MiB), i.e. it transposes to NHWC and back.
//      The weights are reordered once per model to [K][r][s][C] (and rounded to TF32), like v8's
//      rounding and v5's filter transform: timed in the note, not in the row.
//   2. A k slice is 32 channels of one tap (r, s), GEMM row kk = (r*3 + s)*C + c. For one output
//      pixel those 32 floats are contiguous in NHWC: 128 bytes, 8 cp.async of 16 bytes (zero-filled
//      where the tap falls in the padding). A thread copies one 16-byte chunk of 4 pixels (B) and
//      of 4 weight rows (A) per slice: 8 cp.async per thread for a 128 x 128 x 32 slice, where v8
//      issues 18 four-byte B copies and 4 or 5 sixteen-byte A copies for 128 x 128 x 36. The
//      per-pixel state is an offset and (h0, w0): no spill.
//   3. Tiles of 32-float (128-byte) rows swizzled instead of padded: 16-byte chunk c of row r is
//      stored at chunk c ^ (r % 8). The 8 lanes of a cp.async phase (one row, chunks 0..7) and the
//      8 rows of an ldmatrix phase (one chunk, rows r..r+7) both hit 8 different 16-byte bank
//      groups. ldmatrix gives the m16n8k8 fragments as in v8 (B stored n-major).
//   4. The epilogue goes through shared memory: the accumulators are staged as a [BM][BN + 8] tile
//      (conflict-free float2 stores), then each warp writes 32 consecutive pixels of one output
//      channel per instruction, 128-byte coalesced NCHW stores instead of v8's 8 rows x 8 bytes.
//   5. Split-K for small grids: with 7 x 7 or 14 x 14 stride-2 outputs at batch 32 there are only
//      13 column tiles of 128, 52 blocks of 128 x 128 for 132 SMs (98 at 14 x 14 x 256 and at
//      28 x 28 x 256 stride 2). The slices are then split among
//      `splits` blocks (grid.z) whose partial sums are added with atomicAdd into y, zeroed first
//      (the memset is in the timed row). Summation order differs run to run (FP32 rounding only).
//
// The block tile (128 x 128, or 64 x 128 for K = 64; 8 warps) and the split follow the shape
// (v9_config). Shared memory: 3 stages x (BM + BN) x 32 floats = 96 KiB at 128 x 128: two blocks
// per H100 SM. Every configuration is checked against the CPU in the program (batch 2).
//
// Measured on an H100 80GB HBM3 (cuDNN 9.14; bench/results/lab08_conv3x3_h100_80gb_hbm3.txt, one
// run, batch 32 and 256, the transform included): 75.4 to 184.6 TFLOP/s where v8 ran 38.6 to
// 101.3 in the same run (1.04 to 2.50 times v8's speed), and 0.73 to 1.70 of cuDNN's fastest
// tensor-op row, i.e. within 1.5x of it on all 14 rows (v8: 8 of 14). The transform is 8 to 46 %
// of the row (0.2924 of 0.6297 ms at 56x56x128 stride 2, batch 256: 411 MB read and written).
// ncu on 7x7x512 and 14x14x512 stride 2, batch 256 (clocks locked by the profiler): no spill, 127
// registers, 2 blocks (16 warps) per SM, an instruction issued on 32-33 % of the scheduler cycles,
// L1/TEX (ldmatrix + cp.async) 69-71 % busy, L2 48-61 %, DRAM 7-46 %; and 392 blocks for 264
// slots, 1.48 waves: the tail, a warp-specialised wgmma/TMA kernel or larger tiles are what is left.
// Development sweep (same H100, a scratch harness timing the kernels alone): a 4-stage ring
// (LAB08_V9_STAGES=4) was slower with 128 x 128 tiles, which then fit one block per SM (by up to
// 12 % on the configurations v9_config picks), and 4 to 6 % faster with 64 x 128 tiles (still two
// blocks per SM; 56x56x64). The knob stays at 3 for both: a per-tile depth is untried.
#pragma once

#include <cstdint>

#include "conv3x3_08_tf32_mma_ldmatrix.cuh"

namespace lab08 {

// Experiment knob (compile-time), as version 8's: the depth of the cp.async ring.
#ifndef LAB08_V9_STAGES
#define LAB08_V9_STAGES 3
#endif
constexpr int kV9Threads = 256, kV9BK = 32, kV9Stages = LAB08_V9_STAGES;

/// Rounds to TF32 (nearest, ties away from zero; the low 13 bits cleared), as round_to_tf32.
__device__ __forceinline__ float tf32_rounded(float v) { return __uint_as_float((__float_as_uint(v) + 0x1000u) & ~0x1fffu); }

/// x (N x C x HW, NCHW) -> xn (N x HW x C, NHWC), rounded to TF32. Block (32, 8) transposes a 32
/// channel x 32 pixel tile of one image: reads along pixels, writes along channels, both coalesced.
/// Grid (ceil(HW / 32), ceil(C / 32), N).
__global__ void nchw_to_nhwc_tf32(const float* __restrict__ x, float* __restrict__ xn, int C, int HW) {
  __shared__ float tile[32][33];  // +1: the column reads of the second phase hit 32 different banks
  const long long image = (long long)blockIdx.z * C * HW;
  const int p0 = blockIdx.x * 32, c0 = blockIdx.y * 32, tx = threadIdx.x;
#pragma unroll
  for (int i = threadIdx.y; i < 32; i += 8) {
    const int c = c0 + i, p = p0 + tx;
    if (c < C && p < HW) tile[i][tx] = x[image + (long long)c * HW + p];
  }
  __syncthreads();
#pragma unroll
  for (int i = threadIdx.y; i < 32; i += 8) {
    const int p = p0 + i, c = c0 + tx;
    if (c < C && p < HW) xn[image + (long long)p * C + c] = tf32_rounded(tile[tx][i]);
  }
}

/// w (K x C x 3 x 3) -> wr (K x 3 x 3 x C), rounded to TF32: once per model.
__global__ void reorder_weights_tf32(const float* __restrict__ w, float* __restrict__ wr, int K, int C) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // index into wr
  if (i >= (long long)K * C * 9) return;
  const int c = int(i % C);
  const long long rest = i / C;
  const int tap = int(rest % 9);
  const long long k = rest / 9;
  wr[i] = tf32_rounded(w[(k * C + c) * 9 + tap]);
}

template <int BM, int BN>
struct V9Smem {
  static constexpr int A_STAGE = BM * kV9BK, B_STAGE = BN * kV9BK;  // floats
  static constexpr int PIPE = kV9Stages * (A_STAGE + B_STAGE);
  static constexpr int LDC = BN + 8;  // epilogue tile: float2 stores of a half warp hit 32 banks
  static constexpr int EPI = BM * LDC;
  static constexpr int BYTES = (PIPE > EPI ? PIPE : EPI) * int(sizeof(float));
};

/// Offset (floats) of 16-byte chunk `chunk` of row `row` in a tile of 32-float rows, swizzled.
__device__ __forceinline__ int v9_swizzle(int row, int chunk) { return row * kV9BK + ((chunk ^ (row & 7)) * 4); }

/// y = conv(x, w), x given as xn (NHWC, TF32-rounded), w as wr ([K][3][3][C], TF32-rounded).
/// Requires C % 32 == 0. splits > 1: grid.z blocks share the slices, y must be zeroed first.
template <int BM, int BN>
__global__ void __launch_bounds__(kV9Threads, 2)
    conv_tf32_nhwc(const float* __restrict__ wr, const float* __restrict__ xn, float* __restrict__ y, Shape s,
                   int splits) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int BK = kV9BK, STAGES = kV9Stages, WARPS_M = 2, WARPS_N = 4;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N, MT = WM / 16, NT = WN / 8;
  static_assert(WM % 16 == 0 && WN % 16 == 0, "whole m16 tiles and pairs of n8 tiles per warp");
  static_assert(BM % 32 == 0 && BN % 32 == 0, "a pass of 256 threads copies 32 rows of 8 chunks");
  using L = V9Smem<BM, BN>;

  extern __shared__ __align__(16) float smem[];  // the same declaration as versions 7 and 8
  float* const As = smem;                        // STAGES x [BM][32], swizzled
  float* const Bs = smem + STAGES * L::A_STAGE;  // STAGES x [BN][32], n-major, swizzled

  const int M = s.K, C = s.C, H = s.H, W = s.W, P = s.P(), Q = s.Q(), PQ = P * Q;
  const int kdim = 9 * C, ncols = s.N * PQ;
  const int m0 = blockIdx.y * BM, j0 = blockIdx.x * BN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;

  // This block's slices: [kt0, kt1) of 9 * C / 32, in the order tap-major, channel-minor.
  const int total = 9 * (C / BK);
  const int kt0 = int((long long)total * blockIdx.z / splits), kt1 = int((long long)total * (blockIdx.z + 1) / splits);
  const int num_slices = kt1 - kt0;

  // Copies: thread tid moves chunk tid % 8 of rows tid / 8 + 32 i (A: weight rows, B: pixels).
  const int ch = tid % 8, row0 = tid / 8;
  constexpr int A_ITERS = BM / 32, B_ITERS = BN / 32;
  const int dst_off = v9_swizzle(row0, ch);  // rows row0 + 32 i share row0 % 8: same swizzle
  const float* const a_src = wr + (long long)(m0 + row0) * kdim + ch * 4;
  bool a_ok[A_ITERS];
#pragma unroll
  for (int i = 0; i < A_ITERS; ++i) a_ok[i] = m0 + row0 + 32 * i < M;
  int b_off[B_ITERS], b_h0[B_ITERS], b_w0[B_ITERS];  // NHWC offset of (n, h0, w0, 0); window corner
#pragma unroll
  for (int i = 0; i < B_ITERS; ++i) {
    const int j = j0 + row0 + 32 * i;
    b_off[i] = 0, b_h0[i] = -4, b_w0[i] = 0;  // past the last column: every tap "in the padding"
    if (j < ncols) {
      const int n = j / PQ, rest = j - n * PQ, p = rest / Q, q = rest - p * Q;
      b_h0[i] = p * s.stride - 1, b_w0[i] = q * s.stride - 1;
      b_off[i] = ((n * H + b_h0[i]) * W + b_w0[i]) * C + ch * 4;
    }
  }

  // The next slice to copy, as (tap r, s; channel c0), advanced one slice per load.
  int ld_r, ld_s, ld_c0;
  {
    const int tap = kt0 / (C / BK);
    ld_r = tap / 3, ld_s = tap % 3, ld_c0 = (kt0 - tap * (C / BK)) * BK;
  }
  auto load_slice = [&](int stage) {
    float* const a_dst = As + stage * L::A_STAGE + dst_off;
    const int kofs = (ld_r * 3 + ld_s) * C + ld_c0;
#pragma unroll
    for (int i = 0; i < A_ITERS; ++i) cp_async_16(a_dst + i * 32 * BK, a_src + (long long)i * 32 * kdim + kofs, a_ok[i]);
    float* const b_dst = Bs + stage * L::B_STAGE + dst_off;
    const int tap_off = (ld_r * W + ld_s) * C + ld_c0;
#pragma unroll
    for (int i = 0; i < B_ITERS; ++i) {
      const bool ok = unsigned(b_h0[i] + ld_r) < unsigned(H) && unsigned(b_w0[i] + ld_s) < unsigned(W);
      cp_async_16(b_dst + i * 32 * BK, xn + (ok ? b_off[i] + tap_off : 0), ok);
    }
    ld_c0 += BK;
    if (ld_c0 == C) {
      ld_c0 = 0;
      if (++ld_s == 3) ld_s = 0, ++ld_r;
    }
  };

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // ldmatrix rows of this lane. A (x4): matrix l/8 = rows +8 if odd, k +4 (next chunk) if l >= 16.
  // B (x4, n-major): matrix l/8 = k +4 if odd, n +8 (next n8 tile) if l >= 16. Row % 8 = lane % 8.
  const unsigned smem_base = unsigned(__cvta_generic_to_shared(smem));
  const int r8 = lane % 8, odd = (lane / 8) & 1, hi = lane / 16;
  const int a_row = wm * WM + r8 + odd * 8, b_row = wn * WN + r8 + hi * 8;
  const unsigned a_lane = smem_base + 4u * unsigned(a_row * BK);
  const unsigned b_lane = smem_base + 4u * unsigned(STAGES * L::A_STAGE + b_row * BK);

#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < num_slices) load_slice(st);
    cp_async_commit();
  }

  for (int kt = 0; kt < num_slices; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (kt + STAGES - 1 < num_slices) load_slice((kt + STAGES - 1) % STAGES);
    cp_async_commit();

    const int stage = kt % STAGES;
    const unsigned a_st = a_lane + 4u * unsigned(stage * L::A_STAGE), b_st = b_lane + 4u * unsigned(stage * L::B_STAGE);
#pragma unroll
    for (int ks = 0; ks < BK / 8; ++ks) {
      const unsigned a_chunk = 16u * unsigned((2 * ks + hi) ^ r8), b_chunk = 16u * unsigned((2 * ks + odd) ^ r8);
      uint32_t fa[MT][4], fb[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) ldsm_x4(fa[i], a_st + 4u * unsigned(i * 16 * BK) + a_chunk);
#pragma unroll
      for (int jp = 0; jp < NT / 2; ++jp) {
        uint32_t r[4];
        ldsm_x4(r, b_st + 4u * unsigned(jp * 16 * BK) + b_chunk);
        fb[2 * jp][0] = r[0], fb[2 * jp][1] = r[1], fb[2 * jp + 1][0] = r[2], fb[2 * jp + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_m16n8k8_tf32(acc[i][j], fa[i], fb[j]);
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the ring: the epilogue tile reuses it

  // Epilogue 1: accumulators -> Cs[BM][LDC] (c0, c1 = row g, columns 2t, 2t+1; c2, c3 = row g + 8).
  float* const Cs = smem;
  constexpr int LDC = L::LDC;
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int row = wm * WM + i * 16 + g, col = wn * WN + j * 8 + 2 * t;
      *reinterpret_cast<float2*>(Cs + row * LDC + col) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(Cs + (row + 8) * LDC + col) = make_float2(acc[i][j][2], acc[i][j][3]);
    }
  __syncthreads();

  // Epilogue 2: warp w writes rows w, w + 8, ...; lane l the columns l + 32 q: 32 consecutive pixels
  // of one output channel per store (contiguous in NCHW except where an image ends).
  constexpr int QN = BN / 32;
  long long out_off[QN];
#pragma unroll
  for (int q = 0; q < QN; ++q) {
    const int j = j0 + lane + 32 * q;
    out_off[q] = -1;
    if (j < ncols) {
      const int n = j / PQ;
      out_off[q] = (long long)n * M * PQ + (j - n * PQ);
    }
  }
  for (int r = warp; r < BM && m0 + r < M; r += kV9Threads / 32) {
    const long long m_off = (long long)(m0 + r) * PQ;
#pragma unroll
    for (int q = 0; q < QN; ++q)
      if (out_off[q] >= 0) {
        const float v = Cs[r * LDC + lane + 32 * q];
        if (splits > 1) atomicAdd(y + out_off[q] + m_off, v);
        else y[out_off[q] + m_off] = v;
      }
  }
#else
  (void)wr, (void)xn, (void)y, (void)s, (void)splits;
#endif
}

/// Version 9's launch configuration: block tile rows (128 or 64; always 128 columns) and split-K.
struct V9Config {
  int bm, splits;
};

/// 128 x 128 blocks (64 x 128 when K = 64, where half of a 128-row tile would be padding), and
/// split-K by 4 when the grid has fewer blocks than the GPU has SMs. Chosen from a sweep of every
/// tile x split 1..4 on the 14 rows of batch 32 and 256 (H100): split 4 was the fastest wherever
/// 128 x 128 left SMs without a block (52 or 98 blocks for 132 SMs: 7x7x512, 14x14x256 and the two
/// deep stride-2 layers at batch 32, 0.0632 against 0.0665 ms unsplit at 14x14x256), and slower
/// everywhere else; split 2 or 3 was best only once (28x28x128, batch 32, by 4 %): 196 or 294
/// blocks leave the busiest SM with about as many slices as before, plus the memset and the
/// atomics. 64 x 128 lost to 128 x 128 wherever K > 64.
inline V9Config v9_config(const Shape& s, int sm_count) {
  const int bm = s.K > 64 ? 128 : 64;
  const long long blocks = ((s.gemm_n() + 127) / 128) * ((s.K + bm - 1) / bm);
  return {bm, blocks < sm_count ? 4 : 1};
}

}  // namespace lab08
