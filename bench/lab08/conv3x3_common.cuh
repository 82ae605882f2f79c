// Shared pieces of lab08_conv3x3's kernels: the layer shape, and the two ways of reading the GEMM's
// B matrix (an im2col matrix in memory, or gathered from the input on the fly).
//
// Every version computes the same GEMM:   Y[K, N*P*Q] = W[K, C*9] x B[C*9, N*P*Q]
//   row    m  = output channel k
//   column j  = n*P*Q + p*Q + q        (image n, output pixel p,q)
//   inner  kk = c*9 + r*3 + s          (input channel c, filter tap r,s: KCRS order, cuDNN's filter layout)
//   B[kk][j]  = x[n][c][p*stride + r - 1][q*stride + s - 1], zero outside the image (pad 1)
// and stores Y straight to NCHW y[n][k][p][q], so no transpose pass follows the GEMM.
#pragma once

#include <cuda_runtime.h>

namespace lab08 {

/// One 3x3 convolution, pad 1: input N x C x H x W, output N x K x P x Q.
struct Shape {
  int N, C, H, W, K, stride;
  __host__ __device__ int P() const { return (H - 1) / stride + 1; }
  __host__ __device__ int Q() const { return (W - 1) / stride + 1; }
  __host__ __device__ int gemm_k() const { return C * 9; }
  __host__ __device__ long long gemm_n() const { return (long long)N * P() * Q(); }
};

/// Stores one GEMM result element: column j of row m goes to y[n][m][p][q].
__device__ __forceinline__ void store_nchw(float* y, const Shape& s, int m, long long j, float v) {
  const long long pq = (long long)s.P() * s.Q();
  const long long n = j / pq, rest = j - n * pq;
  y[(n * s.K + m) * pq + rest] = v;
}

/// Where column j of B starts in the input: the image's base offset and the top-left corner of its
/// 3x3 window (possibly -1: the padding). Computed once per column by the tiled kernels.
struct Column {
  long long base;  // n*C*H*W, or -1 when j is past the last column
  int h0, w0;
};

__device__ __forceinline__ Column column_of(const Shape& s, long long j) {
  Column c{-1, 0, 0};
  const int P = s.P(), Q = s.Q();
  if (j >= s.gemm_n()) return c;
  const long long pq = (long long)P * Q;
  const long long n = j / pq;
  const int rest = int(j - n * pq), p = rest / Q, q = rest - p * Q;
  c.base = n * s.C * s.H * s.W;
  c.h0 = p * s.stride - 1;
  c.w0 = q * s.stride - 1;
  return c;
}

/// The im2col element of row kk for a column already decoded (kk < C*9 is the caller's job).
__device__ __forceinline__ float gather(const float* __restrict__ x, const Shape& s, const Column& col, int c, int r,
                                        int t) {
  const int h = col.h0 + r, w = col.w0 + t;
  if (col.base < 0 || h < 0 || h >= s.H || w < 0 || w >= s.W) return 0.0f;
  return __ldg(x + col.base + ((long long)c * s.H + h) * s.W + w);
}

}  // namespace lab08
