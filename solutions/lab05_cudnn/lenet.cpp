// Lab 05 solution, part 4: the folded LeNet-5-BN assembled from the layers of layers.cpp.
//
// Everything that can be done once is done in the constructor: the library handles (inside the
// Context), the weights on the GPU, the activation buffers for the largest batch. forward() then
// only enqueues eight or so library calls per image batch; the algorithm of each convolution is
// searched the first time a batch size is seen and read from the cache after that.
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/lenet.hpp"
#include "labs/lab05_cudnn.hpp"

namespace lab05 {
namespace {

namespace ln = course::lenet;

course::DeviceBuffer<float> upload(const course::Tensor& t, const course::Shape& expected, const char* name) {
  t.expect_shape(expected, name);  // "conv1_weight: expected shape [6, 1, 5, 5], got [...]"
  return course::DeviceBuffer<float>(t.values());
}

course::DeviceBuffer<float> activations(int max_batch, std::int64_t per_image) {
  return course::DeviceBuffer<float>(static_cast<std::size_t>(max_batch) * static_cast<std::size_t>(per_image));
}

int checked_max_batch(int max_batch) {
  if (max_batch < 1) throw course::Error("CudnnLeNet: max_batch must be >= 1, got " + std::to_string(max_batch));
  return max_batch;
}

}  // namespace

struct CudnnLeNet::Impl {
  Impl(const lab04::FoldedLeNet& net, int batch_capacity, LeNetOptions opts)
      : max_batch(checked_max_batch(batch_capacity)),
        options(opts),
        // Shapes are checked (and named) while uploading: a wrong one throws before any compute.
        conv1_w(upload(net.conv1_weight, {ln::kConv1Out, ln::kInputChannels, ln::kKernel, ln::kKernel}, "conv1_weight")),
        conv1_b(upload(net.conv1_bias, {ln::kConv1Out}, "conv1_bias")),
        conv2_w(upload(net.conv2_weight, {ln::kConv2Out, ln::kConv1Out, ln::kKernel, ln::kKernel}, "conv2_weight")),
        conv2_b(upload(net.conv2_bias, {ln::kConv2Out}, "conv2_bias")),
        fc1_w(upload(net.fc1_weight, {ln::kFc1Out, ln::kFlat}, "fc1_weight")),
        fc1_b(upload(net.fc1_bias, {ln::kFc1Out}, "fc1_bias")),
        fc2_w(upload(net.fc2_weight, {ln::kFc2Out, ln::kFc1Out}, "fc2_weight")),
        fc2_b(upload(net.fc2_bias, {ln::kFc2Out}, "fc2_bias")),
        fc3_w(upload(net.fc3_weight, {ln::kNumClasses, ln::kFc2Out}, "fc3_weight")),
        fc3_b(upload(net.fc3_bias, {ln::kNumClasses}, "fc3_bias")),
        ctx(nullptr, opts.search),
        a1(activations(max_batch, 6 * 28 * 28)),
        p1(activations(max_batch, 6 * 14 * 14)),
        a2(activations(max_batch, 16 * 10 * 10)),
        p2(activations(max_batch, ln::kFlat)),
        h1(activations(max_batch, ln::kFc1Out)),
        h2(activations(max_batch, ln::kFc2Out)) {}

  /// conv + bias + ReLU, fused into one call or as three (the benchmark compares the two).
  void conv_relu(const float* d_x, const course::Shape& x_shape, const course::DeviceBuffer<float>& w,
                 const course::Shape& w_shape, const course::DeviceBuffer<float>& b, int pad, float* d_y) {
    const ConvParams p = ConvParams::symmetric(pad);
    if (options.fused) {
      conv_bias_relu_forward(ctx, d_x, x_shape, w.get(), w_shape, b.get(), p, d_y);
    } else {
      conv2d_forward(ctx, d_x, x_shape, w.get(), w_shape, b.get(), p, d_y);
      relu_forward(ctx, d_y, conv2d_output_shape(x_shape, w_shape, p), d_y);
    }
  }

  void forward(const float* d_images, int n, float* d_logits) {
    const std::int64_t b = n;
    const PoolParams pool = PoolParams::square(ln::kPool, ln::kPool);
    conv_relu(d_images, {b, 1, 28, 28}, conv1_w, {6, 1, 5, 5}, conv1_b, ln::kConv1Pad, a1.get());
    max_pool2d(ctx, a1.get(), {b, 6, 28, 28}, pool, p1.get());
    conv_relu(p1.get(), {b, 6, 14, 14}, conv2_w, {16, 6, 5, 5}, conv2_b, 0, a2.get());
    max_pool2d(ctx, a2.get(), {b, 16, 10, 10}, pool, p2.get());
    // Flatten is free: [n, 16, 5, 5] NCHW is already [n, 400] row-major, in PyTorch's order.
    linear_forward(ctx, p2.get(), {b, ln::kFlat}, fc1_w.get(), {ln::kFc1Out, ln::kFlat}, fc1_b.get(), true, h1.get());
    linear_forward(ctx, h1.get(), {b, ln::kFc1Out}, fc2_w.get(), {ln::kFc2Out, ln::kFc1Out}, fc2_b.get(), true, h2.get());
    linear_forward(ctx, h2.get(), {b, ln::kFc2Out}, fc3_w.get(), {ln::kNumClasses, ln::kFc2Out}, fc3_b.get(), false,
                   d_logits);
  }

  int max_batch;
  LeNetOptions options;
  course::DeviceBuffer<float> conv1_w, conv1_b, conv2_w, conv2_b, fc1_w, fc1_b, fc2_w, fc2_b, fc3_w, fc3_b;
  Context ctx;
  course::DeviceBuffer<float> a1, p1, a2, p2, h1, h2;
};

CudnnLeNet::CudnnLeNet(const lab04::FoldedLeNet& net, int max_batch, LeNetOptions options)
    : impl_(std::make_unique<Impl>(net, max_batch, options)) {}

CudnnLeNet::~CudnnLeNet() = default;

int CudnnLeNet::max_batch() const { return impl_->max_batch; }

void CudnnLeNet::forward(const float* d_images, int n, float* d_logits, cudaStream_t stream) {
  if (n < 1 || n > impl_->max_batch)
    throw course::Error("CudnnLeNet::forward: batch of " + std::to_string(n) + " images, but the network was built for 1.." +
                        std::to_string(impl_->max_batch));
  impl_->ctx.set_stream(stream);
  impl_->forward(d_images, n, d_logits);
}

}  // namespace lab05
