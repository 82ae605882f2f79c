// Rung 06: coalesced fully connected layers -- one warp per output (n, o): lane l reads weights
// l, l+32, ... of row o (32 consecutive floats per load: one 128-byte line), a warp-shuffle tree
// adds the 32 partial sums, and lane 0 stores bias + sum with the ReLU folded into the store.
// Convolutions as in rung 05 (shared tiles, constant weights).
// Why faster than rung 05: lab 06's thread-per-output mapping had the 32 lanes of a warp read 32
// different weight rows (in_features floats apart): 32 memory lines per load instead of one. And
// the ReLUs after fc1 and fc2 are no longer launches of their own.
#include <cuda_runtime_api.h>

#include "constant_conv_weights.cuh"
#include "course/cuda_check.hpp"
#include "labs/lab06_naive_cuda.hpp"
#include "ladder.hpp"
#include "rung_support.hpp"
#include "shared_tiled_conv.cuh"

namespace {

namespace sup = ladder::support;

constexpr int kWarp = 32;
constexpr int kFcThreads = 256;  // a multiple of 32: every warp is whole, so its lanes agree on `row`

/// y[n,o] = bias[o] + sum_j x[n,j] * w[o,j] (then max(0, .) if relu), one warp per (n, o).
__global__ void linear_warp_per_output(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ bias, float* __restrict__ y, int n, int in,
                                       int out, bool relu) {
  const int row = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / kWarp);
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (row >= n * out) return;  // the same for all 32 lanes of the warp: the shuffles below see all of them
  const int o = row % out, image = row / out;
  const float* xs = x + static_cast<std::size_t>(image) * in;
  const float* ws = w + static_cast<std::size_t>(o) * in;
  float sum = 0.0f;
  for (int j = lane; j < in; j += kWarp) sum += xs[j] * ws[j];  // consecutive lanes, consecutive floats
  for (int offset = kWarp / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) {
    const float v = sum + bias[o];
    y[row] = relu ? fmaxf(v, 0.0f) : v;  // row = image * out + o
  }
}

void linear_coalesced(const float* d_x, const float* d_w, const float* d_b, float* d_y, int n, int in, int out,
                      bool relu, cudaStream_t stream) {
  const long long threads = static_cast<long long>(n) * out * kWarp;
  const int blocks = static_cast<int>((threads + kFcThreads - 1) / kFcThreads);
  linear_warp_per_output<<<blocks, kFcThreads, 0, stream>>>(d_x, d_w, d_b, d_y, n, in, out, relu);
  CUDA_CHECK_LAST_LAUNCH();
}

class CoalescedFc final : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    sup::check_max_batch(max_batch);
    upload_conv_weights_to_constant(net);
    weights_ = sup::DeviceWeights(net);
    activations_ = sup::Activations(max_batch);
    max_batch_ = max_batch;
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    sup::check_forward(d_images, n, max_batch_, d_logits, d_labels);
    sup::Activations& a = activations_;
    conv1_shared(d_images, a.conv1.get(), n, stream);
    lab06::relu_inplace(a.conv1.get(), n * sup::kConv1, stream);
    lab06::max_pool2d(a.conv1.get(), a.pool1.get(), n, 6, 28, 28, 2, 2, stream);
    conv2_shared(a.pool1.get(), a.conv2.get(), n, stream);
    lab06::relu_inplace(a.conv2.get(), n * sup::kConv2, stream);
    lab06::max_pool2d(a.conv2.get(), a.pool2.get(), n, 16, 10, 10, 2, 2, stream);
    linear_coalesced(a.pool2.get(), weights_.fc1_w.get(), weights_.fc1_b.get(), a.fc1.get(), n, 400, 120, true, stream);
    linear_coalesced(a.fc1.get(), weights_.fc2_w.get(), weights_.fc2_b.get(), a.fc2.get(), n, 120, 84, true, stream);
    linear_coalesced(a.fc2.get(), weights_.fc3_w.get(), weights_.fc3_b.get(), d_logits, n, 84, 10, false, stream);
    lab06::argmax_rows(d_logits, d_labels, n, 10, stream);
  }

 private:
  sup::DeviceWeights weights_;
  sup::Activations activations_;
  int max_batch_ = 0;
};

}  // namespace

COURSE_LADDER_RUNG(6, "coalesced_fc",
                   "FC layers: one warp per output, lanes read consecutive weights, shuffle reduction, ReLU in the store",
                   CoalescedFc);
