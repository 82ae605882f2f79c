// Rung 07: conv + bias + ReLU + 2x2 max-pool fused into one kernel per conv stage, and a new
// scheme for the fully connected layers. SLOWER than rung 06 (H100, 10,000 images: 2.19 ms against
// 1.81 ms, bench/results/lab07_h100_80gb_hbm3.csv), and kept because that is the lesson.
// What the fusion saves: the conv outputs (4,704 + 1,600 floats per image) never go to memory and
// come back for the ReLU and the pool; one thread computes the four conv outputs under one pooled
// output, takes their max and adds the bias and ReLU once (max(a + b) = max(a) + b; ReLU commutes
// with max). Five launches instead of ten.
// What it does not fix: a thread still issues one load per multiply-add (one channel per thread,
// inputs read one by one through L1, conv1's bounds checks in the loop; rung 05's shared-memory
// tile is gone), and the convolutions were limited by instructions, not bytes.
// The second change: the fully connected layers are not rung 06's warp per output but a thread per
// output for 8 images per block, weights transposed so that neighbouring threads (neighbouring
// outputs) read neighbouring weights, each weight fetched once for the 8 images.
// The split (ncu per kernel, H100, 2026-11-25, 10,000 images; lecture 07, section 9): the new FC
// scheme is faster than rung 06's (-340 us) and the fused conv1 stage too (-123 us); the whole loss
// is the fused conv2 (+1,036 us against rung 06's conv2 + ReLU + pool): 600 multiply-adds per
// thread, each with its own global load through L1 where rung 05 read a shared-memory tile.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/lenet.hpp"
#include "ladder.hpp"

namespace ladder {
namespace {

constexpr int kImage = 28, kPad = 2, kK = 5;
constexpr int kC1 = 6, kP1 = 14, kP1Pixels = kP1 * kP1;  // pool1: [6][14][14]
constexpr int kC2 = 16, kP2 = 5, kP2Pixels = kP2 * kP2;  // pool2: [16][5][5] = 400
constexpr int kFlat = 400, kFc1 = 120, kFc2 = 84, kClasses = 10;

// The conv weights in constant memory (rung 04): every thread of a warp reads the same weight.
__constant__ float c07_conv1_w[kC1 * kK * kK];
__constant__ float c07_conv1_b[kC1];
__constant__ float c07_conv2_w[kC2 * kC1 * kK * kK];
__constant__ float c07_conv2_b[kC2];

/// Thread = one pooled pixel of one image; blockIdx.y = output channel, so that a warp's threads
/// share every weight (a constant-memory broadcast).
__global__ void conv1_pool_kernel(const float* __restrict__ images, int n, float* __restrict__ pool1) {
  const int item = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int k = static_cast<int>(blockIdx.y);
  if (item >= n * kP1Pixels) return;
  const int img = item / kP1Pixels, p = item % kP1Pixels, py = p / kP1, px = p % kP1;
  const float* in = images + static_cast<std::size_t>(img) * kImage * kImage;
  float acc[2][2] = {};
  for (int r = 0; r < kK; ++r)
    for (int s = 0; s < kK; ++s) {
      const float w = c07_conv1_w[(k * kK + r) * kK + s];
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
          const int y = 2 * py + dy + r - kPad, x = 2 * px + dx + s - kPad;
          if (y >= 0 && y < kImage && x >= 0 && x < kImage) acc[dy][dx] += w * __ldg(in + y * kImage + x);
        }
    }
  const float m = fmaxf(fmaxf(acc[0][0], acc[0][1]), fmaxf(acc[1][0], acc[1][1]));
  pool1[(static_cast<std::size_t>(img) * kC1 + k) * kP1Pixels + p] = fmaxf(m + c07_conv1_b[k], 0.0f);
}

/// Thread = one pooled pixel of one image, blockIdx.y = output channel; pool2 is written in
/// PyTorch's flatten order [n][16][5][5] = [n][400].
__global__ void conv2_pool_kernel(const float* __restrict__ pool1, int n, float* __restrict__ pool2) {
  const int item = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int k = static_cast<int>(blockIdx.y);
  if (item >= n * kP2Pixels) return;
  const int img = item / kP2Pixels, p = item % kP2Pixels, py = p / kP2, px = p % kP2;
  const float* in = pool1 + static_cast<std::size_t>(img) * kC1 * kP1Pixels;
  float acc[2][2] = {};
  for (int c = 0; c < kC1; ++c)
    for (int r = 0; r < kK; ++r)
      for (int s = 0; s < kK; ++s) {
        const float w = c07_conv2_w[((k * kC1 + c) * kK + r) * kK + s];
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx)
            acc[dy][dx] += w * __ldg(in + c * kP1Pixels + (2 * py + dy + r) * kP1 + (2 * px + dx + s));
      }
  const float m = fmaxf(fmaxf(acc[0][0], acc[0][1]), fmaxf(acc[1][0], acc[1][1]));
  pool2[static_cast<std::size_t>(img) * kFlat + k * kP2Pixels + p] = fmaxf(m + c07_conv2_b[k], 0.0f);
}

/// out[img][o] = (ReLU) bias[o] + sum_i in[img][i] * w_t[i][o]. Block = kFcImages images, thread =
/// one output for all of them: a warp reads 32 consecutive weights of one input row (coalesced)
/// and uses each for kFcImages images; the inputs are broadcasts (one address per warp).
constexpr int kFcImages = 8;
__global__ void linear_kernel(const float* __restrict__ in, const float* __restrict__ w_t, const float* __restrict__ bias,
                              float* __restrict__ out, int n, int inputs, int outputs, bool relu) {
  const int first = static_cast<int>(blockIdx.x) * kFcImages, o = static_cast<int>(threadIdx.x);
  if (o >= outputs) return;
  const int count = min(kFcImages, n - first);
  const float* x = in + static_cast<std::size_t>(first) * inputs;
  float sum[kFcImages];
  for (int j = 0; j < kFcImages; ++j) sum[j] = bias[o];
  for (int i = 0; i < inputs; ++i) {
    const float w = __ldg(w_t + static_cast<std::size_t>(i) * outputs + o);
    for (int j = 0; j < kFcImages; ++j)
      if (j < count) sum[j] += x[static_cast<std::size_t>(j) * inputs + i] * w;
  }
  for (int j = 0; j < count; ++j)
    out[static_cast<std::size_t>(first + j) * outputs + o] = relu ? fmaxf(sum[j], 0.0f) : sum[j];
}

/// fc3 (84 -> 10) and the argmax in one: thread = one image.
__global__ void fc3_argmax_kernel(const float* __restrict__ in, const float* __restrict__ w_t,
                                  const float* __restrict__ bias, float* __restrict__ logits, int* __restrict__ labels,
                                  int n) {
  const int img = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (img >= n) return;
  float z[kClasses];
  for (int o = 0; o < kClasses; ++o) z[o] = bias[o];
  for (int i = 0; i < kFc2; ++i) {
    const float x = in[static_cast<std::size_t>(img) * kFc2 + i];
    for (int o = 0; o < kClasses; ++o) z[o] += x * __ldg(w_t + i * kClasses + o);
  }
  int best = 0;
  for (int o = 0; o < kClasses; ++o) {
    logits[static_cast<std::size_t>(img) * kClasses + o] = z[o];
    if (z[o] > z[best]) best = o;  // strict: the lowest index wins a tie
  }
  labels[img] = best;
}

std::vector<float> transposed(const course::Tensor& m, int rows, int cols) {
  std::vector<float> t(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) t[static_cast<std::size_t>(c) * rows + r] = m.data()[static_cast<std::size_t>(r) * cols + c];
  return t;
}

class FusedConvPool final : public Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    CUDA_CHECK(cudaMemcpyToSymbol(c07_conv1_w, net.conv1_weight.data(), sizeof(c07_conv1_w)));
    CUDA_CHECK(cudaMemcpyToSymbol(c07_conv1_b, net.conv1_bias.data(), sizeof(c07_conv1_b)));
    CUDA_CHECK(cudaMemcpyToSymbol(c07_conv2_w, net.conv2_weight.data(), sizeof(c07_conv2_w)));
    CUDA_CHECK(cudaMemcpyToSymbol(c07_conv2_b, net.conv2_bias.data(), sizeof(c07_conv2_b)));
    fc1_wt_ = course::DeviceBuffer<float>(transposed(net.fc1_weight, kFc1, kFlat));
    fc2_wt_ = course::DeviceBuffer<float>(transposed(net.fc2_weight, kFc2, kFc1));
    fc3_wt_ = course::DeviceBuffer<float>(transposed(net.fc3_weight, kClasses, kFc2));
    fc1_b_ = course::DeviceBuffer<float>(net.fc1_bias.values());
    fc2_b_ = course::DeviceBuffer<float>(net.fc2_bias.values());
    fc3_b_ = course::DeviceBuffer<float>(net.fc3_bias.values());
    const auto per = [max_batch](int values) { return static_cast<std::size_t>(max_batch) * values; };
    pool1_ = course::DeviceBuffer<float>(per(kC1 * kP1Pixels));
    pool2_ = course::DeviceBuffer<float>(per(kFlat));
    fc1_ = course::DeviceBuffer<float>(per(kFc1));
    fc2_ = course::DeviceBuffer<float>(per(kFc2));
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    constexpr int kThreads = 128;
    const dim3 conv1_grid((n * kP1Pixels + kThreads - 1) / kThreads, kC1);
    conv1_pool_kernel<<<conv1_grid, kThreads, 0, stream>>>(d_images, n, pool1_.get());
    CUDA_CHECK_LAST_LAUNCH();
    const dim3 conv2_grid((n * kP2Pixels + kThreads - 1) / kThreads, kC2);
    conv2_pool_kernel<<<conv2_grid, kThreads, 0, stream>>>(pool1_.get(), n, pool2_.get());
    CUDA_CHECK_LAST_LAUNCH();
    const int fc_blocks = (n + kFcImages - 1) / kFcImages;
    linear_kernel<<<fc_blocks, kFc1, 0, stream>>>(pool2_.get(), fc1_wt_.get(), fc1_b_.get(), fc1_.get(), n, kFlat, kFc1, true);
    CUDA_CHECK_LAST_LAUNCH();
    linear_kernel<<<fc_blocks, 96, 0, stream>>>(fc1_.get(), fc2_wt_.get(), fc2_b_.get(), fc2_.get(), n, kFc1, kFc2, true);
    CUDA_CHECK_LAST_LAUNCH();
    fc3_argmax_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, stream>>>(fc2_.get(), fc3_wt_.get(), fc3_b_.get(),
                                                                            d_logits, d_labels, n);
    CUDA_CHECK_LAST_LAUNCH();
  }

 private:
  course::DeviceBuffer<float> fc1_wt_, fc2_wt_, fc3_wt_, fc1_b_, fc2_b_, fc3_b_;
  course::DeviceBuffer<float> pool1_, pool2_, fc1_, fc2_;
};

}  // namespace
}  // namespace ladder

COURSE_LADDER_RUNG(7, "fused_conv_pool", "conv + bias + ReLU + max-pool in one kernel per conv stage: conv outputs stay in registers",
                   ladder::FusedConvPool);
