// lab07_mma_selftest: the pieces of rungs 15 and 16 (15_tf32_kernels.cuh) that a wrong fragment
// layout would break, each checked on the GPU against a CPU product, so that a layout mistake is
// reported with its coordinates here instead of as a failed accuracy check in lab07_ladder.
//
//   1. cvt.rna.tf32.f32 (round_tf32) and its integer version (round_tf32_int) on the GPU give the
//      same bits as round_tf32_host (prepare() rounds the weights on the host, the kernel rounds
//      the activations on the GPU)
//   2. one raw mma.sync m16n8k8 TF32 (mma_16x8x8) with A and B loaded by the PTX ISA's layout:
//      B = identity shows where each A element lands, A = stacked identities where each B element
//      lands, then a full product of small integers (exact)
//   3. mma_k16<OneTf32> and mma_k16<ThreeTf32<>> as the kernel calls them: A from rung 12's float2
//      pair words, B from tf32_fragments(); exact on integers, then the error of one and of three
//      products on random FP32 values (TF32: ~1e-4 of the scale; 3xTF32: ~1e-7)
//   4. the two network kernels on this GPU: registers, spills, blocks per SM
//
//   build/bench/lab07_mma_selftest     exit 0: all passed, 1: a check failed, 77: no GPU or below sm_80
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "15_tf32_kernels.cuh"
#include "tool_cuda_check.hpp"

namespace {

namespace tf = ladder::tf32;
using Split = tf::ThreeTf32<tf::SplitRounding::integer>;
using SplitCvt = tf::ThreeTf32<tf::SplitRounding::cvt>;

template <typename T>
T* to_device(const std::vector<T>& host) {
  T* d = nullptr;
  TOOL_CUDA(cudaMalloc(&d, host.size() * sizeof(T)));
  TOOL_CUDA(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
std::vector<T> to_host(const T* d, std::size_t count) {
  std::vector<T> host(count);
  TOOL_CUDA(cudaDeviceSynchronize());
  TOOL_CUDA(cudaMemcpy(host.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

/// D [16 x 8] from this lane's accumulators, by the C layout: c0, c1 = D[g][2t, 2t+1], c2, c3 = D[g+8][...].
__device__ void store_d(const float (&d)[4], float* out, int g, int t) {
  out[g * 8 + 2 * t] = d[0];
  out[g * 8 + 2 * t + 1] = d[1];
  out[(g + 8) * 8 + 2 * t] = d[2];
  out[(g + 8) * 8 + 2 * t + 1] = d[3];
}

// ---- 1. rounding -----------------------------------------------------------------------------

/// out[i] = cvt.rna (round_tf32), out[n + i] = the integer version (round_tf32_int).
__global__ void round_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    out[i] = tf::round_tf32(in[i]);
    out[n + i] = tf::round_tf32_int(in[i]);
  }
}

bool check_rounding() {
  // Normal numbers only (subnormals and overflow never occur in these networks).
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 1.0f / 3.0f, -1.0f / 3.0f, 3.14159265f, 1e-30f,
                               1e30f, 17.0f / 255.0f, 0.1f, 1e-5f};
  // Bit patterns around the rounding point: low 13 bits just below, at and above half (0x1000).
  for (const std::uint32_t base : {0x3f800000u, 0xbf800000u, 0x3eaaa000u, 0x00802000u, 0x7f7fc000u})
    for (const std::uint32_t low : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu}) {
      float x = 0.0f;
      const std::uint32_t bits = base + low;
      std::memcpy(&x, &bits, sizeof x);
      values.push_back(x);
    }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  for (int i = 0; i < 4000; ++i) values.push_back(uniform(rng));
  const int n = static_cast<int>(values.size());
  float* d_in = to_device(values);
  float* d_out = nullptr;
  TOOL_CUDA(cudaMalloc(&d_out, 2 * values.size() * sizeof(float)));
  round_kernel<<<(n + 255) / 256, 256>>>(d_in, d_out, n);
  TOOL_CUDA(cudaGetLastError());
  const std::vector<float> got = to_host(d_out, 2 * values.size());
  int wrong = 0;
  for (int i = 0; i < 2 * n; ++i) {
    const float want = tf::round_tf32_host(values[i % n]);
    std::uint32_t a = 0, b = 0, x = 0;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want, 4);
    std::memcpy(&x, &values[i % n], 4);
    if (a != b && wrong++ < 5)
      std::printf("    x = %.9g (0x%08x): GPU %s 0x%08x, host 0x%08x\n", values[i % n], x,
                  i < n ? "round_tf32 (cvt.rna)" : "round_tf32_int", a, b);
  }
  cudaFree(d_in);
  cudaFree(d_out);
  std::printf("%s 1. round_tf32 (cvt.rna.tf32.f32) and round_tf32_int == round_tf32_host on %d values (%d differ)\n",
              wrong ? "FAIL" : "ok  ", n, wrong);
  return wrong == 0;
}

// ---- 2. the raw m16n8k8 layout ---------------------------------------------------------------

/// D = A [16 x 8, row-major] * B [8 x 8, B[k * 8 + n]], fragments loaded by the PTX ISA's table.
__global__ void raw_mma_kernel(const float* a_mat, const float* b_mat, float* d_mat) {
  const int lane = static_cast<int>(threadIdx.x), g = lane / 4, t = lane % 4;
  const std::uint32_t a[4] = {__float_as_uint(a_mat[g * 8 + t]), __float_as_uint(a_mat[(g + 8) * 8 + t]),
                              __float_as_uint(a_mat[g * 8 + t + 4]), __float_as_uint(a_mat[(g + 8) * 8 + t + 4])};
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  tf::mma_16x8x8(d, a, __float_as_uint(b_mat[t * 8 + g]), __float_as_uint(b_mat[(t + 4) * 8 + g]));
  store_d(d, d_mat, g, t);
}

std::vector<float> raw_mma(const std::vector<float>& a, const std::vector<float>& b) {
  float* d_a = to_device(a);
  float* d_b = to_device(b);
  float* d_d = nullptr;
  TOOL_CUDA(cudaMalloc(&d_d, 128 * sizeof(float)));
  raw_mma_kernel<<<1, 32>>>(d_a, d_b, d_d);
  TOOL_CUDA(cudaGetLastError());
  std::vector<float> d = to_host(d_d, 128);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_d);
  return d;
}

/// Compares D [16 x 8] with `want` exactly; on a mismatch names, for the first few, which input
/// element's value (all distinct) arrived there.
bool compare_exact(const char* what, const std::vector<float>& got, const std::vector<float>& want,
                   const std::vector<float>& source, int source_cols, const char* source_name) {
  int wrong = 0;
  for (int i = 0; i < 128; ++i) {
    if (got[i] == want[i]) continue;
    if (wrong++ >= 6) continue;
    std::printf("    D[%d][%d] = %g, want %g", i / 8, i % 8, got[i], want[i]);
    for (std::size_t j = 0; j < source.size(); ++j)
      if (source[j] == got[i]) std::printf("  (= %s[%zu][%zu])", source_name, j / source_cols, j % source_cols);
    std::printf("\n");
  }
  std::printf("%s %s (%d of 128 wrong)\n", wrong ? "FAIL" : "ok  ", what, wrong);
  return wrong == 0;
}

bool check_raw_layout() {
  bool ok = true;
  std::vector<float> a(128), b(64), want(128);
  // B = identity: D = A, and every A value (1..128, exact in TF32) is distinct.
  for (int i = 0; i < 128; ++i) a[i] = static_cast<float>(i + 1);
  for (int i = 0; i < 64; ++i) b[i] = (i / 8 == i % 8) ? 1.0f : 0.0f;
  ok = compare_exact("2a. m16n8k8 A layout (B = I, D must equal A)", raw_mma(a, b), a, a, 8, "A") && ok;
  // A = two stacked 8 x 8 identities: D[m][n] = B[m % 8][n].
  for (int i = 0; i < 128; ++i) a[i] = ((i / 8) % 8 == i % 8) ? 1.0f : 0.0f;
  for (int i = 0; i < 64; ++i) b[i] = static_cast<float>(i + 1);
  for (int i = 0; i < 128; ++i) want[i] = b[((i / 8) % 8) * 8 + i % 8];
  ok = compare_exact("2b. m16n8k8 B layout (A = [I; I], D[m][n] must be B[m%8][n])", raw_mma(a, b), want, b, 8, "B") &&
       ok;
  // A full product of small integers: exact in TF32 and in the FP32 accumulator.
  std::mt19937 rng(2);
  std::uniform_int_distribution<int> small(-8, 8);
  for (float& x : a) x = static_cast<float>(small(rng));
  for (float& x : b) x = static_cast<float>(small(rng));
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      float sum = 0.0f;
      for (int k = 0; k < 8; ++k) sum += a[m * 8 + k] * b[k * 8 + n];
      want[m * 8 + n] = sum;
    }
  ok = compare_exact("2c. m16n8k8 full product of small integers", raw_mma(a, b), want, {}, 1, "") && ok;
  return ok;
}

// ---- 3. the kernel's step of 16 --------------------------------------------------------------

/// One step of 16 as the network kernel does it: A [16 x 16] as rung 12's pair words
/// (words[m * 8 + j] = {A[m][2j], A[m][2j+1]}), lane (g, t) reading pairs t and t + 4 of rows g and
/// g + 8; B as this lane's fragment from tf32_fragments().
template <typename P>
__global__ void k16_kernel(const float2* words, const float4* hi, const float4* lo, float* d_mat) {
  const int lane = static_cast<int>(threadIdx.x), g = lane / 4, t = lane % 4;
  const float2 a[4] = {words[g * 8 + t], words[(g + 8) * 8 + t], words[g * 8 + t + 4], words[(g + 8) * 8 + t + 4]};
  tf::BFragment b;
  b.hi = hi[lane];
  b.lo = lo != nullptr ? lo[lane] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  tf::mma_k16<P>(d, a, b);
  store_d(d, d_mat, g, t);
}

/// A [16 x 16] * B [16 x 8] through k16_kernel<P>. For OneTf32, A is rounded first, as the kernel's
/// epilogues round the activations they store.
template <typename P>
std::vector<float> k16_product(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float2> words(128);
  for (int m = 0; m < 16; ++m)
    for (int j = 0; j < 8; ++j) {
      float x = a[m * 16 + 2 * j], y = a[m * 16 + 2 * j + 1];
      if constexpr (!P::kSplit) {
        x = tf::round_tf32_host(x);
        y = tf::round_tf32_host(y);
      }
      words[m * 8 + j] = make_float2(x, y);
    }
  const auto element = [&b](int k, int n) { return b[k * 8 + n]; };
  float2* d_words = to_device(words);
  float4* d_hi = to_device(tf::tf32_fragments(1, 1, element, false));
  float4* d_lo = P::kSplit ? to_device(tf::tf32_fragments(1, 1, element, true)) : nullptr;
  float* d_d = nullptr;
  TOOL_CUDA(cudaMalloc(&d_d, 128 * sizeof(float)));
  k16_kernel<P><<<1, 32>>>(d_words, d_hi, d_lo, d_d);
  TOOL_CUDA(cudaGetLastError());
  std::vector<float> d = to_host(d_d, 128);
  cudaFree(d_words);
  cudaFree(d_hi);
  if (d_lo != nullptr) cudaFree(d_lo);
  cudaFree(d_d);
  return d;
}

bool check_k16() {
  bool ok = true;
  std::vector<float> a(256), b(128), want(128);
  const auto reference = [&] {
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        double sum = 0.0;
        for (int k = 0; k < 16; ++k) sum += double(a[m * 16 + k]) * double(b[k * 8 + n]);
        want[m * 8 + n] = static_cast<float>(sum);
      }
  };
  // Distinct small integers, exact everywhere: any k or n out of place shows.
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(-8, 8);
  for (float& x : a) x = static_cast<float>(small(rng));
  for (float& x : b) x = static_cast<float>(small(rng));
  reference();
  ok = compare_exact("3a. mma_k16<OneTf32> (pair words, tf32_fragments), integers", k16_product<tf::OneTf32>(a, b),
                     want, {}, 1, "") && ok;
  ok = compare_exact("3b. mma_k16<ThreeTf32<integer>>, integers", k16_product<Split>(a, b), want, {}, 1, "") && ok;
  ok = compare_exact("3b. mma_k16<ThreeTf32<cvt>>, integers", k16_product<SplitCvt>(a, b), want, {}, 1, "") && ok;

  // Random FP32 values: the error relative to sum_k |a b| of each output (its scale).
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  double worst[3] = {0.0, 0.0, 0.0};
  for (int trial = 0; trial < 20; ++trial) {
    for (float& x : a) x = uniform(rng);
    for (float& x : b) x = uniform(rng);
    const std::vector<float> got[3] = {k16_product<tf::OneTf32>(a, b), k16_product<Split>(a, b),
                                       k16_product<SplitCvt>(a, b)};
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        double exact = 0.0, scale = 0.0;
        for (int k = 0; k < 16; ++k) {
          exact += double(a[m * 16 + k]) * double(b[k * 8 + n]);
          scale += std::fabs(double(a[m * 16 + k]) * double(b[k * 8 + n]));
        }
        for (int v = 0; v < 3; ++v) worst[v] = std::max(worst[v], std::fabs(got[v][m * 8 + n] - exact) / scale);
      }
  }
  // One product: each operand rounded by <= 2^-11, so a product is off by <= ~2^-10 of itself.
  // Three products: the dropped terms are a few 2^-22 at worst, plus the roundings of six
  // accumulations (2^-24 each, or 2^-23 if the tensor cores truncate): typically ~1e-7.
  const bool one_ok = worst[0] <= std::ldexp(1.0, -10), three_ok = std::max(worst[1], worst[2]) <= 4e-6;
  std::printf("%s 3c. random FP32: max |D - exact| / sum|a b| = %.2e with one TF32 product (bound 2^-10 = 9.8e-4)\n",
              one_ok ? "ok  " : "FAIL", worst[0]);
  std::printf("%s 3d. random FP32: max |D - exact| / sum|a b| = %.2e / %.2e with three (3xTF32, integer / cvt "
              "split; bound 4e-6, FP32 eps 6.0e-8)\n",
              three_ok ? "ok  " : "FAIL", worst[1], worst[2]);
  return ok && one_ok && three_ok;
}

// ---- 4. the network kernels on this GPU ------------------------------------------------------

template <typename P>
void report_kernel(const char* name) {
  const auto kernel = tf::lenet_tf32<P>;
  const int shared_bytes = static_cast<int>(sizeof(tf::SharedTiles));
  TOOL_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
  TOOL_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                     cudaSharedmemCarveoutMaxShared));
  cudaFuncAttributes attributes{};
  TOOL_CUDA(cudaFuncGetAttributes(&attributes, kernel));
  int per_sm = 0;
  TOOL_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, tf::kThreads,
                                                             static_cast<std::size_t>(shared_bytes)));
  std::printf("     4. %-24s %d registers, %zu bytes local (spills), %d B shared per block, %d blocks of %d "
              "threads per SM\n",
              name, attributes.numRegs, attributes.localSizeBytes, shared_bytes, per_sm, tf::kThreads);
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("lab07_mma_selftest: no GPU\n");
    return 77;
  }
  cudaDeviceProp prop{};
  TOOL_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("lab07_mma_selftest: %s, compute capability %d.%d\n", prop.name, prop.major, prop.minor);
  if (prop.major < 8) {
    std::printf("TF32 mma.sync needs compute capability 8.0: nothing to test\n");
    return 77;
  }
  bool ok = check_rounding();
  ok = check_raw_layout() && ok;
  ok = check_k16() && ok;
  report_kernel<tf::OneTf32>("rung 15");
  report_kernel<Split>("rung 16 (integer split)");
  report_kernel<SplitCvt>("rung 16 (cvt split)");
  std::printf(ok ? "all checks passed\n" : "a check FAILED\n");
  return ok ? 0 : 1;
}
