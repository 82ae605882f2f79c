// Lab 08 exercise, part C2: the whole MobileNetV2 on the GPU.
// The contract is documented in common/include/labs/lab08_conv_algorithms.hpp; the network is
// course/mobilenet.hpp; the task is README.md in this folder.
#include <climits>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "course/mobilenet.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace lab08 {
namespace {

}  // namespace

// TODO C5: the kernels the blocks do not cover -- the stem (3x3, 1 -> 16, pad 1, + bias, ReLU6:
// im2col + sgemm from part A, or a direct kernel), and the head (1x1, 64 -> 256, + bias, ReLU6),
// the global average pool over the 7x7 map and the classifier (256 -> 10, + bias). Declare them
// `static __global__` outside the anonymous namespace.

MobileNetV2::MobileNetV2([[maybe_unused]] const FoldedMobileNet& net, [[maybe_unused]] int max_batch) {
  // TODO C6: check every tensor's shape against course::mobilenet::blocks() and the constants of
  //   course/mobilenet.hpp, naming the first wrong one ("stem_weight", "blocks[2].project_bias",
  //   ...); check max_batch ("max_batch"); upload the weights into weights_ and allocate the
  //   activations (and the blocks' workspace, inverted_residual_workspace) for max_batch images.
  throw course::NotImplemented("lab08::MobileNetV2::MobileNetV2");
}

void MobileNetV2::forward([[maybe_unused]] const float* d_images, [[maybe_unused]] int n,
                          [[maybe_unused]] float* d_logits, [[maybe_unused]] cudaStream_t stream) {
  // TODO C7: validate ("d_images", "d_logits", "n", "max_batch"), then enqueue on `stream`: stem,
  //   the seven blocks (inverted_residual_block), head + pool + classifier. No allocation, copy or
  //   synchronisation here: the tests record forward() as a CUDA graph.
  throw course::NotImplemented("lab08::MobileNetV2::forward");
}

}  // namespace lab08
