// Lab 06 exercise, part 1: the convolution, one thread per output element.
// The contract is documented in common/include/labs/lab06_naive_cuda.hpp; the lecture is
// lectures/06-naive-cuda.md. Grade this lab with `./course grade lab06`.
#include <climits>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "labs/lab06_naive_cuda.hpp"

namespace lab06 {
namespace {

}  // namespace

// TODO 1: the kernel. Declare it `static __global__` here, outside the anonymous namespace (nvcc
// gives a kernel's launch stub external linkage even in an anonymous namespace; `static` keeps it
// private, and the grader accepts only lab06:: names from your files).
// One thread per element of the output [N, K, P, Q]:
//   - its flat index from blockIdx.x, blockDim.x and threadIdx.x (keep it unsigned for the
//     bounds check: the grid is rounded up to whole blocks, so some threads have no element);
//   - return at once if the index is past the last output element;
//   - unravel the index into (n, k, p, q), innermost (q) first;
//   - sum = bias[k] + sum over c, r, s of weight[k,c,r,s] * input[n,c,p-pad+r,q-pad+s], skipping
//     the taps whose input row or column falls outside the image (zero padding);
//   - write output[index] once.
// static __global__ void conv2d_kernel(...) { ... }

void conv2d_forward([[maybe_unused]] const float* d_input, [[maybe_unused]] const float* d_weight,
                    [[maybe_unused]] const float* d_bias, [[maybe_unused]] float* d_output, [[maybe_unused]] int N,
                    [[maybe_unused]] int C, [[maybe_unused]] int H, [[maybe_unused]] int W, [[maybe_unused]] int K,
                    [[maybe_unused]] int R, [[maybe_unused]] int S, [[maybe_unused]] int pad,
                    [[maybe_unused]] cudaStream_t stream) {
  // TODO 2: validate BEFORE launching (throw course::Error naming the argument): null pointers
  //   ("d_input", ...), sizes < 1 ("N", "C", ...), pad < 0 ("pad"), P = H + 2*pad - R + 1 or
  //   Q = W + 2*pad - S + 1 below 1 ("kernel larger than the padded input"), and input, weight or
  //   output counts above INT_MAX ("too large"). Compute these products in std::int64_t.
  // TODO 3: launch ceil(N*K*P*Q / threads_per_block) blocks ON `stream`
  //   (kernel<<<blocks, threads, 0, stream>>>(...)), then CUDA_CHECK_LAST_LAUNCH(). Do not
  //   synchronise: the caller decides when to wait.
  throw course::NotImplemented("lab06::conv2d_forward");
}

}  // namespace lab06
