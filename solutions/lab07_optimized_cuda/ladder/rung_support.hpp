// What rungs 01-06 share: the folded weights in device memory (shapes checked), LeNet's activation
// buffers, the argument check of forward(), and lab 06's twelve launches in a row. Rungs 01 and 02
// differ from rung 03 only in *when* they allocate and synchronise, so they run exactly these
// kernels (the lab 06 solution's); rungs 04-06 replace one layer kind at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/lenet.hpp"
#include "course/tensor.hpp"
#include "labs/lab04_lenet_cpu.hpp"
#include "labs/lab06_naive_cuda.hpp"

namespace ladder::support {

namespace ln = course::lenet;

/// A measuring knob's text: `fallback` when the variable is unset or empty.
inline std::string env_or(const char* name, const std::string& fallback) {
  const char* text = std::getenv(name);
  return text == nullptr || *text == '\0' ? fallback : std::string(text);
}

/// An environment knob: `fallback` when unset or empty, else one of `allowed` (course::Error otherwise).
inline std::string knob(const char* name, const std::string& fallback, const std::vector<std::string>& allowed) {
  const std::string text = env_or(name, fallback);
  for (const std::string& value : allowed)
    if (value == text) return value;
  std::string list;
  for (const std::string& value : allowed) list += (list.empty() ? "" : " or ") + value;
  throw course::Error(std::string(name) + " must be " + list + ", got '" + text + "'");
}

/// LeNet's sizes per image, named once.
constexpr int kImage = ln::kInputSize * ln::kInputSize;           // 784
constexpr int kConv1 = ln::kConv1Out * kImage;                    // [6,28,28] = 4,704
constexpr int kPool1Side = ln::kInputSize / ln::kPool;            // 14
constexpr int kPool1 = ln::kConv1Out * kPool1Side * kPool1Side;   // [6,14,14] = 1,176
constexpr int kConv2Side = kPool1Side - ln::kKernel + 1;          // 10
constexpr int kConv2 = ln::kConv2Out * kConv2Side * kConv2Side;   // [16,10,10] = 1,600
constexpr int kPool2Side = kConv2Side / ln::kPool;                // 5
static_assert(ln::kConv2Out * kPool2Side * kPool2Side == ln::kFlat, "pool2 flattens to fc1's input");

/// The folded network in device memory. Every tensor's shape is checked before anything is
/// uploaded; a wrong one throws course::Error naming it ("conv1_weight", ..., "fc3_bias").
struct DeviceWeights {
  course::DeviceBuffer<float> conv1_w, conv1_b, conv2_w, conv2_b, fc1_w, fc1_b, fc2_w, fc2_b, fc3_w, fc3_b;

  static void check_shapes(const lab04::FoldedLeNet& net) {
    net.conv1_weight.expect_shape({ln::kConv1Out, ln::kInputChannels, ln::kKernel, ln::kKernel}, "conv1_weight");
    net.conv1_bias.expect_shape({ln::kConv1Out}, "conv1_bias");
    net.conv2_weight.expect_shape({ln::kConv2Out, ln::kConv1Out, ln::kKernel, ln::kKernel}, "conv2_weight");
    net.conv2_bias.expect_shape({ln::kConv2Out}, "conv2_bias");
    net.fc1_weight.expect_shape({ln::kFc1Out, ln::kFlat}, "fc1_weight");
    net.fc1_bias.expect_shape({ln::kFc1Out}, "fc1_bias");
    net.fc2_weight.expect_shape({ln::kFc2Out, ln::kFc1Out}, "fc2_weight");
    net.fc2_bias.expect_shape({ln::kFc2Out}, "fc2_bias");
    net.fc3_weight.expect_shape({ln::kNumClasses, ln::kFc2Out}, "fc3_weight");
    net.fc3_bias.expect_shape({ln::kNumClasses}, "fc3_bias");
  }

  DeviceWeights() = default;
  explicit DeviceWeights(const lab04::FoldedLeNet& net) {
    check_shapes(net);
    conv1_w = course::DeviceBuffer<float>(net.conv1_weight.values());
    conv1_b = course::DeviceBuffer<float>(net.conv1_bias.values());
    conv2_w = course::DeviceBuffer<float>(net.conv2_weight.values());
    conv2_b = course::DeviceBuffer<float>(net.conv2_bias.values());
    fc1_w = course::DeviceBuffer<float>(net.fc1_weight.values());
    fc1_b = course::DeviceBuffer<float>(net.fc1_bias.values());
    fc2_w = course::DeviceBuffer<float>(net.fc2_weight.values());
    fc2_b = course::DeviceBuffer<float>(net.fc2_bias.values());
    fc3_w = course::DeviceBuffer<float>(net.fc3_weight.values());
    fc3_b = course::DeviceBuffer<float>(net.fc3_bias.values());
  }
};

/// Every intermediate activation for up to `images` images: conv1 [B,6,28,28] -> pool1 [B,6,14,14]
/// -> conv2 [B,16,10,10] -> pool2 [B,400] -> fc1 [B,120] -> fc2 [B,84]. Allocated by the
/// constructor (cudaMalloc, six times), freed by the destructor (cudaFree, six times).
struct Activations {
  course::DeviceBuffer<float> conv1, pool1, conv2, pool2, fc1, fc2;

  Activations() = default;
  explicit Activations(int images) {
    const auto per = [images](int values) { return static_cast<std::size_t>(images) * static_cast<std::size_t>(values); };
    conv1 = course::DeviceBuffer<float>(per(kConv1));
    pool1 = course::DeviceBuffer<float>(per(kPool1));
    conv2 = course::DeviceBuffer<float>(per(kConv2));
    pool2 = course::DeviceBuffer<float>(per(ln::kFlat));
    fc1 = course::DeviceBuffer<float>(per(ln::kFc1Out));
    fc2 = course::DeviceBuffer<float>(per(ln::kFc2Out));
  }
};

/// The largest batch a rung accepts: conv1's activation [B,6,28,28] must stay below INT_MAX
/// elements, because the kernels index it with int.
constexpr int kLargestBatch = 2147483647 / kConv1;

/// Empty when this GPU can launch thread-block clusters (compute capability 9.0+), else why not:
/// the unsupported_reason() of the cluster rungs.
inline std::string clusters_unsupported() {
  int device = 0, clusters = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, device));
  return clusters != 0 ? "" : "this GPU cannot launch thread-block clusters (compute capability 9.0+ needed)";
}

inline void check_max_batch(int max_batch) {
  if (max_batch < 1 || max_batch > kLargestBatch)
    throw course::Error("max_batch must be in [1, " + std::to_string(kLargestBatch) + "], got " +
                        std::to_string(max_batch));
}

/// forward()'s contract: non-null pointers, 1 <= n <= max_batch. Throws course::Error naming the
/// argument before anything is launched.
inline void check_forward(const float* d_images, int n, int max_batch, const float* d_logits, const int* d_labels) {
  if (d_images == nullptr) throw course::Error("d_images is null");
  if (d_logits == nullptr) throw course::Error("d_logits is null");
  if (d_labels == nullptr) throw course::Error("d_labels is null");
  if (n < 1 || n > max_batch)
    throw course::Error("n must be in [1, max_batch = " + std::to_string(max_batch) + "], got " + std::to_string(n));
}

/// Lab 06's network as its twelve launches (the lab 06 solution's kernels, one thread per output),
/// for the `n` images at d_images, into buffers `a` (for at least n images). `after_each_layer`
/// runs after every launch: rungs 01 and 02 pass a cudaDeviceSynchronize there.
template <typename AfterEachLayer>
void lab06_layers(const DeviceWeights& w, Activations& a, const float* d_images, int n, float* d_logits,
                  int* d_labels, cudaStream_t stream, AfterEachLayer after_each_layer) {
  lab06::conv2d_forward(d_images, w.conv1_w.get(), w.conv1_b.get(), a.conv1.get(), n, 1, 28, 28, 6, 5, 5, 2, stream);
  after_each_layer();
  lab06::relu_inplace(a.conv1.get(), n * kConv1, stream);
  after_each_layer();
  lab06::max_pool2d(a.conv1.get(), a.pool1.get(), n, 6, 28, 28, 2, 2, stream);
  after_each_layer();
  lab06::conv2d_forward(a.pool1.get(), w.conv2_w.get(), w.conv2_b.get(), a.conv2.get(), n, 6, 14, 14, 16, 5, 5, 0,
                        stream);
  after_each_layer();
  lab06::relu_inplace(a.conv2.get(), n * kConv2, stream);
  after_each_layer();
  lab06::max_pool2d(a.conv2.get(), a.pool2.get(), n, 16, 10, 10, 2, 2, stream);
  after_each_layer();
  lab06::linear_forward(a.pool2.get(), w.fc1_w.get(), w.fc1_b.get(), a.fc1.get(), n, 400, 120, stream);
  after_each_layer();
  lab06::relu_inplace(a.fc1.get(), n * 120, stream);
  after_each_layer();
  lab06::linear_forward(a.fc1.get(), w.fc2_w.get(), w.fc2_b.get(), a.fc2.get(), n, 120, 84, stream);
  after_each_layer();
  lab06::relu_inplace(a.fc2.get(), n * 84, stream);
  after_each_layer();
  lab06::linear_forward(a.fc2.get(), w.fc3_w.get(), w.fc3_b.get(), d_logits, n, 84, 10, stream);
  after_each_layer();
  lab06::argmax_rows(d_logits, d_labels, n, 10, stream);
  after_each_layer();
}

}  // namespace ladder::support
