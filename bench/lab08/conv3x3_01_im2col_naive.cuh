// Version 1 of lab08_conv3x3: im2col, then the plainest GEMM (one thread per output element).
//
// im2col writes the GEMM's B matrix [C*9][N*P*Q] out in full: every input value is copied up to 9
// times (9/stride^2 times on average), which is what makes the convolution an ordinary matrix
// product, and what versions 4 and 6 avoid. The naive GEMM reads a row of W (the same address for
// a whole warp: a broadcast) and a column of B (consecutive threads, consecutive addresses) from
// global memory for every multiply-add: no reuse beyond what L1/L2 happen to catch.
#pragma once

#include "conv3x3_common.cuh"

namespace lab08 {

/// One thread per element of the im2col matrix, the column fastest: the writes are coalesced,
/// and the reads of one row of the matrix walk along input rows (stride `stride` apart).
__global__ void im2col_3x3(const float* __restrict__ x, float* __restrict__ cols, Shape s) {
  const long long ncols = s.gemm_n(), total = (long long)s.gemm_k() * ncols;
  for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
       idx += (long long)gridDim.x * blockDim.x) {
    const int kk = int(idx / ncols);
    const long long j = idx - kk * ncols;
    const int c = kk / 9, rs = kk - c * 9, r = rs / 3, t = rs - r * 3;
    cols[idx] = gather(x, s, column_of(s, j), c, r, t);
  }
}

/// Y = W x B, one thread per output element (m = blockIdx.y, j = a thread of blockIdx.x), stored
/// to NCHW. IMPLICIT = false reads B from the im2col matrix (version 1); IMPLICIT = true gathers
/// the same values from the input (the reference this program checks the timed batch against:
/// version 1's arithmetic, in the same order, without the matrix in memory).
template <bool IMPLICIT>
__global__ void gemm_naive(const float* __restrict__ w, const float* __restrict__ b_or_x, float* __restrict__ y,
                           Shape s) {
  const long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const int m = blockIdx.y;
  const long long ncols = s.gemm_n();
  if (j >= ncols) return;
  const int kdim = s.gemm_k();
  const float* wrow = w + (long long)m * kdim;
  float acc = 0.0f;
  if (IMPLICIT) {
    const Column col = column_of(s, j);
    for (int c = 0; c < s.C; ++c)
      for (int r = 0; r < 3; ++r)
        for (int t = 0; t < 3; ++t) acc += wrow[c * 9 + r * 3 + t] * gather(b_or_x, s, col, c, r, t);
  } else {
    for (int kk = 0; kk < kdim; ++kk) acc += wrow[kk] * b_or_x[kk * ncols + j];
  }
  store_nchw(y, s, m, j, acc);
}

}  // namespace lab08
