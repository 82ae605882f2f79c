// Lab 06 exercise, part 2: ReLU, max pooling, the fully connected layer and argmax -- each one
// kernel, one thread per output element (per row for argmax).
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

// Helpers you will want in every launcher (write them here, inside the anonymous namespace):
//   - a block size (a multiple of the warp size, 32);
//   - blocks_for(count): ceil(count / block size);
//   - argument checks that throw course::Error naming the argument.

}  // namespace

// Your kernels go here: `static __global__ void relu_kernel(...)` etc., outside the anonymous
// namespace (see the note in conv2d.cu).

void relu_inplace([[maybe_unused]] float* d_data, [[maybe_unused]] int count, [[maybe_unused]] cudaStream_t stream) {
  // TODO 1: data[i] = max(data[i], 0) for i < count; one thread per element, bounds-checked.
  //   Validate: d_data not null ("d_data"), count >= 1 ("count").
  throw course::NotImplemented("lab06::relu_inplace");
}

void max_pool2d([[maybe_unused]] const float* d_input, [[maybe_unused]] float* d_output, [[maybe_unused]] int N,
                [[maybe_unused]] int C, [[maybe_unused]] int H, [[maybe_unused]] int W, [[maybe_unused]] int window,
                [[maybe_unused]] int stride, [[maybe_unused]] cudaStream_t stream) {
  // TODO 2: one thread per output element of [N, C, P, Q], P = (H - window) / stride + 1 (Q
  //   likewise); the maximum of its window, starting from the window's first value (inputs may
  //   be negative). Validate as the header says ("window larger than the input", "too large").
  throw course::NotImplemented("lab06::max_pool2d");
}

void linear_forward([[maybe_unused]] const float* d_input, [[maybe_unused]] const float* d_weight,
                    [[maybe_unused]] const float* d_bias, [[maybe_unused]] float* d_output, [[maybe_unused]] int N,
                    [[maybe_unused]] int in_features, [[maybe_unused]] int out_features,
                    [[maybe_unused]] cudaStream_t stream) {
  // TODO 3: one thread per output[n, o] = bias[o] + dot(row n of input, row o of weight).
  throw course::NotImplemented("lab06::linear_forward");
}

void argmax_rows([[maybe_unused]] const float* d_logits, [[maybe_unused]] int* d_labels, [[maybe_unused]] int N,
                 [[maybe_unused]] int classes, [[maybe_unused]] cudaStream_t stream) {
  // TODO 4: one thread per row; the index of the largest value, the lowest index on a tie.
  throw course::NotImplemented("lab06::argmax_rows");
}

}  // namespace lab06
