// Lab 08 exercise, part A1: the depthwise 3x3 convolution of MobileNetV2.
// The contract is documented in common/include/labs/lab08_conv_algorithms.hpp; the lecture is
// lectures/08-conv-algorithms.md; the task is README.md in this folder. Grade this lab with
// `./course grade lab08`.
#include <climits>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace lab08 {
namespace {

}  // namespace

// TODO 1: the kernel. Declare it `static __global__` outside the anonymous namespace (as in lab
// 06: only `static` keeps nvcc's launch stub private, and the grader accepts only lab08:: names).
// A depthwise layer is memory-bound (9 multiply-adds per value read), so aim at reading each input
// value as few times as possible:
//   - start simple: one thread per output [N,C,P,Q], out = bias[c] + the 9 taps of channel c's
//     filter weight[c,0,r,s] at input rows p*stride-1+r and columns q*stride-1+s, skipping the
//     taps outside the image (pad 1); then clamp to [0, 6] when relu6;
//   - then make it fast (the lecture's ladder, bench/lab08_depthwise.cu): one thread per vertical
//     strip of 8 outputs of one column, the three input rows under the 3x3 window held in
//     registers and slid down one output row at a time (one new input row per output row at
//     stride 1, two at stride 2), the work items (plane, strip, column) flattened with the column
//     fastest into full 256-thread blocks;
//   - P = (H - 1) / stride + 1 rows: for an odd H and stride 2 the last window's bottom row lies
//     in the padding -- it must still be computed.
// static __global__ void depthwise3x3_kernel(...) { ... }

void depthwise_conv3x3([[maybe_unused]] const float* d_input, [[maybe_unused]] const float* d_weight,
                       [[maybe_unused]] const float* d_bias, [[maybe_unused]] float* d_output, [[maybe_unused]] int N,
                       [[maybe_unused]] int C, [[maybe_unused]] int H, [[maybe_unused]] int W,
                       [[maybe_unused]] int stride, [[maybe_unused]] bool relu6, [[maybe_unused]] cudaStream_t stream) {
  // TODO 2: validate BEFORE launching (throw course::Error naming the argument): null pointers
  //   ("d_input", "d_weight", "d_bias", "d_output"), sizes < 1 ("N", "C", "H", "W"), a stride
  //   other than 1 or 2 ("stride"), an input of more than INT_MAX elements ("too large";
  //   compute the count in std::int64_t).
  // TODO 3: launch on `stream`, then CUDA_CHECK_LAST_LAUNCH(); do not synchronise.
  throw course::NotImplemented("lab08::depthwise_conv3x3");
}

}  // namespace lab08
