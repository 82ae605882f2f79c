// The CUDA fault the grader must report well: a kernel that writes far outside its buffer. The
// error surfaces at the next synchronising call, which CUDA_CHECK turns into a course::Error.
#include <cuda_runtime.h>

#include "course/cuda_check.hpp"

namespace {
__global__ void write_out_of_bounds(float* data) { data[threadIdx.x + (1ull << 40)] = 1.0f; }
}  // namespace

void fake_cuda_illegal_address() {
  float* data = nullptr;
  CUDA_CHECK(cudaMalloc(&data, 256 * sizeof(float)));
  write_out_of_bounds<<<1, 32>>>(data);
  CUDA_CHECK_LAST_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}
