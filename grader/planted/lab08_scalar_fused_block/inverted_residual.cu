// Lab 08 solution, part C1: MobileNetV2's inverted residual block, fully fused.
// The contract is documented in common/include/labs/lab08_conv_algorithms.hpp; the lecture is
// lectures/08-conv-algorithms.md (sections 7-8).
//
// Unfused, a block writes its expanded tensor [N,hidden,H,W] (6x the input) to global memory,
// reads it back for the depthwise step, writes the depthwise output and reads it back for the
// projection. Here ONE kernel does the whole block and neither intermediate leaves the SM:
//   - a CTA owns one image and an 8x8 tile of OUTPUT pixels (and up to 64 output channels; a
//     second group of CTAs takes channels 64..127 and so on, which MobileNetV2 never needs);
//   - it walks the hidden channels in chunks of 32. For each chunk it computes the expanded
//     values of the tile's input window -- the 8x8 outputs' 3x3 windows: 10x10 pixels at stride
//     1, 17x17 at stride 2 -- into shared memory (1x1 expansion + bias + ReLU6, reading the input
//     through L1; positions outside the image are the depthwise step's zero padding, so they hold
//     0, NOT relu6(bias)); then the depthwise 3x3 + bias + ReLU6 of the chunk from shared memory
//     into a second shared array; then every thread adds the chunk's contribution to its 16
//     projection accumulators (registers);
//   - at the end: + projection bias, + the input pixel when the block is residual, one write.
// The expansion of the halo (the window's border) is computed by both neighbouring tiles: the
// price of not storing it (10 x 10 expanded pixels for 8 x 8 outputs at stride 1: 1.56 times the
// expansion work; chapter 8, section 7).
// The workspace is 0 bytes.
#include <climits>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace lab08 {
namespace {

constexpr int kTile = 8;                       // output tile: kTile x kTile pixels
constexpr int kTilePixels = kTile * kTile;     // 64
constexpr int kChunk = 32;                     // hidden channels per pass through shared memory
constexpr int kOutGroup = 64;                  // output channels per CTA
constexpr int kThreads = 256;
constexpr int kAccPerThread = kOutGroup * kTilePixels / kThreads;  // 16

void require(bool ok, const std::string& message) {
  if (!ok) throw course::Error("lab08::inverted_residual_block: " + message);
}

void validate_sizes(int N, int in, int hidden, int out, int H, int W, int stride) {
  const int sizes[] = {N, in, hidden, out, H, W};
  const char* names[] = {"N", "in", "hidden", "out", "H", "W"};
  for (int d = 0; d < 6; ++d)
    require(sizes[d] >= 1, std::string(names[d]) + " must be >= 1, got " + std::to_string(sizes[d]));
  require(stride == 1 || stride == 2, "stride must be 1 or 2, got " + std::to_string(stride));
  const std::int64_t plane = std::int64_t{H} * W;
  const std::int64_t P = (H - 1) / stride + 1, Q = (W - 1) / stride + 1;
  const std::int64_t counts[] = {N * in * plane, N * hidden * plane, N * out * P * Q, std::int64_t{hidden} * in,
                                 std::int64_t{out} * hidden};
  const char* what[] = {"input", "expanded tensor", "output", "expand weight", "project weight"};
  for (int i = 0; i < 5; ++i)
    require(counts[i] <= INT_MAX,
            std::string(what[i]) + " too large for int indexing (" + std::to_string(counts[i]) + " elements)");
  require((out + kOutGroup - 1) / kOutGroup <= 65535, "out too large: more output channels than the grid covers");
}

}  // namespace

template <int kStride>
static __global__ void __launch_bounds__(kThreads)
    fused_inverted_residual_kernel(InvertedResidualWeights wt, const float* __restrict__ x, float* __restrict__ y,
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

std::size_t inverted_residual_workspace(int N, int in, int hidden, int out, int H, int W, int stride) {
  validate_sizes(N, in, hidden, out, H, W, stride);
  return 0;  // fully fused: nothing leaves the SM between the three steps
}

void inverted_residual_block(const InvertedResidualWeights& weights, const float* d_input, float* d_output, int N,
                             int in, int hidden, int out, int H, int W, int stride, void* d_workspace,
                             std::size_t workspace_bytes, cudaStream_t stream) {
  (void)d_workspace;  // needs none, so any (even null) is fine
  (void)workspace_bytes;
  require(d_input != nullptr, "d_input is null");
  require(d_output != nullptr, "d_output is null");
  validate_sizes(N, in, hidden, out, H, W, stride);
  const bool expand = hidden != in;
  if (expand) {
    require(weights.expand_weight != nullptr, "expand_weight is null (hidden != in: the block expands)");
    require(weights.expand_bias != nullptr, "expand_bias is null (hidden != in: the block expands)");
  } else {
    require(weights.expand_weight == nullptr, "expand_weight given although hidden == in (a t = 1 block has none)");
    require(weights.expand_bias == nullptr, "expand_bias given although hidden == in (a t = 1 block has none)");
  }
  require(weights.depthwise_weight != nullptr, "depthwise_weight is null");
  require(weights.depthwise_bias != nullptr, "depthwise_bias is null");
  require(weights.project_weight != nullptr, "project_weight is null");
  require(weights.project_bias != nullptr, "project_bias is null");

  const int P = (H - 1) / stride + 1, Q = (W - 1) / stride + 1;
  const int tiles_p = (P + kTile - 1) / kTile, tiles_q = (Q + kTile - 1) / kTile;
  const std::int64_t ctas = std::int64_t{N} * tiles_p * tiles_q;  // <= N*P*Q <= INT_MAX
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

}  // namespace lab08
