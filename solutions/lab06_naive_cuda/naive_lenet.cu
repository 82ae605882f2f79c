// Lab 06 solution, part 3: the whole LeNet on the GPU, one kernel launch per layer step.
// The contract is documented in common/include/labs/lab06_naive_cuda.hpp.
#include <climits>
#include <cstddef>
#include <string>

#include "course/error.hpp"
#include "course/lenet.hpp"
#include "labs/lab06_naive_cuda.hpp"

namespace lab06 {
namespace {

namespace ln = course::lenet;

// Per-image extents of the activations (course/lenet.hpp has the layer table).
constexpr int kImage = ln::kInputSize;                       // 28
constexpr int kConv1Side = kImage + 2 * ln::kConv1Pad - ln::kKernel + 1;  // 28
constexpr int kPool1Side = kConv1Side / ln::kPool;           // 14
constexpr int kConv2Side = kPool1Side - ln::kKernel + 1;     // 10
constexpr int kPool2Side = kConv2Side / ln::kPool;           // 5
static_assert(ln::kConv2Out * kPool2Side * kPool2Side == ln::kFlat, "flatten size must be 400");

/// Checks one host tensor's shape (the message names the member) and uploads it.
course::DeviceBuffer<float> upload_checked(const course::Tensor& host, const course::Shape& expected,
                                           const std::string& name) {
  host.expect_shape(expected, name);
  return course::DeviceBuffer<float>(host.values());
}

/// Room for `batch` images of `per_image` floats each.
course::DeviceBuffer<float> activations(int batch, int per_image) {
  return course::DeviceBuffer<float>(static_cast<std::size_t>(batch) * static_cast<std::size_t>(per_image));
}

}  // namespace

NaiveLeNet::NaiveLeNet(const lab04::FoldedLeNet& host_net, int max_batch) {
  if (max_batch < 1) throw course::Error("lab06::NaiveLeNet: max_batch must be >= 1, got " + std::to_string(max_batch));
  // conv1's output is the largest activation; the launchers index it with an int.
  constexpr int kLargestPerImage = ln::kConv1Out * kConv1Side * kConv1Side;
  if (max_batch > INT_MAX / kLargestPerImage)
    throw course::Error("lab06::NaiveLeNet: max_batch too large (" + std::to_string(max_batch) + "; at most " +
                        std::to_string(INT_MAX / kLargestPerImage) + " images fit int indexing)");
  // Every shape is checked before the first byte goes to the GPU, so a wrong network fails with
  // a message naming the tensor, not with an out-of-bounds read inside some kernel later.
  conv1_weight_ = upload_checked(host_net.conv1_weight, {ln::kConv1Out, ln::kInputChannels, ln::kKernel, ln::kKernel},
                                 "conv1_weight");
  conv1_bias_ = upload_checked(host_net.conv1_bias, {ln::kConv1Out}, "conv1_bias");
  conv2_weight_ = upload_checked(host_net.conv2_weight, {ln::kConv2Out, ln::kConv1Out, ln::kKernel, ln::kKernel},
                                 "conv2_weight");
  conv2_bias_ = upload_checked(host_net.conv2_bias, {ln::kConv2Out}, "conv2_bias");
  fc1_weight_ = upload_checked(host_net.fc1_weight, {ln::kFc1Out, ln::kFlat}, "fc1_weight");
  fc1_bias_ = upload_checked(host_net.fc1_bias, {ln::kFc1Out}, "fc1_bias");
  fc2_weight_ = upload_checked(host_net.fc2_weight, {ln::kFc2Out, ln::kFc1Out}, "fc2_weight");
  fc2_bias_ = upload_checked(host_net.fc2_bias, {ln::kFc2Out}, "fc2_bias");
  fc3_weight_ = upload_checked(host_net.fc3_weight, {ln::kNumClasses, ln::kFc2Out}, "fc3_weight");
  fc3_bias_ = upload_checked(host_net.fc3_bias, {ln::kNumClasses}, "fc3_bias");

  // Allocated once for the largest batch: cudaMalloc is slow (it may synchronise the device),
  // so it has no place in forward(), which may run thousands of times.
  conv1_out_ = activations(max_batch, ln::kConv1Out * kConv1Side * kConv1Side);
  pool1_out_ = activations(max_batch, ln::kConv1Out * kPool1Side * kPool1Side);
  conv2_out_ = activations(max_batch, ln::kConv2Out * kConv2Side * kConv2Side);
  pool2_out_ = activations(max_batch, ln::kFlat);
  fc1_out_ = activations(max_batch, ln::kFc1Out);
  fc2_out_ = activations(max_batch, ln::kFc2Out);
  max_batch_ = max_batch;
}

void NaiveLeNet::forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) {
  if (d_images == nullptr) throw course::Error("lab06::NaiveLeNet::forward: d_images is null");
  if (d_logits == nullptr) throw course::Error("lab06::NaiveLeNet::forward: d_logits is null");
  if (d_labels == nullptr) throw course::Error("lab06::NaiveLeNet::forward: d_labels is null");
  if (n < 1 || n > max_batch_)
    throw course::Error("lab06::NaiveLeNet::forward: n must be in [1, " + std::to_string(max_batch_) + "] (max_batch), got " +
                        std::to_string(n));

  // Every launch goes on `stream`, in order: the GPU runs them one after the other, each kernel
  // seeing the finished output of the one before. The host does not wait for any of them.
  conv2d_forward(d_images, conv1_weight_.get(), conv1_bias_.get(), conv1_out_.get(), n, ln::kInputChannels, kImage,
                 kImage, ln::kConv1Out, ln::kKernel, ln::kKernel, ln::kConv1Pad, stream);
  relu_inplace(conv1_out_.get(), n * ln::kConv1Out * kConv1Side * kConv1Side, stream);
  max_pool2d(conv1_out_.get(), pool1_out_.get(), n, ln::kConv1Out, kConv1Side, kConv1Side, ln::kPool, ln::kPool, stream);

  conv2d_forward(pool1_out_.get(), conv2_weight_.get(), conv2_bias_.get(), conv2_out_.get(), n, ln::kConv1Out,
                 kPool1Side, kPool1Side, ln::kConv2Out, ln::kKernel, ln::kKernel, 0, stream);
  relu_inplace(conv2_out_.get(), n * ln::kConv2Out * kConv2Side * kConv2Side, stream);
  max_pool2d(conv2_out_.get(), pool2_out_.get(), n, ln::kConv2Out, kConv2Side, kConv2Side, ln::kPool, ln::kPool, stream);

  // Flatten costs nothing: [n,16,5,5] in NCHW order already is [n,400] in PyTorch's order.
  linear_forward(pool2_out_.get(), fc1_weight_.get(), fc1_bias_.get(), fc1_out_.get(), n, ln::kFlat, ln::kFc1Out, stream);
  relu_inplace(fc1_out_.get(), n * ln::kFc1Out, stream);
  linear_forward(fc1_out_.get(), fc2_weight_.get(), fc2_bias_.get(), fc2_out_.get(), n, ln::kFc1Out, ln::kFc2Out, stream);
  relu_inplace(fc2_out_.get(), n * ln::kFc2Out, stream);
  linear_forward(fc2_out_.get(), fc3_weight_.get(), fc3_bias_.get(), d_logits, n, ln::kFc2Out, ln::kNumClasses, stream);
  argmax_rows(d_logits, d_labels, n, ln::kNumClasses, stream);
}

}  // namespace lab06
