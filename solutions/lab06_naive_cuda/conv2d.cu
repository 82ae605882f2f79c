// Lab 06 solution, part 1: the convolution, one thread per output element.
// The contract is documented in common/include/labs/lab06_naive_cuda.hpp; the lecture is
// lectures/06-naive-cuda.md.
#include <climits>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "labs/lab06_naive_cuda.hpp"

namespace lab06 {
namespace {

// 256 threads = 8 warps: a multiple of the warp size (32), small enough that several blocks fit
// on one SM at a time. Any multiple of 32 from 128 to 512 behaves about the same here.
constexpr int kThreadsPerBlock = 256;

void require(bool ok, const std::string& message) {
  if (!ok) throw course::Error("lab06::conv2d_forward: " + message);
}

}  // namespace

// The CPU loop nest over (n, k, p, q) becomes the grid: thread i owns output element i of the
// flat NCHW output and runs only the inner (c, r, s) loops itself.
// `static`, outside the anonymous namespace: nvcc gives a kernel's host-side launch stub external
// linkage even inside an anonymous namespace, and only `static` keeps it private to this file
// (the grader allows a lab file to export lab06:: names only).
static __global__ void conv2d_kernel(const float* input, const float* weight, const float* bias, float* output, int N,
                              int C, int H, int W, int K, int R, int S, int pad, int P, int Q) {
  // The grid is rounded UP to whole blocks, so the last block has threads past the end: they
  // must not write. The index is unsigned on purpose: with close to INT_MAX outputs the last
  // block reaches past INT_MAX, which as an int would wrap to a negative number and pass the test.
  const unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= static_cast<unsigned>(N * K * P * Q)) return;
  const int i = static_cast<int>(idx);

  // Unravel the flat index, innermost dimension first: i = ((n*K + k)*P + p)*Q + q.
  const int q = i % Q;
  const int p = (i / Q) % P;
  const int k = (i / (Q * P)) % K;
  const int n = i / (Q * P * K);

  float sum = bias[k];
  for (int c = 0; c < C; ++c) {
    for (int r = 0; r < R; ++r) {
      const int h = p - pad + r;  // input row under kernel row r
      if (h < 0 || h >= H) continue;  // zero padding: the product is 0, skip it
      for (int s = 0; s < S; ++s) {
        const int w = q - pad + s;
        if (w < 0 || w >= W) continue;
        sum += input[((n * C + c) * H + h) * W + w] * weight[((k * C + c) * R + r) * S + s];
      }
    }
  }
  output[i] = sum;
}

void conv2d_forward(const float* d_input, const float* d_weight, const float* d_bias, float* d_output, int N, int C,
                    int H, int W, int K, int R, int S, int pad, cudaStream_t stream) {
  // Validate everything before launching: a kernel cannot throw, and a bad size turns into an
  // out-of-bounds read that surfaces much later as an unrelated-looking CUDA error.
  require(d_input != nullptr, "d_input is null");
  require(d_weight != nullptr, "d_weight is null");
  require(d_bias != nullptr, "d_bias is null");
  require(d_output != nullptr, "d_output is null");
  const int sizes[] = {N, C, H, W, K, R, S};
  const char* names[] = {"N", "C", "H", "W", "K", "R", "S"};
  for (int d = 0; d < 7; ++d) require(sizes[d] >= 1, std::string(names[d]) + " must be >= 1, got " + std::to_string(sizes[d]));
  require(pad >= 0, "pad must be >= 0, got " + std::to_string(pad));
  // 64-bit arithmetic for the checks: in int, H + 2*pad or N*K*P*Q could overflow silently.
  const std::int64_t P = std::int64_t{H} + 2 * std::int64_t{pad} - R + 1;
  const std::int64_t Q = std::int64_t{W} + 2 * std::int64_t{pad} - S + 1;
  require(P >= 1 && Q >= 1, "kernel larger than the padded input (" + std::to_string(R) + "x" + std::to_string(S) +
                                " kernel, " + std::to_string(H) + "x" + std::to_string(W) + " input, pad " +
                                std::to_string(pad) + ")");
  const std::int64_t in_count = std::int64_t{N} * C * H * W;
  const std::int64_t weight_count = std::int64_t{K} * C * R * S;
  const std::int64_t out_count = std::int64_t{N} * K * P * Q;
  require(weight_count <= INT_MAX, "weight too large for int indexing (" + std::to_string(weight_count) + " elements)");
  require(in_count <= INT_MAX, "input too large for int indexing (" + std::to_string(in_count) + " elements)");
  require(out_count <= INT_MAX, "output too large for int indexing (" + std::to_string(out_count) + " elements)");

  // Enough blocks to cover every output: ceil(out_count / kThreadsPerBlock).
  const auto blocks = static_cast<unsigned>((out_count + kThreadsPerBlock - 1) / kThreadsPerBlock);
  conv2d_kernel<<<blocks, kThreadsPerBlock, 0, stream>>>(d_input, d_weight, d_bias, d_output, N, C, H, W, K, R, S,
                                                         pad, static_cast<int>(P), static_cast<int>(Q));
  // A bad launch configuration is reported right here; a fault inside the kernel only at the
  // caller's next synchronisation.
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace lab06
