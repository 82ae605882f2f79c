// Lab 08 solution, part A2: im2col, a tiled SGEMM, and the convolution as im2col + GEMM.
// The contract is documented in common/include/labs/lab08_conv_algorithms.hpp; the lecture is
// lectures/08-conv-algorithms.md.
//
// The convolution output[n] [K, P*Q] of image n is the matrix product
//   weight [K, C*R*S]  x  columns_n [C*R*S, P*Q]
// where columns_n holds image n's unrolled windows. im2col writes the columns of the whole batch
// as one matrix [C*R*S, N*P*Q] (one launch); image n's block is its columns n*P*Q .. n*P*Q+P*Q-1,
// i.e. a sub-matrix with row stride N*P*Q. One GEMM launch then runs all N products side by side
// (gridDim.z = image), each writing straight into output + n*K*P*Q: the result is NCHW without a
// transpose. (One GEMM of [K, C*R*S] x [C*R*S, N*P*Q] would give [K, N*P*Q], i.e. KNHW, which
// would need one more pass to become NCHW.) A 1x1 convolution with pad 0 and stride 1 needs no
// im2col at all: image n's input [C, H*W] already is its column matrix.
#include <algorithm>
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

/// The output size of a convolution along one axis, in 64 bits; < 1 when the kernel does not fit.
std::int64_t out_size(int in, int kernel, int pad, int stride) {
  const std::int64_t padded = std::int64_t{in} + 2 * std::int64_t{pad};
  return padded < kernel ? 0 : (padded - kernel) / stride + 1;
}

/// The checks im2col and the convolution share: sizes, padding, stride, the kernel fitting the
/// padded input, the input's element count. Returns P and Q.
void check_geometry(const char* fn, int N, int C, int H, int W, int R, int S, int pad, int stride, std::int64_t& P,
                    std::int64_t& Q) {
  require_positive(N, fn, "N");
  require_positive(C, fn, "C");
  require_positive(H, fn, "H");
  require_positive(W, fn, "W");
  require_positive(R, fn, "R");
  require_positive(S, fn, "S");
  require(pad >= 0, fn, "pad must be >= 0, got " + std::to_string(pad));
  require_positive(stride, fn, "stride");
  P = out_size(H, R, pad, stride);
  Q = out_size(W, S, pad, stride);
  require(P >= 1 && Q >= 1, fn,
          "kernel larger than the padded input (" + std::to_string(R) + "x" + std::to_string(S) + " kernel, " +
              std::to_string(H) + "x" + std::to_string(W) + " input, pad " + std::to_string(pad) + ")");
  require_indexable(std::int64_t{N} * C * H * W, fn, "input");
}

bool is_pointwise(int R, int S, int pad, int stride) { return R == 1 && S == 1 && pad == 0 && stride == 1; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// im2col: one thread per (channel, output pixel), writing that pixel's R*S taps of the channel
// down one column. Consecutive threads take consecutive columns, so every one of the R*S stores
// of a warp is one contiguous run, and the loads (stride 1) are consecutive input columns.
// ---------------------------------------------------------------------------------------------
static __global__ void im2col_kernel(const float* __restrict__ input, float* __restrict__ columns, int C, int H,
                                     int W, int R, int S, int pad, int stride, int P, int Q, int NPQ, int total) {
  const unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= static_cast<unsigned>(total)) return;
  const int i = static_cast<int>(idx);
  const int col = i % NPQ;  // (n*P + p)*Q + q
  const int c = i / NPQ;
  const int q = col % Q;
  const int p = (col / Q) % P;
  const int n = col / (Q * P);
  const float* plane = input + (n * C + c) * H * W;
  const int h0 = p * stride - pad, w0 = q * stride - pad;  // the window's top-left, maybe in the padding
  float* dst = columns + c * R * S * NPQ + col;             // row (c*R + 0)*S + 0 of this column
  for (int r = 0; r < R; ++r) {
    const int h = h0 + r;
    const bool row_inside = h >= 0 && h < H;
    for (int s = 0; s < S; ++s) {
      const int w = w0 + s;
      const bool inside = row_inside && w >= 0 && w < W;
      *dst = inside ? __ldg(plane + h * W + w) : 0.0f;  // padding taps are zeros, never loaded
      dst += NPQ;                                        // the next row of the column matrix
    }
  }
}

// ---------------------------------------------------------------------------------------------
// SGEMM: C = A * B (+ bias per row), batched along gridDim.z with a stride for B and C.
//
// Each block computes a BM x BN tile of C; its 256 threads form a 16 x 16 grid and each owns
// TM x TN outputs (8x8 of a 128x128 tile, 4x4 of a 64x64 tile) held in registers. The K
// dimension is walked in slices of kBK = 8: the block copies an A slice [BM x 8] and a B slice
// [8 x BN] into shared memory (zeros outside the matrices, so the tile edges need no special
// case in the inner loop), then every thread does TM x TN x 8 multiply-adds reading TM + TN
// values per k: a 128x128 tile makes 64 FMAs per 16 shared-memory values, where one thread per
// output would make 1 FMA per 2 global loads.
//
// Which outputs a thread owns: thread (ty, tx) takes rows g*64 + ty*4 + {0,1,2,3} and columns
// g*64 + tx*4 + {0,1,2,3} of the tile, for g = 0 .. TM/4 - 1 (groups of 4 rows or columns, 64
// apart). Four consecutive values are one float4 load from shared memory, and the 8 threads of a
// quarter-warp read 8 consecutive float4 (128 bytes): no bank conflict. The A values a warp reads
// are the same for its 16 tx (a broadcast).
//
// While the block multiplies slice k, each thread already has its share of slice k + 1 on the way
// from global memory into registers (ra, rb): the load latency hides behind the arithmetic. The
// registers go into shared memory after the barrier that ends slice k's multiply.
// ---------------------------------------------------------------------------------------------
constexpr int kBK = 8;

struct GemmArgs {
  int M, N, K;
  const float* A;
  int lda;
  const float* B;
  int ldb;
  std::int64_t batch_stride_b;
  const float* bias;  // may be null
  float* C;
  int ldc;
  std::int64_t batch_stride_c;
  int tiles_n;        // tiles along N: blockIdx.x = tile_m * tiles_n + tile_n
};

template <int BM, int BN>
static __global__ void __launch_bounds__(kThreadsPerBlock) sgemm_tiled_kernel(GemmArgs g) {
  constexpr int TM = BM / 16, TN = BN / 16;                // outputs per thread along M and N
  constexpr int kALoads = BM * kBK / kThreadsPerBlock;     // A slice elements per thread
  constexpr int kBLoads = BN * kBK / kThreadsPerBlock;     // B slice elements per thread
  // A is stored transposed (k-major) so that the inner loop reads a column of the A tile as a row;
  // 4 floats of padding per row spread the transposing stores over all 32 banks and keep every
  // row 16-byte aligned for the float4 reads.
  __shared__ __align__(16) float As[kBK][BM + 4];
  __shared__ __align__(16) float Bs[kBK][BN];

  const int tile_m = blockIdx.x / g.tiles_n, tile_n = blockIdx.x % g.tiles_n;
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const float* __restrict__ A = g.A;
  const float* __restrict__ B = g.B + blockIdx.z * g.batch_stride_b;
  float* __restrict__ C = g.C + blockIdx.z * g.batch_stride_c;
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;

  // This thread's share of a slice: A element e = t + l*256 is row e / 8, k e % 8 (8 consecutive
  // threads read one row's 8 consecutive k: a 32-byte sector); B element e is k e / BN, column
  // e % BN (consecutive threads, consecutive columns: coalesced). Zeros outside the matrices.
  float ra[kALoads], rb[kBLoads];
  const auto load_slice = [&](int k0) {
#pragma unroll
    for (int l = 0; l < kALoads; ++l) {
      const int e = t + l * kThreadsPerBlock;
      const int gm = m0 + e / kBK, gk = k0 + e % kBK;
      ra[l] = gm < g.M && gk < g.K ? __ldg(A + gm * g.lda + gk) : 0.0f;
    }
#pragma unroll
    for (int l = 0; l < kBLoads; ++l) {
      const int e = t + l * kThreadsPerBlock;
      const int gk = k0 + e / BN, gn = n0 + e % BN;
      rb[l] = gk < g.K && gn < g.N ? __ldg(B + gk * g.ldb + gn) : 0.0f;
    }
  };
  const auto store_slice = [&] {
#pragma unroll
    for (int l = 0; l < kALoads; ++l) {
      const int e = t + l * kThreadsPerBlock;
      As[e % kBK][e / kBK] = ra[l];
    }
#pragma unroll
    for (int l = 0; l < kBLoads; ++l) {
      const int e = t + l * kThreadsPerBlock;
      Bs[e / BN][e % BN] = rb[l];
    }
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  load_slice(0);
  store_slice();
  __syncthreads();  // the first slices are complete before anyone reads them
  for (int k0 = 0; k0 < g.K; k0 += kBK) {
    const bool more = k0 + kBK < g.K;
    if (more) load_slice(k0 + kBK);  // in flight while this slice is multiplied

#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int q = 0; q < TM / 4; ++q) {
        const float4 v = *reinterpret_cast<const float4*>(&As[kk][q * 64 + ty * 4]);
        a[q * 4 + 0] = v.x;
        a[q * 4 + 1] = v.y;
        a[q * 4 + 2] = v.z;
        a[q * 4 + 3] = v.w;
      }
#pragma unroll
      for (int q = 0; q < TN / 4; ++q) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[kk][q * 64 + tx * 4]);
        b[q * 4 + 0] = v.x;
        b[q * 4 + 1] = v.y;
        b[q * 4 + 2] = v.z;
        b[q * 4 + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // everyone is done reading the slices before the next iteration overwrites them
    if (more) {
      store_slice();
      __syncthreads();  // the next slices are complete before anyone reads them
    }
  }

  // Output (i, j) of this thread is row (i/4)*64 + ty*4 + i%4, column (j/4)*64 + tx*4 + j%4 of
  // the tile; a half-warp stores 64 consecutive floats of a row.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int gm = m0 + (i / 4) * 64 + ty * 4 + i % 4;
    if (gm >= g.M) continue;
    const float row_bias = g.bias != nullptr ? __ldg(g.bias + gm) : 0.0f;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int gn = n0 + (j / 4) * 64 + tx * 4 + j % 4;
      if (gn < g.N) C[gm * g.ldc + gn] = acc[i][j] + row_bias;
    }
  }
}

namespace {

// An H100 has 132 SMs. A 128x128 tile does twice the work per shared-memory load of a 64x64
// tile, but a product with fewer 128x128 tiles than SMs leaves SMs idle: then 64x64 tiles
// (4 times as many blocks) are faster. The choice depends only on the sizes, never on the GPU,
// so that the tests exercise both paths everywhere.
constexpr std::int64_t kBigTileMinBlocks = 132;

/// Launches the batched GEMM on `stream`: `batch` products, each M x N x K (see GemmArgs).
void launch_gemm(GemmArgs g, int batch, cudaStream_t stream) {
  const std::int64_t big_tiles = std::int64_t{(g.M + 127) / 128} * ((g.N + 127) / 128) * batch;
  const bool big = g.M >= 128 && g.N >= 128 && big_tiles >= kBigTileMinBlocks;
  const int bm = big ? 128 : 64, bn = big ? 128 : 64;
  g.tiles_n = (g.N + bn - 1) / bn;
  // At most INT_MAX elements in C, so the tile count fits gridDim.x (2^31 - 1); gridDim.z is at
  // most 65,535: a larger batch goes in chunks.
  const auto tiles = static_cast<unsigned>(std::int64_t{(g.M + bm - 1) / bm} * g.tiles_n);
  for (int first = 0; first < batch; first += 65535) {
    const int count = std::min(batch - first, 65535);
    GemmArgs chunk = g;
    chunk.B = g.B + first * g.batch_stride_b;
    chunk.C = g.C + first * g.batch_stride_c;
    const dim3 grid(tiles, 1, static_cast<unsigned>(count));
    if (big)
      sgemm_tiled_kernel<128, 128><<<grid, kThreadsPerBlock, 0, stream>>>(chunk);
    else
      sgemm_tiled_kernel<64, 64><<<grid, kThreadsPerBlock, 0, stream>>>(chunk);
    CUDA_CHECK_LAST_LAUNCH();
  }
}

}  // namespace

void im2col(const float* d_input, float* d_columns, int N, int C, int H, int W, int R, int S, int pad, int stride,
            cudaStream_t stream) {
  const char* fn = "im2col";
  require(d_input != nullptr, fn, "d_input is null");
  require(d_columns != nullptr, fn, "d_columns is null");
  std::int64_t P = 0, Q = 0;
  check_geometry(fn, N, C, H, W, R, S, pad, stride, P, Q);
  const std::int64_t npq = std::int64_t{N} * P * Q;
  require_indexable(std::int64_t{C} * R * S * npq, fn, "column matrix");
  const std::int64_t total = std::int64_t{C} * npq;  // threads: one per (channel, output pixel)
  im2col_kernel<<<static_cast<unsigned>((total + kThreadsPerBlock - 1) / kThreadsPerBlock), kThreadsPerBlock, 0,
                  stream>>>(d_input, d_columns, C, H, W, R, S, pad, stride, static_cast<int>(P), static_cast<int>(Q),
                            static_cast<int>(npq), static_cast<int>(total));
  CUDA_CHECK_LAST_LAUNCH();
}

void sgemm(int M, int N, int K, const float* d_A, const float* d_B, const float* d_bias, float* d_C,
           cudaStream_t stream) {
  const char* fn = "sgemm";
  require(d_A != nullptr, fn, "d_A is null");
  require(d_B != nullptr, fn, "d_B is null");
  require(d_C != nullptr, fn, "d_C is null");
  require_positive(M, fn, "M");
  require_positive(N, fn, "N");
  require_positive(K, fn, "K");
  require_indexable(std::int64_t{M} * K, fn, "A");
  require_indexable(std::int64_t{K} * N, fn, "B");
  require_indexable(std::int64_t{M} * N, fn, "C");
  launch_gemm(GemmArgs{M, N, K, d_A, K, d_B, N, 0, d_bias, d_C, N, 0, 0}, 1, stream);
}

std::size_t conv2d_im2col_gemm_workspace(int N, int C, int H, int W, int R, int S, int pad, int stride) {
  const char* fn = "conv2d_im2col_gemm_workspace";
  std::int64_t P = 0, Q = 0;
  check_geometry(fn, N, C, H, W, R, S, pad, stride, P, Q);
  if (is_pointwise(R, S, pad, stride)) return 0;  // the input is its own column matrix
  const std::int64_t columns = std::int64_t{C} * R * S * N * P * Q;
  require_indexable(columns, fn, "column matrix");
  return static_cast<std::size_t>(columns) * sizeof(float);
}

void conv2d_im2col_gemm(const float* d_input, const float* d_weight, const float* d_bias, float* d_output,
                        void* d_workspace, std::size_t workspace_bytes, int N, int C, int H, int W, int K, int R,
                        int S, int pad, int stride, cudaStream_t stream) {
  const char* fn = "conv2d_im2col_gemm";
  require(d_input != nullptr, fn, "d_input is null");
  require(d_weight != nullptr, fn, "d_weight is null");
  require(d_bias != nullptr, fn, "d_bias is null");
  require(d_output != nullptr, fn, "d_output is null");
  require_positive(K, fn, "K");
  std::int64_t P = 0, Q = 0;
  check_geometry(fn, N, C, H, W, R, S, pad, stride, P, Q);
  const std::int64_t crs = std::int64_t{C} * R * S;
  require_indexable(std::int64_t{K} * crs, fn, "weight");
  require_indexable(std::int64_t{N} * K * P * Q, fn, "output");
  const std::size_t needed = conv2d_im2col_gemm_workspace(N, C, H, W, R, S, pad, stride);  // checks the columns
  if (needed > 0) {
    require(d_workspace != nullptr, fn, "d_workspace is null (" + std::to_string(needed) + " bytes needed)");
    require(workspace_bytes >= needed, fn,
            "workspace too small: " + std::to_string(workspace_bytes) + " bytes given, " + std::to_string(needed) +
                " needed (conv2d_im2col_gemm_workspace)");
  }

  const int pq = static_cast<int>(P * Q);
  GemmArgs g{};
  g.M = K;
  g.N = pq;
  g.K = static_cast<int>(crs);
  g.A = d_weight;  // [K, C*R*S], row-major: exactly the KCRS weight
  g.lda = static_cast<int>(crs);
  g.bias = d_bias;
  g.C = d_output;  // image n's [K, P*Q] block of the NCHW output
  g.ldc = pq;
  g.batch_stride_c = std::int64_t{K} * pq;
  if (is_pointwise(R, S, pad, stride)) {
    g.B = d_input;  // image n's [C, H*W] input is its column matrix
    g.ldb = pq;
    g.batch_stride_b = std::int64_t{C} * pq;
  } else {
    auto* columns = static_cast<float*>(d_workspace);
    im2col(d_input, columns, N, C, H, W, R, S, pad, stride, stream);
    g.B = columns;  // image n's columns: [C*R*S, P*Q] starting at column n*P*Q, row stride N*P*Q
    g.ldb = static_cast<int>(std::int64_t{N} * pq);
    g.batch_stride_b = pq;
  }
  launch_gemm(g, N, stream);
}

}  // namespace lab08
