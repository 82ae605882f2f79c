// Lab 08 exercise, part C1: MobileNetV2's inverted residual block, fused.
// The contract is documented in common/include/labs/lab08_conv_algorithms.hpp; the lecture is
// lectures/08-conv-algorithms.md (sections 7-8); the task is README.md in this folder. Grade this
// lab with `./course grade lab08`.
#include <climits>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace lab08 {
namespace {

}  // namespace

// TODO C1: the kernel(s). Declare them `static __global__` outside the anonymous namespace.
// The block is: e = relu6(expand * x + bias) (1x1; skipped when hidden == in: e = x), then
// d = relu6(depthwise3x3(e) + bias) (pad 1, stride 1 or 2), then y = project * d + bias (1x1,
// linear), then y += x when stride == 1 and in == out.
//   - start correct: expand into the workspace with your sgemm (part A: the weight [hidden,in]
//     times one image's [in, H*W] is a GEMM), depthwise_conv3x3 from part A, project with sgemm,
//     and a small kernel for the residual add -- then
//   - fuse: one CTA per tile of output pixels computes the expanded values of the tile's input
//     window (the outputs' 3x3 windows, with a one-pixel halo) into shared memory, the depthwise
//     outputs from there, and the projection from those, chunk of hidden channels by chunk, so
//     that the expanded tensor (6x the input) never goes to global memory. Careful: the
//     depthwise step's zero padding pads the EXPANDED tensor -- a window position outside the
//     image must hold 0, not relu6(expand bias).
// static __global__ void fused_block_kernel(...) { ... }

std::size_t inverted_residual_workspace([[maybe_unused]] int N, [[maybe_unused]] int in,
                                        [[maybe_unused]] int hidden, [[maybe_unused]] int out, [[maybe_unused]] int H,
                                        [[maybe_unused]] int W, [[maybe_unused]] int stride) {
  // TODO C2: validate the sizes as inverted_residual_block does, then return the bytes of scratch
  //   memory your design needs (0 for a fully fused block).
  throw course::NotImplemented("lab08::inverted_residual_workspace");
}

void inverted_residual_block([[maybe_unused]] const InvertedResidualWeights& weights,
                             [[maybe_unused]] const float* d_input, [[maybe_unused]] float* d_output,
                             [[maybe_unused]] int N, [[maybe_unused]] int in, [[maybe_unused]] int hidden,
                             [[maybe_unused]] int out, [[maybe_unused]] int H, [[maybe_unused]] int W,
                             [[maybe_unused]] int stride, [[maybe_unused]] void* d_workspace,
                             [[maybe_unused]] std::size_t workspace_bytes, [[maybe_unused]] cudaStream_t stream) {
  // TODO C3: validate BEFORE launching (throw course::Error naming the argument): null pointers
  //   ("d_input", "d_output", the weights the block needs; an expand pointer given to a block
  //   with hidden == in), sizes < 1 ("N", "in", "hidden", "out", "H", "W"), a stride other than
  //   1 or 2 ("stride"), the workspace ("d_workspace", "workspace too small"), tensors of more
  //   than INT_MAX elements ("too large"; the expanded [N,hidden,H,W] counts too).
  // TODO C4: launch on `stream`, then CUDA_CHECK_LAST_LAUNCH(); do not synchronise.
  throw course::NotImplemented("lab08::inverted_residual_block");
}

}  // namespace lab08
