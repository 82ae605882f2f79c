// The shared-memory convolutions of rung 05, reused unchanged by rung 06: one block per image
// copies the image's whole conv input (the tile, with conv1's zero padding as its halo) from global
// into shared memory once, then its threads compute every output of that image from there, with
// the weights from constant memory (constant_conv_weights.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include "constant_conv_weights.cuh"
#include "course/cuda_check.hpp"
#include "rung_support.hpp"

namespace {

constexpr int kTileThreads = 256;
constexpr int kConv1Tile = 28 + 2 * 2;  // 32: the image with its 2-pixel zero border

/// conv1 (pad 2) + bias for image blockIdx.x: [1,28,28] -> [6,28,28]. The padding is written into
/// the tile as zeros, so the inner loop reads the tile without a single bounds check.
__global__ void conv1_shared_tile(const float* __restrict__ images, float* __restrict__ out) {
  __shared__ float tile[kConv1Tile * kConv1Tile];
  const float* x = images + static_cast<std::size_t>(blockIdx.x) * ladder::support::kImage;
  for (int t = static_cast<int>(threadIdx.x); t < kConv1Tile * kConv1Tile; t += blockDim.x) {
    const int h = t / kConv1Tile - 2, w = t % kConv1Tile - 2;
    tile[t] = (h >= 0 && h < 28 && w >= 0 && w < 28) ? x[h * 28 + w] : 0.0f;
  }
  __syncthreads();  // the whole tile is written before anyone reads it
  float* y = out + static_cast<std::size_t>(blockIdx.x) * ladder::support::kConv1;
  for (int o = static_cast<int>(threadIdx.x); o < ladder::support::kConv1; o += blockDim.x) {
    const int q = o % 28, p = (o / 28) % 28, k = o / 784;
    float sum = c_conv1_b[k];
#pragma unroll
    for (int r = 0; r < 5; ++r)
#pragma unroll
      for (int s = 0; s < 5; ++s) sum += tile[(p + r) * kConv1Tile + q + s] * c_conv1_w[(k * 5 + r) * 5 + s];
    y[o] = sum;
  }
}

/// conv2 + bias for image blockIdx.x: pool1 [6,14,14] (4.7 KB, in shared memory) -> [16,10,10].
__global__ void conv2_shared_tile(const float* __restrict__ pool1, float* __restrict__ out) {
  __shared__ float tile[ladder::support::kPool1];
  const float* x = pool1 + static_cast<std::size_t>(blockIdx.x) * ladder::support::kPool1;
  for (int t = static_cast<int>(threadIdx.x); t < ladder::support::kPool1; t += blockDim.x) tile[t] = x[t];
  __syncthreads();
  float* y = out + static_cast<std::size_t>(blockIdx.x) * ladder::support::kConv2;
  for (int o = static_cast<int>(threadIdx.x); o < ladder::support::kConv2; o += blockDim.x) {
    const int q = o % 10, p = (o / 10) % 10, k = o / 100;
    float sum = c_conv2_b[k];
    for (int c = 0; c < 6; ++c)
#pragma unroll
      for (int r = 0; r < 5; ++r)
#pragma unroll
        for (int s = 0; s < 5; ++s)
          sum += tile[(c * 14 + p + r) * 14 + q + s] * c_conv2_w[((k * 6 + c) * 5 + r) * 5 + s];
    y[o] = sum;
  }
}

/// The launches: one block per image (a grid of n blocks; n <= INT_MAX is far below the limit).
void conv1_shared(const float* d_images, float* d_out, int n, cudaStream_t stream) {
  conv1_shared_tile<<<n, kTileThreads, 0, stream>>>(d_images, d_out);
  CUDA_CHECK_LAST_LAUNCH();
}
void conv2_shared(const float* d_pool1, float* d_out, int n, cudaStream_t stream) {
  conv2_shared_tile<<<n, kTileThreads, 0, stream>>>(d_pool1, d_out);
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace
