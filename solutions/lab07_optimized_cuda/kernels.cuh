// Lab 07: the kernels' launchers, shared by kernels.cu (which defines them) and fast_lenet.cu
// (which calls them). Everything stays in namespace lab07.
//
// Two paths (see kernels.cu for the why of each):
//  - a large batch: conv_stack (conv1+ReLU+pool1+conv2+ReLU+pool2, a tile of 8 images per block)
//    writes the 400 features of every image; fc_stack (fc1+ReLU+fc2+ReLU+fc3+argmax, a tile of 32
//    images per block) turns them into logits and labels;
//  - a small batch (n <= kSmallBatchMax): one block per image runs the whole network, so that a
//    single image is one short kernel spread over 256 threads instead of a mostly empty tile.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace lab07 {

/// Up to this many images forward() uses the one-block-per-image kernel.
constexpr int kSmallBatchMax = 128;

/// Images per block of fc_stack; the feature buffer is laid out in tiles of this many images.
constexpr int kFcTile = 32;

/// Host copies of the weights that go to __constant__ memory, in PyTorch's layouts
/// (conv1 [6,1,5,5]+[6], conv2 [16,6,5,5]+[16], fc3 [10,84]+[10]).
struct ConstantWeightsHost {
  const float* conv1_weight;
  const float* conv1_bias;
  const float* conv2_weight;
  const float* conv2_bias;
  const float* fc3_weight;
  const float* fc3_bias;
};

/// Reorders the weights into the order the unrolled loops read them and copies them into the
/// kernels' __constant__ bank. Synchronous (constructor only).
void upload_constant_weights(const ConstantWeightsHost& host);

/// Device pointers of the fully connected layers' weights.
struct FcWeights {
  const float* fc1_weight_t;  ///< [400][120]: fc1's weight transposed (input-major)
  const float* fc1_bias;      ///< [120]
  const float* fc2_weight_t;  ///< [120][84]: fc2's weight transposed
  const float* fc2_bias;      ///< [84]
  const float* fc3_weight;    ///< [10][84] (PyTorch layout; the small-batch kernel reads it)
  const float* fc3_bias;      ///< [10]
};

/// Raises the kernels' dynamic shared-memory limits (once, from the constructor: the attribute
/// call does not belong in forward()).
void configure_kernels();

/// Floats of the feature buffer for up to max_batch images (whole tiles of kFcTile images).
std::size_t feature_buffer_floats(int max_batch);

/// Large batch, step 1: d_images [n,1,28,28] -> d_features (tiles of [400][kFcTile]).
void launch_conv_stack(const float* d_images, int n, float* d_features, cudaStream_t stream);

/// Large batch, step 2: d_features -> d_logits [n,10], d_labels [n].
void launch_fc_stack(const float* d_features, int n, const FcWeights& w, float* d_logits, int* d_labels,
                     cudaStream_t stream);

/// Small batch: the whole network, one block per image.
void launch_small_batch(const float* d_images, int n, const FcWeights& w, float* d_logits, int* d_labels,
                        cudaStream_t stream);

}  // namespace lab07
