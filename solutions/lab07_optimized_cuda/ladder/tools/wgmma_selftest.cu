// lab07_wgmma_selftest: rung 18's wgmma operand layouts checked on the GPU against CPU products, so
// that a wrong descriptor or fragment shows up here with its coordinates, not as a failed accuracy
// check.
//
// What the rung relies on (18_wgmma_primitives.cuh): mma_64x88x16 takes A from registers in the
// m16n8k16 A-fragment layout (packed by a_fragment(), the rung's own packing) and B from shared
// memory, where element (n, k) of a k16 step of a no-swizzle K-major operand lies at
//   start + (k / 8) * k_stride + (n / 8) * n_stride + (n % 8) * 16 + (k % 8) * 2
// (descriptor()). Each case below fills A and shared memory with small random integers (FP16 and
// FP32 products and sums of those are exact), runs a chain of m64n88k16 wgmma with that case's start
// addresses and strides, and compares every accumulator with the CPU's sum over the same formula:
//   1. a plain dense B (4 k-steps, core matrices packed along N, then along K)
//   2. conv1's B: the last chain (it reads the slack past the planes), K stride = one row-parity
//      plane, start + 7 positions per k-step
//   3. conv2's B: the last chain, 18 k-steps, start shifted by positions per tap and by planes for
//      odd input rows, K stride = the distance between the column-parity planes (not a multiple
//      of 128 bytes)
// Each case also runs with B's two stride fields swapped; if only that one matches, the fields are
// the other way round from what descriptor() assumes, and the message says so.
// Last, the rung's kernel on this GPU: registers, local memory (spills), shared memory.
//
//   build/bench/lab07_wgmma_selftest     exit 0: all passed, 1: a check failed, 77: not an sm_90a GPU
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "18_wgmma_kernels.cuh"
#include "tool_cuda_check.hpp"

namespace {

namespace wg = ladder::wgmma;

constexpr int kMaxSteps = 20, kN = 88;

struct Case {
  const char* name;
  int steps;
  int b_bytes;
  int b_start[kMaxSteps];
  int b_k_stride, b_n_stride;
};

/// One warpgroup: B into shared memory by ordinary stores, A fragments into registers, then the
/// chain of wgmma, then the accumulators out as D[64][88] by the register layout of mma_64x88x16.
/// Steps is a template parameter so that, as in the rung, all fragments are in registers before
/// the chain starts (a load between two wgmma makes ptxas insert waits, and say so).
template <int Steps>
__global__ void product(const uint4* a, const uint4* b, int b_words, Case c, bool swap, float* out) {
  extern __shared__ uint4 s[];
  for (int i = static_cast<int>(threadIdx.x); i < b_words; i += 128) s[i] = b[i];
  std::uint32_t frag[Steps][4];
  for (int step = 0; step < Steps; ++step) {
    const uint4 f = a[step * 128 + static_cast<int>(threadIdx.x)];
    frag[step][0] = f.x, frag[step][1] = f.y, frag[step][2] = f.z, frag[step][3] = f.w;
  }
  wg::fence_proxy_async();
  __syncthreads();
  const std::uint32_t base_b = wg::smem_address(s);
  float d[wg::kAccumulators];
  wg::wgmma_fence();
#pragma unroll
  for (int step = 0; step < Steps; ++step)
    wg::mma_64x88x16(d, frag[step], wg::descriptor(base_b + c.b_start[step], c.b_k_stride, c.b_n_stride, swap),
                     step > 0);
  wg::wgmma_commit();
  wg::wgmma_wait<0>();
  wg::fence_registers(d);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  for (int j = 0; j < kN / 8; ++j)
    for (int e = 0; e < 4; ++e) {
      const int row = 16 * warp + g + 8 * (e / 2), col = 8 * j + 2 * t + e % 2;
      out[row * kN + col] = d[4 * j + e];
    }
}

float half_at(const std::vector<std::uint16_t>& buf, int byte) {
  __half_raw raw;
  raw.x = buf[static_cast<std::size_t>(byte / 2)];
  return __half2float(__half(raw));
}

std::uint16_t half_bits(float x) { return static_cast<__half_raw>(__float2half_rn(x)).x; }

std::vector<std::uint16_t> random_halves(int count, std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(-3, 3);
  std::vector<std::uint16_t> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = half_bits(static_cast<float>(pick(rng)));
  return v;
}

/// Max |GPU - CPU| over D for one case, B's strides as descriptor() reads them or swapped.
double run_case(const Case& c, bool swap, std::mt19937& rng) {
  const int k_total = 16 * c.steps;
  const auto a = random_halves(64 * k_total, rng), b = random_halves(c.b_bytes / 2, rng);
  const auto a_at = [&](int m, int k) {
    __half_raw raw;
    raw.x = a[static_cast<std::size_t>(m * k_total + k)];
    return __half2float(__half(raw));
  };
  std::vector<uint4> fragments(static_cast<std::size_t>(c.steps) * 128);
  for (int step = 0; step < c.steps; ++step)
    for (int thread = 0; thread < 128; ++thread)
      fragments[static_cast<std::size_t>(step * 128 + thread)] = wg::a_fragment(a_at, half_bits, step, thread);
  std::vector<double> want(64 * kN, 0.0);
  for (int step = 0; step < c.steps; ++step)
    for (int m = 0; m < 64; ++m)
      for (int n = 0; n < kN; ++n)
        for (int k = 0; k < 16; ++k) {
          const int b_byte = c.b_start[step] + (k / 8) * c.b_k_stride + (n / 8) * c.b_n_stride + (n % 8) * 16 + (k % 8) * 2;
          want[static_cast<std::size_t>(m * kN + n)] += double(a_at(m, 16 * step + k)) * double(half_at(b, b_byte));
        }
  uint4 *d_a = nullptr, *d_b = nullptr;
  float* d_out = nullptr;
  const std::size_t a_bytes = fragments.size() * sizeof(uint4);
  TOOL_CUDA(cudaMalloc(&d_a, a_bytes));
  TOOL_CUDA(cudaMalloc(&d_b, static_cast<std::size_t>(c.b_bytes)));
  TOOL_CUDA(cudaMalloc(&d_out, want.size() * sizeof(float)));
  TOOL_CUDA(cudaMemcpy(d_a, fragments.data(), a_bytes, cudaMemcpyHostToDevice));
  TOOL_CUDA(cudaMemcpy(d_b, b.data(), static_cast<std::size_t>(c.b_bytes), cudaMemcpyHostToDevice));
  // Room past the operand: with the strides swapped a descriptor reaches beyond it.
  const int shared = c.b_bytes + (kN / 8) * std::max(c.b_k_stride, c.b_n_stride) + 256;
  const auto launch = [&](auto kernel) {
    TOOL_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
    kernel<<<1, 128, static_cast<std::size_t>(shared)>>>(d_a, d_b, c.b_bytes / 16, c, swap, d_out);
  };
  switch (c.steps) {  // the step counts of the cases in main()
    case 4: launch(product<4>); break;
    case wg::kConv1KSteps: launch(product<wg::kConv1KSteps>); break;
    case wg::kConv2KSteps: launch(product<wg::kConv2KSteps>); break;
    default: std::fprintf(stderr, "no product<%d> instantiated\n", c.steps); std::exit(1);
  }
  TOOL_CUDA(cudaGetLastError());
  TOOL_CUDA(cudaDeviceSynchronize());
  std::vector<float> got(want.size());
  TOOL_CUDA(cudaMemcpy(got.data(), d_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  TOOL_CUDA(cudaFree(d_a));
  TOOL_CUDA(cudaFree(d_b));
  TOOL_CUDA(cudaFree(d_out));
  double worst = 0.0;
  int reported = 0;
  for (int i = 0; i < 64 * kN; ++i) {
    const double diff = std::fabs(double(got[static_cast<std::size_t>(i)]) - want[static_cast<std::size_t>(i)]);
    if (diff > 0.0 && !swap && reported++ < 4)
      std::printf("    D[%d][%d]: GPU %g, CPU %g\n", i / kN, i % kN, double(got[static_cast<std::size_t>(i)]),
                  want[static_cast<std::size_t>(i)]);
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
  TOOL_CUDA(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9 || prop.minor != 0) {
    std::printf("SKIP: %s is compute capability %d.%d; wgmma needs sm_90a (9.0)\n", prop.name, prop.major, prop.minor);
    return 77;
  }
  int* d_flag = nullptr;
  int flag = 0;
  TOOL_CUDA(cudaMalloc(&d_flag, sizeof(int)));
  wg::probe_sm90a<<<1, 1>>>(d_flag);
  TOOL_CUDA(cudaGetLastError());
  TOOL_CUDA(cudaMemcpy(&flag, d_flag, sizeof(int), cudaMemcpyDeviceToHost));
  TOOL_CUDA(cudaFree(d_flag));
  if (flag == 0) {
    std::printf("FAIL: the code loaded on %s is not the sm_90a build (no wgmma)\n", prop.name);
    return 1;
  }
  std::printf("%s: sm_90a code loaded\n", prop.name);

  std::vector<Case> cases;
  constexpr int kDenseKStride = (kN / 8) * wg::kCoreBytes;
  Case dense{"dense B (4 k-steps)", 4, 4 * 2 * kDenseKStride, {}, kDenseKStride, wg::kCoreBytes};
  for (int s = 0; s < dense.steps; ++s) dense.b_start[s] = s * 2 * kDenseKStride;
  cases.push_back(dense);
  Case conv1{"conv1 B (last chain, row-parity planes)", wg::kConv1KSteps, wg::kX1Bytes, {}, wg::kX1PlaneBytes,
             wg::kCoreBytes};
  for (int s = 0; s < conv1.steps; ++s)
    conv1.b_start[s] = (wg::kPositions * (wg::kConv1Chains - 1) + wg::kX1Quads * s) * wg::kCoreBytes;
  cases.push_back(conv1);
  Case conv2{"conv2 B (last chain, four parity planes)", wg::kConv2KSteps, wg::kP1Bytes, {}, wg::kP1PlaneBytes,
             wg::kCoreBytes};
  for (int s = 0; s < conv2.steps; ++s) {
    const int r = s / 3, jp = s % 3;
    conv2.b_start[s] = (r % 2) * 2 * wg::kP1PlaneBytes +
                       (wg::kPositions * (wg::kConv2Chains - 1) + wg::kP1Pitch * (r / 2) + jp) * wg::kCoreBytes;
  }
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
  TOOL_CUDA(cudaFuncGetAttributes(&attributes, wg::lenet_wgmma));
  int per_sm = 0;
  TOOL_CUDA(cudaFuncSetAttribute(wg::lenet_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(wg::Tiles))));
  TOOL_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, wg::lenet_wgmma, wg::kThreads, sizeof(wg::Tiles)));
  std::printf("lenet_wgmma: %d registers, %zu bytes local (spills), %zu bytes shared, %d blocks per SM\n",
              attributes.numRegs, attributes.localSizeBytes, sizeof(wg::Tiles), per_sm);
  std::printf(ok ? "PASS\n" : "FAIL\n");
  return ok ? 0 : 1;
}
