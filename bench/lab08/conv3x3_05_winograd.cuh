// Version 5 of lab08_conv3x3: Winograd F(2x2, 3x3) (Lavin and Gray, 2016), stride 1 only.
//
// A 2x2 block of outputs needs a 4x4 block of input. Instead of 4 x 9 = 36 multiplies, Winograd
// transforms the 4x4 input block (V = B^T d B) and the 3x3 filter (U = G g G^T, 4x4), multiplies
// them element by element (16 multiplies) and transforms back (Y = A^T m A, 2x2): 2.25x fewer
// multiplies. Over all channels the element-wise products become 16 independent GEMMs, one per
// position xi of the 4x4 transform:  M[xi] (K x tiles) = U[xi] (K x C) x V[xi] (C x tiles).
// The multiplies saved show up as a higher "effective" TFLOP/s (the table counts direct-conv FLOPs).
//
//   filter transform  U[xi][k][c]; depends on the weights only: done once per model, timed apart
//   input transform   V[xi][c][tile], tiles = N * ceil(P/2) * ceil(Q/2); neighbouring tiles'
//                     4x4 windows overlap by 2 rows/columns (the window moves by 2)
//   16 GEMMs          cublasSgemmStridedBatched, FP32 (cuBLAS default math: no TF32)
//   output transform  y[n][k][2*th + i][2*tw + j], the last row/column dropped when P is odd
#pragma once

#include "conv3x3_common.cuh"

namespace lab08 {

/// Tiles of 2x2 outputs per image side (P = H for stride 1, pad 1).
__host__ __device__ inline int wino_tiles_h(const Shape& s) { return (s.P() + 1) / 2; }
__host__ __device__ inline int wino_tiles_w(const Shape& s) { return (s.Q() + 1) / 2; }
inline long long wino_tiles(const Shape& s) { return (long long)s.N * wino_tiles_h(s) * wino_tiles_w(s); }

/// U = G g G^T per (k, c); G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
__global__ void winograd_filter_transform(const float* __restrict__ w, float* __restrict__ u, int K, int C) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= K * C) return;
  const float* g = w + (long long)idx * 9;  // idx = k*C + c: KCRS order
  float gg[4][3];                           // G g
  for (int t = 0; t < 3; ++t) {
    gg[0][t] = g[t];
    gg[1][t] = 0.5f * (g[t] + g[3 + t] + g[6 + t]);
    gg[2][t] = 0.5f * (g[t] - g[3 + t] + g[6 + t]);
    gg[3][t] = g[6 + t];
  }
  const long long plane = (long long)K * C;  // U[xi] is K x C, row-major: index idx
  for (int i = 0; i < 4; ++i) {
    u[(i * 4 + 0) * plane + idx] = gg[i][0];
    u[(i * 4 + 1) * plane + idx] = 0.5f * (gg[i][0] + gg[i][1] + gg[i][2]);
    u[(i * 4 + 2) * plane + idx] = 0.5f * (gg[i][0] - gg[i][1] + gg[i][2]);
    u[(i * 4 + 3) * plane + idx] = gg[i][2];
  }
}

/// V = B^T d B per (c, tile); B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. The tile index is the
/// fastest, so that a warp writes 32 consecutive floats of each V[xi] row.
__global__ void winograd_input_transform(const float* __restrict__ x, float* __restrict__ v, Shape s) {
  const int th_count = wino_tiles_h(s), tw_count = wino_tiles_w(s);
  const long long tiles = (long long)s.N * th_count * tw_count;
  const long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (idx >= (long long)s.C * tiles) return;
  const int c = int(idx / tiles);
  const long long tile = idx - (long long)c * tiles;
  const int n = int(tile / (th_count * tw_count)), rest = int(tile % (th_count * tw_count));
  const int h0 = (rest / tw_count) * 2 - 1, w0 = (rest % tw_count) * 2 - 1;  // pad 1
  const float* plane = x + ((long long)n * s.C + c) * s.H * s.W;
  float d[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int h = h0 + i, w = w0 + j;
      d[i][j] = h >= 0 && h < s.H && w >= 0 && w < s.W ? __ldg(plane + (long long)h * s.W + w) : 0.0f;
    }
  float bd[4][4];  // B^T d
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    bd[0][j] = d[0][j] - d[2][j];
    bd[1][j] = d[1][j] + d[2][j];
    bd[2][j] = d[2][j] - d[1][j];
    bd[3][j] = d[1][j] - d[3][j];
  }
  const long long plane_size = (long long)s.C * tiles;  // V[xi] is C x tiles, row-major
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[(i * 4 + 0) * plane_size + idx] = bd[i][0] - bd[i][2];
    v[(i * 4 + 1) * plane_size + idx] = bd[i][1] + bd[i][2];
    v[(i * 4 + 2) * plane_size + idx] = bd[i][2] - bd[i][1];
    v[(i * 4 + 3) * plane_size + idx] = bd[i][1] - bd[i][3];
  }
}

/// Y = A^T m A per (k, tile); A^T = [1 1 1 0; 0 1 -1 -1].
__global__ void winograd_output_transform(const float* __restrict__ m, float* __restrict__ y, Shape s) {
  const int th_count = wino_tiles_h(s), tw_count = wino_tiles_w(s);
  const long long tiles = (long long)s.N * th_count * tw_count;
  const long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (idx >= (long long)s.K * tiles) return;
  const int k = int(idx / tiles);
  const long long tile = idx - (long long)k * tiles;
  const int n = int(tile / (th_count * tw_count)), rest = int(tile % (th_count * tw_count));
  const int p0 = (rest / tw_count) * 2, q0 = (rest % tw_count) * 2;
  const long long plane_size = (long long)s.K * tiles;  // M[xi] is K x tiles
  float a[4][4];
#pragma unroll
  for (int xi = 0; xi < 16; ++xi) a[xi / 4][xi % 4] = m[xi * plane_size + idx];
  float am[2][4];  // A^T m
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    am[0][j] = a[0][j] + a[1][j] + a[2][j];
    am[1][j] = a[1][j] - a[2][j] - a[3][j];
  }
  const int P = s.P(), Q = s.Q();
  float* out = y + ((long long)n * s.K + k) * P * Q;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float o0 = am[i][0] + am[i][1] + am[i][2], o1 = am[i][1] - am[i][2] - am[i][3];
    if (p0 + i < P) {
      out[(p0 + i) * Q + q0] = o0;
      if (q0 + 1 < Q) out[(p0 + i) * Q + q0 + 1] = o1;
    }
  }
}

/// Bytes of V plus M (U is 16*K*C floats: small, allocated with the weights).
inline double winograd_workspace_bytes(const Shape& s) {
  return 16.0 * double(s.C + s.K) * double(wino_tiles(s)) * sizeof(float);
}

}  // namespace lab08
