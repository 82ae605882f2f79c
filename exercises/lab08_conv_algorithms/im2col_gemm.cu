// Lab 08 exercise, part A2: im2col, a tiled SGEMM, and the convolution as im2col + GEMM.
// The contract is documented in common/include/labs/lab08_conv_algorithms.hpp; the lecture is
// lectures/08-conv-algorithms.md; the task is README.md in this folder. Grade this lab with
// `./course grade lab08`.
#include <algorithm>
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

// TODO 1: im2col's kernel (`static __global__`, outside the anonymous namespace). One thread per
// (channel c, output pixel (n, p, q)) works well: it writes that pixel's R*S taps of channel c
// down its column (n*P + p)*Q + q, at rows (c*R + r)*S + s, and writes 0.0f for the taps in the
// padding -- without loading anything for them. Consecutive threads should take consecutive
// columns, so that each of the R*S stores of a warp is one contiguous run.
// static __global__ void im2col_kernel(...) { ... }

// TODO 2: the SGEMM kernel. Start with one thread per element of C (correct, slow), then tile:
//   - a block computes a BM x BN tile of C (e.g. 128 x 128 or 64 x 64) with 256 threads, each
//     thread TM x TN outputs (8 x 8 or 4 x 4) accumulated in registers;
//   - walk K in slices of BK = 8: the block copies A's [BM x 8] slice and B's [8 x BN] slice into
//     __shared__ arrays (0.0f for rows, columns or k outside the matrices: then the inner loop
//     needs no edge cases), __syncthreads(), multiplies from shared memory, and __syncthreads()
//     AGAIN before the next slice overwrites what slower threads may still be reading;
//   - store only the elements inside C (M, N and K are any sizes >= 1), adding bias[row] when
//     the bias pointer is not null.
// Writing the kernel with a leading dimension for B and C and a batch index (blockIdx.z) lets
// TODO 5 run all the images of a batch in one launch.
// static __global__ void sgemm_kernel(...) { ... }

void im2col([[maybe_unused]] const float* d_input, [[maybe_unused]] float* d_columns, [[maybe_unused]] int N,
            [[maybe_unused]] int C, [[maybe_unused]] int H, [[maybe_unused]] int W, [[maybe_unused]] int R,
            [[maybe_unused]] int S, [[maybe_unused]] int pad, [[maybe_unused]] int stride,
            [[maybe_unused]] cudaStream_t stream) {
  // TODO 3: validate (null pointers, sizes < 1, pad < 0, stride < 1, "kernel larger than the
  //   padded input", "too large" for the input and the column matrix, all in std::int64_t), then
  //   launch on `stream` and CUDA_CHECK_LAST_LAUNCH().
  throw course::NotImplemented("lab08::im2col");
}

void sgemm([[maybe_unused]] int M, [[maybe_unused]] int N, [[maybe_unused]] int K, [[maybe_unused]] const float* d_A,
           [[maybe_unused]] const float* d_B, [[maybe_unused]] const float* d_bias, [[maybe_unused]] float* d_C,
           [[maybe_unused]] cudaStream_t stream) {
  // TODO 4: validate ("d_A", "d_B", "d_C"; d_bias may be null; "M", "N", "K"; "too large" for
  //   A, B and C), then launch ceil(M/BM) x ceil(N/BN) blocks on `stream`, CUDA_CHECK_LAST_LAUNCH().
  throw course::NotImplemented("lab08::sgemm");
}

std::size_t conv2d_im2col_gemm_workspace([[maybe_unused]] int N, [[maybe_unused]] int C, [[maybe_unused]] int H,
                                         [[maybe_unused]] int W, [[maybe_unused]] int R, [[maybe_unused]] int S,
                                         [[maybe_unused]] int pad, [[maybe_unused]] int stride) {
  // TODO 5a: validate the sizes like conv2d_im2col_gemm, then return the bytes your
  //   conv2d_im2col_gemm needs: the column matrix [C*R*S, N*P*Q] of floats if you im2col the whole
  //   batch at once (or [C*R*S, P*Q] if you go image by image). A 1x1 convolution with pad 0 and
  //   stride 1 can need none: image n's input [C, H*W] already is its column matrix.
  throw course::NotImplemented("lab08::conv2d_im2col_gemm_workspace");
}

void conv2d_im2col_gemm([[maybe_unused]] const float* d_input, [[maybe_unused]] const float* d_weight,
                        [[maybe_unused]] const float* d_bias, [[maybe_unused]] float* d_output,
                        [[maybe_unused]] void* d_workspace, [[maybe_unused]] std::size_t workspace_bytes,
                        [[maybe_unused]] int N, [[maybe_unused]] int C, [[maybe_unused]] int H, [[maybe_unused]] int W,
                        [[maybe_unused]] int K, [[maybe_unused]] int R, [[maybe_unused]] int S,
                        [[maybe_unused]] int pad, [[maybe_unused]] int stride, [[maybe_unused]] cudaStream_t stream) {
  // TODO 5b: validate (pointers; sizes; pad; stride; "kernel larger than the padded input"; "too
  //   large"; d_workspace non-null and workspace_bytes >= conv2d_im2col_gemm_workspace(...), else
  //   "workspace too small"), then: im2col into the workspace, and a GEMM of the weight [K, C*R*S]
  //   with the columns, bias added. Mind the layout: one GEMM over the whole batch's columns gives
  //   [K, N*P*Q], which is not NCHW. Image n's output is the [K, P*Q] block at d_output + n*K*P*Q:
  //   one GEMM per image (image n's columns start at column n*P*Q, with row stride N*P*Q), or one
  //   batched launch with blockIdx.z = n, writes it in place.
  throw course::NotImplemented("lab08::conv2d_im2col_gemm");
}

}  // namespace lab08
