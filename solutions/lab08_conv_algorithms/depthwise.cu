// Lab 08 solution, part A1: the depthwise 3x3 convolution of MobileNetV2.
// The contract is documented in common/include/labs/lab08_conv_algorithms.hpp; the lecture is
// lectures/08-conv-algorithms.md.
//
// A depthwise layer does 9 multiply-adds per output and reads about one input value per output
// (stride 1): it is memory-bound, and the goal is to read every input value from DRAM once and
// as few times as possible from L1. The design is version 3 of bench/lab08_depthwise.cu:
//   - one thread computes a vertical strip of kStrip outputs of one column q (rows p0..p0+7);
//   - it keeps the three input rows under its 3x3 window in registers (3 values each: columns
//     v-1, v, v+1) and slides the window down: going one output row down drops the top row and
//     loads one new row at stride 1 (two at stride 2), so each input row is loaded once per
//     thread instead of three times;
//   - the work items (plane, strip, column) are flattened with the column fastest, so that a
//     warp reads consecutive columns of a row (coalesced) and every block is full whatever the
//     plane's size (a 7x7 plane in a 32-wide block would leave most of it idle).
#include <climits>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace lab08 {
namespace {

constexpr int kThreadsPerBlock = 256;  // 8 warps; 8 blocks fill an SM's 2,048 threads
constexpr int kStrip = 8;              // output rows per thread: 8 outputs for 10 (stride 1) input-row loads

void require(bool ok, const std::string& message) {
  if (!ok) throw course::Error("lab08::depthwise_conv3x3: " + message);
}

/// The three taps of input row h around column v (columns v-1, v, v+1) of one plane, 0 where the
/// row or the column lies in the padding. v = q * stride <= W - 1 always, so only v - 1 and
/// v + 1 can leave the plane.
__device__ __forceinline__ void load_taps(const float* __restrict__ plane, int h, int v, int H, int W, float taps[3]) {
  const bool row_inside = h >= 0 && h < H;
  const float* row = plane + (row_inside ? h : 0) * W;  // never form a pointer outside the plane
  taps[0] = row_inside && v >= 1 ? __ldg(row + v - 1) : 0.0f;
  taps[1] = row_inside ? __ldg(row + v) : 0.0f;
  taps[2] = row_inside && v + 1 < W ? __ldg(row + v + 1) : 0.0f;
}

}  // namespace

// `static`, outside the anonymous namespace: nvcc gives a kernel's launch stub external linkage
// even there (see lab 06's conv2d.cu). The stride is a template parameter so that the window's
// slide compiles to plain register moves for each case.
template <int kStride>
static __global__ void __launch_bounds__(kThreadsPerBlock)
    depthwise3x3_kernel(const float* __restrict__ input, const float* __restrict__ weight,
                        const float* __restrict__ bias, float* __restrict__ output, int C, int H, int W, int P, int Q,
                        int strips, int items, bool relu6) {
  const unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= static_cast<unsigned>(items)) return;
  const int i = static_cast<int>(idx);
  const int q = i % Q;                  // the column: fastest, so a warp reads along a row
  const int strip = (i / Q) % strips;   // which 8-row strip of that column
  const int plane = i / (Q * strips);   // n * C + c
  const int c = plane % C;

  const float* in = input + plane * H * W;
  float* out = output + plane * P * Q;
  float f[9];
#pragma unroll
  for (int t = 0; t < 9; ++t) f[t] = __ldg(weight + c * 9 + t);
  const float b = __ldg(bias + c);

  const int p0 = strip * kStrip;
  const int v = q * kStride;       // the centre column of this column's windows
  int h = p0 * kStride - 1;        // the top input row of output row p0's window (pad 1)
  float rows[3][3];                // rows[k][s] = input[h + k][v - 1 + s]
#pragma unroll
  for (int k = 0; k < 3; ++k) load_taps(in, h + k, v, H, W, rows[k]);

#pragma unroll
  for (int t = 0; t < kStrip; ++t) {
    const int p = p0 + t;
    if (p >= P) break;
    float sum = b;
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
      for (int s = 0; s < 3; ++s) sum = fmaf(f[r * 3 + s], rows[r][s], sum);
    if (relu6) sum = fminf(fmaxf(sum, 0.0f), 6.0f);
    out[p * Q + q] = sum;
    if (p + 1 >= P || t + 1 == kStrip) break;  // no window to slide into
    h += kStride;  // the next output row's window starts kStride rows lower
    if (kStride == 1) {
      // Rows h, h+1 were rows 1, 2 of the old window: keep them, load one new row.
#pragma unroll
      for (int s = 0; s < 3; ++s) {
        rows[0][s] = rows[1][s];
        rows[1][s] = rows[2][s];
      }
      load_taps(in, h + 2, v, H, W, rows[2]);
    } else {
      // Stride 2: only the old bottom row is shared with the new window.
#pragma unroll
      for (int s = 0; s < 3; ++s) rows[0][s] = rows[2][s];
      load_taps(in, h + 1, v, H, W, rows[1]);
      load_taps(in, h + 2, v, H, W, rows[2]);
    }
  }
}

void depthwise_conv3x3(const float* d_input, const float* d_weight, const float* d_bias, float* d_output, int N,
                       int C, int H, int W, int stride, bool relu6, cudaStream_t stream) {
  require(d_input != nullptr, "d_input is null");
  require(d_weight != nullptr, "d_weight is null");
  require(d_bias != nullptr, "d_bias is null");
  require(d_output != nullptr, "d_output is null");
  const int sizes[] = {N, C, H, W};
  const char* names[] = {"N", "C", "H", "W"};
  for (int d = 0; d < 4; ++d)
    require(sizes[d] >= 1, std::string(names[d]) + " must be >= 1, got " + std::to_string(sizes[d]));
  require(stride == 1 || stride == 2, "stride must be 1 or 2, got " + std::to_string(stride));
  const std::int64_t in_count = std::int64_t{N} * C * H * W;
  require(in_count <= INT_MAX, "input too large for int indexing (" + std::to_string(in_count) + " elements)");

  // The output is never larger than the input, so every index below fits an int.
  const int P = (H - 1) / stride + 1;
  const int Q = (W - 1) / stride + 1;
  const int strips = (P + kStrip - 1) / kStrip;
  const std::int64_t items = std::int64_t{N} * C * strips * Q;
  const auto blocks = static_cast<unsigned>((items + kThreadsPerBlock - 1) / kThreadsPerBlock);
  if (stride == 1)
    depthwise3x3_kernel<1><<<blocks, kThreadsPerBlock, 0, stream>>>(d_input, d_weight, d_bias, d_output, C, H, W, P,
                                                                     Q, strips, static_cast<int>(items), relu6);
  else
    depthwise3x3_kernel<2><<<blocks, kThreadsPerBlock, 0, stream>>>(d_input, d_weight, d_bias, d_output, C, H, W, P,
                                                                     Q, strips, static_cast<int>(items), relu6);
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace lab08
