// Lab 08's benchmark, part C: the inverted residual block and the whole MobileNetV2, each first
// checked against the golden references, then timed with CUDA events (course::GpuTimer: warm-up,
// median of the repetitions, L2 flushed before each run):
//   inverted_residual_block on each of the network's seven blocks (the trained network's folded
//     weights) at batch 100: MB/s counts one read of the input and one write of the output -- the
//     traffic of a fully fused block;
//   MobileNetV2::forward at batch 1, 100 and 1,000: ms per call and images per second.
//
//   build/labs/solutions/lab08_mobilenet_bench [repetitions]   (or build/labs/exercises/...)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "course/compare.hpp"
#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/gpu_timer.hpp"
#include "course/idx.hpp"
#include "course/mobilenet.hpp"
#include "course/rng.hpp"
#include "course/tensor.hpp"
#include "labs/lab08_conv_algorithms.hpp"
#include "mobilenet_folding_reference.hpp"
#include "mobilenet_reference.hpp"

namespace {

namespace mn = course::mobilenet;
using course::Tensor;

bool report(const std::string& what, const Tensor& actual, const Tensor& expected, course::Tolerance tol) {
  const course::Comparison c = course::compare(actual, expected, tol);
  std::printf("check %-40s %s\n", what.c_str(), c.ok() ? "ok" : "WRONG");
  if (!c.ok()) std::printf("%s\n", c.report(expected.shape()).c_str());
  return c.ok();
}

/// The block's device weights (expand pointers null when the block does not expand).
struct DeviceBlock {
  course::DeviceBuffer<float> ew, eb, dw, db, pw, pb;
  lab08::InvertedResidualWeights w;
  explicit DeviceBlock(const lab08::FoldedBlock& b) {
    const auto put = [](course::DeviceBuffer<float>& d, const Tensor& t) {
      if (t.numel() > 0) d = course::DeviceBuffer<float>(t.values());
      return t.numel() > 0 ? d.get() : nullptr;
    };
    w.expand_weight = put(ew, b.expand_weight);
    w.expand_bias = put(eb, b.expand_bias);
    w.depthwise_weight = put(dw, b.depthwise_weight);
    w.depthwise_bias = put(db, b.depthwise_bias);
    w.project_weight = put(pw, b.project_weight);
    w.project_bias = put(pb, b.project_bias);
  }
};

Tensor images_for(int n) {
  try {
    const course::DatasetFiles files = course::fashion_mnist_files();
    const course::Dataset test = course::load_dataset(files.test_images, files.test_labels, files.name);
    Tensor out(course::Shape{n, 1, 28, 28});
    for (int i = 0; i < n; ++i)
      std::copy(test.images.data() + (i % 10000) * 784, test.images.data() + (i % 10000 + 1) * 784, out.data() + i * 784);
    return out;
  } catch (const std::exception& e) {
    std::printf("(Fashion-MNIST not found: %s -- random images instead)\n", e.what());
    course::Rng rng(3);
    return rng.tensor({n, 1, 28, 28}, 0.0f, 1.0f);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    course::TimerOptions options;
    if (argc > 1) options.repetitions = std::max(1, std::atoi(argv[1]));
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreate(&stream));
    const mn::Weights weights =
        mn::load_weights(std::string(COURSE_DATA_DIR) + "/weights/mobilenet_fashion_mnist.safetensors");
    const lab08::FoldedMobileNet net = golden::lab08_fold_mobilenet(weights);

    // Checks: every block on 2 random images, the network on 20 images.
    bool ok = true;
    course::Rng rng(8);
    for (std::size_t i = 0; i < mn::blocks().size(); ++i) {
      const mn::BlockSpec& b = mn::blocks()[i];
      const Tensor x = rng.tensor({2, b.in_channels, b.size, b.size});
      const Tensor expected = golden::lab08_inverted_residual(x, net.blocks[i], b.stride);
      DeviceBlock d(net.blocks[i]);
      course::DeviceBuffer<float> dx(x.values()), dy(expected.numel());
      const std::size_t bytes =
          lab08::inverted_residual_workspace(2, b.in_channels, b.hidden, b.out_channels, b.size, b.size, b.stride);
      course::DeviceBuffer<unsigned char> ws(std::max<std::size_t>(bytes, 1));
      lab08::inverted_residual_block(d.w, dx.get(), dy.get(), 2, b.in_channels, b.hidden, b.out_channels, b.size,
                                     b.size, b.stride, ws.get(), bytes, stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      Tensor y(expected.shape());
      dy.download(y.data(), y.numel());
      ok &= report("block " + std::to_string(i), y, expected, {1e-5 + 2e-6 * (b.in_channels + b.hidden), 1e-4});
    }
    {
      const Tensor images = images_for(20);
      lab08::MobileNetV2 model(net, 20);
      course::DeviceBuffer<float> di(images.values()), dl(200);
      model.forward(di.get(), 20, dl.get(), stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      Tensor logits(course::Shape{20, 10});
      dl.download(logits.data(), logits.numel());
      ok &= report("MobileNetV2, 20 images", logits, golden::mobilenet_forward(weights, images), {1e-3, 1e-3});
    }
    if (!ok) {
      std::printf("lab08_mobilenet_bench: a check failed; fix it before timing (./course grade lab08 says more)\n");
      return 1;
    }

    course::GpuTimer timer(stream);
    const int n = 100;
    std::printf("\ninverted_residual_block, batch %d (the trained weights)\n%-34s %10s %10s %12s\n", n, "block", "us",
                "GB/s", "workspace MB");
    for (std::size_t i = 0; i < mn::blocks().size(); ++i) {
      const mn::BlockSpec& b = mn::blocks()[i];
      const std::size_t in = std::size_t{1} * n * b.in_channels * b.size * b.size;
      const std::size_t out = std::size_t{1} * n * b.out_channels * b.out_size() * b.out_size();
      DeviceBlock d(net.blocks[i]);
      course::DeviceBuffer<float> x(in), y(out);
      x.fill_bytes(0);
      const std::size_t bytes =
          lab08::inverted_residual_workspace(n, b.in_channels, b.hidden, b.out_channels, b.size, b.size, b.stride);
      course::DeviceBuffer<unsigned char> ws(std::max<std::size_t>(bytes, 1));
      const auto stats = timer.time(
          [&](cudaStream_t s) {
            lab08::inverted_residual_block(d.w, x.get(), y.get(), n, b.in_channels, b.hidden, b.out_channels, b.size,
                                           b.size, b.stride, ws.get(), bytes, s);
          },
          options);
      const std::string name = std::to_string(i) + ": " + std::to_string(b.size) + "x" + std::to_string(b.size) + " " +
                               std::to_string(b.in_channels) + "->" + std::to_string(b.hidden) + "->" +
                               std::to_string(b.out_channels) + " s" + std::to_string(b.stride);
      std::printf("%-34s %10.1f %10.1f %12.1f\n", name.c_str(), stats.median_ms * 1e3,
                  (in + out) * sizeof(float) / (stats.median_ms * 1e-3) / 1e9, bytes / 1e6);
    }

    std::printf("\nMobileNetV2::forward (%.2f M multiply-adds per image)\n%-10s %10s %14s\n",
                mn::multiply_adds_per_image() / 1e6, "batch", "ms", "images/s");
    for (int batch : {1, 100, 1000}) {
      const Tensor images = images_for(batch);
      lab08::MobileNetV2 model(net, batch);
      course::DeviceBuffer<float> di(images.values()), dl(std::size_t{10} * batch);
      const auto stats = timer.time([&](cudaStream_t s) { model.forward(di.get(), batch, dl.get(), s); }, options);
      std::printf("%-10d %10.4f %14.0f\n", batch, stats.median_ms, batch / (stats.median_ms * 1e-3));
    }
    cudaStreamDestroy(stream);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab08_mobilenet_bench: %s\n", e.what());
    return 1;
  }
}
