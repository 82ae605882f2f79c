// Version 6 of lab08_conv3x3: version 4's implicit GEMM with the multiply-adds on tensor cores, TF32.
//
// Same GEMM and the same on-the-fly gather of B as version 4; what changes is who multiplies.
// A warp issues wmma::mma_sync on 16x16x8 fragments (nvcuda::wmma, precision::tf32): the tensor
// core multiplies operands rounded to TF32 (8-bit exponent, 10-bit mantissa, the fragments are
// rounded with __float_to_tf32 after loading) and accumulates in FP32. The block tile grows to
// BM x BN x 32 (the tensor cores eat a 128x128x8 slice in 8 warp instructions per warp, so a
// deeper k slice amortises the __syncthreads); 8 warps in a 2 x 4 grid each own a 64 x 32 piece
// of Y (4 x 2 accumulator fragments). The shared tiles are padded by 4 floats per row so that the
// fragment loads of consecutive rows fall on different banks. Results go through a 16x16 scratch
// per warp to reach their NCHW addresses (a fragment's element-to-thread layout is opaque).
#pragma once

#include <mma.h>

#include "conv3x3_common.cuh"

namespace lab08 {

template <int BM, int BN>
__global__ void __launch_bounds__(256) conv_tf32_wmma(const float* __restrict__ w, const float* __restrict__ x,
                                                      float* __restrict__ y, Shape s) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  constexpr int BK = 32, WARPS_M = 2, WARPS_N = 4, THREADS = 256;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N, FM = WM / 16, FN = WN / 16;
  static_assert(FM >= 1 && FN >= 1 && WM % 16 == 0 && WN % 16 == 0, "whole fragments per warp");
  constexpr int LDA = BK + 4, LDB = BN + 4;  // ldm: a multiple of 4 floats, rows 32-byte aligned per fragment
  __shared__ __align__(128) float As[BM * LDA];
  __shared__ __align__(128) float Bs[BK * LDB];
  __shared__ __align__(128) float scratch[THREADS / 32][16 * 16];

  const int M = s.K, kdim = s.gemm_k();
  const long long ncols = s.gemm_n();
  const int m0 = blockIdx.y * BM;
  const long long j0 = (long long)blockIdx.x * BN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;

  // B: one column per thread for the whole k loop (BN <= 256), rows tid / BN, + THREADS / BN, ...
  static_assert(THREADS % BN == 0, "whole columns per thread");
  const int b_col = tid % BN, b_row0 = tid / BN;
  constexpr int B_ROW_STEP = THREADS / BN;
  const Column col = column_of(s, j0 + b_col);
  // A: a float4 of W along k per thread and row.
  constexpr int A_PER_ROW = BK / 4, A_ROW_STEP = THREADS / A_PER_ROW;
  const int a_k = (tid % A_PER_ROW) * 4, a_row0 = tid / A_PER_ROW;

  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < kdim; k0 += BK) {
    for (int row = a_row0; row < BM; row += A_ROW_STEP) {
      const int m = m0 + row, k = k0 + a_k;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (m < M && k + 3 < kdim) {
        v = __ldg(reinterpret_cast<const float4*>(w + (long long)m * kdim + k));
      } else if (m < M) {
        const float* p = w + (long long)m * kdim;
        v.x = k < kdim ? p[k] : 0.0f;
        v.y = k + 1 < kdim ? p[k + 1] : 0.0f;
        v.z = k + 2 < kdim ? p[k + 2] : 0.0f;
      }
      *reinterpret_cast<float4*>(&As[row * LDA + a_k]) = v;
    }
    for (int row = b_row0; row < BK; row += B_ROW_STEP) {
      const int kk = k0 + row;
      float v = 0.0f;
      if (kk < kdim) {
        const int c = kk / 9, rs = kk - c * 9, r = rs / 3, t = rs - r * 3;
        v = gather(x, s, col, c, r, t);
      }
      Bs[row * LDB + b_col] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kf = 0; kf < BK; kf += 8) {
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) {
        wmma::load_matrix_sync(a[i], &As[(wm * WM + i * 16) * LDA + kf], LDA);
#pragma unroll
        for (int e = 0; e < a[i].num_elements; ++e) a[i].x[e] = wmma::__float_to_tf32(a[i].x[e]);
      }
#pragma unroll
      for (int j = 0; j < FN; ++j) {
        wmma::load_matrix_sync(b[j], &Bs[kf * LDB + wn * WN + j * 16], LDB);
#pragma unroll
        for (int e = 0; e < b[j].num_elements; ++e) b[j].x[e] = wmma::__float_to_tf32(b[j].x[e]);
      }
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }

  float* mine = scratch[warp];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      wmma::store_matrix_sync(mine, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {  // half a warp per row: 16 consecutive columns
        const int m = m0 + wm * WM + i * 16 + e / 16;
        const long long jj = j0 + wn * WN + j * 16 + e % 16;
        if (m < M && jj < ncols) store_nchw(y, s, m, jj, mine[e]);
      }
      __syncwarp();
    }
#else
  (void)w, (void)x, (void)y, (void)s;  // TF32 WMMA needs sm_80 or newer
#endif
}

}  // namespace lab08
