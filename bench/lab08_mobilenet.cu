// lab08_mobilenet: lab 08's MobileNetV2 against cuDNN + cuBLAS, the whole network and block by block.
//
//   lab08_mobilenet [--csv FILE] [--logits FILE] [--repetitions R] [--golden-images G] [--no-224] [--only TEXT]
//
// Network: the trained Fashion-MNIST network (data/weights/mobilenet_fashion_mnist.safetensors,
// batch-norm folded by the golden fold) on the test split's 10,000 images, all on the GPU, and on
// one image. Versions:
//   solution         lab08::MobileNetV2, whatever solutions/lab08_conv_algorithms is when built
//   unfused          layer by layer from the part-A functions (lab08/mobilenet_rungs.cuh): what fusing buys
//   v1_fused_scalar  the lab's first fused block (lab08/block_v1_fused_scalar.cuh) in the network
//   cudnn            cudnn_reference::CudnnMobileNetV2 (grader/reference/cudnn_mobilenet.hpp): every
//                    1x1 layer on cuDNN or cuBLAS, whichever its constructor measured faster;
//                    cudnn_conv1x1 / cudnn_gemm1x1 force all of them onto one library
//   *_graph          (batch 1) the same forward captured once into a CUDA graph and replayed
// Each is first checked against the golden CPU network in double (the first G images' logits,
// G = 10,000 by default, within lab 08's tolerance: 1e-3 + 1e-3 |logit|, as the part C tests).
//
// Blocks: each of the network's 7 blocks at batch 10,000 and MobileNetV2@224's inverted residual
// shapes at batch 32 and 256 (random folded weights), as the solution's inverted_residual_block,
// the v1 block and cuDNN + cuBLAS calls (cudnn_reference::CudnnBlock); each checked against the
// golden block in double on 2 images first, and the solution against cuDNN on the timed batch.
//
// Times: course::GpuTimer (CUDA events, 3 warm-up runs, median of R runs, L2 flushed before each).
// "x cuDNN" = the cudnn version's time / this version's (above 1: faster than cuDNN).
// --only TEXT runs just the block shapes whose name contains TEXT (e.g. "160-960-160"), not the
// network: a quick loop for one shape, or a short run under a profiler.
// --csv appends rows "workload,version,batch,median_ms,min_ms,images_per_s,x_cudnn,device";
// --logits writes the solution's logits of the 10,000 images (float32, row-major [10000,10]) for
// bench/torch_mobilenet.py to compare with. bench/lab08_mobilenet_run.sh runs both.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "course/batch_slices.hpp"
#include "course/compare.hpp"
#include "course/cuda_check.hpp"
#include "course/device.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/gpu_timer.hpp"
#include "course/idx.hpp"
#include "course/mobilenet.hpp"
#include "course/rng.hpp"
#include "cudnn_mobilenet.hpp"
#include "lab08/block_v1_fused_scalar.cuh"
#include "lab08/mobilenet_rungs.cuh"
#include "labs/lab08_conv_algorithms.hpp"
#include "mobilenet_folding_reference.hpp"

namespace {

namespace mn = course::mobilenet;
using course::Tensor;

// Lab 08's tolerances (grader/labs/lab08_conv_algorithms/lab08_mobilenet_test_support.hpp):
// logits 1e-3 + 1e-3 |expected|; one block 1e-5 + 2e-6 (in + hidden) + 1e-4 |expected|.
const course::Tolerance kLogitTolerance{1e-3, 1e-3};
course::Tolerance block_tolerance(int in, int hidden) { return {1e-5 + 2e-6 * (in + hidden), 1e-4}; }

struct Row {
  std::string workload, version;
  int batch;
  double median_ms, min_ms;
};

struct Bench {
  course::GpuTimer* timer;
  course::TimerOptions options;
  cudaStream_t stream;
  std::vector<Row> rows;
  int failures = 0;

  void time(const std::string& workload, const std::string& version, int batch, const std::function<void(cudaStream_t)>& work) {
    const course::TimingStats t = timer->time(work, options);
    rows.push_back({workload, version, batch, t.median_ms, t.min_ms});
    std::printf("  %-34s %-22s %6d  %10.4f ms\n", workload.c_str(), version.c_str(), batch, t.median_ms);
    std::fflush(stdout);
  }
  bool check(const std::string& what, const Tensor& actual, const Tensor& expected, course::Tolerance tol) {
    const course::Comparison c = course::compare(actual, expected, tol);
    std::printf("check %-52s %s (max |error| %.2e)\n", what.c_str(), c.ok() ? "ok" : "WRONG", c.max_abs_error);
    if (!c.ok()) {
      std::printf("%s\n", c.report(expected.shape()).c_str());
      ++failures;
    }
    return c.ok();
  }
};

Tensor download(const course::DeviceBuffer<float>& d, const course::Shape& shape) {
  CUDA_CHECK(cudaDeviceSynchronize());
  Tensor t(shape);
  d.download(t.data(), t.numel());
  return t;
}

Tensor rows_of(const Tensor& t, std::int64_t count) {  // the first `count` entries along dim 0
  course::Shape shape = t.shape();
  const std::size_t per = t.numel() / static_cast<std::size_t>(shape[0]);
  shape[0] = count;
  return Tensor(shape, std::vector<float>(t.data(), t.data() + per * static_cast<std::size_t>(count)));
}

/// The golden folded network on the first `count` images, split over the machine's cores (one
/// image's logits do not depend on another's).
Tensor golden_logits(const lab08::FoldedMobileNet& net, const Tensor& images, std::int64_t count) {
  return course::forward_in_slices(images, count, std::min(std::thread::hardware_concurrency(), 32u),
                                   [&net](const Tensor& slice) { return golden::lab08_folded_mobilenet_forward(net, slice); });
}

// ---- the whole network ----------------------------------------------------------------------------

using Forward = std::function<void(const float*, int, float*, cudaStream_t)>;

/// Checks one network version against the golden logits, then times it (and at batch 1 its CUDA graph).
void run_network(Bench& b, const std::string& version, int n, const Forward& forward, const float* d_images,
                 const Tensor& golden, std::vector<float>* keep_logits) {
  course::DeviceBuffer<float> logits(std::size_t(n) * mn::kNumClasses);
  logits.fill_bytes(0xff);  // NaN: a logit never written fails the check
  forward(d_images, n, logits.get(), b.stream);
  const Tensor got = download(logits, {n, mn::kNumClasses});
  const std::int64_t checked = std::min<std::int64_t>(n, golden.dim(0));
  b.check(version + " batch " + std::to_string(n) + " vs golden (" + std::to_string(checked) + " images)",
          rows_of(got, checked), rows_of(golden, checked), kLogitTolerance);
  if (keep_logits) *keep_logits = got.values();
  b.time("mobilenet_fmnist", version, n, [&](cudaStream_t s) { forward(d_images, n, logits.get(), s); });
  if (n != 1) return;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(b.stream, cudaStreamCaptureModeThreadLocal));
  try {
    forward(d_images, n, logits.get(), b.stream);
  } catch (const std::exception& e) {
    cudaStreamEndCapture(b.stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    std::printf("  (%s cannot be captured into a CUDA graph: %s)\n", version.c_str(), e.what());
    return;
  }
  CUDA_CHECK(cudaStreamEndCapture(b.stream, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  b.time("mobilenet_fmnist", version + "_graph", n, [&](cudaStream_t s) { CUDA_CHECK(cudaGraphLaunch(exec, s)); });
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
}

void print_choices(const std::vector<cudnn_reference::LayerChoice>& choices, int n) {
  std::printf("\ncuDNN + cuBLAS network at batch %d, per layer (ms as measured by its constructor):\n", n);
  std::printf("| layer                | chosen                        | cuDNN ms | cuBLAS GEMM ms |\n");
  std::printf("|----------------------|-------------------------------|---------:|---------------:|\n");
  for (const auto& c : choices) {
    char cublas[32] = "-";
    if (c.cublas_ms >= 0) std::snprintf(cublas, sizeof cublas, "%.4f", c.cublas_ms);
    std::printf("| %-20s | %-29s | %8.4f | %14s |\n", c.layer.c_str(), c.chosen.c_str(), c.cudnn_ms, cublas);
  }
}

void networks(Bench& b, const lab08::FoldedMobileNet& folded, const Tensor& images, const Tensor& golden,
              const std::string& logits_path) {
  course::DeviceBuffer<float> d_images(images.values());
  const rungs::DeviceWeights weights(folded);
  for (int n : {static_cast<int>(images.dim(0)), 1}) {
    std::printf("\nMobileNetV2, batch %d\n", n);
    {
      lab08::MobileNetV2 net(folded, n);
      std::vector<float> logits;
      run_network(b, "solution", n, [&](const float* x, int m, float* y, cudaStream_t s) { net.forward(x, m, y, s); },
                  d_images.get(), golden, n > 1 ? &logits : nullptr);
      if (n > 1 && !logits_path.empty()) {
        std::ofstream out(logits_path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
        if (!out) throw course::Error("cannot write " + logits_path);
      }
    }
    {
      rungs::UnfusedMobileNet net(weights, n);
      run_network(b, "unfused", n, [&](const float* x, int m, float* y, cudaStream_t s) { net.forward(x, m, y, s); },
                  d_images.get(), golden, nullptr);
    }
    {
      rungs::V1MobileNet net(weights, n);
      run_network(b, "v1_fused_scalar", n, [&](const float* x, int m, float* y, cudaStream_t s) { net.forward(x, m, y, s); },
                  d_images.get(), golden, nullptr);
    }
    {
      cudnn_reference::CudnnMobileNetV2 net(folded, n);
      const Forward fwd = [&](const float* x, int m, float* y, cudaStream_t s) { net.forward(x, m, y, s); };
      run_network(b, "cudnn", n, fwd, d_images.get(), golden, nullptr);
      print_choices(net.choices(), n);
      net.set_pointwise(cudnn_reference::Pointwise::kCudnn);
      run_network(b, "cudnn_conv1x1", n, fwd, d_images.get(), golden, nullptr);
      net.set_pointwise(cudnn_reference::Pointwise::kCublas);
      run_network(b, "cudnn_gemm1x1", n, fwd, d_images.get(), golden, nullptr);
    }
  }
}

// ---- blocks -----------------------------------------------------------------------------------

struct Shape {
  std::string name;
  int in, hidden, out, size, stride;
};

/// Random folded block weights: 1/sqrt(fan-in) scale, biases in [-0.5, 0.5] (as the part C tests).
lab08::FoldedBlock random_block(course::Rng& rng, int in, int hidden, int out) {
  const auto bound = [](int fan_in) { return 1.0f / std::sqrt(static_cast<float>(fan_in)); };
  lab08::FoldedBlock f;
  if (hidden != in) {
    f.expand_weight = rng.tensor({hidden, in}, -bound(in), bound(in));
    f.expand_bias = rng.tensor({hidden}, -0.5f, 0.5f);
  }
  f.depthwise_weight = rng.tensor({hidden, 1, 3, 3}, -bound(9), bound(9));
  f.depthwise_bias = rng.tensor({hidden}, -0.5f, 0.5f);
  f.project_weight = rng.tensor({out, hidden}, -bound(hidden), bound(hidden));
  f.project_bias = rng.tensor({out}, -0.5f, 0.5f);
  return f;
}

/// One block shape: check the three versions on 2 images against the golden block, then time each
/// at every batch (the solution compared with cuDNN on the timed batch too).
void block_rows(Bench& b, const Shape& s, const lab08::FoldedBlock& f, const std::vector<int>& batches, course::Rng& rng) {
  std::vector<course::DeviceBuffer<float>> owned;
  const auto put = [&owned](const Tensor& t) -> const float* {
    if (t.numel() == 0) return nullptr;
    owned.emplace_back(t.values());
    return owned.back().get();
  };
  const lab08::InvertedResidualWeights w{put(f.expand_weight), put(f.expand_bias), put(f.depthwise_weight),
                                         put(f.depthwise_bias), put(f.project_weight), put(f.project_bias)};
  const int P = (s.size - 1) / s.stride + 1;
  const course::Tolerance tol = block_tolerance(s.in, s.hidden);
  const auto solution = [&](const float* x, float* y, int n, cudaStream_t st, course::DeviceBuffer<unsigned char>& ws) {
    lab08::inverted_residual_block(w, x, y, n, s.in, s.hidden, s.out, s.size, s.size, s.stride, ws.get(), ws.bytes(), st);
  };
  const auto workspace = [&](int n) {
    return course::DeviceBuffer<unsigned char>(
        std::max<std::size_t>(lab08::inverted_residual_workspace(n, s.in, s.hidden, s.out, s.size, s.size, s.stride), 1));
  };
  {  // 2 images against the golden block in double
    const int n = 2;
    const Tensor x = rng.tensor({n, s.in, s.size, s.size}, -1.0f, 1.0f);
    const Tensor want = golden::lab08_inverted_residual(x, f, s.stride);
    course::DeviceBuffer<float> dx(x.values()), dy(want.numel());
    auto ws = workspace(n);
    cudnn_reference::CudnnBlock cudnn(w, n, s.in, s.hidden, s.out, s.size, s.size, s.stride);
    const std::vector<std::pair<std::string, std::function<void()>>> versions = {
        {"solution", [&] { solution(dx.get(), dy.get(), n, b.stream, ws); }},
        {"v1_fused_scalar", [&] { block_v1::inverted_residual_block(w, dx.get(), dy.get(), n, s.in, s.hidden, s.out, s.size, s.size, s.stride, b.stream); }},
        {"cudnn", [&] { cudnn.forward(dx.get(), dy.get(), b.stream); }}};
    for (const auto& [name, run] : versions) {
      dy.fill_bytes(0xff);
      run();
      b.check(s.name + " " + name + " vs golden (2 images)", download(dy, want.shape()), want, tol);
    }
  }
  for (int n : batches) {
    const Tensor x = rng.tensor({n, s.in, s.size, s.size}, -1.0f, 1.0f);
    course::DeviceBuffer<float> dx(x.values()), dy(std::size_t(n) * s.out * P * P);
    auto ws = workspace(n);
    cudnn_reference::CudnnBlock cudnn(w, n, s.in, s.hidden, s.out, s.size, s.size, s.stride);
    cudnn.forward(dx.get(), dy.get(), b.stream);
    const Tensor reference = download(dy, {n, s.out, P, P});
    dy.fill_bytes(0xff);
    solution(dx.get(), dy.get(), n, b.stream, ws);
    b.check(s.name + " solution vs cudnn, batch " + std::to_string(n), download(dy, reference.shape()), reference,
            {2 * tol.atol, 2 * tol.rtol});
    b.time(s.name, "solution", n, [&](cudaStream_t st) { solution(dx.get(), dy.get(), n, st, ws); });
    b.time(s.name, "v1_fused_scalar", n, [&](cudaStream_t st) {
      block_v1::inverted_residual_block(w, dx.get(), dy.get(), n, s.in, s.hidden, s.out, s.size, s.size, s.stride, st);
    });
    b.time(s.name, "cudnn", n, [&](cudaStream_t st) { cudnn.forward(dx.get(), dy.get(), st); });
  }
}

std::string shape_name(const std::string& prefix, int in, int hidden, int out, int stride, int size) {
  return prefix + " " + std::to_string(in) + "-" + std::to_string(hidden) + "-" + std::to_string(out) + " s" +
         std::to_string(stride) + " " + std::to_string(size) + "x" + std::to_string(size);
}

// ---- output -----------------------------------------------------------------------------------

void report(const std::vector<Row>& rows, const std::string& device, const std::string& csv_path) {
  std::map<std::pair<std::string, int>, double> cudnn;
  for (const Row& r : rows)
    if (r.version == "cudnn") cudnn[{r.workload, r.batch}] = r.median_ms;
  std::FILE* csv = nullptr;
  if (!csv_path.empty()) {
    const bool fresh = !std::ifstream(csv_path).good() || std::ifstream(csv_path).peek() == std::ifstream::traits_type::eof();
    csv = std::fopen(csv_path.c_str(), "a");
    if (!csv) throw course::Error("cannot open " + csv_path);
    if (fresh) std::fprintf(csv, "workload,version,batch,median_ms,min_ms,images_per_s,x_cudnn,device\n");
  }
  std::printf("\n%s\n| workload                           | version               |  batch |  median ms |   images/s | x cuDNN |\n",
              device.c_str());
  std::printf("|------------------------------------|-----------------------|-------:|-----------:|-----------:|--------:|\n");
  for (const Row& r : rows) {
    const auto it = cudnn.find({r.workload, r.batch});
    const double ratio = it == cudnn.end() ? 0.0 : it->second / r.median_ms;
    const double per_s = r.batch / (r.median_ms / 1000.0);
    std::printf("| %-34s | %-21s | %6d | %10.4f | %10.0f | %7.2f |\n", r.workload.c_str(), r.version.c_str(), r.batch,
                r.median_ms, per_s, ratio);
    if (csv)
      std::fprintf(csv, "%s,%s,%d,%.6f,%.6f,%.1f,%.4f,%s\n", r.workload.c_str(), r.version.c_str(), r.batch, r.median_ms,
                   r.min_ms, per_s, ratio, device.c_str());
  }
  if (csv) std::fclose(csv);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string csv_path, logits_path;
    int repetitions = 20, golden_images = 10000;
    bool shapes_224 = true;
    std::string only;  // empty: everything
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--csv" && i + 1 < argc) csv_path = argv[++i];
      else if (a == "--logits" && i + 1 < argc) logits_path = argv[++i];
      else if (a == "--repetitions" && i + 1 < argc) repetitions = std::max(10, std::atoi(argv[++i]));
      else if (a == "--golden-images" && i + 1 < argc) golden_images = std::max(1, std::atoi(argv[++i]));
      else if (a == "--no-224") shapes_224 = false;
      else if (a == "--only" && i + 1 < argc) only = argv[++i];
      else throw course::Error("usage: lab08_mobilenet [--csv FILE] [--logits FILE] [--repetitions R>=10] [--golden-images G] [--no-224] [--only TEXT]");
    }
    if (!course::has_gpu()) {
      std::printf("lab08_mobilenet: no GPU (%s)\n", course::gpu_unavailable_reason().c_str());
      return course::kSkipReturnCode;
    }
    const std::string device = course::query_device(0).name;
    std::printf("lab08_mobilenet: %s, cuDNN %zu, FP32, %d timed runs per row (median, L2 flushed)\n",
                course::query_device(0).summary().c_str(), cudnnGetVersion(), repetitions);

    const mn::Weights weights = mn::load_weights(std::string(COURSE_DATA_DIR) + "/weights/mobilenet_fashion_mnist.safetensors");
    const lab08::FoldedMobileNet folded = golden::lab08_fold_mobilenet(weights);
    const course::DatasetFiles files = course::fashion_mnist_files();
    const course::Dataset test = course::load_dataset(files.test_images, files.test_labels, files.name);
    const std::int64_t count = static_cast<std::int64_t>(test.size());
    const Tensor images(course::Shape{count, 1, 28, 28}, test.images.values());
    const std::int64_t checked = std::min<std::int64_t>(golden_images, count);
    Tensor golden;  // only the network needs it
    if (only.empty()) {
      std::printf("golden CPU network (double) on %lld of %lld test images ...\n", static_cast<long long>(checked),
                  static_cast<long long>(count));
      std::fflush(stdout);
      golden = golden_logits(folded, images, checked);
    }

    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    course::GpuTimer timer(stream);
    Bench b{&timer, {}, stream, {}, 0};
    b.options.repetitions = repetitions;

    const auto wanted = [&](const std::string& name) { return name.find(only) != std::string::npos; };
    if (only.empty()) networks(b, folded, images, golden, logits_path);

    std::printf("\nBlocks of the Fashion-MNIST network (trained weights, random inputs)\n");
    course::Rng rng(808);
    for (std::size_t i = 0; i < mn::blocks().size(); ++i) {
      const mn::BlockSpec& s = mn::blocks()[i];
      const Shape shape{shape_name("block" + std::to_string(i), s.in_channels, s.hidden, s.out_channels, s.stride, s.size),
                        s.in_channels, s.hidden, s.out_channels, s.size, s.stride};
      if (wanted(shape.name)) block_rows(b, shape, folded.blocks[i], {static_cast<int>(count)}, rng);
    }
    if (shapes_224) {
      std::printf("\nMobileNetV2@224 inverted residual blocks (random weights)\n");
      const std::vector<Shape> shapes = {
          {"", 16, 96, 24, 112, 2}, {"", 24, 144, 24, 56, 1}, {"", 32, 192, 32, 28, 1},
          {"", 64, 384, 64, 14, 1}, {"", 96, 576, 96, 14, 1}, {"", 160, 960, 160, 7, 1}};
      for (Shape s : shapes) {
        s.name = shape_name("v2@224", s.in, s.hidden, s.out, s.stride, s.size);
        const lab08::FoldedBlock f = random_block(rng, s.in, s.hidden, s.out);  // drawn either way: same weights as a full run
        if (wanted(s.name)) block_rows(b, s, f, {32, 256}, rng);
      }
    }
    report(b.rows, device, csv_path);
    CUDA_CHECK(cudaStreamDestroy(stream));
    if (b.failures) std::printf("\n%d CHECK(S) FAILED\n", b.failures);
    return b.failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab08_mobilenet: %s\n", e.what());
    return 1;
  }
}
