// lab07_wgmma_selftest: rung 18's wgmma operand layouts checked on the GPU against CPU products, so
// that a wrong descriptor shows up here with its coordinates, not as a failed accuracy check.
//
// The one formula everything in 18_wgmma_kernels.cuh rests on (18_wgmma_primitives.cuh,
// descriptor()): element (row, k) of a k16 step of a no-swizzle K-major operand lies at
//   start + (k / 8) * k_stride + (row / 8) * row_stride + (row % 8) * 16 + (k % 8) * 2.
// Each case below fills shared memory with small random integers (FP16 and FP32 products and sums
// of those are exact), runs a chain of m64n64k16 wgmma with that case's start addresses and
// strides, and compares every accumulator with the CPU's sum over the same formula:
//   1. a plain dense operand (4 k-steps, core matrices packed along M, then along K)
//   2. conv1's operand: K stride 128 bytes, row stride 256 (the K and M core matrices overlap)
//   3. conv2's operand: 18 k-steps, start shifted by one 16-byte entry per tap and by planes
//      for odd input rows, K stride = the distance between the even- and odd-column planes
// Each case also runs with the two stride fields swapped; if only that one matches, the fields are
// the other way round from what descriptor() assumes, and the message says so.
// Last, the rung's kernel on this GPU: registers, local memory (spills), shared memory.
//
//   build/bench/lab07_wgmma_selftest     exit 0: all passed, 1: a check failed, 77: not an sm_90a GPU
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "18_wgmma_kernels.cuh"

namespace {

namespace wg = ladder::wgmma;

#define SELFTEST_CUDA(call)                                                                                    \
  do {                                                                                                         \
    const cudaError_t selftest_error = (call);                                                                 \
    if (selftest_error != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(selftest_error)); \
      std::exit(1);                                                                                            \
    }                                                                                                          \
  } while (0)

constexpr int kMaxSteps = 20;

struct Case {
  const char* name;
  int steps;
  int a_bytes;
  int a_start[kMaxSteps];
  int a_k_stride, a_row_stride;
};

/// One warpgroup: A and B into shared memory by ordinary stores, then the chain of wgmma, then the
/// accumulators out as D[64][32] by the register layout of mma_64x64x16.
__global__ void product(const uint4* a, int a_words, const uint4* b, int b_words, Case c, bool swap, float* out) {
  extern __shared__ uint4 s[];
  for (int i = static_cast<int>(threadIdx.x); i < a_words; i += 128) s[i] = a[i];
  for (int i = static_cast<int>(threadIdx.x); i < b_words; i += 128) s[a_words + i] = b[i];
  wg::fence_proxy_async();
  __syncthreads();
  const std::uint32_t base_a = wg::smem_address(s), base_b = wg::smem_address(s + a_words);
  float d[32] = {};
  wg::wgmma_fence();
  for (int step = 0; step < c.steps; ++step)
    wg::mma_64x64x16(d, wg::descriptor(base_a + c.a_start[step], c.a_k_stride, c.a_row_stride, swap),
                     wg::descriptor(base_b + 2 * step * wg::kBKStride, wg::kBKStride, wg::kCoreBytes, swap),
                     step > 0);
  wg::wgmma_commit();
  wg::wgmma_wait<0>();
  wg::fence_registers(d);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  for (int j = 0; j < 8; ++j)
    for (int e = 0; e < 4; ++e) {
      const int row = 16 * warp + g + 8 * (e / 2), col = 8 * j + 2 * t + e % 2;
      out[row * wg::kN + col] = d[4 * j + e];
    }
}

float half_at(const std::vector<std::uint16_t>& buf, int byte) {
  __half_raw raw;
  raw.x = buf[static_cast<std::size_t>(byte / 2)];
  return __half2float(__half(raw));
}

std::vector<std::uint16_t> random_halves(int bytes, std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(-3, 3);
  std::vector<std::uint16_t> v(static_cast<std::size_t>(bytes / 2));
  for (auto& x : v) x = static_cast<__half_raw>(__float2half(static_cast<float>(pick(rng)))).x;
  return v;
}

/// Max |GPU - CPU| over D for one case, strides as descriptor() reads them or swapped.
double run_case(const Case& c, bool swap, std::mt19937& rng) {
  const int b_bytes = c.steps * 2 * wg::kBKStride;
  const auto a = random_halves(c.a_bytes, rng), b = random_halves(b_bytes, rng);
  std::vector<double> want(64 * wg::kN, 0.0);
  for (int step = 0; step < c.steps; ++step)
    for (int m = 0; m < 64; ++m)
      for (int n = 0; n < wg::kN; ++n)
        for (int k = 0; k < 16; ++k) {
          const int a_byte = c.a_start[step] + (k / 8) * c.a_k_stride + (m / 8) * c.a_row_stride + (m % 8) * 16 + (k % 8) * 2;
          const int b_byte = 2 * step * wg::kBKStride + wg::b_offset(k, n);
          want[static_cast<std::size_t>(m * wg::kN + n)] += double(half_at(a, a_byte)) * double(half_at(b, b_byte));
        }
  uint4 *d_a = nullptr, *d_b = nullptr;
  float* d_out = nullptr;
  SELFTEST_CUDA(cudaMalloc(&d_a, static_cast<std::size_t>(c.a_bytes)));
  SELFTEST_CUDA(cudaMalloc(&d_b, static_cast<std::size_t>(b_bytes)));
  SELFTEST_CUDA(cudaMalloc(&d_out, want.size() * sizeof(float)));
  SELFTEST_CUDA(cudaMemcpy(d_a, a.data(), static_cast<std::size_t>(c.a_bytes), cudaMemcpyHostToDevice));
  SELFTEST_CUDA(cudaMemcpy(d_b, b.data(), static_cast<std::size_t>(b_bytes), cudaMemcpyHostToDevice));
  // Room past the operands: with the strides swapped a descriptor reaches beyond them.
  const int shared = c.a_bytes + b_bytes + 96 * 1024;
  SELFTEST_CUDA(cudaFuncSetAttribute(product, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  product<<<1, 128, static_cast<std::size_t>(shared)>>>(d_a, c.a_bytes / 16, d_b, b_bytes / 16, c, swap, d_out);
  SELFTEST_CUDA(cudaGetLastError());
  SELFTEST_CUDA(cudaDeviceSynchronize());
  std::vector<float> got(want.size());
  SELFTEST_CUDA(cudaMemcpy(got.data(), d_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  SELFTEST_CUDA(cudaFree(d_a));
  SELFTEST_CUDA(cudaFree(d_b));
  SELFTEST_CUDA(cudaFree(d_out));
  double worst = 0.0;
  int reported = 0;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < wg::kN; ++n) {
      const double diff = std::fabs(double(got[static_cast<std::size_t>(m * wg::kN + n)]) - want[static_cast<std::size_t>(m * wg::kN + n)]);
      if (diff > 0.0 && !swap && reported++ < 4)
        std::printf("    D[%d][%d]: GPU %g, CPU %g\n", m, n, double(got[static_cast<std::size_t>(m * wg::kN + n)]),
                    want[static_cast<std::size_t>(m * wg::kN + n)]);
      worst = std::max(worst, diff);
    }
  return worst;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA GPU\n");
    return 77;
  }
  cudaDeviceProp prop{};
  SELFTEST_CUDA(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9 || prop.minor != 0) {
    std::printf("SKIP: %s is compute capability %d.%d; wgmma needs sm_90a (9.0)\n", prop.name, prop.major, prop.minor);
    return 77;
  }
  int* d_flag = nullptr;
  int flag = 0;
  SELFTEST_CUDA(cudaMalloc(&d_flag, sizeof(int)));
  wg::probe_sm90a<<<1, 1>>>(d_flag);
  SELFTEST_CUDA(cudaGetLastError());
  SELFTEST_CUDA(cudaMemcpy(&flag, d_flag, sizeof(int), cudaMemcpyDeviceToHost));
  SELFTEST_CUDA(cudaFree(d_flag));
  if (flag == 0) {
    std::printf("FAIL: the code loaded on %s is not the sm_90a build (no wgmma)\n", prop.name);
    return 1;
  }
  std::printf("%s: sm_90a code loaded\n", prop.name);

  std::vector<Case> cases;
  Case dense{"dense 64x64 (4 k-steps)", 4, 4 * 2 * 1024, {}, 1024, wg::kCoreBytes};
  for (int s = 0; s < dense.steps; ++s) dense.a_start[s] = s * 2 * 1024;
  cases.push_back(dense);
  Case conv1{"conv1 operand (m-tile 1, K stride 128, row stride 256)", wg::kConv1KSteps,
             wg::kX1Rows * wg::kX1Quads * 16, {}, wg::kCoreBytes, 2 * wg::kCoreBytes};
  for (int s = 0; s < conv1.steps; ++s) conv1.a_start[s] = (16 + 2 * s) * wg::kCoreBytes;
  cases.push_back(conv1);
  Case conv2{"conv2 operand (four parity planes)", wg::kConv2KSteps, 4 * wg::kPlaneBytes, {}, wg::kPlaneBytes,
             wg::kCoreBytes};
  for (int s = 0; s < conv2.steps; ++s)
    conv2.a_start[s] = ((s / 3) % 2) * 2 * wg::kPlaneBytes + (wg::kPlanePitch * (s / 6) + s % 3) * 16;
  cases.push_back(conv2);

  std::mt19937 rng(18);
  bool ok = true;
  for (const Case& c : cases) {
    const double as_assumed = run_case(c, false, rng), swapped = run_case(c, true, rng);
    std::printf("%-50s max |GPU - CPU| = %g (stride fields swapped: %g)\n", c.name, as_assumed, swapped);
    if (as_assumed != 0.0) {
      ok = false;
      if (swapped == 0.0) std::printf("    -> the swapped order matches: descriptor() has the two fields the wrong way round\n");
    }
  }

  cudaFuncAttributes attributes{};
  SELFTEST_CUDA(cudaFuncGetAttributes(&attributes, wg::lenet_wgmma));
  int per_sm = 0;
  SELFTEST_CUDA(cudaFuncSetAttribute(wg::lenet_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(wg::Tiles))));
  SELFTEST_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, wg::lenet_wgmma, wg::kThreads, sizeof(wg::Tiles)));
  std::printf("lenet_wgmma: %d registers, %zu bytes local (spills), %zu bytes shared, %d blocks per SM\n",
              attributes.numRegs, attributes.localSizeBytes, sizeof(wg::Tiles), per_sm);
  std::printf(ok ? "PASS\n" : "FAIL\n");
  return ok ? 0 : 1;
}
