// lab08_conv3x3: ResNet-50's 3x3 convolutions, nine ways of computing them against every cuDNN algorithm.
//
//   lab08_conv3x3 [--batch B[,B...]] [--repetitions R] [--layers 56s1,28s2,...] [--csv FILE]
//                 [--max-workspace-gib G] [--v1-max-gflop F] [--quick] [--selftest] [--mma-peak]
//
// A 3x3 convolution with C input and K output channels is a matrix product in disguise:
// Y[K, N*P*Q] = W[K, C*9] x B[C*9, N*P*Q], where column j of B holds the 3x3 x C input window of
// one output pixel (the "im2col" matrix). That identity is the whole lab: the versions below differ
// in where B lives (written out, or gathered on the fly), how the GEMM reuses data (registers,
// shared memory, tensor cores), and whether the multiplies are reduced first (Winograd).
// The layers are the 3x3 convolutions of ResNet-50 v1.5 (torchvision: the stride sits on the 3x3),
// NCHW FP32, pad 1, at batch 1, 32 and 256. Second experiment of lab 08's ladder, llm.c dev/cuda
// style: CPU reference, numbered versions with one reason each, validate, then benchmark.
//
//   version 1  im2col into a [C*9, N*P*Q] matrix, then a naive GEMM, one thread per output:
//              the textbook lowering, every multiply-add reads both operands from memory
//   version 2  the same matrix, a tiled SGEMM (128x128x8 block tile in shared memory, 8x8 outputs
//              per thread in registers, float4 loads): 4 FMAs per shared-memory load instead of
//              2 global loads per FMA
//   version 3  the same matrix, cuBLAS SGEMM (FP32, strided-batched over images): what a tuned GEMM
//              adds; the table notes im2col's share of the time and the matrix's size (9x the input
//              at stride 1, 2.25x at stride 2)
//   version 4  implicit GEMM: version 2's kernel, its B tile gathered from the input while loading,
//              so the 9x matrix is never written nor read back
//   version 5  Winograd F(2x2,3x3): 16 multiplies per 2x2 outputs instead of 36 (2.25x fewer), as
//              16 batched GEMMs between input/output transforms; stride 1 only. The filter transform
//              depends on the weights only (done once per model) and is timed on its own row
//   version 6  version 4 on tensor cores: WMMA m16n16k8, TF32 operands, FP32 accumulation
//   version 7  version 6 pipelined: a 3-stage cp.async ring (the copies of the next two k slices
//              fly while the warps multiply this one, instead of v6's load, barrier, multiply,
//              barrier), mma.sync m16n8k8 in PTX with its documented fragment layout (operands
//              straight from bank-conflict-free padded tiles, results straight from registers to
//              NCHW, no scratch tile), and k slices of 4 whole channels, so that the gather's
//              addresses are a precomputed pixel pointer plus compile-time tap offsets
//   version 8  version 7 with fragments loaded by ldmatrix (one instruction per four operand
//              registers, B's tile stored n-major for it), weights rounded to TF32 once per model
//              (its time is in the note, like v5's filter transform), and a 64x128 block tile for
//              K = 64 and for the layers where 128x128 would leave SMs idle
//   version 9  version 8 on a channels-last copy of the input: x transposed NCHW -> NHWC (and
//              rounded to TF32) by a first kernel, timed in the row, so that a k slice (32
//              channels of one tap) of a pixel is 128 contiguous bytes: every operand copied in
//              16-byte cp.async into swizzled tiles; the output staged in shared memory for
//              coalesced NCHW stores; split-K where the grid would leave SMs idle. Still NCHW in,
//              NCHW out, like every other row (cuDNN's tensor-op kernels transpose internally too)
//   cudnn      every algorithm cudnnFindConvolutionForwardAlgorithm offers, twice: with
//              CUDNN_FMA_MATH (pure FP32: CUDNN_DEFAULT_MATH would permit TF32 on sm_80+) and with
//              CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION (TF32 tensor cores allowed); each row is
//              labelled with the math type cuDNN reports for it, and "cudnn choice" repeats the
//              algorithm cudnnFind ranked first in each pass
//
// Checks. On batch 2 every version is compared with a double-precision CPU convolution. On each
// timed batch every row is compared with version 1's naive GEMM (reading the input directly, so
// that it needs no matrix memory; "v0" in the CPU-check line) before it is timed. Versions 2, 4, 6, 7
// switch to 64x64 block tiles when 128x128 tiles would leave SMs without a block; the CPU check
// runs both tile sizes. Version 8 picks 128x128, else 64x128, else 64x64 by the same rule (64x128
// always when K = 64); the CPU check runs all three. Version 9 picks its tile and split-K from the
// grid's size (lab08::v9_config); the CPU check runs five configurations (kV9Checked).
// --quick: batch 1,32 and 3 repetitions, for a first smoke run. An element passes if
// |got - want| <= tol * (rms(want) + |want|): tol = 1e-4 for FP32 (a 4,608-term FP32 dot product
// is good to ~1e-6 of the output's rms, Winograd and FFT to ~1e-5), tol = 1e-2 for TF32 rows
// (TF32 keeps 10 of FP32's 23 mantissa bits: each operand is off by up to 2^-11 relative, so a
// long dot product with random signs is off by ~4e-4 of its rms, with single outliers ~5x that),
// and tol = 1e-3 for cuDNN's FFT and Winograd algorithms in FP32 (they round in the transformed
// domain; ours, version 5, is held to 1e-4).
// The "err" column is max |got - want| / rms(want). A version that fails is reported FAILED with
// the first mismatching element, and is not timed; the run continues.
// Times: median of R runs (version 1: at most 3), CUDA events, L2 flushed before each run
// (course::GpuTimer). TFLOP/s counts the direct convolution's 2*N*K*P*Q*C*9 FLOPs for every row
// (so Winograd's and FFT's numbers are "effective" rates).
// Before any of this, one m16n8k8 mma through version 7's fragment helpers is compared with a CPU
// product (small integers: exact in TF32 and FP32), so that a fragment-layout mistake shows at once;
// --selftest runs only that check; --mma-peak adds the rate of mma.sync m16n8k8 TF32 on operands
// in registers (no memory traffic), the ceiling of any kernel built on that instruction.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "course/cublas_check.hpp"
#include "course/cuda_check.hpp"
#include "course/cudnn_check.hpp"
#include "course/cudnn_raii.hpp"
#include "course/device.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/gpu_timer.hpp"
#include "course/rng.hpp"
#include "lab08/conv3x3_01_im2col_naive.cuh"
#include "lab08/conv3x3_02_tiled_gemm.cuh"
#include "lab08/conv3x3_05_winograd.cuh"
#include "lab08/conv3x3_06_tf32_wmma.cuh"
#include "lab08/conv3x3_07_tf32_mma_pipelined.cuh"
#include "lab08/conv3x3_08_tf32_mma_ldmatrix.cuh"
#include "lab08/conv3x3_09_tf32_nhwc.cuh"

namespace {

using course::cudnn::algorithm_name;

using lab08::Shape;

/// One 3x3 layer of ResNet-50: input H x H x C, K output channels, pad 1.
struct Layer {
  int H, C, K, stride;
  Shape shape(int n) const { return {n, C, H, H, K, stride}; }
  std::string label() const {
    return std::to_string(H) + "x" + std::to_string(H) + "x" + std::to_string(C) + "->" + std::to_string(K) + " s" +
           std::to_string(stride);
  }
  std::string key() const { return std::to_string(H) + "s" + std::to_string(stride); }  // for --layers
};

/// ResNet-50 v1.5's 3x3 convolutions (each distinct shape once): the stride-1 one of every stage, and
/// the stride-2 one that opens stages 2-4 (input of the previous stage's size, K channels already).
const std::vector<Layer> kLayers = {{56, 64, 64, 1},    {28, 128, 128, 1},  {14, 256, 256, 1}, {7, 512, 512, 1},
                                    {56, 128, 128, 2},  {28, 256, 256, 2},  {14, 512, 512, 2}};

constexpr double kTolFp32 = 1e-4, kTolTransform = 1e-3, kTolTf32 = 1e-2;

double gflop(const Shape& s) { return 2.0 * s.N * s.K * double(s.P()) * s.Q() * s.C * 9 / 1e9; }
double gib(double bytes) { return bytes / double(1ULL << 30); }
double im2col_bytes(const Shape& s) { return double(s.gemm_k()) * double(s.gemm_n()) * sizeof(float); }
std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// ---- CPU reference: direct loops, double accumulation ---------------------------------------------
void conv_cpu(const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& y, const Shape& s) {
  const int P = s.P(), Q = s.Q();
  std::vector<double> acc(std::size_t(P) * Q);
  for (int n = 0; n < s.N; ++n)
    for (int k = 0; k < s.K; ++k) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int c = 0; c < s.C; ++c) {
        const float* in = &x[(std::size_t(n) * s.C + c) * s.H * s.W];
        for (int r = 0; r < 3; ++r)
          for (int t = 0; t < 3; ++t) {
            const double wv = w[((std::size_t(k) * s.C + c) * 3 + r) * 3 + t];
            for (int p = 0; p < P; ++p) {
              const int h = p * s.stride + r - 1;
              if (h < 0 || h >= s.H) continue;
              for (int q = 0; q < Q; ++q) {
                const int v = q * s.stride + t - 1;
                if (v >= 0 && v < s.W) acc[std::size_t(p) * Q + q] += wv * in[std::size_t(h) * s.W + v];
              }
            }
          }
      }
      std::copy(acc.begin(), acc.end(), y.begin() + (std::size_t(n) * s.K + k) * P * Q);
    }
}

// ---- comparison ---------------------------------------------------------------------------------
struct Check {
  bool ok = false;
  double err = 0.0;    ///< max |got - want| / rms(want)
  std::string detail;  ///< the first mismatching element, if any
};

Check compare(const std::vector<float>& got, const std::vector<float>& want, const Shape& s, double tol) {
  double sq = 0.0;
  for (float v : want) sq += double(v) * v;
  const double rms = want.empty() ? 1.0 : std::max(std::sqrt(sq / double(want.size())), 1e-30);
  Check c;
  c.ok = true;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i]));
    if (!(d / rms <= c.err)) c.err = std::isnan(d) ? INFINITY : d / rms;  // NaN counts as infinitely wrong
    if (c.ok && !(d <= tol * (rms + std::fabs(double(want[i]))))) {
      c.ok = false;
      const std::size_t pq = std::size_t(s.P()) * s.Q();
      const std::size_t n = i / (pq * s.K), k = (i / pq) % s.K, p = (i % pq) / s.Q(), q = i % s.Q();
      std::ostringstream msg;
      msg << "first mismatch at index " << i << " (n=" << n << " k=" << k << " p=" << p << " q=" << q << "): got "
          << got[i] << ", want " << want[i] << " (tolerance " << tol * (rms + std::fabs(double(want[i]))) << ", rms "
          << rms << ")";
      c.detail = msg.str();
    }
  }
  return c;
}

// ---- our versions -------------------------------------------------------------------------------
struct Version {
  int id;
  const char* name;
  bool tf32;
};
const Version kVersions[] = {{1, "v1 im2col + naive GEMM", false},   {2, "v2 im2col + tiled SGEMM", false},
                            {3, "v3 im2col + cuBLAS SGEMM", false},  {4, "v4 implicit GEMM", false},
                            {5, "v5 Winograd F(2x2,3x3)", false},    {6, "v6 implicit GEMM TF32 WMMA", true},
                            {7, "v7 implicit GEMM TF32 mma pipelined", true},
                            {8, "v8 implicit GEMM TF32 mma ldmatrix", true},
                            {9, "v9 implicit GEMM TF32 NHWC", true}};
constexpr int kMaxVersion = 9;

/// Device memory one version needs beyond x, w and y (the im2col matrix, Winograd's V and M).
double workspace_bytes(int version, const Shape& s) {
  if (version >= 1 && version <= 3) return im2col_bytes(s);
  if (version == 5) return lab08::winograd_workspace_bytes(s);
  if (version == 9) return double(s.N) * s.C * s.H * s.W * sizeof(float);  // the NHWC copy of x
  return 0.0;
}

/// Everything a version reads and writes. `cols` and `wv`/`wm` may be null if that version's
/// workspace was not allocated (the caller skips the version then).
struct Buffers {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* u = nullptr;  // Winograd-transformed filters, 16 x K x C
  const float* wt = nullptr;  // w rounded to TF32 (version 8), K x C*9
  const float* wr = nullptr;  // w reordered to K x 3 x 3 x C and rounded to TF32 (version 9)
  float* y = nullptr;
  float* xn = nullptr;  // version 9: x in NHWC, TF32-rounded, N x H x W x C
  float* cols = nullptr;
  float* wv = nullptr;  // Winograd V: 16 x C x tiles
  float* wm = nullptr;  // Winograd M: 16 x K x tiles
};

// ---- launches (kept out of the kernel headers, which then compile as plain C++ too) --------------
void launch_im2col(const float* x, float* cols, const Shape& s, cudaStream_t stream) {
  const long long total = (long long)s.gemm_k() * s.gemm_n();
  const long long blocks = std::min<long long>((total + 255) / 256, 1LL << 20);  // grid-stride beyond
  lab08::im2col_3x3<<<unsigned(blocks), 256, 0, stream>>>(x, cols, s);
}

template <bool IMPLICIT>
void launch_gemm_naive(const float* w, const float* b_or_x, float* y, const Shape& s, cudaStream_t stream) {
  const dim3 grid(unsigned((s.gemm_n() + 255) / 256), unsigned(s.K));
  lab08::gemm_naive<IMPLICIT><<<grid, 256, 0, stream>>>(w, b_or_x, y, s);
}

template <bool IMPLICIT>
void launch_gemm_tiled(const float* w, const float* b_or_x, float* y, const Shape& s, bool small, cudaStream_t stream) {
  if (small) {
    const dim3 grid(unsigned((s.gemm_n() + 63) / 64), unsigned((s.K + 63) / 64));
    lab08::gemm_tiled<64, 64, 4, 4, IMPLICIT><<<grid, 256, 0, stream>>>(w, b_or_x, y, s);
  } else {
    const dim3 grid(unsigned((s.gemm_n() + 127) / 128), unsigned((s.K + 127) / 128));
    lab08::gemm_tiled<128, 128, 8, 8, IMPLICIT><<<grid, 256, 0, stream>>>(w, b_or_x, y, s);
  }
}

void launch_tf32_wmma(const float* w, const float* x, float* y, const Shape& s, bool small, cudaStream_t stream) {
  if (small) {
    const dim3 grid(unsigned((s.gemm_n() + 63) / 64), unsigned((s.K + 63) / 64));
    lab08::conv_tf32_wmma<64, 64><<<grid, 256, 0, stream>>>(w, x, y, s);
  } else {
    const dim3 grid(unsigned((s.gemm_n() + 127) / 128), unsigned((s.K + 127) / 128));
    lab08::conv_tf32_wmma<128, 128><<<grid, 256, 0, stream>>>(w, x, y, s);
  }
}

template <int BM, int BN>
void launch_tf32_mma_pipelined_tile(const float* w, const float* x, float* y, const Shape& s, cudaStream_t stream) {
  using L = lab08::V7Smem<BM, BN>;
  // More than 48 KiB of dynamic shared memory must be allowed per kernel, once; and the whole
  // unified L1/shared array preferred as shared memory, so that two 111 KiB blocks fit on an SM.
  static const bool configured = [] {
    CUDA_CHECK(cudaFuncSetAttribute(lab08::conv_tf32_mma_pipelined<BM, BN>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, L::BYTES));
    CUDA_CHECK(cudaFuncSetAttribute(lab08::conv_tf32_mma_pipelined<BM, BN>,
                                    cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    return true;
  }();
  (void)configured;
  const dim3 grid(unsigned((s.gemm_n() + BN - 1) / BN), unsigned((s.K + BM - 1) / BM));
  lab08::conv_tf32_mma_pipelined<BM, BN><<<grid, lab08::kV7Threads, L::BYTES, stream>>>(w, x, y, s);
}

void launch_tf32_mma_pipelined(const float* w, const float* x, float* y, const Shape& s, bool small,
                               cudaStream_t stream) {
  if (s.C % 4 != 0) throw course::Error("version 7 copies W in 16-byte chunks and needs C % 4 == 0");
  if (small) launch_tf32_mma_pipelined_tile<64, 64>(w, x, y, s, stream);
  else launch_tf32_mma_pipelined_tile<128, 128>(w, x, y, s, stream);
}

template <int BM, int BN>
void launch_tf32_mma_ldmatrix_tile(const float* wt, const float* x, float* y, const Shape& s, cudaStream_t stream) {
  using L = lab08::V8Smem<BM, BN>;
  static const bool configured = [] {
    CUDA_CHECK(cudaFuncSetAttribute(lab08::conv_tf32_mma_ldmatrix<BM, BN>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, L::BYTES));
    // Either all of the unified array as shared memory (as v7), or just what two blocks need (1 KiB
    // reserved per block), as a percentage of the 228 KiB maximum: the driver rounds up to the next
    // configuration, and the rest is L1 cache.
    const int pct = LAB08_V8_MIN_CARVEOUT ? std::min(100, (2 * (L::BYTES + 1024) * 100 + 228 * 1024 - 1) / (228 * 1024))
                                          : int(cudaSharedmemCarveoutMaxShared);
    CUDA_CHECK(cudaFuncSetAttribute(lab08::conv_tf32_mma_ldmatrix<BM, BN>,
                                    cudaFuncAttributePreferredSharedMemoryCarveout, pct));
    return true;
  }();
  (void)configured;
  const dim3 grid(unsigned((s.gemm_n() + BN - 1) / BN), unsigned((s.K + BM - 1) / BM));
  lab08::conv_tf32_mma_ldmatrix<BM, BN><<<grid, lab08::kV8Threads, L::BYTES, stream>>>(wt, x, y, s);
}

/// Version 8 with block tile `tile` (lab08::v8_tile: 0 = 128x128, 1 = 64x128, 2 = 64x64); `wt` is
/// the TF32-rounded weights (round_weights_tf32).
void launch_tf32_mma_ldmatrix(const float* wt, const float* x, float* y, const Shape& s, int tile,
                              cudaStream_t stream) {
  if (s.C % 4 != 0) throw course::Error("version 8 copies W in 16-byte chunks and needs C % 4 == 0");
  if (wt == nullptr) throw course::Error("version 8 needs the TF32-rounded weights");
  if (tile == 0) launch_tf32_mma_ldmatrix_tile<128, 128>(wt, x, y, s, stream);
  else if (tile == 1) launch_tf32_mma_ldmatrix_tile<64, 128>(wt, x, y, s, stream);
  else launch_tf32_mma_ldmatrix_tile<64, 64>(wt, x, y, s, stream);
}
const char* v8_tile_name(int tile) { return tile == 0 ? "128x128" : tile == 1 ? "64x128" : "64x64"; }

/// Once per layer (per model in a network): wt = w rounded to TF32.
void round_weights_tf32(const float* w, float* wt, long long n, cudaStream_t stream) {
  lab08::round_to_tf32<<<unsigned((n + 255) / 256), 256, 0, stream>>>(w, wt, n);
  CUDA_CHECK(cudaGetLastError());
}

/// Once per layer (per model in a network): wr = w reordered to K x 3 x 3 x C, rounded to TF32.
void reorder_weights_v9(const float* w, float* wr, int K, int C, cudaStream_t stream) {
  const long long n = 9LL * K * C;
  lab08::reorder_weights_tf32<<<unsigned((n + 255) / 256), 256, 0, stream>>>(w, wr, K, C);
  CUDA_CHECK(cudaGetLastError());
}

/// Version 9's first pass: x (NCHW) -> xn (NHWC, TF32-rounded).
void nhwc_transform(const float* x, float* xn, const Shape& s, cudaStream_t stream) {
  const int hw = s.H * s.W;
  const dim3 grid(unsigned((hw + 31) / 32), unsigned((s.C + 31) / 32), unsigned(s.N));
  lab08::nchw_to_nhwc_tf32<<<grid, dim3(32, 8), 0, stream>>>(x, xn, s.C, hw);
  CUDA_CHECK(cudaGetLastError());
}

template <int BM>
void launch_tf32_nhwc_tile(const float* wr, const float* xn, float* y, const Shape& s, int splits,
                           cudaStream_t stream) {
  constexpr int BN = 128;
  using L = lab08::V9Smem<BM, BN>;
  static const bool configured = [] {
    CUDA_CHECK(cudaFuncSetAttribute(lab08::conv_tf32_nhwc<BM, BN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    L::BYTES));
    CUDA_CHECK(cudaFuncSetAttribute(lab08::conv_tf32_nhwc<BM, BN>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutMaxShared));
    return true;
  }();
  (void)configured;
  const dim3 grid(unsigned((s.gemm_n() + BN - 1) / BN), unsigned((s.K + BM - 1) / BM), unsigned(splits));
  lab08::conv_tf32_nhwc<BM, BN><<<grid, lab08::kV9Threads, L::BYTES, stream>>>(wr, xn, y, s, splits);
}

/// Version 9, whole: the NHWC transform of x, y zeroed if the slices are split, the convolution.
void launch_tf32_nhwc(const Buffers& b, const Shape& s, lab08::V9Config cfg, cudaStream_t stream) {
  if (s.C % lab08::kV9BK != 0) throw course::Error("version 9 copies 32 channels per slice and needs C % 32 == 0");
  if (b.wr == nullptr || b.xn == nullptr) throw course::Error("version 9 needs the reordered weights and its NHWC buffer");
  nhwc_transform(b.x, b.xn, s, stream);
  if (cfg.splits > 1)
    CUDA_CHECK(cudaMemsetAsync(b.y, 0, sizeof(float) * std::size_t(s.N) * s.K * s.P() * s.Q(), stream));
  if (cfg.bm == 128) launch_tf32_nhwc_tile<128>(b.wr, b.xn, b.y, s, cfg.splits, stream);
  else launch_tf32_nhwc_tile<64>(b.wr, b.xn, b.y, s, cfg.splits, stream);
  CUDA_CHECK(cudaGetLastError());
}
std::string v9_config_name(lab08::V9Config cfg) {
  return std::string(cfg.bm == 128 ? "128x128" : "64x128") + " block tile" +
         (cfg.splits > 1 ? ", split-K " + std::to_string(cfg.splits) : std::string());
}
/// The configurations the CPU check runs (v9_config picks among these).
const lab08::V9Config kV9Checked[] = {{128, 1}, {64, 1}, {128, 3}, {64, 2}, {128, 4}};

int device_sm_count() {
  static const int count = [] {
    int dev = 0, n = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  return count;
}

/// --mma-peak: the rate of mma.sync m16n8k8 TF32 with operands in registers, the ceiling of any
/// kernel built on it (version 7 included), to set beside cuDNN's TFLOP/s.
void mma_peak(int sm_count) {
  course::DeviceBuffer<float> sink(1);
  const int iters = 1 << 14, blocks = sm_count * 4, threads = 256;
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  lab08::mma_peak<<<blocks, threads>>>(64, sink.get());  // warm-up (clocks, module load)
  CUDA_CHECK(cudaGetLastError());
  float best = INFINITY;
  for (int rep = 0; rep < 5; ++rep) {
    CUDA_CHECK(cudaEventRecord(start));
    lab08::mma_peak<<<blocks, threads>>>(iters, sink.get());
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    best = std::min(best, ms);
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  const double flops = double(blocks) * (threads / 32) * iters * 8 * (2.0 * 16 * 8 * 8);
  std::printf("lab08_conv3x3: mma.sync m16n8k8 TF32, operands in registers: %.1f TFLOP/s (best of 5, %d blocks "
              "of %d threads, %.3f ms)\n", flops / best / 1e9, blocks, threads, double(best));
}

/// One m16n8k8 + one m16n8k4 TF32 mma through version 7's fragment helpers against the CPU. The
/// operands are small integers (exact in TF32, and every partial sum exact in FP32), so the result
/// must match exactly; a wrong fragment index puts a product in the wrong place and shows.
bool mma_selftest() {
  constexpr int kK = 12;  // 8 for the k = 8 step, 4 for the k = 4 step
  std::vector<float> a(16 * kK), b(kK * 8), d(16 * 8, 0.0f), want(16 * 8, 0.0f);
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < kK; ++k) a[i * kK + k] = float((i * 3 + k * 5) % 7 - 3);  // row-major 16 x 12
  for (int k = 0; k < kK; ++k)
    for (int j = 0; j < 8; ++j) b[k * 8 + j] = float((k * 2 + j * 7) % 9 - 4);  // k-major 12 x 8
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j)
      for (int k = 0; k < kK; ++k) want[i * 8 + j] += a[i * kK + k] * b[k * 8 + j];
  course::DeviceBuffer<float> da(a), db(b), dd(d);
  lab08::mma_selftest<<<1, 32>>>(da.get(), db.get(), dd.get());
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  dd.download(d.data(), d.size());
  int bad = 0;
  for (int i = 0; i < 16 * 8; ++i)
    if (d[i] != want[i] && bad++ < 4)
      std::printf("  mma self-test: D[%d][%d] = %g, want %g\n", i / 8, i % 8, double(d[i]), double(want[i]));
  std::printf("lab08_conv3x3: mma m16n8k8 + m16n8k4 TF32 self-test %s (%d of 128 elements wrong)\n", bad ? "FAILED" : "ok", bad);
  return bad == 0;
}

/// cuBLAS is column-major: a row-major [rows x cols] matrix is its column-major transpose, so
/// row-major Y = W x B is computed as column-major Y^T = B^T x W^T, with the operands swapped.
void im2col_cublas_gemm(cublasHandle_t blas, const Buffers& b, const Shape& s) {
  const float one = 1.0f, zero = 0.0f;
  const int pq = s.P() * s.Q(), kdim = s.gemm_k();
  // One GEMM per image: image n's columns of B start at n*P*Q (row stride N*P*Q), and its output
  // is the contiguous K x P*Q block y[n]: NCHW directly, no transpose afterwards. W is shared (stride 0).
  CUBLAS_CHECK(cublasSgemmStridedBatched(blas, CUBLAS_OP_N, CUBLAS_OP_N, pq, s.K, kdim, &one, b.cols,
                                         int(s.gemm_n()), pq, b.w, kdim, 0, &zero, b.y, pq, (long long)s.K * pq, s.N));
}

void winograd_main(cublasHandle_t blas, const Buffers& b, const Shape& s, cudaStream_t stream) {
  const long long tiles = lab08::wino_tiles(s);
  lab08::winograd_input_transform<<<unsigned((s.C * tiles + 255) / 256), 256, 0, stream>>>(b.x, b.wv, s);
  CUDA_CHECK(cudaGetLastError());
  // M[xi] (K x tiles) = U[xi] (K x C) x V[xi] (C x tiles), 16 times; column-major as above.
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_CHECK(cublasSgemmStridedBatched(blas, CUBLAS_OP_N, CUBLAS_OP_N, int(tiles), s.K, s.C, &one, b.wv,
                                         int(tiles), (long long)s.C * tiles, b.u, s.C, (long long)s.K * s.C, &zero,
                                         b.wm, int(tiles), (long long)s.K * tiles, 16));
  lab08::winograd_output_transform<<<unsigned((s.K * tiles + 255) / 256), 256, 0, stream>>>(b.wm, b.y, s);
  CUDA_CHECK(cudaGetLastError());
}

void winograd_filter(const float* w, float* u, const Shape& s, cudaStream_t stream) {
  lab08::winograd_filter_transform<<<unsigned((s.K * s.C + 255) / 256), 256, 0, stream>>>(w, u, s.K, s.C);
  CUDA_CHECK(cudaGetLastError());
}

/// Version 0 is the reference kernel (version 1's naive GEMM gathering from the input).
void run_version(int version, const Buffers& b, const Shape& s, bool small_tiles, cublasHandle_t blas,
                 cudaStream_t stream) {
  switch (version) {
    case 0: launch_gemm_naive<true>(b.w, b.x, b.y, s, stream); break;
    case 1:
      launch_im2col(b.x, b.cols, s, stream);
      CUDA_CHECK(cudaGetLastError());
      launch_gemm_naive<false>(b.w, b.cols, b.y, s, stream);
      break;
    case 2:
      launch_im2col(b.x, b.cols, s, stream);
      CUDA_CHECK(cudaGetLastError());
      launch_gemm_tiled<false>(b.w, b.cols, b.y, s, small_tiles, stream);
      break;
    case 3:
      launch_im2col(b.x, b.cols, s, stream);
      CUDA_CHECK(cudaGetLastError());
      im2col_cublas_gemm(blas, b, s);
      break;
    case 4: launch_gemm_tiled<true>(b.w, b.x, b.y, s, small_tiles, stream); break;
    case 5: winograd_main(blas, b, s, stream); break;
    case 6: launch_tf32_wmma(b.w, b.x, b.y, s, small_tiles, stream); break;
    case 7: launch_tf32_mma_pipelined(b.w, b.x, b.y, s, small_tiles, stream); break;
    case 8: launch_tf32_mma_ldmatrix(b.wt, b.x, b.y, s, lab08::v8_tile(s, device_sm_count()), stream); break;
    case 9: launch_tf32_nhwc(b, s, lab08::v9_config(s, device_sm_count()), stream); break;
    default: throw course::Error("no version " + std::to_string(version));
  }
  CUDA_CHECK(cudaGetLastError());
}

// ---- options, rows, output ----------------------------------------------------------------------
struct Options {
  std::vector<int> batches = {1, 32, 256};
  int repetitions = 10;
  std::vector<std::string> layers;  // empty: all
  std::string csv;
  double max_workspace_gib = 8.0;
  double v1_max_gflop = 64.0;
  bool selftest_only = false;
  bool mma_peak_only = false;
};

struct Row {
  std::string version, math;
  bool tf32 = false;
  double ms = -1.0;      // < 0: not timed
  std::string status;    // ok, FAILED, skipped: ..., n/a, error: ...
  double err = -1.0;     // < 0: not compared
  std::string note;
  bool is_cudnn_fp32 = false, is_cudnn = false;
  bool rate = true;  // false: TFLOP/s and the ratios mean nothing (the filter transform row)
};

std::vector<int> parse_ints(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 4096) throw course::Error("bad batch list '" + text + "'");
    out.push_back(int(v));
  }
  return out;
}

std::vector<std::string> parse_words(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tf32";
    case CUDNN_FMA_MATH: return "fp32";
  }
  return "?";
}

/// The first line of an exception's message (the CUDA/cuDNN/cuBLAS status), for the table.
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

/// After an exception: true if the CUDA context still works (an out-of-memory is recoverable, a
/// fault inside a kernel is not: every later call would fail too).
bool context_alive() {
  (void)cudaGetLastError();  // clears a non-sticky error such as cudaErrorMemoryAllocation
  return cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess;
}

struct Bench {
  Options opt;
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t blas = nullptr;
  course::GpuTimer* timer = nullptr;
  int sm_count = 0;
  std::string gpu;
  FILE* csv = nullptr;
  int failures = 0;
  bool broken = false;  // the CUDA context died: stop

  course::TimerOptions timing(int version) const {
    course::TimerOptions t;
    t.repetitions = version == 1 ? std::min(opt.repetitions, 3) : opt.repetitions;
    t.warmup = version == 1 ? 1 : 3;
    return t;
  }
  double max_bytes() const { return opt.max_workspace_gib * double(1ULL << 30); }

  /// Records an exception on a row; stops the run if the context is gone.
  void fail(Row& row, const std::exception& e) {
    row.status = "error: " + first_line(e.what());
    std::fprintf(stderr, "lab08_conv3x3: %s: %s\n", row.version.c_str(), e.what());
    ++failures;
    if (!context_alive()) {
      broken = true;
      std::fprintf(stderr, "lab08_conv3x3: the CUDA context is broken (a kernel faulted?); stopping here\n");
    }
  }

  void print(const Layer& l, const Shape& s, const std::vector<Row>& rows) const {
    double best_fp32 = INFINITY, best_any = INFINITY;
    for (const Row& r : rows)
      if (r.is_cudnn && r.ms > 0 && r.status == "ok") {
        best_any = std::min(best_any, r.ms);
        if (r.is_cudnn_fp32) best_fp32 = std::min(best_fp32, r.ms);
      }
    for (const Row& r : rows) {
      const bool timed = r.ms > 0, rated = timed && r.rate;
      const std::string ms = timed ? fixed(r.ms, 4) : "-";
      const std::string tf = rated ? fixed(gflop(s) / r.ms, 2) : "-";  // GFLOP/ms = TFLOP/s
      const std::string x_fp32 = rated && std::isfinite(best_fp32) ? fixed(best_fp32 / r.ms, 2) : "-";
      const std::string x_tc = rated && r.tf32 && std::isfinite(best_any) ? fixed(best_any / r.ms, 2) : "-";
      char err[32] = "-";
      if (r.err >= 0) std::snprintf(err, sizeof err, "%.1e", r.err);
      std::string note = r.status == "ok" ? r.note : r.status + (r.note.empty() ? "" : "; " + r.note);
      std::printf("| %5d | %-16s | %-38s | %-9s | %9s | %7s | %7s | %7s | %7s | %s\n", s.N, l.label().c_str(),
                  r.version.c_str(), r.math.c_str(), ms.c_str(), tf.c_str(), x_fp32.c_str(), x_tc.c_str(), err,
                  note.c_str());
      if (csv) {
        std::fprintf(csv, "\"%s\",%zu,%d,%d,%d,%d,%d,%d,\"%s\",%s,%s,%s,\"%s\"\n", gpu.c_str(), cudnnGetVersion(), s.N,
                     s.H, s.W, s.C, s.K, s.stride, r.version.c_str(), r.math.c_str(), timed ? fixed(r.ms, 5).c_str() : "",
                     rated ? fixed(gflop(s) / r.ms, 3).c_str() : "", r.status.c_str());
      }
    }
    std::fflush(stdout);
    if (csv) std::fflush(csv);
  }

  // ---- cuDNN: both math types, every algorithm ----
  void cudnn_rows(const Shape& s, const float* x, const float* w, float* y, const std::vector<float>& want,
                  std::vector<Row>& rows) {
    course::cudnn::TensorDescriptor xd, yd;
    course::cudnn::FilterDescriptor wd;
    course::cudnn::ConvolutionDescriptor cd;
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.N, s.C, s.H, s.W));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.N, s.K, s.P(), s.Q()));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s.K, s.C, 3, 3));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(cd, 1, 1, s.stride, s.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    int dims[4] = {0, 0, 0, 0};
    CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &dims[0], &dims[1], &dims[2], &dims[3]));
    if (dims[0] != s.N || dims[1] != s.K || dims[2] != s.P() || dims[3] != s.Q())
      throw course::Error("cuDNN's output shape differs from ours: " + std::to_string(dims[2]) + "x" +
                          std::to_string(dims[3]));
    std::vector<float> got(want.size());
    for (cudnnMathType_t pass : {CUDNN_FMA_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION}) {
      const bool tc = pass != CUDNN_FMA_MATH;
      CUDNN_CHECK(cudnnSetConvolutionMathType(cd, pass));
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int returned = 0;
      CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(cudnn, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                       &returned, perf));
      cudnnConvolutionFwdAlgoPerf_t heur[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int heur_returned = 0;
      CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(cudnn, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                         &heur_returned, heur));
      std::string heuristic = "none";
      for (int i = 0; i < heur_returned; ++i)
        if (heur[i].status == CUDNN_STATUS_SUCCESS) {
          heuristic = std::string(algorithm_name(heur[i].algo)) + " (" + math_name(heur[i].mathType) + ")";
          break;
        }
      std::string not_offered, fma_only;
      int choice = -1;
      double choice_ms = -1.0;
      std::string choice_status = "n/a";
      for (int i = 0; i < returned; ++i) {
        const cudnnConvolutionFwdAlgoPerf_t& p = perf[i];
        if (p.status != CUDNN_STATUS_SUCCESS) {
          not_offered += std::string(not_offered.empty() ? "" : ", ") + algorithm_name(p.algo);
          continue;
        }
        if (choice < 0) choice = i;
        if (tc && p.mathType == CUDNN_FMA_MATH) {  // the same kernel as in the FP32 pass: not repeated
          fma_only += std::string(fma_only.empty() ? "" : ", ") + algorithm_name(p.algo);
          if (choice == i) choice_ms = -2.0;  // look up in the FP32 pass below
          continue;
        }
        Row row;
        row.version = std::string("cudnn ") + algorithm_name(p.algo);
        row.math = math_name(p.mathType);
        row.tf32 = tc;
        row.is_cudnn = true;
        row.is_cudnn_fp32 = !tc;
        row.note = "workspace " + fixed(double(p.memory) / (1 << 20), 1) + " MiB";
        if (double(p.memory) > max_bytes()) {
          row.status = "skipped: needs " + fixed(gib(double(p.memory)), 2) + " GiB workspace (--max-workspace-gib)";
        } else {
          try {
            course::DeviceBuffer<unsigned char> ws(std::max<std::size_t>(p.memory, 1));
            CUDNN_CHECK(cudnnSetConvolutionMathType(cd, p.mathType));  // run the kernel Find measured
            const float one = 1.0f, zero = 0.0f;
            auto call = [&](cudaStream_t) {
              CUDNN_CHECK(cudnnConvolutionForward(cudnn, &one, xd, x, wd, w, cd, p.algo, ws.get(), p.memory, &zero, yd, y));
            };
            CUDA_CHECK(cudaMemsetAsync(y, 0xff, want.size() * sizeof(float), stream));  // NaN poison
            call(stream);
            CUDA_CHECK(cudaStreamSynchronize(stream));
            CUDA_CHECK(cudaMemcpy(got.data(), y, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
            const bool transform = p.algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT || p.algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
                                   p.algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
                                   p.algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
            const Check c = compare(got, want, s, tc ? kTolTf32 : transform ? kTolTransform : kTolFp32);
            row.err = c.err;
            if (!c.ok) {
              row.status = "FAILED";
              row.note = c.detail;
              ++failures;
            } else {
              row.ms = timer->time(call, timing(0)).median_ms;
              row.status = "ok";
            }
            CUDNN_CHECK(cudnnSetConvolutionMathType(cd, pass));
          } catch (const std::exception& e) {
            fail(row, e);
            if (broken) return;
          }
        }
        if (choice == i) {
          choice_ms = row.ms;
          choice_status = row.status;
        }
        rows.push_back(row);
      }
      if (choice_ms == -2.0) {  // an FMA kernel ranked first with tensor ops allowed: its FP32-pass row
        choice_ms = -1.0;
        for (const Row& r : rows)
          if (r.is_cudnn_fp32 && r.version == std::string("cudnn ") + algorithm_name(perf[choice].algo)) {
            choice_ms = r.ms;
            choice_status = r.status;
          }
      }
      Row pick;
      pick.version = std::string("cudnn choice: ") + (choice >= 0 ? algorithm_name(perf[choice].algo) : "none");
      pick.math = choice >= 0 ? math_name(perf[choice].mathType) : math_name(pass);
      pick.tf32 = tc;
      pick.ms = choice_ms;
      pick.status = choice_status;
      pick.note = std::string("cudnnFind's first with ") + (tc ? "TENSOR_OP_MATH_ALLOW_CONVERSION" : "FMA_MATH") +
                  "; the _v7 heuristic picks " + heuristic;
      if (!not_offered.empty()) pick.note += "; not offered: " + not_offered;
      if (!fma_only.empty()) pick.note += "; FMA-only kernels (see fp32 rows): " + fma_only;
      rows.push_back(pick);
    }
  }

  // ---- our versions on one batch ----
  void our_rows(const Shape& s, const Buffers& base, const std::vector<float>& want, const bool cpu_ok[kMaxVersion + 1],
                std::vector<Row>& rows) {
    const bool small = lab08::use_small_tiles(s, sm_count);
    std::vector<float> got(want.size());
    course::DeviceBuffer<float> cols, wino;  // allocated once, shared by the versions that need them
    for (const Version& v : kVersions) {
      Row row;
      row.version = v.name;
      row.math = v.tf32 ? "tf32" : "fp32";
      row.tf32 = v.tf32;
      const double ws = workspace_bytes(v.id, s);
      if (v.id == 2 || v.id == 4 || v.id == 6 || v.id == 7) row.note = small ? "64x64 block tile" : "128x128 block tile";
      if (v.id == 8) row.note = std::string(v8_tile_name(lab08::v8_tile(s, sm_count))) + " block tile";
      if (v.id == 9) row.note = v9_config_name(lab08::v9_config(s, sm_count));
      if (v.id == 5 && s.stride != 1) {
        row.status = "n/a";
        row.note = "Winograd F(2x2,3x3) is stride 1 only";
      } else if (!cpu_ok[v.id]) {
        row.status = "FAILED";
        row.note = "failed the CPU check (see above); not timed";
      } else if (ws > max_bytes()) {
        row.status = "skipped: needs " + fixed(gib(ws), 2) + " GiB (--max-workspace-gib)";
      } else {
        try {
          Buffers b = base;
          if (v.id <= 3) {
            if (cols.empty()) cols = course::DeviceBuffer<float>(std::size_t(ws / sizeof(float)));
            b.cols = cols.get();
          }
          if (v.id == 9) {
            if (cols.empty()) cols = course::DeviceBuffer<float>(std::size_t(ws / sizeof(float)));
            b.xn = cols.get();
          }
          if (v.id == 5) {
            wino = course::DeviceBuffer<float>(std::size_t(ws / sizeof(float)));
            b.wv = wino.get();
            b.wm = wino.get() + std::size_t(16) * s.C * lab08::wino_tiles(s);
          }
          CUDA_CHECK(cudaMemsetAsync(b.y, 0xff, want.size() * sizeof(float), stream));  // NaN poison
          run_version(v.id, b, s, small, blas, stream);
          CUDA_CHECK(cudaStreamSynchronize(stream));
          CUDA_CHECK(cudaMemcpy(got.data(), b.y, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
          const Check c = compare(got, want, s, v.tf32 ? kTolTf32 : kTolFp32);
          row.err = c.err;
          if (!c.ok) {
            row.status = "FAILED";
            row.note = c.detail;
            ++failures;
            std::printf("  %s FAILED on batch %d: %s\n", v.name, s.N, c.detail.c_str());
          } else if (v.id == 1 && gflop(s) > opt.v1_max_gflop) {
            row.status = "checked, not timed: " + fixed(gflop(s), 1) + " GFLOP > --v1-max-gflop";
          } else {
            row.ms = timer->time([&](cudaStream_t st) { run_version(v.id, b, s, small, blas, st); }, timing(v.id)).median_ms;
            row.status = "ok";
            if (v.id == 3) {  // im2col's share of version 3, and the matrix's size
              const double im2col_ms =
                  timer->time([&](cudaStream_t st) { launch_im2col(b.x, b.cols, s, st); CUDA_CHECK(cudaGetLastError()); },
                              timing(3)).median_ms;
              const double input_bytes = double(s.N) * s.C * s.H * s.W * sizeof(float);
              row.note = "im2col " + fixed(im2col_ms, 4) + " ms = " + fixed(100.0 * im2col_ms / row.ms, 0) +
                         "% of the time; matrix " + fixed(gib(ws), 3) + " GiB = " + fixed(ws / input_bytes, 2) +
                         "x the input";
            }
            if (v.id == 8) {  // the weights' rounding, once per model like v5's filter transform
              const long long nw = (long long)s.K * s.gemm_k();
              course::DeviceBuffer<float> scratch{static_cast<std::size_t>(nw)};
              const double round_ms =
                  timer->time([&](cudaStream_t st) { round_weights_tf32(b.w, scratch.get(), nw, st); }, timing(8))
                      .median_ms;
              row.note += "; W rounded to TF32 once/model: " + fixed(round_ms, 4) + " ms, not in this row";
            }
            if (v.id == 9) {  // the NHWC transform's share (in the row), the weights' reorder (once per model)
              const double nhwc_ms =
                  timer->time([&](cudaStream_t st) { nhwc_transform(b.x, b.xn, s, st); }, timing(9)).median_ms;
              course::DeviceBuffer<float> scratch{std::size_t(9) * s.K * s.C};
              const double reorder_ms =
                  timer->time([&](cudaStream_t st) { reorder_weights_v9(b.w, scratch.get(), s.K, s.C, st); }, timing(9))
                      .median_ms;
              row.note += "; NCHW->NHWC of x " + fixed(nhwc_ms, 4) + " ms = " + fixed(100.0 * nhwc_ms / row.ms, 0) +
                          "% of the row (in it); W to KRSC TF32 once/model: " + fixed(reorder_ms, 4) +
                          " ms, not in this row";
            }
            if (v.id == 5) {
              const double filter_ms =
                  timer->time([&](cudaStream_t st) { winograd_filter(b.w, const_cast<float*>(b.u), s, st); }, timing(5))
                      .median_ms;
              row.note = "input + 16 GEMMs + output transforms; V+M " + fixed(gib(ws), 3) + " GiB";
              rows.push_back(row);
              Row filter;
              filter.version = "v5 filter transform (once/model)";
              filter.math = "fp32";
              filter.ms = filter_ms;
              filter.status = "ok";
              filter.rate = false;
              filter.note = "G g G^T, depends on the weights only: not in the v5 row";
              rows.push_back(filter);
              continue;
            }
          }
        } catch (const std::exception& e) {
          fail(row, e);
        }
      }
      rows.push_back(row);
      if (broken) return;
    }
  }

  // ---- one layer: CPU check on batch 2, then every batch ----
  void layer(const Layer& l) {
    course::Rng rng(uint64_t(l.H) * 100003 + uint64_t(l.C) * 7 + uint64_t(l.stride));
    std::vector<float> h_w(std::size_t(l.K) * l.C * 9);
    for (float& v : h_w) v = rng.uniform(-1.0f, 1.0f);
    course::DeviceBuffer<float> d_w(h_w), d_u(std::size_t(16) * l.K * l.C);
    winograd_filter(d_w.get(), d_u.get(), l.shape(1), stream);  // once per layer, like once per model
    course::DeviceBuffer<float> d_wt(h_w.size());
    round_weights_tf32(d_w.get(), d_wt.get(), (long long)h_w.size(), stream);  // likewise (version 8)
    course::DeviceBuffer<float> d_wr(h_w.size());
    reorder_weights_v9(d_w.get(), d_wr.get(), l.K, l.C, stream);  // likewise (version 9)

    bool cpu_ok[kMaxVersion + 1];
    std::fill(cpu_ok, cpu_ok + kMaxVersion + 1, true);
    try {
      const Shape s = l.shape(2);
      std::vector<float> h_x(std::size_t(s.N) * s.C * s.H * s.W), want(std::size_t(s.N) * s.K * s.P() * s.Q());
      for (float& v : h_x) v = rng.uniform(-1.0f, 1.0f);
      conv_cpu(h_x, h_w, want, s);
      course::DeviceBuffer<float> d_x(h_x), d_y(want.size()), cols(std::size_t(im2col_bytes(s) / sizeof(float))),
          wino(std::size_t(lab08::winograd_workspace_bytes(s) / sizeof(float)));
      Buffers b;
      b.x = d_x.get(), b.w = d_w.get(), b.u = d_u.get(), b.wt = d_wt.get(), b.y = d_y.get(), b.cols = cols.get();
      b.wr = d_wr.get(), b.xn = cols.get();  // the im2col matrix (9x the input) holds the NHWC copy too
      b.wv = wino.get(), b.wm = wino.get() + std::size_t(16) * s.C * lab08::wino_tiles(s);
      std::string line = "  CPU check, batch 2, " + l.label() + ":";
      std::vector<float> got(want.size());
      for (int version = 0; version <= kMaxVersion; ++version) {
        if (version == 5 && l.stride != 1) continue;
        const bool tf32 = version >= 6;
        // Both tile configurations of versions 2, 4, 6, 7; version 8's three (its tile 0, 1, 2);
        // version 9's tiles with and without split-K (kV9Checked).
        const int configs = version == 9 ? int(std::size(kV9Checked)) : 3;
        for (int cfg = 0; cfg < configs; ++cfg) {
          const bool small = cfg == 1, multi = version == 2 || version == 4 || version == 6 || version == 7;
          if (version == 8 || version == 9 ? false : (cfg == 2 || (small && !multi))) continue;
          CUDA_CHECK(cudaMemsetAsync(b.y, 0xff, want.size() * sizeof(float), stream));
          if (version == 8) launch_tf32_mma_ldmatrix(b.wt, b.x, b.y, s, cfg, stream);
          else if (version == 9) launch_tf32_nhwc(b, s, kV9Checked[cfg], stream);
          else run_version(version, b, s, small, blas, stream);
          CUDA_CHECK(cudaGetLastError());
          CUDA_CHECK(cudaStreamSynchronize(stream));
          d_y.download(got.data(), got.size());
          const Check c = compare(got, want, s, tf32 ? kTolTf32 : kTolFp32);
          std::string tag = version == 8 ? (cfg == 0 ? "" : cfg == 1 ? "(64x128)" : "(64)") : small ? "(64)" : "";
          if (version == 9)
            tag = "(" + std::to_string(kV9Checked[cfg].bm) + "x128" +
                  (kV9Checked[cfg].splits > 1 ? "/" + std::to_string(kV9Checked[cfg].splits) : std::string()) + ")";
          char buf[64];
          std::snprintf(buf, sizeof buf, " v%d%s %s %.0e", version, tag.c_str(), c.ok ? "ok" : "FAILED", c.err);
          line += buf;
          if (!c.ok) {
            cpu_ok[version] = false;
            ++failures;
            std::printf("  v%d%s FAILED the CPU check on %s: %s\n", version, tag.c_str(), l.label().c_str(),
                        c.detail.c_str());
          }
        }
      }
      std::printf("%s\n", line.c_str());
      if (!cpu_ok[0])
        std::printf("  WARNING: the reference kernel (v0) failed the CPU check: the timed-batch checks below are void\n");
    } catch (const std::exception& e) {
      Row row;
      row.version = "(CPU check of " + l.label() + ")";
      fail(row, e);
      for (bool& ok : cpu_ok) ok = false;
      if (broken) return;
    }

    for (int n : opt.batches) {
      const Shape s = l.shape(n);
      std::vector<Row> rows;
      try {
        std::vector<float> h_x(std::size_t(s.N) * s.C * s.H * s.W);
        for (float& v : h_x) v = rng.uniform(-1.0f, 1.0f);
        course::DeviceBuffer<float> d_x(h_x), d_y(std::size_t(s.N) * s.K * s.P() * s.Q());
        Buffers b;
        b.x = d_x.get(), b.w = d_w.get(), b.u = d_u.get(), b.wt = d_wt.get(), b.wr = d_wr.get(), b.y = d_y.get();
        run_version(0, b, s, false, blas, stream);  // the reference for this batch
        std::vector<float> want(d_y.size());
        CUDA_CHECK(cudaStreamSynchronize(stream));
        d_y.download(want.data(), want.size());
        try {
          cudnn_rows(s, b.x, b.w, b.y, want, rows);
        } catch (const std::exception& e) {  // e.g. cudnnFind itself failed: our rows still run
          Row row;
          row.version = "cudnn (Find)";
          row.math = "-";
          fail(row, e);
          rows.push_back(row);
        }
        if (!broken) our_rows(s, b, want, cpu_ok, rows);
      } catch (const std::exception& e) {
        Row row;
        row.version = "(batch setup)";
        row.math = "-";
        fail(row, e);
        rows.push_back(row);
      }
      print(l, s, rows);
      if (broken) return;
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  try {
    Options opt;
    const char* usage =
        "usage: lab08_conv3x3 [--batch B[,B...]] [--repetitions R] [--layers 56s1,28s2,...] [--csv FILE]\n"
        "                     [--max-workspace-gib G] [--v1-max-gflop F] [--quick] [--selftest] [--mma-peak]\n"
        "  --quick: batch 1,32 and 3 repetitions (a smoke run). --selftest: only the mma fragment check.\n"
        "  --mma-peak: the self-test, then the rate of mma.sync m16n8k8 TF32 on register operands.\n"
        "  Layers (input size s stride):";
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const bool has_value = i + 1 < argc;
      if (a == "--batch" && has_value) opt.batches = parse_ints(argv[++i]);
      else if (a == "--repetitions" && has_value) opt.repetitions = std::max(1, std::atoi(argv[++i]));
      else if (a == "--layers" && has_value) opt.layers = parse_words(argv[++i]);
      else if (a == "--csv" && has_value) opt.csv = argv[++i];
      else if (a == "--max-workspace-gib" && has_value) opt.max_workspace_gib = std::atof(argv[++i]);
      else if (a == "--v1-max-gflop" && has_value) opt.v1_max_gflop = std::atof(argv[++i]);
      else if (a == "--quick") opt.batches = {1, 32}, opt.repetitions = 3;
      else if (a == "--selftest") opt.selftest_only = true;
      else if (a == "--mma-peak") opt.mma_peak_only = true;
      else {
        std::string keys;
        for (const Layer& l : kLayers) keys += " " + l.key();
        throw course::Error(usage + keys);
      }
    }
    std::vector<Layer> layers;
    for (const Layer& l : kLayers)
      if (opt.layers.empty() || std::find(opt.layers.begin(), opt.layers.end(), l.key()) != opt.layers.end())
        layers.push_back(l);
    if (layers.empty()) throw course::Error("--layers matches no layer (names: 56s1 28s1 14s1 7s1 56s2 28s2 14s2)");
    for (const Layer& l : layers)
      if (l.C % 4 != 0) throw course::Error("the tiled kernels load W as float4 and need C % 4 == 0");

    if (!course::has_gpu()) {
      std::printf("lab08_conv3x3: no GPU (%s)\n", course::gpu_unavailable_reason().c_str());
      return course::kSkipReturnCode;
    }
    const course::DeviceInfo dev = course::query_device(0);
    if (dev.cc_major < 8)
      std::printf("lab08_conv3x3: warning: compute capability < 8.0, versions 6 and 7 (TF32) will fail\n");
    const bool mma_ok = dev.cc_major >= 8 && mma_selftest();
    if (opt.mma_peak_only && mma_ok) mma_peak(dev.sm_count);
    if (opt.selftest_only || opt.mma_peak_only) return mma_ok ? 0 : 1;

    Bench bench;
    bench.opt = opt;
    bench.gpu = dev.name;
    bench.sm_count = dev.sm_count;
    CUDA_CHECK(cudaStreamCreateWithFlags(&bench.stream, cudaStreamNonBlocking));
    course::cudnn::Handle cudnn;
    course::cudnn::CublasHandle blas;
    CUDNN_CHECK(cudnnSetStream(cudnn, bench.stream));
    CUBLAS_CHECK(cublasSetStream(blas, bench.stream));
    CUBLAS_CHECK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));  // FP32 SGEMM: no TF32 unless asked
    bench.cudnn = cudnn;
    bench.blas = blas;
    course::GpuTimer timer(bench.stream);
    bench.timer = &timer;
    if (!opt.csv.empty()) {
      bench.csv = std::fopen(opt.csv.c_str(), "w");
      if (!bench.csv) throw course::Error("cannot write " + opt.csv);
      std::fprintf(bench.csv, "gpu,cudnn_version,batch,H,W,C,K,stride,version,math,median_ms,tflops,status\n");
    }

    std::string batches;
    for (int n : opt.batches) batches += (batches.empty() ? "" : ",") + std::to_string(n);
    std::printf("lab08_conv3x3: %s, cuDNN %zu, cuBLAS %d, NCHW FP32 3x3 pad 1, batch %s, %d timed runs per row "
                "(v1: %d), L2 flushed; workspace limit %.1f GiB\n",
                dev.summary().c_str(), cudnnGetVersion(), CUBLAS_VERSION, batches.c_str(), opt.repetitions,
                std::min(opt.repetitions, 3), opt.max_workspace_gib);
    std::printf("| batch | layer            | version                                | math      | median ms | TFLOP/s | x cuDNN | x cuDNN | err     | note\n");
    std::printf("|       |                  |                                        |           |           |         | fp32    | tf32    |         |\n");
    std::printf("|------:|------------------|----------------------------------------|-----------|----------:|--------:|--------:|--------:|--------:|-----\n");
    for (const Layer& l : layers) {
      bench.layer(l);
      if (bench.broken) break;
    }
    if (bench.csv) std::fclose(bench.csv);
    CUDA_CHECK(cudaStreamDestroy(bench.stream));
    if (!mma_ok) ++bench.failures;
    std::printf("lab08_conv3x3: %d failure(s)\n", bench.failures);
    return bench.failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab08_conv3x3: %s\n", e.what());
    return 1;
  }
}
