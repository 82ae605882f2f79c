// Lab 07 solution: the optimized LeNet. The contract is in common/include/labs/lab07_optimized_cuda.hpp;
// the kernels and the reasons they are fast are in kernels.cu. Only weights may live on the device
// between calls (no __constant__ state), so several FastLeNets could coexist.
#include <climits>
#include <cstddef>
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/lenet.hpp"
#include "kernels.cuh"
#include "labs/lab07_optimized_cuda.hpp"

namespace lab07 {
namespace {

namespace ln = course::lenet;

/// [rows][cols] -> [cols][rows]: the fully connected kernels read a weight matrix input-major, so
/// that one input's weights for consecutive outputs are consecutive in memory.
std::vector<float> transposed(const course::Tensor& matrix, int rows, int cols) {
  std::vector<float> out(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      out[static_cast<std::size_t>(c) * rows + r] = matrix.data()[static_cast<std::size_t>(r) * cols + c];
  return out;
}

}  // namespace

/// Device copies of the weights (in the layouts the kernels read), the large-batch kernel's
/// scratch for the features, and how many of its blocks the GPU holds at once.
struct FastLeNet::State {
  course::DeviceBuffer<float> conv, fc1_weight_t, fc1_bias, fc2_weight_t, fc2_bias, fc3_weight_t, fc3_bias;
  course::DeviceBuffer<float> scratch;
  DeviceWeights weights{};
  int max_blocks = 0;
};

FastLeNet::FastLeNet(const lab04::FoldedLeNet& host_net, int max_batch) {
  if (max_batch < 1)
    throw course::Error("lab07::FastLeNet: max_batch must be >= 1, got " + std::to_string(max_batch));
  // The feature buffer (400 floats per image, whole tiles) is the largest and indexed with int
  // arithmetic inside a tile; keep every index far from INT_MAX.
  constexpr int kLimit = INT_MAX / ln::kFlat - kFcTile;
  if (max_batch > kLimit)
    throw course::Error("lab07::FastLeNet: max_batch too large (" + std::to_string(max_batch) + "; at most " +
                        std::to_string(kLimit) + " images)");
  // Every shape is checked before anything goes to the GPU: a wrong network fails with a message
  // naming the tensor, not with an out-of-bounds read in a kernel.
  const lab04::FoldedLeNet& n = host_net;
  n.conv1_weight.expect_shape({ln::kConv1Out, ln::kInputChannels, ln::kKernel, ln::kKernel}, "conv1_weight");
  n.conv1_bias.expect_shape({ln::kConv1Out}, "conv1_bias");
  n.conv2_weight.expect_shape({ln::kConv2Out, ln::kConv1Out, ln::kKernel, ln::kKernel}, "conv2_weight");
  n.conv2_bias.expect_shape({ln::kConv2Out}, "conv2_bias");
  n.fc1_weight.expect_shape({ln::kFc1Out, ln::kFlat}, "fc1_weight");
  n.fc1_bias.expect_shape({ln::kFc1Out}, "fc1_bias");
  n.fc2_weight.expect_shape({ln::kFc2Out, ln::kFc1Out}, "fc2_weight");
  n.fc2_bias.expect_shape({ln::kFc2Out}, "fc2_bias");
  n.fc3_weight.expect_shape({ln::kNumClasses, ln::kFc2Out}, "fc3_weight");
  n.fc3_bias.expect_shape({ln::kNumClasses}, "fc3_bias");

  auto state = std::make_unique<State>();
  state->conv = course::DeviceBuffer<float>(
      pack_conv_weights(n.conv1_weight.data(), n.conv1_bias.data(), n.conv2_weight.data(), n.conv2_bias.data()));
  state->fc1_weight_t = course::DeviceBuffer<float>(transposed(n.fc1_weight, ln::kFc1Out, ln::kFlat));
  state->fc1_bias = course::DeviceBuffer<float>(n.fc1_bias.values());
  state->fc2_weight_t = course::DeviceBuffer<float>(transposed(n.fc2_weight, ln::kFc2Out, ln::kFc1Out));
  state->fc2_bias = course::DeviceBuffer<float>(n.fc2_bias.values());
  state->fc3_weight_t = course::DeviceBuffer<float>(transposed(n.fc3_weight, ln::kNumClasses, ln::kFc2Out));
  state->fc3_bias = course::DeviceBuffer<float>(n.fc3_bias.values());
  state->weights = {state->conv.get(),         state->fc1_weight_t.get(), state->fc1_bias.get(),
                    state->fc2_weight_t.get(), state->fc2_bias.get(),     state->fc3_weight_t.get(),
                    state->fc3_bias.get()};
  configure_kernels();
  state->max_blocks = large_batch_blocks();
  // Allocated once: cudaMalloc has no place in forward(). Zeroed so that the slots of a partial
  // tile, which the fully connected layers read but whose results are never written, are defined.
  state->scratch = course::DeviceBuffer<float>(scratch_floats(max_batch, state->max_blocks));
  state->scratch.fill_bytes(0);
  state_ = std::move(state);
  max_batch_ = max_batch;
}

// Defined here, where State is a complete type, so that unique_ptr can delete it.
FastLeNet::~FastLeNet() = default;

void FastLeNet::forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) {
  if (d_images == nullptr) throw course::Error("lab07::FastLeNet::forward: d_images is null");
  if (d_logits == nullptr) throw course::Error("lab07::FastLeNet::forward: d_logits is null");
  if (d_labels == nullptr) throw course::Error("lab07::FastLeNet::forward: d_labels is null");
  if (n < 1 || n > max_batch_)
    throw course::Error("lab07::FastLeNet::forward: n must be in [1, " + std::to_string(max_batch_) +
                        "] (max_batch), got " + std::to_string(n));

  // A few images: one block per image. Many: every block the GPU holds, an equal share each.
  if (n <= kSmallBatchMax) {
    launch_small_batch(d_images, n, state_->weights, d_logits, d_labels, stream);
  } else {
    launch_large_batch(d_images, n, state_->weights, plan_large_batch(n, state_->max_blocks), state_->scratch.get(),
                       d_logits, d_labels, stream);
  }
}

}  // namespace lab07
