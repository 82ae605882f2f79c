// Lab 08 exercise, part B: the 3x3 convolution (pad 1, stride 1) by Winograd's F(2x2, 3x3).
// The contract is documented in common/include/labs/lab08_conv_algorithms.hpp; the lecture is
// lectures/08-conv-algorithms.md, section 5 (the worked example there is the first test); the task
// is README.md in this folder. Grade this lab with `./course grade lab08`.
//
// The matrices (every entry 0, +-1 or +-1/2, so each transform is a handful of additions):
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
// Tiles: tiles_h = (H + 1) / 2, tiles_w = (W + 1) / 2, T = N * tiles_h * tiles_w, tile
// t = (n * tiles_h + th) * tiles_w + tw; position xi = 4*i + j of a 4x4 transform.
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace lab08 {
namespace {

}  // namespace

// TODO 1: the filter transform kernel (`static __global__`, outside the anonymous namespace, as in
// part A). One thread per (k, c): load the 9 taps of weight[k, c], compute G g (4x3: G applied to
// each column of g), then (G g) G^T (4x4: G applied to each row of G g), and store position xi at
// U[xi * K*C + k*C + c]. With the thread index k*C + c, consecutive threads store consecutive
// floats for each xi.
// static __global__ void winograd_filter_kernel(...) { ... }

// TODO 2: the input transform kernel. One thread per (c, t), t fastest: load the 4x4 patch of
// channel c at input rows 2*th - 1 .. 2*th + 2 and columns 2*tw - 1 .. 2*tw + 2 (0.0f outside
// the image: the first tile's patch starts in the padding, the last one may end past the image),
// compute B^T d (B^T applied to each column) and then (B^T d) B (B^T applied to each row of the
// result), and store position xi at V[xi * C*T + c*T + t].
// static __global__ void winograd_input_kernel(...) { ... }

// TODO 3: the 16 products M[xi] = U[xi] [K x C] * V[xi] [C x T]. The simplest correct way is to
// call your part-A sgemm 16 times (sgemm(K, T, C, U + xi*K*C, V + xi*C*T, nullptr, M + xi*K*T,
// stream)); better is one launch of a batched tiled kernel with blockIdx.z = xi (part A's tiling:
// slices of C in shared memory, zeros outside the matrices, two __syncthreads() per slice).
// static __global__ void winograd_multiply_kernel(...) { ... }

// TODO 4: the output transform kernel. One thread per (k, t), t fastest: load m[i][j] =
// M[(4*i + j) * K*T + k*T + t], compute A^T m (2x4) and (A^T m) A (2x2), add bias[k] (when the
// bias pointer is not null) and store output[n, k, 2*th + a, 2*tw + b] -- but only the outputs
// inside the H x W output: with an odd H the last row of tiles has only its first row inside
// (likewise the columns for an odd W).
// static __global__ void winograd_output_kernel(...) { ... }

void winograd_filter_transform([[maybe_unused]] const float* d_weight, [[maybe_unused]] float* d_U,
                               [[maybe_unused]] int K, [[maybe_unused]] int C, [[maybe_unused]] cudaStream_t stream) {
  // TODO 5: validate ("d_weight", "d_U"; "K", "C"; "too large" when 16*K*C > INT_MAX, computed in
  //   std::int64_t), then launch on `stream` and CUDA_CHECK_LAST_LAUNCH().
  throw course::NotImplemented("lab08::winograd_filter_transform");
}

void winograd_input_transform([[maybe_unused]] const float* d_input, [[maybe_unused]] float* d_V,
                              [[maybe_unused]] int N, [[maybe_unused]] int C, [[maybe_unused]] int H,
                              [[maybe_unused]] int W, [[maybe_unused]] cudaStream_t stream) {
  // TODO 6: validate ("d_input", "d_V"; "N", "C", "H", "W"; "too large" for the input and for V,
  //   16*C*T elements), then launch.
  throw course::NotImplemented("lab08::winograd_input_transform");
}

void winograd_batched_multiply([[maybe_unused]] const float* d_U, [[maybe_unused]] const float* d_V,
                               [[maybe_unused]] float* d_M, [[maybe_unused]] int K, [[maybe_unused]] int C,
                               [[maybe_unused]] int T, [[maybe_unused]] cudaStream_t stream) {
  // TODO 7: validate ("d_U", "d_V", "d_M"; "K", "C", "T"; "too large" for U, V and M), then run
  //   the 16 products (TODO 3).
  throw course::NotImplemented("lab08::winograd_batched_multiply");
}

void winograd_output_transform([[maybe_unused]] const float* d_M, [[maybe_unused]] const float* d_bias,
                               [[maybe_unused]] float* d_output, [[maybe_unused]] int N, [[maybe_unused]] int K,
                               [[maybe_unused]] int H, [[maybe_unused]] int W, [[maybe_unused]] cudaStream_t stream) {
  // TODO 8: validate ("d_M", "d_output"; d_bias may be null; "N", "K", "H", "W"; "too large" for
  //   M and the output), then launch.
  throw course::NotImplemented("lab08::winograd_output_transform");
}

std::size_t conv2d_winograd_workspace([[maybe_unused]] int N, [[maybe_unused]] int C, [[maybe_unused]] int H,
                                      [[maybe_unused]] int W, [[maybe_unused]] int K) {
  // TODO 9a: validate the sizes like conv2d_winograd ("N", "C", "H", "W", "K"; "too large" for
  //   the input, the output, U, V and M), then return the bytes for U, V and M:
  //   (16*K*C + 16*C*T + 16*K*T) floats.
  throw course::NotImplemented("lab08::conv2d_winograd_workspace");
}

void conv2d_winograd([[maybe_unused]] const float* d_input, [[maybe_unused]] const float* d_weight,
                     [[maybe_unused]] const float* d_bias, [[maybe_unused]] float* d_output,
                     [[maybe_unused]] void* d_workspace, [[maybe_unused]] std::size_t workspace_bytes,
                     [[maybe_unused]] int N, [[maybe_unused]] int C, [[maybe_unused]] int H, [[maybe_unused]] int W,
                     [[maybe_unused]] int K, [[maybe_unused]] cudaStream_t stream) {
  // TODO 9b: validate (the four tensors' pointers, "d_workspace", the sizes, "too large", and
  //   workspace_bytes >= conv2d_winograd_workspace(...), else "workspace too small"), then split
  //   the workspace into U, V and M and run the four stages in order on `stream`. (Real inference
  //   transforms the filters once per model; here it is part of every call.)
  throw course::NotImplemented("lab08::conv2d_winograd");
}

}  // namespace lab08
