// A small program for chapter 4a (lectures/04a-cuda-toolchain.md): the course's own kernels to
// run under the profilers, and four DELIBERATELY BROKEN demo kernels to run under
// compute-sanitizer. It is not part of any lab and not built by CMake;
// lectures/tools/toolchain_gpu_outputs.sh compiles it with nvcc directly:
//
//   nvcc -arch=sm_90 -std=c++17 -lineinfo -I common/include -I solutions/lab07_optimized_cuda \
//        lectures/tools/toolchain_demo.cu solutions/lab06_naive_cuda/conv2d.cu \
//        solutions/lab06_naive_cuda/layers.cu solutions/lab07_optimized_cuda/kernels.cu -o toolchain_demo
//
// Usage: toolchain_demo MODE [N]
//   conv2  [N]  lab 06's conv2d_forward on LeNet's conv2 shapes (6 -> 16 channels, 14x14, 5x5) for
//               N random images (default 10,000); prints the median of 5 timed runs (CUDA events)
//   lenet7 [N]  lab 07's large-batch kernel (the solution, lenet_kernel) on N random images with
//               random weights; prints the median of 5 timed runs
//   oob         PLANTED BUG: a ReLU kernel without its bounds check (memcheck finds it)
//   race        PLANTED BUG: a shared-memory tile read without __syncthreads() (racecheck)
//   uninit      PLANTED BUG: a kernel reads device memory nobody wrote (initcheck)
//   sync        PLANTED BUG: __syncwarp() with a mask that leaves out the calling lanes (synccheck)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "course/cuda_check.hpp"
#include "kernels.cuh"  // lab 07's solution kernels (solutions/lab07_optimized_cuda)
#include "labs/lab06_naive_cuda.hpp"

namespace {

// ---- the planted bugs (demo kernels, never copy them) ------------------------------------------

// Lab 06's ReLU with its `if (i >= count) return;` forgotten: the threads of the last block that lie
// past `count` read and write past the end of the buffer.
__global__ void relu_no_bounds_check(float* data, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  data[i] = fmaxf(data[i], 0.0f);  // BUG: no bounds check
  (void)count;
}

// Each thread stores one value into a shared tile, then reads its neighbour's. Without the barrier
// between the store and the load, the neighbour (in another warp at the warp boundary) may not
// have written yet: a read-after-write hazard on shared memory.
__global__ void neighbour_sum_no_barrier(const float* in, float* out) {
  __shared__ float tile[256];
  const int t = threadIdx.x;
  tile[t] = in[blockIdx.x * 256 + t];
  // BUG: __syncthreads() missing here
  out[blockIdx.x * 256 + t] = tile[t] + tile[(t + 1) % 256];
}

// Sums a buffer that was allocated but never written (no cudaMemset, no copy, no kernel).
__global__ void sum_of_uninitialised(const float* data, float* result, int count) {
  float s = 0.0f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += data[i];
  atomicAdd(result, s);
}

// __syncwarp(mask) must be called by every lane named in the mask, and only by them. Here all 32
// lanes call it with a mask that names lanes 0-15 only.
__global__ void syncwarp_bad_mask(float* data) {
  const int lane = threadIdx.x % 32;
  data[threadIdx.x] = static_cast<float>(lane);
  __syncwarp(0x0000ffffu);  // BUG: lanes 16-31 call it, but the mask leaves them out
  data[threadIdx.x] += data[threadIdx.x ^ 1];
}

// ---- helpers ---------------------------------------------------------------------------------

std::vector<float> random_floats(std::size_t count, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

float* upload(const std::vector<float>& host) {
  float* d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, host.size() * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

// Runs `launch` once to warm up, then 5 times between events; prints the median.
template <typename Launch>
void time_it(const char* what, Launch launch) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int rep = 0; rep < 5; ++rep) {
    CUDA_CHECK(cudaEventRecord(start));
    launch();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%s: median of 5 runs %.3f ms\n", what, ms[2]);
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
}

// Lab 06's conv2d_forward on LeNet's conv2: [N, 6, 14, 14] * [16, 6, 5, 5] -> [N, 16, 10, 10].
void run_conv2(int n) {
  const float* d_in = upload(random_floats(static_cast<std::size_t>(n) * 6 * 14 * 14, 1.0f, 1));
  const float* d_w = upload(random_floats(16 * 6 * 5 * 5, 0.2f, 2));
  const float* d_b = upload(random_floats(16, 0.1f, 3));
  float* d_out = nullptr;
  CUDA_CHECK(cudaMalloc(&d_out, static_cast<std::size_t>(n) * 16 * 10 * 10 * sizeof(float)));
  time_it("lab06 conv2d_forward (conv2)", [&] {
    lab06::conv2d_forward(d_in, d_w, d_b, d_out, n, 6, 14, 14, 16, 5, 5, 0, nullptr);
  });
}

// Lab 07's large-batch kernel with random weights (the classes it predicts mean nothing; the work
// it does is the same as with trained weights).
void run_lenet7(int n) {
  const std::vector<float> packed =
      lab07::pack_conv_weights(random_floats(6 * 25, 0.2f, 4).data(), random_floats(6, 0.1f, 5).data(),
                               random_floats(16 * 6 * 25, 0.1f, 6).data(), random_floats(16, 0.1f, 7).data());
  lab07::DeviceWeights w{};
  w.conv = upload(packed);
  w.fc1_weight_t = upload(random_floats(400 * 120, 0.05f, 8));
  w.fc1_bias = upload(random_floats(120, 0.1f, 9));
  w.fc2_weight_t = upload(random_floats(120 * 84, 0.1f, 10));
  w.fc2_bias = upload(random_floats(84, 0.1f, 11));
  w.fc3_weight_t = upload(random_floats(84 * 10, 0.1f, 12));
  w.fc3_bias = upload(random_floats(10, 0.1f, 13));
  const float* d_images = upload(random_floats(static_cast<std::size_t>(n) * 28 * 28, 1.0f, 14));
  lab07::configure_kernels();
  const int max_blocks = lab07::large_batch_blocks();
  float* d_scratch = nullptr;
  float* d_logits = nullptr;
  int* d_labels = nullptr;
  CUDA_CHECK(cudaMalloc(&d_scratch, lab07::scratch_floats(n, max_blocks) * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_logits, static_cast<std::size_t>(n) * 10 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_labels, static_cast<std::size_t>(n) * sizeof(int)));
  const lab07::LargeBatchPlan plan = lab07::plan_large_batch(n, max_blocks);
  time_it("lab07 lenet_kernel (whole network)", [&] {
    lab07::launch_large_batch(d_images, n, w, plan, d_scratch, d_logits, d_labels, nullptr);
  });
}

void finish(const char* what) {
  const cudaError_t status = cudaDeviceSynchronize();
  std::printf("%s: cudaDeviceSynchronize says %s\n", what, cudaGetErrorName(status));
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const int n = argc > 2 ? std::atoi(argv[2]) : 10000;
  try {
    if (std::strcmp(mode, "conv2") == 0) {
      run_conv2(n);
    } else if (std::strcmp(mode, "lenet7") == 0) {
      run_lenet7(n);
    } else if (std::strcmp(mode, "oob") == 0) {
      const int count = 1000;  // 4 blocks of 256 threads: 24 threads too many
      float* d = upload(random_floats(count, 1.0f, 20));
      relu_no_bounds_check<<<(count + 255) / 256, 256>>>(d, count);
      finish("oob");
    } else if (std::strcmp(mode, "race") == 0) {
      const float* d_in = upload(random_floats(4 * 256, 1.0f, 21));
      float* d_out = nullptr;
      CUDA_CHECK(cudaMalloc(&d_out, 4 * 256 * sizeof(float)));
      neighbour_sum_no_barrier<<<4, 256>>>(d_in, d_out);
      finish("race");
    } else if (std::strcmp(mode, "uninit") == 0) {
      float* d_data = nullptr;
      float* d_sum = nullptr;
      CUDA_CHECK(cudaMalloc(&d_data, 256 * sizeof(float)));  // never written
      CUDA_CHECK(cudaMalloc(&d_sum, sizeof(float)));
      CUDA_CHECK(cudaMemset(d_sum, 0, sizeof(float)));
      sum_of_uninitialised<<<1, 64>>>(d_data, d_sum, 256);
      finish("uninit");
    } else if (std::strcmp(mode, "sync") == 0) {
      float* d = nullptr;
      CUDA_CHECK(cudaMalloc(&d, 32 * sizeof(float)));
      syncwarp_bad_mask<<<1, 32>>>(d);
      finish("sync");
    } else {
      std::fprintf(stderr, "usage: %s conv2|lenet7 [N] | oob|race|uninit|sync\n", argv[0]);
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
