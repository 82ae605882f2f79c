// Planted fault (lab07_naive_other_launch_config): lab 06's naive pipeline passed off as lab 07's.
// One thread per output element, one kernel per layer (12 launches), intermediate activations in
// global memory -- only the launch configuration differs (512 threads per block instead of 256).
// It is correct, so every correctness test passes; the speed gate against the naive baseline
// must fail it. Replaces the solution's fast_lenet.cu whole (its kernels.cu is left unused).
#include <cuda_runtime_api.h>

#include <climits>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/lenet.hpp"
#include "labs/lab07_optimized_cuda.hpp"

namespace lab07 {
namespace {

namespace ln = course::lenet;

constexpr int kThreads = 512;  // "tuned": the naive kernels' only change

unsigned blocks_for(int count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

__global__ void conv_kernel(const float* in, const float* w, const float* b, float* out, int N, int C, int H, int W,
                            int K, int R, int pad, int P) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= N * K * P * P) return;
  const int q = i % P, p = (i / P) % P, k = (i / (P * P)) % K, n = i / (P * P * K);
  float sum = b[k];
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < R; ++s) {
        const int y = p + r - pad, x = q + s - pad;
        if (y >= 0 && y < H && x >= 0 && x < W) sum += in[((n * C + c) * H + y) * W + x] * w[((k * C + c) * R + r) * R + s];
      }
  out[i] = sum;
}

__global__ void relu_kernel(float* data, int count) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < count) data[i] = fmaxf(data[i], 0.0f);
}

__global__ void pool_kernel(const float* in, float* out, int planes, int H) {
  const int P = H / 2;
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= planes * P * P) return;
  const int q = i % P, p = (i / P) % P, plane = i / (P * P);
  const float* src = in + (plane * H + 2 * p) * H + 2 * q;
  out[i] = fmaxf(fmaxf(src[0], src[1]), fmaxf(src[H], src[H + 1]));
}

__global__ void linear_kernel(const float* in, const float* w, const float* b, float* out, int N, int I, int O) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= N * O) return;
  const int o = i % O, n = i / O;
  float sum = b[o];
  for (int j = 0; j < I; ++j) sum += in[n * I + j] * w[o * I + j];
  out[i] = sum;
}

__global__ void argmax_kernel(const float* logits, int* labels, int N, int K) {
  const int n = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (n >= N) return;
  int best = 0;
  for (int k = 1; k < K; ++k)
    if (logits[n * K + k] > logits[n * K + best]) best = k;
  labels[n] = best;
}

course::DeviceBuffer<float> upload_checked(const course::Tensor& t, const course::Shape& shape, const char* name) {
  if (t.shape() != shape)
    throw course::Error(std::string("lab07::FastLeNet: ") + name + " must be " + course::shape_to_string(shape) +
                        ", got " + course::shape_to_string(t.shape()));
  return course::DeviceBuffer<float>(t.values());
}

}  // namespace

struct FastLeNet::State {
  course::DeviceBuffer<float> c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b, f3w, f3b;
  course::DeviceBuffer<float> conv1, pool1, conv2, pool2, fc1, fc2;
};

FastLeNet::FastLeNet(const lab04::FoldedLeNet& net, int max_batch) : state_(std::make_unique<State>()) {
  if (max_batch < 1 || max_batch > INT_MAX / (6 * 28 * 28))
    throw course::Error("lab07::FastLeNet: max_batch out of range: " + std::to_string(max_batch));
  State& s = *state_;
  s.c1w = upload_checked(net.conv1_weight, {6, 1, 5, 5}, "conv1_weight");
  s.c1b = upload_checked(net.conv1_bias, {6}, "conv1_bias");
  s.c2w = upload_checked(net.conv2_weight, {16, 6, 5, 5}, "conv2_weight");
  s.c2b = upload_checked(net.conv2_bias, {16}, "conv2_bias");
  s.f1w = upload_checked(net.fc1_weight, {120, 400}, "fc1_weight");
  s.f1b = upload_checked(net.fc1_bias, {120}, "fc1_bias");
  s.f2w = upload_checked(net.fc2_weight, {84, 120}, "fc2_weight");
  s.f2b = upload_checked(net.fc2_bias, {84}, "fc2_bias");
  s.f3w = upload_checked(net.fc3_weight, {10, 84}, "fc3_weight");
  s.f3b = upload_checked(net.fc3_bias, {10}, "fc3_bias");
  const auto per = [max_batch](int floats) { return static_cast<std::size_t>(max_batch) * static_cast<std::size_t>(floats); };
  s.conv1 = course::DeviceBuffer<float>(per(6 * 28 * 28));
  s.pool1 = course::DeviceBuffer<float>(per(6 * 14 * 14));
  s.conv2 = course::DeviceBuffer<float>(per(16 * 10 * 10));
  s.pool2 = course::DeviceBuffer<float>(per(400));
  s.fc1 = course::DeviceBuffer<float>(per(120));
  s.fc2 = course::DeviceBuffer<float>(per(84));
  max_batch_ = max_batch;
}

FastLeNet::~FastLeNet() = default;

void FastLeNet::forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) {
  if (d_images == nullptr) throw course::Error("lab07::FastLeNet::forward: d_images is null");
  if (d_logits == nullptr) throw course::Error("lab07::FastLeNet::forward: d_logits is null");
  if (d_labels == nullptr) throw course::Error("lab07::FastLeNet::forward: d_labels is null");
  if (n < 1 || n > max_batch_)
    throw course::Error("lab07::FastLeNet::forward: n must be in [1, max_batch " + std::to_string(max_batch_) + "], got " +
                        std::to_string(n));
  State& s = *state_;
  conv_kernel<<<blocks_for(n * 6 * 28 * 28), kThreads, 0, stream>>>(d_images, s.c1w.get(), s.c1b.get(), s.conv1.get(), n,
                                                                   1, 28, 28, 6, 5, 2, 28);
  relu_kernel<<<blocks_for(n * 6 * 28 * 28), kThreads, 0, stream>>>(s.conv1.get(), n * 6 * 28 * 28);
  pool_kernel<<<blocks_for(n * 6 * 14 * 14), kThreads, 0, stream>>>(s.conv1.get(), s.pool1.get(), n * 6, 28);
  conv_kernel<<<blocks_for(n * 16 * 10 * 10), kThreads, 0, stream>>>(s.pool1.get(), s.c2w.get(), s.c2b.get(), s.conv2.get(),
                                                                    n, 6, 14, 14, 16, 5, 0, 10);
  relu_kernel<<<blocks_for(n * 16 * 10 * 10), kThreads, 0, stream>>>(s.conv2.get(), n * 16 * 10 * 10);
  pool_kernel<<<blocks_for(n * 400), kThreads, 0, stream>>>(s.conv2.get(), s.pool2.get(), n * 16, 10);
  linear_kernel<<<blocks_for(n * 120), kThreads, 0, stream>>>(s.pool2.get(), s.f1w.get(), s.f1b.get(), s.fc1.get(), n, 400, 120);
  relu_kernel<<<blocks_for(n * 120), kThreads, 0, stream>>>(s.fc1.get(), n * 120);
  linear_kernel<<<blocks_for(n * 84), kThreads, 0, stream>>>(s.fc1.get(), s.f2w.get(), s.f2b.get(), s.fc2.get(), n, 120, 84);
  relu_kernel<<<blocks_for(n * 84), kThreads, 0, stream>>>(s.fc2.get(), n * 84);
  linear_kernel<<<blocks_for(n * 10), kThreads, 0, stream>>>(s.fc2.get(), s.f3w.get(), s.f3b.get(), d_logits, n, 84, 10);
  argmax_kernel<<<blocks_for(n), kThreads, 0, stream>>>(d_logits, d_labels, n, 10);
}

}  // namespace lab07
