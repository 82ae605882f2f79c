// The GPU labs' student benchmark, shared by lab06_bench.cu and lab07_bench.cu: a LeNet pipeline
// class (constructor (FoldedLeNet, max_batch), forward(d_images, n, d_logits, d_labels, stream)) on
// the Fashion-MNIST test split (10,000 images in one batch) and on a single image, timed the honest
// way -- CUDA events on the stream, warm-up runs first, the median of the timed runs, L2 flushed
// before each (course::GpuTimer). The images are already on the GPU: this times the network, not
// the PCIe copy (the copy is timed separately). The logits are checked against the golden CPU
// LeNet before anything is timed.
//
// Fashion-MNIST is read from $COURSE_FASHION_MNIST_DIR or /usr/share/datasets/fashion-mnist.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "course/compare.hpp"
#include "course/device.hpp"
#include "course/device_buffer.hpp"
#include "course/gpu_timer.hpp"
#include "course/idx.hpp"
#include "course/lenet.hpp"
#include "lab04_reference.hpp"
#include "labs/lab04_lenet_cpu.hpp"
#include "lenet_reference.hpp"

namespace lenet_bench {

namespace ln = course::lenet;


template <class Pipeline>
int run(const char* program, int repetitions) {
  if (!course::has_gpu()) {
    std::printf("no GPU: %s\n", course::gpu_unavailable_reason().c_str());
    return course::kSkipReturnCode;
  }
  const course::DeviceInfo device = course::query_device(0);
  std::printf("%s on %s\n", program, device.summary().c_str());

  const ln::Weights weights = ln::load_weights(std::string(COURSE_DATA_DIR) + "/weights/lenet_fashion_mnist.safetensors");
  const course::DatasetFiles files = course::fashion_mnist_files();
  const course::Dataset data = course::load_dataset(files.test_images, files.test_labels, "fashion-mnist");
  const int n = static_cast<int>(data.size());

  Pipeline net(golden::lab04_fold_lenet(weights), n);
  course::DeviceBuffer<float> d_images(data.images.values());
  course::DeviceBuffer<float> d_logits(static_cast<std::size_t>(n) * ln::kNumClasses);
  course::DeviceBuffer<int> d_labels(static_cast<std::size_t>(n));
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));

  // Correct first, then fast: the whole split against the golden CPU network.
  net.forward(d_images.get(), n, d_logits.get(), d_labels.get(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<float> logits = d_logits.download();
  const std::vector<int> labels = d_labels.download();
  const course::Tensor expected = golden::lenet_forward(weights, data.images);
  const course::Comparison cmp = course::compare(logits.data(), expected.data(), expected.numel(), {1e-3, 1e-3});
  int correct = 0;
  for (int i = 0; i < n; ++i) correct += labels[static_cast<std::size_t>(i)] == data.labels[static_cast<std::size_t>(i)];
  std::printf("check: max |logit error| %.2e vs golden (%zu outside 1e-3), accuracy %d / %d\n", cmp.max_abs_error,
              cmp.mismatches, correct, n);
  if (!cmp.ok()) return 1;

  course::GpuTimer timer(stream);
  course::TimerOptions options;
  options.warmup = 3;
  options.repetitions = repetitions;
  const course::TimingStats batch =
      timer.time([&](cudaStream_t s) { net.forward(d_images.get(), n, d_logits.get(), d_labels.get(), s); }, options);
  const course::TimingStats single =
      timer.time([&](cudaStream_t s) { net.forward(d_images.get(), 1, d_logits.get(), d_labels.get(), s); }, options);
  const std::size_t image_bytes = data.images.bytes();
  const course::TimingStats copy = timer.time(
      [&](cudaStream_t s) {
        CUDA_CHECK(cudaMemcpyAsync(d_images.get(), data.images.data(), image_bytes, cudaMemcpyHostToDevice, s));
      },
      options);

  std::printf("forward, %d images : %s  = %.3f us per image, %.0f images/s\n", n, batch.summary().c_str(),
              1000.0 * batch.median_ms / n, n / (batch.median_ms / 1000.0));
  std::printf("forward, 1 image     : %s\n", single.summary().c_str());
  std::printf("copy of %d images host->device (pageable, %.1f MB): %s\n", n, static_cast<double>(image_bytes) / 1e6,
              copy.summary().c_str());
  const double flops = 2.0 * static_cast<double>(ln::multiply_adds_per_image()) * n;
  std::printf("arithmetic rate of the batch: %.0f GFLOP/s\n", flops / (batch.median_ms / 1000.0) / 1e9);
  CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}

/// main() of a lab's benchmark: `program [repetitions]` (default 20).
template <class Pipeline>
int main_of(const char* program, int argc, char** argv) {
  try {
    return run<Pipeline>(program, argc > 1 ? std::atoi(argv[1]) : 20);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace lenet_bench
