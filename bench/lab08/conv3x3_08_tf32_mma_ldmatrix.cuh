// Version 8 of lab08_conv3x3: version 7's pipelined TF32 implicit GEMM with its fragments loaded by
// ldmatrix, weights rounded to TF32 once per model, and a 64 x 128 block tile.
//
// Version 7 stays near 95 TFLOP/s at batch 256 whatever the layer, about a third of mma.sync's own
// rate. Its main loop gives every operand register its own 4-byte shared-memory load and its own
// rounding add: per thread and 36-deep slice, 108 LDS.32 and 108 IADD for 80 mma (128 x 128 tile).
// Version 8 changes four things and keeps the rest (the cp.async ring of 3 stages, 36-row slices of
// 4 whole channels, the epilogue from registers straight to NCHW):
//
//   1. ldmatrix.sync.aligned.m8n8.x4.shared.b16 (sm_75+) loads four 8 x 8 matrices of 16-bit
//      elements, i.e. four 8 x 4 blocks of 32-bit words, lane l giving the address of one 16-byte
//      row (matrix l / 8, row l % 8) and receiving from each matrix the word at row l / 4, column
//      l % 4. With g = l / 4, t = l % 4 that is exactly the TF32 m16n8k8 A fragment when the four
//      matrices are A's rows 0-7 and 8-15 at columns 0-3 and 4-7 (a0 = A[g][t], a1 = A[g+8][t],
//      a2 = A[g][t+4], a3 = A[g+8][t+4]). For B (b0 = B[t][g], b1 = B[t+4][g]) the rows must be
//      B's columns: so B's tile is stored n-major, Bs[n][k] (the im2col matrix transposed), and one
//      ldmatrix.x4 yields b0 and b1 of two neighbouring n8 tiles. One instruction replaces four
//      LDS.32: per thread and slice 30 ldmatrix instead of 108 LDS.
//   2. The weights are rounded to TF32 once per layer (once per model in a real network, like
//      version 5's filter transform; the row's note gives its time, which is not in the row), so
//      only B's registers need the rounding add: 36 IADD per slice instead of 108.
//   3. The block tile follows the shape: 128 x 128 where that gives every SM a block, else 64 x 128
//      (K = 64, where half of a 128-row tile was padding, and the batch-32 layers of 256 channels),
//      else 64 x 64. Version 7 had only 128 x 128 and 64 x 64.
//   4. The gather writes Bs[n][c*9 + tap]: a thread owns one channel of the slice (c = tid % 4) and
//      BN / 64 pixels, so that the 32 lanes of a copy write banks 4 n + 9 c + tap mod 32, all
//      different. Both tiles have rows of 36 floats (144 bytes): the 8 row addresses of one
//      ldmatrix phase fall in 8 different 16-byte bank groups, no conflict.
//
// Shared memory: 3 stages x (BM + BN) x 36 floats: 110.6 KiB at 128 x 128, two blocks per H100 SM.
// The fragment mapping is checked by the program's CPU and reference comparisons of every tile
// configuration (a wrong mapping would fail them by far more than TF32's tolerance).
#pragma once

#include <cstdint>

#include "conv3x3_07_tf32_mma_pipelined.cuh"

namespace lab08 {

/// Four 8 x 8 b16 matrices (four 8 x 4 blocks of 32-bit words) from shared memory; `addr` is this
/// lane's row address (shared state space, 16-byte aligned).
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], unsigned addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#else
  (void)r, (void)addr;
#endif
}

/// Two matrices; the addresses of lanes 0-15 are used.
__device__ __forceinline__ void ldsm_x2(uint32_t (&r)[2], unsigned addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
#else
  (void)r, (void)addr;
#endif
}

/// Rounds the weights to TF32 (nearest, ties away from zero, low 13 bits cleared), once per layer.
__global__ void round_to_tf32(const float* __restrict__ in, float* __restrict__ out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __uint_as_float((__float_as_uint(in[i]) + 0x1000u) & ~0x1fffu);
}

constexpr int kV8Threads = 256, kV8ChannelsPerSlice = 4, kV8BK = kV8ChannelsPerSlice * 9;

// Experiment knobs (compile-time): ring stages of the 128 x 128 tile and of the smaller ones, and
// whether the launch asks for just the shared memory of two blocks (leaving the rest of the SM's
// 256 KiB to the L1 cache, which the 4-byte gather copies go through) instead of all of it.
#ifndef LAB08_V8_STAGES_BIG
#define LAB08_V8_STAGES_BIG 3
#endif
#ifndef LAB08_V8_STAGES_SMALL
#define LAB08_V8_STAGES_SMALL 3
#endif
#ifndef LAB08_V8_MIN_CARVEOUT
#define LAB08_V8_MIN_CARVEOUT 0
#endif
template <int BM, int BN>
constexpr int v8_stages() { return BM == 128 ? LAB08_V8_STAGES_BIG : LAB08_V8_STAGES_SMALL; }

/// Block tiles of version 8: 0 = 128 x 128, 1 = 64 x 128, 2 = 64 x 64.
inline int v8_tile(const Shape& s, int sm_count) {
  const long long cols = s.gemm_n();
  if (s.K > 64 && ((cols + 127) / 128) * ((s.K + 127) / 128) >= sm_count) return 0;
  if (((cols + 127) / 128) * ((s.K + 63) / 64) >= sm_count) return 1;
  return 2;
}

template <int BM, int BN>
struct V8Smem {
  static constexpr int STAGES = v8_stages<BM, BN>();
  static constexpr int LD = kV8BK;  // both tiles [rows][36]: 144-byte rows, conflict-free ldmatrix
  static constexpr int A_STAGE = BM * LD, B_STAGE = BN * LD;
  static constexpr int BYTES = STAGES * (A_STAGE + B_STAGE) * int(sizeof(float));
};

/// 8 warps in a 2 x 4 grid. `w` must hold TF32-rounded weights (round_to_tf32).
template <int BM, int BN>
__global__ void __launch_bounds__(kV8Threads, 2)
    conv_tf32_mma_ldmatrix(const float* __restrict__ w, const float* __restrict__ x, float* __restrict__ y, Shape s) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int BK = kV8BK, CPS = kV8ChannelsPerSlice, STAGES = V8Smem<BM, BN>::STAGES, THREADS = kV8Threads;
  constexpr int WARPS_M = 2, WARPS_N = 4;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  constexpr int MT = WM / 16, NT = WN / 8;
  static_assert(WM % 16 == 0 && WN % 16 == 0, "whole m16 tiles and pairs of n8 tiles per warp");
  using L = V8Smem<BM, BN>;
  constexpr int LD = L::LD;

  extern __shared__ __align__(16) float smem[];
  float* const As = smem;                        // STAGES x [BM][LD]
  float* const Bs = smem + STAGES * L::A_STAGE;  // STAGES x [BN][LD]: B transposed, n-major

  const int M = s.K, kdim = s.gemm_k();
  const long long ncols = s.gemm_n();
  const int m0 = blockIdx.y * BM;
  const long long j0 = (long long)blockIdx.x * BN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int num_slices = (s.C + CPS - 1) / CPS;

  // ---- W loader (as version 7): 9 chunks of 16 bytes per row and slice, A_TPR threads per row ----
  static_assert(THREADS % BM == 0, "whole threads per row of W");
  constexpr int A_CHUNKS_PER_ROW = BK / 4, A_TPR = THREADS / BM;
  constexpr int A_ITERS = (A_CHUNKS_PER_ROW + A_TPR - 1) / A_TPR;
  const int a_row = tid / A_TPR, a_first = tid % A_TPR;
  const bool a_row_ok = m0 + a_row < M;
  const float* const a_src = w + (long long)(a_row_ok ? m0 + a_row : 0) * kdim + a_first * 4;
  const int a_dst_off = a_row * LD + a_first * 4;

  // ---- B gather: a thread owns channel b_cl of each slice and pixels b_col + 64 i, i < B_PIX ----
  static_assert(THREADS == 64 * CPS && BN % 64 == 0, "4 channels x 64 pixels per pass");
  constexpr int B_PIX = BN / 64;
  const int b_cl = tid % CPS, b_col = tid / CPS;
  const int HW = s.H * s.W;
  const float* pix[B_PIX];
  unsigned tap_mask[B_PIX];
#pragma unroll
  for (int i = 0; i < B_PIX; ++i) {
    pix[i] = x;
    tap_mask[i] = 0;
    const long long j = j0 + b_col + 64 * i;
    if (j < ncols) {
      const int P = s.P(), Q = s.Q();
      const long long pq = (long long)P * Q, n = j / pq;
      const int rest = int(j - n * pq), p = rest / Q, q = rest - p * Q;
      const int h0 = p * s.stride - 1, w0 = q * s.stride - 1;
      pix[i] = x + n * s.C * (long long)HW + (long long)h0 * s.W + w0;
#pragma unroll
      for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int t = 0; t < 3; ++t)
          if (h0 + r >= 0 && h0 + r < s.H && w0 + t >= 0 && w0 + t < s.W) tap_mask[i] |= 1u << (r * 3 + t);
    }
  }

  auto load_slice = [&](int slice, int stage) {
    const int k0 = slice * BK;
    float* const a_dst = As + stage * L::A_STAGE + a_dst_off;
#pragma unroll
    for (int i = 0; i < A_ITERS; ++i) {
      const int chunk = a_first + i * A_TPR;
      if (A_CHUNKS_PER_ROW % A_TPR != 0 && chunk >= A_CHUNKS_PER_ROW) break;
      const bool ok = a_row_ok && k0 + chunk * 4 < kdim;
      cp_async_16(a_dst + i * A_TPR * 4, a_src + k0 + i * A_TPR * 4, ok);
    }
    const int c = slice * CPS + b_cl;
    float* const b_dst = Bs + stage * L::B_STAGE + b_col * LD + b_cl * 9;
#pragma unroll
    for (int i = 0; i < B_PIX; ++i) {
      const unsigned mask = c < s.C ? tap_mask[i] : 0u;
      const float* chan = pix[i] + (long long)c * HW;
#pragma unroll
      for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int t = 0; t < 3; ++t)
          cp_async_4(b_dst + 64 * i * LD + r * 3 + t, chan + r * s.W + t, (mask >> (r * 3 + t)) & 1u);
    }
  };

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // ldmatrix row addresses of this lane (bytes, shared state space). A, x4: matrix l/8 is rows
  // +8 if l/8 is odd, columns +4 if l >= 16. B, x4 over n8 tiles 2jp, 2jp+1: matrix l/8 is
  // columns (k) +4 if l/8 is odd, rows (n) +8 if l >= 16. The k = 4 tail (x2): lanes 0-15 give
  // rows 0-7 then 8-15 (A) or tile 2jp then 2jp+1 (B), column 32.
  const unsigned smem_base = unsigned(__cvta_generic_to_shared(smem));
  const int r8 = lane % 8, odd = (lane / 8) & 1, hi = lane / 16;
  const unsigned a_lane = smem_base + 4u * unsigned((wm * WM + r8 + odd * 8) * LD + hi * 4);
  const unsigned b_lane = smem_base + 4u * unsigned(STAGES * L::A_STAGE + (wn * WN + r8 + hi * 8) * LD + odd * 4);
  const unsigned a_lane4 = smem_base + 4u * unsigned((wm * WM + r8 + odd * 8) * LD + (BK - 4));
  const unsigned b_lane4 = smem_base + 4u * unsigned(STAGES * L::A_STAGE + (wn * WN + r8 + odd * 8) * LD + (BK - 4));

#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < num_slices) load_slice(st, st);
    cp_async_commit();
  }

  for (int kt = 0; kt < num_slices; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = kt + STAGES - 1;
    if (next < num_slices) load_slice(next, next % STAGES);
    cp_async_commit();

    const int stage = kt % STAGES;
    const unsigned a_st = 4u * unsigned(stage * L::A_STAGE), b_st = 4u * unsigned(stage * L::B_STAGE);
#pragma unroll
    for (int kf = 0; kf < BK - 4; kf += 8) {
      uint32_t fa[MT][4], fb[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) ldsm_x4(fa[i], a_lane + a_st + 4u * unsigned(i * 16 * LD + kf));
#pragma unroll
      for (int jp = 0; jp < NT / 2; ++jp) {
        uint32_t r[4];
        ldsm_x4(r, b_lane + b_st + 4u * unsigned(jp * 16 * LD + kf));
        fb[2 * jp][0] = r[0] + 0x1000u, fb[2 * jp][1] = r[1] + 0x1000u;  // to_tf32's rounding add
        fb[2 * jp + 1][0] = r[2] + 0x1000u, fb[2 * jp + 1][1] = r[3] + 0x1000u;
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_m16n8k8_tf32(acc[i][j], fa[i], fb[j]);
    }
    {
      uint32_t fa[MT][2], fb[NT][1];
#pragma unroll
      for (int i = 0; i < MT; ++i) ldsm_x2(fa[i], a_lane4 + a_st + 4u * unsigned(i * 16 * LD));
#pragma unroll
      for (int jp = 0; jp < NT / 2; ++jp) {
        uint32_t r[2];
        ldsm_x2(r, b_lane4 + b_st + 4u * unsigned(jp * 16 * LD));
        fb[2 * jp][0] = r[0] + 0x1000u, fb[2 * jp + 1][0] = r[1] + 0x1000u;
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_m16n8k4_tf32(acc[i][j], fa[i], fb[j]);
    }
  }
  cp_async_wait<0>();

  const long long pq = (long long)s.P() * s.Q();
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const long long col = j0 + wn * WN + j * 8 + c_frag_col(lane, half);
      if (col >= ncols) continue;
      const long long n = col / pq, pixel = col - n * pq;
      float* out = y + n * s.K * pq + pixel;
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int e = half; e < 4; e += 2) {
          const int m = m0 + wm * WM + i * 16 + c_frag_row(lane, e);
          if (m < M) out[m * pq] = acc[i][j][e];
        }
    }
#else
  (void)w, (void)x, (void)y, (void)s;
#endif
}

}  // namespace lab08
