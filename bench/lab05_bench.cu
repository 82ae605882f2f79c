// lab05_bench: how fast the lab 05 reference solution's cuDNN + cuBLAS LeNet runs, per batch size.
//
//   lab05_bench [repetitions=50]
//
// Images and weights: the Fashion-MNIST test split (COURSE_FASHION_MNIST_DIR or the Debian path)
// with data/weights/lenet_fashion_mnist.safetensors, else the course's MNIST split (repeated to
// 10,000) with lenet_mnist.safetensors; the weights are folded with the golden reference. Everything is on the GPU before timing starts (device-resident inputs), each
// configuration runs 5 untimed warm-up passes and then `repetitions` passes timed one by one with
// CUDA events on one stream; the median is reported. L2 is NOT flushed between passes: PyTorch's
// numbers (bench/torch_lenet.py) are taken the same way, and a deployed network's weights do stay
// in L2 between requests. Before any timing the logits of the first 64 images are checked
// against the golden CPU LeNet. After the timings, what cudnnFindConvolutionForwardAlgorithm
// measured for each of LeNet's two convolutions at each batch size is printed, with the algorithm
// lab 05's rule takes (the fastest one in FP32 math within the workspace budget) and the one the
// heuristic (cudnnGetConvolutionForwardAlgorithm_v7) would have taken without running anything.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "course/device.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/gpu_timer.hpp"
#include "course/cudnn_check.hpp"
#include "course/cudnn_raii.hpp"
#include "course/idx.hpp"
#include "course/lenet.hpp"
#include "course/tensor.hpp"
#include "lab04_reference.hpp"
#include "labs/lab05_cudnn.hpp"
#include "lenet_reference.hpp"

namespace {

using course::cudnn::algorithm_name;

namespace ln = course::lenet;
using course::Tensor;


/// `count` images [count, 1, 28, 28]: Fashion-MNIST's test split if it loads, else MNIST
/// repeated; `weights_file` is the network trained on that data set.
Tensor load_images(std::size_t count, std::string& source, std::string& weights_file) {
  course::Dataset data;
  try {
    const course::DatasetFiles files = course::fashion_mnist_files();
    data = course::load_dataset(files.test_images, files.test_labels, "fashion-mnist");
    source = "Fashion-MNIST test split";
    weights_file = "lenet_fashion_mnist.safetensors";
  } catch (const course::Error&) {
    const course::DatasetFiles files = course::mnist_files(COURSE_DATA_DIR);
    data = course::load_dataset(files.test_images, files.test_labels, "mnist");
    source = "MNIST test split (repeated)";
    weights_file = "lenet_mnist.safetensors";
  }
  const std::size_t have = data.images.numel(), per_image = 28 * 28;
  Tensor images(course::Shape{static_cast<std::int64_t>(count), 1, 28, 28});
  for (std::size_t i = 0; i < count * per_image; ++i) images[i] = data.images[i % have];
  return images;
}

const char* math_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_DEFAULT_MATH: return "FMA";
    case CUDNN_TENSOR_OP_MATH: return "tensor op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor op (conv.)";
    case CUDNN_FMA_MATH: return "FMA only";
    default: return "?";
  }
}

/// Every candidate cudnnFindConvolutionForwardAlgorithm measured for LeNet's two convolutions,
/// best first as cuDNN returns them, and what lab 05's choose_conv_algorithm (measured and
/// heuristic) takes: the table chapter 05 quotes.
void report_algorithm_search(const std::vector<int>& batches) {
  struct Conv {
    const char* name;
    course::Shape input, weight;
    lab05::ConvParams params;
  };
  std::printf("\nWhat cudnnFindConvolutionForwardAlgorithm measured (one run per candidate, best first):\n");
  std::printf("| batch | conv  | rank | algorithm              | status | ms        | workspace B | math              | lab 05 takes |\n");
  std::printf("|------:|-------|-----:|------------------------|--------|----------:|------------:|-------------------|--------------|\n");
  for (int batch : batches) {
    const std::vector<Conv> convs = {
        {"conv1", course::Shape{batch, 1, 28, 28}, course::Shape{6, 1, 5, 5}, lab05::ConvParams::symmetric(2)},
        {"conv2", course::Shape{batch, 6, 14, 14}, course::Shape{16, 6, 5, 5}, lab05::ConvParams::symmetric(0)}};
    for (const Conv& c : convs) {
      lab05::Context measured(nullptr, lab05::AlgoSearch::Measured), heuristic(nullptr, lab05::AlgoSearch::Heuristic);
      lab05::ConvDescriptors d = lab05::make_conv_descriptors(c.input, c.weight, c.params);
      const lab05::ConvKey key{c.input, c.weight, c.params, false};
      const cudnnConvolutionFwdAlgo_t taken = lab05::choose_conv_algorithm(measured, key, d).algo;
      const cudnnConvolutionFwdAlgo_t guessed = lab05::choose_conv_algorithm(heuristic, key, d).algo;
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
      int returned = 0;
      CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(measured.cudnn(), d.x, d.w, d.conv, d.y,
                                                       static_cast<int>(perf.size()), &returned, perf.data()));
      for (int i = 0; i < returned; ++i) {
        const cudnnConvolutionFwdAlgoPerf_t& p = perf[static_cast<std::size_t>(i)];
        const bool ran = p.status == CUDNN_STATUS_SUCCESS;
        std::string mark = p.algo == taken ? "measured" : "";
        if (p.algo == guessed) mark += mark.empty() ? "heuristic" : " + heuristic";
        std::printf("| %5d | %-5s | %4d | %-22s | %-6s | %9.5f | %11zu | %-17s | %-12s |\n", batch, c.name, i + 1,
                    algorithm_name(p.algo), ran ? "ok" : "n/a", ran ? p.time : 0.0, ran ? p.memory : std::size_t{0},
                    math_name(p.mathType), mark.c_str());
      }
    }
  }
  std::printf("(the fused conv+bias+ReLU call always runs IMPLICIT_PRECOMP_GEMM; a second Find call can rank\n"
              " near-equal candidates differently, so 'lab 05 takes' comes from its own earlier search)\n");
}

struct Variant {
  const char* name;
  lab05::LeNetOptions options;
};

}  // namespace

int main(int argc, char** argv) {
  try {
    if (!course::has_gpu()) {
      std::printf("lab05_bench: no GPU (%s)\n", course::gpu_unavailable_reason().c_str());
      return course::kSkipReturnCode;
    }
    const int repetitions = argc > 1 ? std::atoi(argv[1]) : 50;
    if (repetitions < 1) throw course::Error("repetitions must be >= 1");
    const std::vector<int> batches = {1, 64, 1024, 10000};
    std::string source, weights_file;
    const Tensor images = load_images(10000, source, weights_file);
    const ln::Weights weights = ln::load_weights(std::string(COURSE_DATA_DIR) + "/weights/" + weights_file);
    const lab04::FoldedLeNet net = golden::lab04_fold_lenet(weights);
    course::DeviceBuffer<float> d_images(images.values());
    course::DeviceBuffer<float> d_logits(10000 * 10);

    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::printf("lab05_bench: %s, cuDNN %zu, %s, %d timed passes per row\n", course::query_device(0).summary().c_str(),
                cudnnGetVersion(), source.c_str(), repetitions);

    {  // Correctness first: 64 images against the golden CPU LeNet.
      lab05::CudnnLeNet lenet(net, 64);
      lenet.forward(d_images.get(), 64, d_logits.get(), stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      std::vector<float> got(64 * 10);
      d_logits.download(got.data(), got.size());
      Tensor first(course::Shape{64, 1, 28, 28});
      std::copy(images.data(), images.data() + first.numel(), first.data());
      const Tensor want = golden::lenet_forward(weights, first);
      double worst = 0.0;
      for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
      std::printf("check: 64 images, largest |logit - golden| = %.2e %s\n", worst, worst < 1e-3 ? "(ok)" : "(WRONG)");
      if (!(worst < 1e-3)) return 1;
    }

    const std::vector<Variant> variants = {{"fused conv+bias+ReLU", {true, lab05::AlgoSearch::Measured}},
                                           {"unfused, measured algos", {false, lab05::AlgoSearch::Measured}},
                                           {"unfused, heuristic algos", {false, lab05::AlgoSearch::Heuristic}}};
    std::printf("\n| batch | variant                  | median ms | us / image | images / s |\n");
    std::printf("|------:|--------------------------|----------:|-----------:|-----------:|\n");
    course::TimerOptions options;
    options.warmup = 5;
    options.repetitions = repetitions;
    options.flush_l2 = false;
    course::GpuTimer timer(stream);
    for (int batch : batches) {
      for (const Variant& v : variants) {
        lab05::CudnnLeNet lenet(net, batch, v.options);
        const course::TimingStats t = timer.time(
            [&](cudaStream_t s) { lenet.forward(d_images.get(), batch, d_logits.get(), s); }, options);
        std::printf("| %5d | %-24s | %9.4f | %10.3f | %10.0f |\n", batch, v.name, t.median_ms,
                    1000.0 * t.median_ms / batch, batch / (t.median_ms / 1000.0));
      }
    }
    report_algorithm_search(batches);
    CUDA_CHECK(cudaStreamDestroy(stream));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab05_bench: %s\n", e.what());
    return 1;
  }
}
