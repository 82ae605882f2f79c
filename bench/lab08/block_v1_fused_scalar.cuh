// Lab 08's block ladder, rung v1: the lab's first fully fused inverted residual block, one CTA per
// image and 8x8 output tile, hidden channels in chunks of 32 through shared memory, scalar FMAs.
// Why a copy: the solution (solutions/lab08_conv_algorithms/inverted_residual.cu) is being made
// faster, and this rung keeps the original kernel (the solution as of commit 0d831a2, unchanged but
// for the namespace) so that bench/lab08_mobilenet.cu can show what the later versions buy.
// No argument checks here: the benchmark calls it only with the network's and MobileNetV2's shapes,
// which the solution's inverted_residual_block has already accepted.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "course/cuda_check.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace block_v1 {

constexpr int kTile = 8;                       // output tile: kTile x kTile pixels
constexpr int kTilePixels = kTile * kTile;     // 64
constexpr int kChunk = 32;                     // hidden channels per pass through shared memory
constexpr int kOutGroup = 64;                  // output channels per CTA
constexpr int kThreads = 256;
constexpr int kAccPerThread = kOutGroup * kTilePixels / kThreads;  // 16

template <int kStride>
__global__ void __launch_bounds__(kThreads)
    fused_inverted_residual_kernel(lab08::InvertedResidualWeights wt, const float* __restrict__ x, float* __restrict__ y,
                                   int in, int hidden, int out, int H, int W, int P, int Q, int tiles_q,
                                   int tiles_per_image, bool residual) {
  constexpr int kWindow = (kTile - 1) * kStride + 3;  // input rows (and columns) under the tile's windows
  constexpr int kWindowPixels = kWindow * kWindow;
  __shared__ float expanded[kChunk * kWindowPixels];
  __shared__ float depthwise[kChunk * kTilePixels];

  const int image = blockIdx.x / tiles_per_image;
  const int tile = blockIdx.x % tiles_per_image;
  const int p0 = (tile / tiles_q) * kTile, q0 = (tile % tiles_q) * kTile;
  const int h0 = p0 * kStride - 1, w0 = q0 * kStride - 1;  // the window's top-left input pixel (pad 1)
  const int o0 = blockIdx.y * kOutGroup;
  const int plane = H * W;
  const float* xn = x + image * in * plane;

  // This thread's accumulators: pixel t % 64 of the tile, output channels o0 + t / 64 + 4 j.
  const int my_pixel = threadIdx.x % kTilePixels;
  const int my_out = threadIdx.x / kTilePixels;
  float acc[kAccPerThread];
#pragma unroll
  for (int j = 0; j < kAccPerThread; ++j) acc[j] = 0.0f;

  const bool expand = wt.expand_weight != nullptr;
  for (int c0 = 0; c0 < hidden; c0 += kChunk) {
    const int chunk = min(kChunk, hidden - c0);
    // 1. The expanded window of hidden channels c0 .. c0+chunk-1 (zero outside the image).
    for (int i = threadIdx.x; i < chunk * kWindowPixels; i += kThreads) {
      const int c = i / kWindowPixels, pix = i % kWindowPixels;
      const int h = h0 + pix / kWindow, w = w0 + pix % kWindow;
      float v = 0.0f;
      if (h >= 0 && h < H && w >= 0 && w < W) {
        const int offset = h * W + w;
        if (expand) {
          const float* we = wt.expand_weight + (c0 + c) * in;
          float sum = wt.expand_bias[c0 + c];
          for (int k = 0; k < in; ++k) sum = fmaf(we[k], xn[k * plane + offset], sum);
          v = fminf(fmaxf(sum, 0.0f), 6.0f);
        } else {
          v = xn[(c0 + c) * plane + offset];
        }
      }
      expanded[i] = v;
    }
    __syncthreads();
    // 2. Depthwise 3x3 + bias + ReLU6 of the chunk, from shared memory.
    for (int i = threadIdx.x; i < chunk * kTilePixels; i += kThreads) {
      const int c = i / kTilePixels, pix = i % kTilePixels;
      const int lp = pix / kTile, lq = pix % kTile;
      const float* wd = wt.depthwise_weight + (c0 + c) * 9;
      const float* e = expanded + c * kWindowPixels + (lp * kStride) * kWindow + lq * kStride;
      float sum = wt.depthwise_bias[c0 + c];
#pragma unroll
      for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int s = 0; s < 3; ++s) sum = fmaf(wd[r * 3 + s], e[r * kWindow + s], sum);
      depthwise[i] = fminf(fmaxf(sum, 0.0f), 6.0f);
    }
    __syncthreads();
    // 3. The chunk's share of the projection (the next chunk's step 1 writes only `expanded`,
    //    which step 2 has finished reading; its step 2 overwrites `depthwise` after a barrier).
#pragma unroll
    for (int j = 0; j < kAccPerThread; ++j) {
      const int o = o0 + my_out + j * (kThreads / kTilePixels);
      if (o < out) {
        const float* wp = wt.project_weight + o * hidden + c0;
        float sum = acc[j];
        for (int c = 0; c < chunk; ++c) sum = fmaf(wp[c], depthwise[c * kTilePixels + my_pixel], sum);
        acc[j] = sum;
      }
    }
  }

  // 4. Bias, residual, one write per output.
  const int p = p0 + my_pixel / kTile, q = q0 + my_pixel % kTile;
  if (p >= P || q >= Q) return;
  const int out_plane = P * Q;
#pragma unroll
  for (int j = 0; j < kAccPerThread; ++j) {
    const int o = o0 + my_out + j * (kThreads / kTilePixels);
    if (o < out) {
      float v = acc[j] + wt.project_bias[o];
      if (residual) v += xn[o * plane + p * W + q];  // stride 1 and in == out: (p, q) is an input pixel
      y[(image * out + o) * out_plane + p * Q + q] = v;
    }
  }
}

/// The block on d_input [N,in,H,W] -> d_output [N,out,P,Q], as lab08::inverted_residual_block
/// (the solution's launch code at the same commit, without its checks).
inline void inverted_residual_block(const lab08::InvertedResidualWeights& weights, const float* d_input,
                                    float* d_output, int N, int in, int hidden, int out, int H, int W, int stride,
                                    cudaStream_t stream) {
  const int P = (H - 1) / stride + 1, Q = (W - 1) / stride + 1;
  const int tiles_p = (P + kTile - 1) / kTile, tiles_q = (Q + kTile - 1) / kTile;
  const std::int64_t ctas = std::int64_t{N} * tiles_p * tiles_q;
  const dim3 grid(static_cast<unsigned>(ctas), static_cast<unsigned>((out + kOutGroup - 1) / kOutGroup));
  const bool residual = stride == 1 && in == out;
  if (stride == 1)
    fused_inverted_residual_kernel<1><<<grid, kThreads, 0, stream>>>(weights, d_input, d_output, in, hidden, out, H,
                                                                      W, P, Q, tiles_q, tiles_p * tiles_q, residual);
  else
    fused_inverted_residual_kernel<2><<<grid, kThreads, 0, stream>>>(weights, d_input, d_output, in, hidden, out, H,
                                                                      W, P, Q, tiles_q, tiles_p * tiles_q, residual);
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace block_v1
