// Lab 07: the kernels' launchers, shared by kernels.cu (which defines them) and fast_lenet.cu
// (which calls them). Everything stays in namespace lab07.
//
// Two paths (see kernels.cu for the why of each):
//  - a large batch: one kernel with as many blocks as the GPU holds at once, each taking an equal
//    range of images through the conv stack (8 images at a time, all in shared memory) and then
//    through the fully connected layers (32 images at a time);
//  - a small batch (n <= kSmallBatchMax): one block per image runs the whole network, so that a
//    single image is one short kernel spread over 256 threads instead of a mostly empty tile.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace lab07 {

/// Up to this many images forward() uses the one-block-per-image kernel.
constexpr int kSmallBatchMax = 128;

/// Images per fully connected tile of the large-batch kernel.
constexpr int kFcTile = 32;

/// The conv layers' weights and biases (PyTorch layouts: conv1 [6,1,5,5]+[6], conv2 [16,6,5,5]+[16])
/// packed into one buffer in the order and alignment the kernels read them (kernels.cu).
std::vector<float> pack_conv_weights(const float* conv1_weight, const float* conv1_bias, const float* conv2_weight,
                                     const float* conv2_bias);

/// Device pointers of every weight the kernels read.
struct DeviceWeights {
  const float* conv;          ///< pack_conv_weights(...), uploaded
  const float* fc1_weight_t;  ///< [400][120]: fc1's weight transposed (input-major)
  const float* fc1_bias;      ///< [120]
  const float* fc2_weight_t;  ///< [120][84]
  const float* fc2_bias;      ///< [84]
  const float* fc3_weight_t;  ///< [84][10]
  const float* fc3_bias;      ///< [10]
};

/// Raises the kernels' dynamic shared-memory limits (once, from the constructor: the attribute
/// call does not belong in forward()).
void configure_kernels();

/// How many blocks of the large-batch kernel the GPU holds at once (SMs x blocks per SM): the
/// kernel launches at most that many, each with an equal share of the images. Constructor only.
int large_batch_blocks();

/// The large-batch launch for n images: blocks, and the feature slots each block owns in the
/// scratch buffer (a multiple of 32).
struct LargeBatchPlan {
  int blocks = 0;
  int scratch_images = 0;
};
LargeBatchPlan plan_large_batch(int n, int max_blocks);

/// Floats of scratch the large-batch kernel needs for any n <= max_batch.
std::size_t scratch_floats(int max_batch, int max_blocks);

/// Large batch: d_images [n,1,28,28] -> d_logits [n,10], d_labels [n], one kernel.
void launch_large_batch(const float* d_images, int n, const DeviceWeights& w, const LargeBatchPlan& plan,
                        float* d_scratch, float* d_logits, int* d_labels, cudaStream_t stream);

/// Small batch: the whole network, one block per image.
void launch_small_batch(const float* d_images, int n, const DeviceWeights& w, float* d_logits, int* d_labels,
                        cudaStream_t stream);

}  // namespace lab07
