// Rung 18: Hopper's own tensor-core instruction -- the convolutions of rung 12 on wgmma (warpgroup
// MMA, sm_90a) instead of mma.sync, images brought in by the copy engine (cp.async.bulk + mbarrier).
// What changes and why (details in 18_wgmma_kernels.cuh): the weights are wgmma's 64-row operand
// (A, held in registers for the whole kernel) and eight images lie side by side along N, so the
// only operand the tensor cores read from shared memory is the activations, ~28 KB per image
// (the first version of this rung, images as rows and weights as B, read ~96 KB, half of it the
// same weights again for every image). Each convolution is a Toeplitz GEMM over the activation
// tiles as they lie in shared memory (no im2col copy), with the 2x2 pooling window in M, pooled
// in registers and one shuffle; the fully connected layers are rung 12's mma.sync code on one
// 80-image chunk per block (A fragments by ldmatrix), their outputs in the dead staging buffers.
// MEASURED (H100 80GB HBM3, one run of lab07_ladder --version 12,18 --batch 1,10000;
// bench/results/lab07_wgmma_octets_h100_80gb_hbm3.txt):
//   10,000 images  rung 12 0.0868 ms   rung 18 0.0476 ms (graph 0.0868 / 0.0475)   1.82x
//   1 image        rung 12 0.0174 ms   rung 18 0.0126 ms
// (Before the one-pass fc, the early first copy and the 9-instruction epilogue: 0.0534 ms beside
// rung 12's 0.0859, one image 0.0153; the first version of this rung: 0.0695 and 0.0108.)
// Same accuracy as rung 12 (the same FP16 products with FP32 sums): Fashion-MNIST 90.48 % vs
// golden 90.50 %, MNIST 98.90 % as golden.
// The issue's 0.05 ms is reached. What limits it now (ncu, 10,000 images): still no unit
// saturated -- tensor pipe 52 %, L1/shared 65 %, issue slots 32 % -- it is latency: 8 warps per SM
// (229 registers, 224 KB of shared memory: one block of two warpgroups), each warpgroup a serial
// chain of copy -> conv1's 9 wgmma chains -> conv2's 3 per octet, then the fc layers, where no
// wgmma runs.
//
// Built only for sm_90a (bench/CMakeLists.txt compiles this file with -gencode
// arch=compute_90a,code=sm_90a and nothing else), so it runs on compute capability 9.0 only; on
// any other GPU, or with a binary whose loaded code is not sm_90a, unsupported_reason() says so
// and the runner skips the rung, as it does rung 13 on GPUs without clusters.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "12_tensor_cores.cuh"
#include "18_wgmma_kernels.cuh"
#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "ladder.hpp"

namespace {

namespace wg = ladder::wgmma;

/// A[m][k] (m < 64, k < 16 * ksteps) as wgmma A fragments, one uint4 per (k-step, thread of the
/// warpgroup) at wg::a_fragment_index(layer, k-step, thread).
void pack_a(std::vector<uint4>& out, int layer, int ksteps, const std::function<float(int m, int k)>& a) {
  for (int s = 0; s < ksteps; ++s)
    for (int thread = 0; thread < 128; ++thread)
      out[static_cast<std::size_t>(wg::a_fragment_index(layer, s, thread))] = wg::a_fragment(a, half_bits, s, thread);
}

class WgmmaLeNet final : public ladder::Rung {
 public:
  std::string unsupported_reason() const override {
    int device = 0, major = 0, minor = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    if (major != 9 || minor != 0)
      return "wgmma needs an sm_90a GPU (compute capability 9.0, Hopper); this one is " + std::to_string(major) +
             "." + std::to_string(minor);
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, wg::probe_sm90a) != cudaSuccess) {
      (void)cudaGetLastError();
      return "this binary has no code for this GPU in rung 18 (it is compiled for sm_90a only)";
    }
    course::DeviceBuffer<int> flag(1);
    wg::probe_sm90a<<<1, 1>>>(flag.get());
    CUDA_CHECK_LAST_LAUNCH();
    int is_sm90a = 0;
    CUDA_CHECK(cudaMemcpy(&is_sm90a, flag.get(), sizeof(int), cudaMemcpyDeviceToHost));
    return is_sm90a != 0 ? "" : "the loaded code of rung 18 was not compiled for sm_90a (no wgmma in it)";
  }

  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    if (max_batch < 1) throw course::Error("rung 18: max_batch must be >= 1, got " + std::to_string(max_batch));
    if (const std::string why = unsupported_reason(); !why.empty()) throw course::Error("rung 18: " + why);
    ladder::support::DeviceWeights::check_shapes(net);

    // The Toeplitz A matrices of 18_wgmma_kernels.cuh, rows m = 16w + 8h + g (w warp, g lane / 4).
    // conv1: h = dy, g = 4cb + 2dxhi + dxlo, channel 2w + cb, dx = 2dxhi + dxlo; k = 16s + 8a + j,
    // input row r = 2s + a. conv2: h = dx, g = 2ol + dy, channel 4w + ol; k = 16(3r + jp) + 8b + c,
    // input column 2jp + b. Weight (r - dy, column - dx) where both lie in 0..4.
    std::vector<uint4> conv(wg::kAFragments);
    const auto tap = [](int i) { return i >= 0 && i < ln::kKernel; };
    pack_a(conv, 1, wg::kConv1KSteps, [&net, &tap](int m, int k) {
      const int w = m / 16, dy = (m / 8) % 2, g = m % 8, c = 2 * w + g / 4, dx = g % 4;
      const int r = 2 * (k / 16) + (k / 8) % 2 - dy, s = k % 8 - dx;
      return (c < ln::kConv1Out && tap(r) && tap(s)) ? net.conv1_weight.at(c, 0, r, s) : 0.0f;
    });
    pack_a(conv, 2, wg::kConv2KSteps, [&net, &tap](int m, int k) {
      const int w = m / 16, dx = (m / 8) % 2, g = m % 8, o = 4 * w + g / 2, dy = g % 2;
      const int step = k / 16, c = k % 8;
      const int r = step / 3 - dy, s = 2 * (step % 3) + (k / 8) % 2 - dx;
      return (c < ln::kConv1Out && tap(r) && tap(s)) ? net.conv2_weight.at(o, c, r, s) : 0.0f;
    });
    conv_ = course::DeviceBuffer<uint4>(conv);

    rest_.upload(net);  // rung 12's fc layers and the biases, as rung 12 lays them out

    const int shared_bytes = static_cast<int>(sizeof(wg::Tiles));
    CUDA_CHECK(cudaFuncSetAttribute(wg::lenet_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
    int device = 0, sms = 0, per_sm = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, wg::lenet_wgmma, wg::kThreads, shared_bytes));
    if (per_sm < 1) throw course::Error("rung 18: the kernel does not fit on this GPU (shared memory per block)");
    resident_blocks_ = sms * per_sm;
    max_batch_ = max_batch;
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    if (d_images == nullptr || d_logits == nullptr || d_labels == nullptr)
      throw course::Error("rung 18: forward() got a null device pointer");
    if (reinterpret_cast<std::uintptr_t>(d_images) % 16 != 0)
      throw course::Error("rung 18: d_images must be 16-byte aligned (the copy engine moves whole images)");
    if (n < 1 || n > max_batch_)
      throw course::Error("rung 18: n must be in [1, " + std::to_string(max_batch_) + "], got " + std::to_string(n));
    // One wave of resident blocks, each a contiguous range of images, as in rung 12; ranges are
    // whole octets for both warpgroups.
    constexpr int kStep = wg::kImages * wg::kGroups;
    const int per_block = ((n + resident_blocks_ - 1) / resident_blocks_ + kStep - 1) / kStep * kStep;
    const int blocks = (n + per_block - 1) / per_block;
    wg::lenet_wgmma<<<blocks, wg::kThreads, sizeof(wg::Tiles), stream>>>(
        d_images, n, per_block, conv_.get(), rest_.weights(nullptr, nullptr), d_logits, d_labels);
    CUDA_CHECK_LAST_LAUNCH();
  }

  bool reduced_precision() const override { return true; }

 private:
  course::DeviceBuffer<uint4> conv_;
  FcLayersAndBiases rest_;  // the fc layers and every bias (the convolutions are conv_)
  int resident_blocks_ = 0;
  int max_batch_ = 0;
};

}  // namespace

COURSE_LADDER_RUNG(18, "wgmma", "Hopper warpgroup MMA (sm_90a): convolutions as Toeplitz GEMMs read from shared memory",
                   WgmmaLeNet);
