// Versions 2 and 4 of lab08_conv3x3: one tiled SGEMM kernel, two ways of filling its B tile.
//
// The kernel is the classic two-level tiling (siboehm's SGEMM_CUDA kernels 5-6): a block of 256
// threads owns a BM x BN tile of Y and walks the inner dimension BK = 8 at a time, staging a
// BM x BK slice of W and a BK x BN slice of B in shared memory; each thread keeps a TM x TN tile of
// Y in registers and, per k, reads TM values of W and TN values of B from shared memory for
// TM*TN multiply-adds (8x8: 16 shared loads for 64 FMAs, instead of 2 global loads per FMA in v1).
//
//   IMPLICIT = false  (version 2) the B slice is read from the im2col matrix, float4 where aligned
//   IMPLICIT = true   (version 4) the B slice is gathered from the input itself: the thread that
//                     loads column j decodes (n, p, q) once before the k loop, and each k step
//                     decodes kk into (c, r, s) once; no 9x matrix is written or read back
//
// BM = BN = 128 with 8x8 per thread is the main configuration; 64x64 with 4x4 per thread is used
// when 128x128 tiles would give fewer blocks than the GPU has SMs (small batches, 7x7 and 14x14
// layers), so that more of the GPU has work (the host picks; the table says which).
// __launch_bounds__(256, 2) caps the registers at 128 per thread (ptxas: no spills) so that two
// blocks share an SM: with a single shared-memory stage, the other block's math hides one block's loads.
#pragma once

#include "conv3x3_common.cuh"

namespace lab08 {

template <int BM, int BN, int TM, int TN, bool IMPLICIT>
__global__ void __launch_bounds__(256, 2) gemm_tiled(const float* __restrict__ w, const float* __restrict__ b_or_x,
                                                  float* __restrict__ y, Shape s) {
  constexpr int BK = 8, THREADS = 256;
  static_assert(BM * BN == THREADS * TM * TN, "one TM x TN tile per thread");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "float4 reads from shared memory");
  // As is stored transposed ([k][m]) so that a thread's TM values of W for one k are contiguous.
  __shared__ __align__(16) float As[BK][BM];
  __shared__ __align__(16) float Bs[BK][BN];

  const int M = s.K, kdim = s.gemm_k();
  const long long ncols = s.gemm_n();
  const int m0 = blockIdx.y * BM;
  const long long j0 = (long long)blockIdx.x * BN;
  const int tid = threadIdx.x;

  // Loading W: a float4 along k per thread and row (kdim is a multiple of 4 for C % 4 == 0, which
  // the host checks: every ResNet layer has it).
  const int a_k = (tid % (BK / 4)) * 4, a_row0 = tid / (BK / 4);
  constexpr int A_ROW_STEP = THREADS / (BK / 4);
  // Loading B: each thread owns 4 consecutive columns for the whole k loop.
  constexpr int B_THREADS_PER_ROW = BN / 4, B_ROW_STEP = THREADS / B_THREADS_PER_ROW;
  const int b_col = (tid % B_THREADS_PER_ROW) * 4, b_row0 = tid / B_THREADS_PER_ROW;
  Column cols[4];
  if (IMPLICIT) {
#pragma unroll
    for (int i = 0; i < 4; ++i) cols[i] = column_of(s, j0 + b_col + i);
  }
  const bool b_vector = !IMPLICIT && ncols % 4 == 0;  // row starts 16-byte aligned

  const int t_row = tid / (BN / TN), t_col = tid % (BN / TN);
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

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
      As[a_k + 0][row] = v.x;
      As[a_k + 1][row] = v.y;
      As[a_k + 2][row] = v.z;
      As[a_k + 3][row] = v.w;
    }
    for (int row = b_row0; row < BK; row += B_ROW_STEP) {
      const int kk = k0 + row;
      float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (kk < kdim) {
        if (IMPLICIT) {
          const int c = kk / 9, rs = kk - c * 9, r = rs / 3, t = rs - r * 3;
#pragma unroll
          for (int i = 0; i < 4; ++i) v[i] = gather(b_or_x, s, cols[i], c, r, t);
        } else {
          const long long j = j0 + b_col;
          const float* p = b_or_x + (long long)kk * ncols + j;
          if (b_vector && j + 3 < ncols) {
            const float4 f = __ldg(reinterpret_cast<const float4*>(p));
            v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
          } else {
#pragma unroll
            for (int i = 0; i < 4; ++i) v[i] = j + i < ncols ? p[i] : 0.0f;
          }
        }
      }
      *reinterpret_cast<float4*>(&Bs[row][b_col]) = make_float4(v[0], v[1], v[2], v[3]);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; i += 4) {
        const float4 f = *reinterpret_cast<const float4*>(&As[k][t_row * TM + i]);
        a[i] = f.x, a[i + 1] = f.y, a[i + 2] = f.z, a[i + 3] = f.w;
      }
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        const float4 f = *reinterpret_cast<const float4*>(&Bs[k][t_col * TN + j]);
        b[j] = f.x, b[j + 1] = f.y, b[j + 2] = f.z, b[j + 3] = f.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();  // the next slice overwrites As/Bs
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + t_row * TM + i;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const long long col = j0 + t_col * TN + j;
      if (col < ncols) store_nchw(y, s, m, col, acc[i][j]);
    }
  }
}

/// True when 128 x 128 tiles would leave SMs idle: then the 64 x 64 configuration runs.
inline bool use_small_tiles(const Shape& s, int sm_count) {
  const long long blocks = ((s.gemm_n() + 127) / 128) * ((s.K + 127) / 128);
  return blocks < sm_count;
}

}  // namespace lab08
