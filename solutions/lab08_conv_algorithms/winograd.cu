// Lab 08 solution, part B: the 3x3 convolution (pad 1, stride 1) by Winograd's F(2x2, 3x3).
// The contract is documented in common/include/labs/lab08_conv_algorithms.hpp; the lecture is
// lectures/08-conv-algorithms.md, section 5.
//
// The non-fused form, one kernel per stage, the transformed tensors in memory between them
// (cuDNN's WINOGRAD_NONFUSED, and bench/lab08/conv3x3_05_winograd.cuh):
//   filter transform  one thread per (k, c): U[xi][k][c] = (G g G^T)[xi]
//   input transform   one thread per (c, tile): V[xi][c][tile] = (B^T d B)[xi]
//   16 products       one launch, blockIdx.z = xi: M[xi] = U[xi] [K x C] * V[xi] [C x T]
//   output transform  one thread per (k, tile): Y = A^T m A + bias[k], the outputs inside P x Q
// In the two transforms of tiles the tile index is the fastest, so that the 16 stores (or loads)
// of a warp, one per position xi, are each 32 consecutive floats.
//
// Every matrix of F(2x2, 3x3) holds 0, +-1 and +-1/2 only, so each transform is written out as
// additions: applying B^T to the 4 values of a column is 4 additions (see transform_bt).
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace lab08 {
namespace {

constexpr int kThreadsPerBlock = 256;

void require(bool ok, const char* function, const std::string& message) {
  if (!ok) throw course::Error(std::string("lab08::") + function + ": " + message);
}

void require_positive(int value, const char* function, const char* name) {
  require(value >= 1, function, std::string(name) + " must be >= 1, got " + std::to_string(value));
}

void require_indexable(std::int64_t count, const char* function, const char* what) {
  require(count <= INT_MAX, function,
          std::string(what) + " too large for int indexing (" + std::to_string(count) + " elements)");
}

/// T = N * ceil(H/2) * ceil(W/2), in 64 bits (the output of a 3x3 pad-1 stride-1 convolution is
/// H x W).
std::int64_t tile_count(int N, int H, int W) {
  return std::int64_t{N} * ((std::int64_t{H} + 1) / 2) * ((std::int64_t{W} + 1) / 2);
}

unsigned blocks_for(std::int64_t threads) {
  return static_cast<unsigned>((threads + kThreadsPerBlock - 1) / kThreadsPerBlock);
}

// B^T applied to a column (x0, x1, x2, x3): rows [1 0 -1 0], [0 1 1 0], [0 -1 1 0], [0 1 0 -1].
__device__ __forceinline__ void transform_bt(float x0, float x1, float x2, float x3, float out[4]) {
  out[0] = x0 - x2;
  out[1] = x1 + x2;
  out[2] = x2 - x1;
  out[3] = x1 - x3;
}

// G applied to 3 taps: rows [1 0 0], [1/2 1/2 1/2], [1/2 -1/2 1/2], [0 0 1].
__device__ __forceinline__ void transform_g(float x0, float x1, float x2, float out[4]) {
  out[0] = x0;
  out[1] = 0.5f * (x0 + x1 + x2);
  out[2] = 0.5f * (x0 - x1 + x2);
  out[3] = x2;
}

// A^T applied to 4 values: rows [1 1 1 0], [0 1 -1 -1].
__device__ __forceinline__ void transform_at(float x0, float x1, float x2, float x3, float out[2]) {
  out[0] = x0 + x1 + x2;
  out[1] = x1 - x2 - x3;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Filter transform: thread (k, c) = k*C + c reads the 9 taps weight[k, c] (consecutive threads,
// consecutive filters) and writes U[xi][k][c] at xi*K*C + k*C + c: for each xi a warp stores 32
// consecutive floats. G g is done on the columns of g (4 x 3), then G^T on the rows of that.
// ---------------------------------------------------------------------------------------------
static __global__ void winograd_filter_kernel(const float* __restrict__ weight, float* __restrict__ U, int KC) {
  const unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= static_cast<unsigned>(KC)) return;
  const int kc = static_cast<int>(idx);
  const float* g = weight + kc * 9;  // g[r][s] = g[3*r + s]
  float gg[4][3];                    // G g
#pragma unroll
  for (int s = 0; s < 3; ++s) {
    float col[4];
    transform_g(__ldg(g + s), __ldg(g + 3 + s), __ldg(g + 6 + s), col);
#pragma unroll
    for (int i = 0; i < 4; ++i) gg[i][s] = col[i];
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float row[4];  // (G g G^T)[i][.] = G applied to row i of G g
    transform_g(gg[i][0], gg[i][1], gg[i][2], row);
#pragma unroll
    for (int j = 0; j < 4; ++j) U[(4 * i + j) * KC + kc] = row[j];
  }
}

// ---------------------------------------------------------------------------------------------
// Input transform: thread (c, t) = c*T + t loads its tile's 4x4 patch of channel c (rows
// 2*th - 1 .. 2*th + 2, zeros outside the image; neighbouring tiles' patches overlap by 2), then
// V = B^T d B: B^T on the 4 columns, then B^T on the 4 rows of the result (that is "times B").
// ---------------------------------------------------------------------------------------------
static __global__ void winograd_input_kernel(const float* __restrict__ input, float* __restrict__ V, int C, int H,
                                             int W, int tiles_h, int tiles_w, int T) {
  const unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= static_cast<unsigned>(C) * static_cast<unsigned>(T)) return;
  const int i_flat = static_cast<int>(idx);
  const int t = i_flat % T;
  const int c = i_flat / T;
  const int tw = t % tiles_w;
  const int th = (t / tiles_w) % tiles_h;
  const int n = t / (tiles_w * tiles_h);
  const float* plane = input + (n * C + c) * H * W;
  const int h0 = 2 * th - 1, w0 = 2 * tw - 1;  // the patch's top-left corner, maybe in the padding

  float d[4][4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int h = h0 + r;
    const bool row_inside = h >= 0 && h < H;
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int w = w0 + s;
      d[r][s] = row_inside && w >= 0 && w < W ? __ldg(plane + h * W + w) : 0.0f;
    }
  }
  float bd[4][4];  // B^T d: B^T applied to each column of d
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    float col[4];
    transform_bt(d[0][s], d[1][s], d[2][s], d[3][s], col);
#pragma unroll
    for (int i = 0; i < 4; ++i) bd[i][s] = col[i];
  }
  const int CT = C * T;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float row[4];  // (B^T d B)[i][.] = B^T applied to row i of B^T d
    transform_bt(bd[i][0], bd[i][1], bd[i][2], bd[i][3], row);
#pragma unroll
    for (int j = 0; j < 4; ++j) V[(4 * i + j) * CT + i_flat] = row[j];  // i_flat = c*T + t
  }
}

// ---------------------------------------------------------------------------------------------
// The 16 products M[xi] = U[xi] * V[xi], one launch: blockIdx.z = xi, blockIdx.x = a 64 x 64
// tile of M[xi] (flattened tile_m * tiles_n + tile_n, so that any K and T fit the grid). Part A's
// SGEMM scheme at its simplest: 256 threads, each 4 x 4 outputs in registers; K (here C) in
// slices of 16 copied to shared memory with zeros outside the matrices, two barriers per slice.
// ---------------------------------------------------------------------------------------------
constexpr int kTile = 64;
constexpr int kSlice = 16;

static __global__ void __launch_bounds__(kThreadsPerBlock)
    winograd_multiply_kernel(const float* __restrict__ U, const float* __restrict__ V, float* __restrict__ M, int K,
                             int C, int T, int tiles_n) {
  __shared__ float Us[kSlice][kTile + 1];  // Us[c][m]: a column of the U tile is a row here
  __shared__ float Vs[kSlice][kTile];
  const int xi = static_cast<int>(blockIdx.z);
  const float* Ux = U + xi * K * C;
  const float* Vx = V + xi * C * T;
  float* Mx = M + xi * K * T;
  const int m0 = static_cast<int>(blockIdx.x) / tiles_n * kTile;
  const int n0 = static_cast<int>(blockIdx.x) % tiles_n * kTile;
  const int tid = static_cast<int>(threadIdx.x), tx = tid % 16, ty = tid / 16;

  float acc[4][4] = {};
  for (int c0 = 0; c0 < C; c0 += kSlice) {
    // 64 x 16 values of each matrix per slice: 4 per thread.
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int e = tid + l * kThreadsPerBlock;
      const int um = e / kSlice, uc = e % kSlice;  // U: 16 consecutive c of one row
      const int gm = m0 + um, gcu = c0 + uc;
      Us[uc][um] = gm < K && gcu < C ? __ldg(Ux + gm * C + gcu) : 0.0f;
      const int vc = e / kTile, vn = e % kTile;    // V: 64 consecutive t of one row
      const int gcv = c0 + vc, gn = n0 + vn;
      Vs[vc][vn] = gcv < C && gn < T ? __ldg(Vx + gcv * T + gn) : 0.0f;
    }
    __syncthreads();  // the slice is complete before anyone reads it
#pragma unroll
    for (int kk = 0; kk < kSlice; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = Us[kk][ty + 16 * i];  // rows ty, ty+16, ty+32, ty+48
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Vs[kk][tx + 16 * j];  // columns tx, tx+16, ...
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // nobody still reads the slice when the next one overwrites it
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int gm = m0 + ty + 16 * i;
    if (gm >= K) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int gn = n0 + tx + 16 * j;
      if (gn < T) Mx[gm * T + gn] = acc[i][j];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Output transform: thread (k, t) = k*T + t loads m[i][j] = M[4i + j][k][t] (for each xi a warp
// loads 32 consecutive floats), computes Y = A^T m A (A^T on the columns, then on the rows), adds
// bias[k] and writes the 2x2 block -- without the row 2*th + 1 when it is P (odd H), nor the
// column 2*tw + 1 when it is Q (odd W).
// ---------------------------------------------------------------------------------------------
static __global__ void winograd_output_kernel(const float* __restrict__ M, const float* __restrict__ bias,
                                              float* __restrict__ output, int K, int H, int W, int tiles_h,
                                              int tiles_w, int T) {
  const unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= static_cast<unsigned>(K) * static_cast<unsigned>(T)) return;
  const int i_flat = static_cast<int>(idx);
  const int t = i_flat % T;
  const int k = i_flat / T;
  const int tw = t % tiles_w;
  const int th = (t / tiles_w) % tiles_h;
  const int n = t / (tiles_w * tiles_h);
  const int KT = K * T;

  float m[4][4];
#pragma unroll
  for (int xi = 0; xi < 16; ++xi) m[xi / 4][xi % 4] = __ldg(M + xi * KT + i_flat);
  float am[2][4];  // A^T m
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float col[2];
    transform_at(m[0][j], m[1][j], m[2][j], m[3][j], col);
    am[0][j] = col[0];
    am[1][j] = col[1];
  }
  const float b = bias != nullptr ? __ldg(bias + k) : 0.0f;
  float* plane = output + (n * K + k) * H * W;
  const int p0 = 2 * th, q0 = 2 * tw;
#pragma unroll
  for (int a = 0; a < 2; ++a) {
    float y[2];  // (A^T m A)[a][.] = A^T applied to row a of A^T m
    transform_at(am[a][0], am[a][1], am[a][2], am[a][3], y);
    const int p = p0 + a;
    if (p >= H) continue;
    plane[p * W + q0] = y[0] + b;
    if (q0 + 1 < W) plane[p * W + q0 + 1] = y[1] + b;
  }
}

// ---------------------------------------------------------------------------------------------
// The launchers: validate everything in 64 bits, then launch.
// ---------------------------------------------------------------------------------------------
namespace {

void launch_filter(const float* d_weight, float* d_U, int K, int C, cudaStream_t stream) {
  const std::int64_t kc = std::int64_t{K} * C;
  winograd_filter_kernel<<<blocks_for(kc), kThreadsPerBlock, 0, stream>>>(d_weight, d_U, static_cast<int>(kc));
  CUDA_CHECK_LAST_LAUNCH();
}

void launch_input(const float* d_input, float* d_V, int N, int C, int H, int W, cudaStream_t stream) {
  const int tiles_h = (H + 1) / 2, tiles_w = (W + 1) / 2;
  const std::int64_t T = tile_count(N, H, W);
  winograd_input_kernel<<<blocks_for(std::int64_t{C} * T), kThreadsPerBlock, 0, stream>>>(
      d_input, d_V, C, H, W, tiles_h, tiles_w, static_cast<int>(T));
  CUDA_CHECK_LAST_LAUNCH();
}

void launch_multiply(const float* d_U, const float* d_V, float* d_M, int K, int C, int T, cudaStream_t stream) {
  const int tiles_m = (K + kTile - 1) / kTile, tiles_n = (T + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned>(std::int64_t{tiles_m} * tiles_n), 1, 16);
  winograd_multiply_kernel<<<grid, kThreadsPerBlock, 0, stream>>>(d_U, d_V, d_M, K, C, T, tiles_n);
  CUDA_CHECK_LAST_LAUNCH();
}

void launch_output(const float* d_M, const float* d_bias, float* d_output, int N, int K, int H, int W,
                   cudaStream_t stream) {
  const int tiles_h = (H + 1) / 2, tiles_w = (W + 1) / 2;
  const std::int64_t T = tile_count(N, H, W);
  winograd_output_kernel<<<blocks_for(std::int64_t{K} * T), kThreadsPerBlock, 0, stream>>>(
      d_M, d_bias, d_output, K, H, W, tiles_h, tiles_w, static_cast<int>(T));
  CUDA_CHECK_LAST_LAUNCH();
}

/// The checks conv2d_winograd and its workspace query share; returns T.
std::int64_t check_conv_sizes(const char* fn, int N, int C, int H, int W, int K) {
  require_positive(N, fn, "N");
  require_positive(C, fn, "C");
  require_positive(H, fn, "H");
  require_positive(W, fn, "W");
  require_positive(K, fn, "K");
  const std::int64_t T = tile_count(N, H, W);
  require_indexable(std::int64_t{N} * C * H * W, fn, "input");
  require_indexable(std::int64_t{N} * K * H * W, fn, "output");
  require_indexable(std::int64_t{16} * K * C, fn, "U");  // also covers the weight (9*K*C)
  require_indexable(std::int64_t{16} * C * T, fn, "V");
  require_indexable(std::int64_t{16} * K * T, fn, "M");
  return T;
}

}  // namespace

void winograd_filter_transform(const float* d_weight, float* d_U, int K, int C, cudaStream_t stream) {
  const char* fn = "winograd_filter_transform";
  require(d_weight != nullptr, fn, "d_weight is null");
  require(d_U != nullptr, fn, "d_U is null");
  require_positive(K, fn, "K");
  require_positive(C, fn, "C");
  require_indexable(std::int64_t{16} * K * C, fn, "U");
  launch_filter(d_weight, d_U, K, C, stream);
}

void winograd_input_transform(const float* d_input, float* d_V, int N, int C, int H, int W, cudaStream_t stream) {
  const char* fn = "winograd_input_transform";
  require(d_input != nullptr, fn, "d_input is null");
  require(d_V != nullptr, fn, "d_V is null");
  require_positive(N, fn, "N");
  require_positive(C, fn, "C");
  require_positive(H, fn, "H");
  require_positive(W, fn, "W");
  require_indexable(std::int64_t{N} * C * H * W, fn, "input");
  require_indexable(std::int64_t{16} * C * tile_count(N, H, W), fn, "V");
  launch_input(d_input, d_V, N, C, H, W, stream);
}

void winograd_batched_multiply(const float* d_U, const float* d_V, float* d_M, int K, int C, int T,
                               cudaStream_t stream) {
  const char* fn = "winograd_batched_multiply";
  require(d_U != nullptr, fn, "d_U is null");
  require(d_V != nullptr, fn, "d_V is null");
  require(d_M != nullptr, fn, "d_M is null");
  require_positive(K, fn, "K");
  require_positive(C, fn, "C");
  require_positive(T, fn, "T");
  require_indexable(std::int64_t{16} * K * C, fn, "U");
  require_indexable(std::int64_t{16} * C * T, fn, "V");
  require_indexable(std::int64_t{16} * K * T, fn, "M");
  launch_multiply(d_U, d_V, d_M, K, C, T, stream);
}

void winograd_output_transform(const float* d_M, const float* d_bias, float* d_output, int N, int K, int H, int W,
                               cudaStream_t stream) {
  const char* fn = "winograd_output_transform";
  require(d_M != nullptr, fn, "d_M is null");
  require(d_output != nullptr, fn, "d_output is null");
  require_positive(N, fn, "N");
  require_positive(K, fn, "K");
  require_positive(H, fn, "H");
  require_positive(W, fn, "W");
  require_indexable(std::int64_t{16} * K * tile_count(N, H, W), fn, "M");
  require_indexable(std::int64_t{N} * K * H * W, fn, "output");
  launch_output(d_M, d_bias, d_output, N, K, H, W, stream);
}

std::size_t conv2d_winograd_workspace(int N, int C, int H, int W, int K) {
  const std::int64_t T = check_conv_sizes("conv2d_winograd_workspace", N, C, H, W, K);
  const std::int64_t floats = 16 * (std::int64_t{K} * C + std::int64_t{C} * T + std::int64_t{K} * T);
  return static_cast<std::size_t>(floats) * sizeof(float);
}

void conv2d_winograd(const float* d_input, const float* d_weight, const float* d_bias, float* d_output,
                     void* d_workspace, std::size_t workspace_bytes, int N, int C, int H, int W, int K,
                     cudaStream_t stream) {
  const char* fn = "conv2d_winograd";
  require(d_input != nullptr, fn, "d_input is null");
  require(d_weight != nullptr, fn, "d_weight is null");
  require(d_bias != nullptr, fn, "d_bias is null");
  require(d_output != nullptr, fn, "d_output is null");
  const std::int64_t T = check_conv_sizes(fn, N, C, H, W, K);
  const std::size_t needed = conv2d_winograd_workspace(N, C, H, W, K);
  require(d_workspace != nullptr, fn, "d_workspace is null (" + std::to_string(needed) + " bytes needed)");
  require(workspace_bytes >= needed, fn,
          "workspace too small: " + std::to_string(workspace_bytes) + " bytes given, " + std::to_string(needed) +
              " needed (conv2d_winograd_workspace)");

  // The workspace: U [16,K,C], then V [16,C,T], then M [16,K,T], all floats.
  float* U = static_cast<float*>(d_workspace);
  float* V = U + std::int64_t{16} * K * C;
  float* M = V + std::int64_t{16} * C * T;
  launch_filter(d_weight, U, K, C, stream);  // real inference: once per model, not per call
  launch_input(d_input, V, N, C, H, W, stream);
  launch_multiply(U, V, M, K, C, static_cast<int>(T), stream);
  launch_output(M, d_bias, d_output, N, K, H, W, stream);
}

}  // namespace lab08
