// Rung 04: the convolutions' weights and biases in __constant__ memory; otherwise rung 03 (lab 06's
// ReLU, pooling, fully connected and argmax kernels, buffers allocated once, no syncs).
// Why faster than rung 03: the lanes of a warp share the output channel, so they read the same
// weight: one constant-cache load (LDC; the channel is a run-time value, so the address is too)
// serves the whole warp, where each lane issued a global load of its own -- cheaper loads in the
// instruction-bound convolutions (1.49x at 10,000 images, bench/results/lab07_h100_80gb_hbm3.csv).
#include <cuda_runtime_api.h>

#include "constant_conv_weights.cuh"
#include "course/cuda_check.hpp"
#include "labs/lab06_naive_cuda.hpp"
#include "ladder.hpp"
#include "rung_support.hpp"

namespace {

namespace sup = ladder::support;

constexpr int kThreads = 256;

int blocks_for(int count) { return (count + kThreads - 1) / kThreads; }

/// conv1 (pad 2) + bias, one thread per output [n,6,28,28]; `k` is outermost in the output index,
/// so a warp's 32 lanes (consecutive q) share the channel and with it every weight they read.
__global__ void conv1_constant(const float* __restrict__ images, float* __restrict__ out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n * sup::kConv1) return;
  const int q = i % 28, p = (i / 28) % 28, k = (i / 784) % 6, image = i / sup::kConv1;
  const float* x = images + static_cast<std::size_t>(image) * sup::kImage;
  float sum = c_conv1_b[k];
#pragma unroll
  for (int r = 0; r < 5; ++r) {
    const int h = p - 2 + r;
    if (h < 0 || h >= 28) continue;
#pragma unroll
    for (int s = 0; s < 5; ++s) {
      const int w = q - 2 + s;
      if (w < 0 || w >= 28) continue;
      sum += x[h * 28 + w] * c_conv1_w[(k * 5 + r) * 5 + s];
    }
  }
  out[i] = sum;
}

/// conv2 (no padding) + bias, one thread per output [n,16,10,10] from pool1 [n,6,14,14].
__global__ void conv2_constant(const float* __restrict__ pool1, float* __restrict__ out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n * sup::kConv2) return;
  const int q = i % 10, p = (i / 10) % 10, k = (i / 100) % 16, image = i / sup::kConv2;
  const float* x = pool1 + static_cast<std::size_t>(image) * sup::kPool1;
  float sum = c_conv2_b[k];
  for (int c = 0; c < 6; ++c)
#pragma unroll
    for (int r = 0; r < 5; ++r)
#pragma unroll
      for (int s = 0; s < 5; ++s) sum += x[(c * 14 + p + r) * 14 + q + s] * c_conv2_w[((k * 6 + c) * 5 + r) * 5 + s];
  out[i] = sum;
}

class ConstantWeights final : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    sup::check_max_batch(max_batch);
    upload_conv_weights_to_constant(net);
    weights_ = sup::DeviceWeights(net);  // the fully connected layers still read these
    activations_ = sup::Activations(max_batch);
    max_batch_ = max_batch;
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    sup::check_forward(d_images, n, max_batch_, d_logits, d_labels);
    sup::Activations& a = activations_;
    conv1_constant<<<blocks_for(n * sup::kConv1), kThreads, 0, stream>>>(d_images, a.conv1.get(), n);
    CUDA_CHECK_LAST_LAUNCH();
    lab06::relu_inplace(a.conv1.get(), n * sup::kConv1, stream);
    lab06::max_pool2d(a.conv1.get(), a.pool1.get(), n, 6, 28, 28, 2, 2, stream);
    conv2_constant<<<blocks_for(n * sup::kConv2), kThreads, 0, stream>>>(a.pool1.get(), a.conv2.get(), n);
    CUDA_CHECK_LAST_LAUNCH();
    lab06::relu_inplace(a.conv2.get(), n * sup::kConv2, stream);
    lab06::max_pool2d(a.conv2.get(), a.pool2.get(), n, 16, 10, 10, 2, 2, stream);
    lab06::linear_forward(a.pool2.get(), weights_.fc1_w.get(), weights_.fc1_b.get(), a.fc1.get(), n, 400, 120, stream);
    lab06::relu_inplace(a.fc1.get(), n * 120, stream);
    lab06::linear_forward(a.fc1.get(), weights_.fc2_w.get(), weights_.fc2_b.get(), a.fc2.get(), n, 120, 84, stream);
    lab06::relu_inplace(a.fc2.get(), n * 84, stream);
    lab06::linear_forward(a.fc2.get(), weights_.fc3_w.get(), weights_.fc3_b.get(), d_logits, n, 84, 10, stream);
    lab06::argmax_rows(d_logits, d_labels, n, 10, stream);
  }

 private:
  sup::DeviceWeights weights_;
  sup::Activations activations_;
  int max_batch_ = 0;
};

}  // namespace

COURSE_LADDER_RUNG(4, "constant_weights",
                   "conv weights and biases in __constant__ memory: one broadcast per warp instead of a load per tap",
                   ConstantWeights);
