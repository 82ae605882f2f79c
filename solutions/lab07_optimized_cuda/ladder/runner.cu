// lab07_ladder: every rung of lab 07's optimization ladder, plus cuDNN (lab 05) and the CPU, first
// checked against the golden CPU LeNet and then timed, in one program so that every number of the
// lecture's table comes from the same run on the same GPU.
//
//   build/bench/lab07_ladder [--version N[,N...]|all] [--batch B[,B...]] [--mode device,graph,host]
//                            [--repetitions R] [--csv FILE] [--no-check] [--list] [--help]
//
// Check (before any timing, for every pipeline): the full MNIST and Fashion-MNIST test splits with
// their own weights against golden::lenet_forward -- FP32 pipelines must predict every label the
// golden network predicts with every logit within 1e-3; reduced-precision rungs must stay within
// 0.1 percentage points of its accuracy. Batches of 1, 7 and 37 images are checked too (partial
// tiles), and nothing past the n-th image may be written. A pipeline that fails is not timed.
//
// Timing (Fashion-MNIST weights and images, repeated when a batch is larger than the split):
//   device  CUDA events around forward() on one stream; warm-up, then the median of R runs with L2
//           flushed before each (course::GpuTimer)
//   graph   forward() captured once per batch into a CUDA graph, the replay timed like `device`;
//           a rung that synchronises or allocates cannot be captured and is recorded as n/a
//   host    pinned uint8 pixels in host memory -> labels in host memory (classify_from_host),
//           steady_clock around the call, the median of R runs
// Every timed mode's labels are checked again against the golden ones. Slow configurations (a call
// of more than a fraction of a second, e.g. rung 01 at 10,000 images) get fewer repetitions.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "course/batch_slices.hpp"
#include "course/cuda_check.hpp"
#include "course/device.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/gpu_timer.hpp"
#include "course/idx.hpp"
#include "course/lenet.hpp"
#include "course/speed/plausibility.hpp"
#include "course/tensor.hpp"
#include "ladder.hpp"
#include "lab04_reference.hpp"
#include "lenet_reference.hpp"
#include "runner_support.hpp"
#ifdef COURSE_LADDER_HAS_CUDNN
#include "labs/lab05_cudnn.hpp"
#endif

// ---------------------------------------------------------------------------------------------
// The registry and the default host path (declared in ladder.hpp)
// ---------------------------------------------------------------------------------------------
namespace ladder {

std::vector<RungInfo>& rungs() {
  static std::vector<RungInfo> registered;  // function-local: rung files register during static init
  return registered;
}

Registrar::Registrar(RungInfo info) {
  std::vector<RungInfo>& all = rungs();
  for (const RungInfo& other : all)
    if (other.number == info.number) {
      // Static initialisation: an exception here would only say "terminate called".
      std::fprintf(stderr, "lab07_ladder: rung %d registered twice (%s and %s)\n", info.number, other.name.c_str(),
                   info.name.c_str());
      std::abort();
    }
  all.push_back(std::move(info));
  std::sort(all.begin(), all.end(), [](const RungInfo& a, const RungInfo& b) { return a.number < b.number; });
}

namespace {
/// Buffers of the default classify_from_host, grown on demand and kept: the default path is slow
/// because of its pageable staging and synchronous copies, not because it allocates every call.
struct HostPathScratch {
  std::vector<float> pixels;  ///< pageable, as a first program would have it
  course::DeviceBuffer<float> images, logits;
  course::DeviceBuffer<int> labels;
};
std::unique_ptr<HostPathScratch>& host_path_scratch() {
  static std::unique_ptr<HostPathScratch> scratch;
  return scratch;
}
/// Frees those buffers while the CUDA runtime is still up (main calls it before returning).
void release_host_path_scratch() { host_path_scratch().reset(); }
}  // namespace

void Rung::classify_from_host(const std::uint8_t* h_pixels, int n, int* h_labels, cudaStream_t stream) {
  if (h_pixels == nullptr) throw course::Error("classify_from_host: h_pixels is null");
  if (h_labels == nullptr) throw course::Error("classify_from_host: h_labels is null");
  if (n < 1) throw course::Error("classify_from_host: n must be >= 1, got " + std::to_string(n));
  std::unique_ptr<HostPathScratch>& scratch = host_path_scratch();
  if (!scratch) scratch = std::make_unique<HostPathScratch>();
  const std::size_t images = static_cast<std::size_t>(n);
  const std::size_t values = images * runner::kPixelsPerImage;
  scratch->pixels.resize(values);
  for (std::size_t i = 0; i < values; ++i) scratch->pixels[i] = static_cast<float>(h_pixels[i]) / 255.0f;
  if (scratch->images.size() < values) scratch->images = course::DeviceBuffer<float>(values);
  if (scratch->logits.size() < images * runner::kClasses)
    scratch->logits = course::DeviceBuffer<float>(images * runner::kClasses);
  if (scratch->labels.size() < images) scratch->labels = course::DeviceBuffer<int>(images);
  CUDA_CHECK(cudaMemcpyAsync(scratch->images.get(), scratch->pixels.data(), values * sizeof(float),
                             cudaMemcpyHostToDevice, stream));
  forward(scratch->images.get(), n, scratch->logits.get(), scratch->labels.get(), stream);
  CUDA_CHECK(cudaMemcpyAsync(h_labels, scratch->labels.get(), images * sizeof(int), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace ladder

namespace runner {
namespace {

namespace ln = course::lenet;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// ---------------------------------------------------------------------------------------------
// Pipelines: the registered rungs, and cuDNN and the CPU as pseudo-versions
// ---------------------------------------------------------------------------------------------

#ifdef COURSE_LADDER_HAS_CUDNN
/// labels[i] = argmax of logits row i, lowest index on a tie (like torch.argmax). One thread per row.
__global__ void argmax10_kernel(const float* logits, int* labels, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const float* row = logits + static_cast<std::size_t>(i) * kClasses;
  int best = 0;
  for (int j = 1; j < kClasses; ++j)
    if (row[j] > row[best]) best = j;
  labels[i] = best;
}

/// The lab 05 solution (cuDNN + cuBLAS, fused conv+bias+ReLU, measured algorithms) behind the Rung
/// interface, with the argmax it does not have.
class CudnnPipeline final : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    net_ = std::make_unique<lab05::CudnnLeNet>(net, max_batch);
  }
  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    net_->forward(d_images, n, d_logits, stream);
    argmax10_kernel<<<(n + 255) / 256, 256, 0, stream>>>(d_logits, d_labels, n);
    CUDA_CHECK_LAST_LAUNCH();
  }

 private:
  std::unique_ptr<lab05::CudnnLeNet> net_;
};
#endif

std::vector<Pipeline> available_pipelines() {
  std::vector<Pipeline> all;
  for (const ladder::RungInfo& info : ladder::rungs())
    all.push_back({Source::ladder, info.number, info.name, info.reason, info.make});
#ifdef COURSE_LADDER_HAS_CUDNN
  all.push_back({Source::cudnn, 0, "cudnn", "lab 05: cuDNN convolutions + cuBLAS fully connected layers (FP32)",
                 [] { return std::unique_ptr<ladder::Rung>(new CudnnPipeline()); }});
#endif
  all.push_back({Source::cpu, 0, "cpu", "golden::lenet_forward on one CPU core (double accumulation)", nullptr});
  return all;
}

// ---------------------------------------------------------------------------------------------
// Data: both test splits, their weights, their golden logits
// ---------------------------------------------------------------------------------------------


/// golden::lenet_forward over all cores (it handles one image at a time, so slices are independent).
course::Tensor golden_logits(const ln::Weights& weights, const course::Tensor& images) {
  return course::forward_in_slices(images, images.dim(0), std::min(std::thread::hardware_concurrency(), 32u),
                                   [&weights](const course::Tensor& slice) { return golden::lenet_forward(weights, slice); });
}

Split load_split(const std::string& name, const course::DatasetFiles& files, const std::string& weights_file,
                 bool with_golden) {
  Split s;
  s.name = name;
  s.weights = ln::load_weights(std::string(COURSE_DATA_DIR) + "/weights/" + weights_file);
  s.net = golden::lab04_fold_lenet(s.weights);
  s.data = course::load_dataset(files.test_images, files.test_labels, name);
  s.pixels = course::read_idx(files.test_images).values;
  if (with_golden) {
    const Clock::time_point start = Clock::now();
    s.golden = golden_logits(s.weights, s.data.images);
    s.golden_labels = argmax_rows(s.golden.data(), s.data.size());
    s.golden_accuracy = accuracy_percent(s.golden_labels, s.data.labels);
    std::printf("%s: %zu test images, %s, golden CPU network %.2f %% accurate (computed in %.1f s)\n", name.c_str(),
                s.data.size(), weights_file.c_str(), s.golden_accuracy, ms_since(start) / 1000.0);
  } else {
    std::printf("%s: %zu test images, %s\n", name.c_str(), s.data.size(), weights_file.c_str());
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Check: full splits and partial batches against the golden network
// ---------------------------------------------------------------------------------------------

/// Runs forward() on the first n images with outputs poisoned (NaN logits, labels -1) beforehand,
/// and returns the whole buffers so the caller can also see what was written past image n.
struct Outputs {
  std::vector<float> logits;
  std::vector<int> labels;
};
Outputs run_poisoned(ladder::Rung& rung, const course::DeviceBuffer<float>& d_images, int n,
                     course::DeviceBuffer<float>& d_logits, course::DeviceBuffer<int>& d_labels, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(d_logits.get(), 0xFF, d_logits.bytes(), stream));
  CUDA_CHECK(cudaMemsetAsync(d_labels.get(), 0xFF, d_labels.bytes(), stream));
  rung.forward(d_images.get(), n, d_logits.get(), d_labels.get(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaGetLastError());
  return {d_logits.download(), d_labels.download()};
}

/// One split: the full test set, then n = 1, 7, 37. Prints one line; returns false on failure.
bool check_split(const Pipeline& p, const Split& split, cudaStream_t stream) {
  const int n = static_cast<int>(split.data.size());
  std::unique_ptr<ladder::Rung> rung = p.make();
  rung->prepare(split.net, n);
  const bool fp32 = !rung->reduced_precision();
  course::DeviceBuffer<float> d_images(split.data.images.values());
  course::DeviceBuffer<float> d_logits(static_cast<std::size_t>(n) * kClasses);
  course::DeviceBuffer<int> d_labels(static_cast<std::size_t>(n));

  const Outputs full = run_poisoned(*rung, d_images, n, d_logits, d_labels, stream);
  const BatchVerdict whole = judge_batch(full.logits, full.labels, split, static_cast<std::size_t>(n), fp32, nullptr);
  const double accuracy = accuracy_percent(full.labels, split.data.labels);
  bool ok = whole.ok;
  std::string problems = whole.problem;
  if (!fp32 && std::fabs(accuracy - split.golden_accuracy) > 0.1) {
    ok = false;
    problems += " accuracy differs from the golden network's by more than 0.1 percentage points;";
  }
  for (const int part : {1, 7, 37}) {
    if (part > n) continue;
    const Outputs got = run_poisoned(*rung, d_images, part, d_logits, d_labels, stream);
    // Reduced precision: a partial batch must give the same labels as the same images in the full one.
    const BatchVerdict v = judge_batch(got.logits, got.labels, split, static_cast<std::size_t>(part), fp32, fp32 ? nullptr : &full.labels);
    if (!v.ok) {
      ok = false;
      problems += " n=" + std::to_string(part) + ":" + v.problem;
    }
  }
  std::printf("  %-14s %s accuracy %.2f %% (golden %.2f %%), max |logit - golden| %.2e, labels differ %zu; n=1,7,37 %s\n",
              split.name.c_str(), ok ? "ok   " : "FAIL ", accuracy, split.golden_accuracy, whole.max_logit_error,
              whole.label_mismatches, problems.empty() ? "ok" : "see below");
  if (!problems.empty()) std::printf("    problems:%s\n", problems.c_str());
  return ok;
}

// ---------------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------------

/// How many runs a configuration gets: the asked-for count unless one call is slow, then as many
/// as fit in about kBudgetMs (at least 3), without extra warm-up (the probe call warmed it up).
course::TimerOptions plan_runs(double probe_ms, int repetitions) {
  constexpr double kBudgetMs = 4000.0;
  course::TimerOptions options;
  options.warmup = probe_ms > 200.0 ? 0 : 2;
  options.repetitions = repetitions;
  if (probe_ms * repetitions > kBudgetMs)
    options.repetitions = std::max(3, std::min(repetitions, static_cast<int>(kBudgetMs / std::max(probe_ms, 1e-3))));
  return options;
}

/// Everything the timing of one pipeline needs, for the largest batch asked for.
struct Bench {
  const Split& split;
  int max_batch;
  course::DeviceBuffer<float> d_images, d_logits;
  course::DeviceBuffer<int> d_labels;
  std::uint8_t* h_pixels = nullptr;  ///< pinned
  int* h_labels = nullptr;           ///< pinned
  std::vector<int> expected_labels;  ///< golden labels of the images (empty with --no-check)

  Bench(const Split& s, int batch) : split(s), max_batch(batch) {
    const std::size_t images = static_cast<std::size_t>(batch), have = s.data.size();
    std::vector<float> values(images * kPixelsPerImage);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = s.data.images[i % (have * kPixelsPerImage)];
    d_images = course::DeviceBuffer<float>(values);
    d_logits = course::DeviceBuffer<float>(images * kClasses);
    d_labels = course::DeviceBuffer<int>(images);
    CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&h_pixels), images * kPixelsPerImage));
    CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&h_labels), images * sizeof(int)));
    for (std::size_t i = 0; i < images * kPixelsPerImage; ++i) h_pixels[i] = s.pixels[i % (have * kPixelsPerImage)];
    if (!s.golden_labels.empty())
      for (std::size_t i = 0; i < images; ++i) expected_labels.push_back(s.golden_labels[i % have]);
  }
  ~Bench() {
    cudaFreeHost(h_pixels);  // no throw from a destructor
    cudaFreeHost(h_labels);
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  /// "" when the first `batch` labels (device or host) match the reference, else a description.
  /// The reference: the golden labels for an FP32 pipeline (when there are any), else the
  /// pipeline's own labels from a plain forward() of the same batch (a reduced-precision rung may
  /// differ from the golden network on a few images; its modes must still agree with each other).
  std::string verify(const int* labels, int batch, const std::vector<int>& reference, bool fp32) const {
    const std::vector<int>& want = fp32 && !expected_labels.empty() ? expected_labels : reference;
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) wrong += labels[i] != want[i];
    return wrong == 0 ? "" : std::to_string(wrong) + " of " + std::to_string(batch) + " labels wrong";
  }
};

/// A CUDA graph of one forward() call, or the reason it could not be captured.
struct Graph {
  cudaGraphExec_t exec = nullptr;
  std::string not_capturable;
  ~Graph() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
  }
};

void capture(ladder::Rung& rung, Bench& b, int batch, cudaStream_t stream, Graph& g) {
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  try {
    rung.forward(b.d_images.get(), batch, b.d_logits.get(), b.d_labels.get(), stream);
  } catch (const std::exception& e) {
    g.not_capturable = first_line(e.what());
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (g.not_capturable.empty() && ended != cudaSuccess) g.not_capturable = cudaGetErrorString(ended);
  if (g.not_capturable.empty()) {
    const cudaError_t made = cudaGraphInstantiate(&g.exec, graph, 0);
    if (made != cudaSuccess) g.not_capturable = std::string("instantiate: ") + cudaGetErrorString(made);
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  (void)cudaGetLastError();  // a failed capture leaves its error behind; it is not sticky
}

class Timer {
 public:
  Timer(const Options& options, const course::DeviceInfo& device, const course::speed::MachinePeak& peak,
        CsvWriter& csv, cudaStream_t stream)
      : options_(options), device_(device), peak_(peak), csv_(csv), stream_(stream), gpu_timer_(stream) {}

  std::vector<Row>& rows() { return rows_; }

  /// Times one GPU pipeline in every mode and batch; false if something went wrong.
  bool time_gpu(const Pipeline& p, const Split& split) {
    const int largest = *std::max_element(options_.batches.begin(), options_.batches.end());
    Bench b(split, largest);
    std::unique_ptr<ladder::Rung> rung = p.make();
    rung->prepare(split.net, largest);
    bool ok = true;
    for (const int batch : options_.batches) {
      // The pipeline's own labels for this batch: the reference where there is no golden one.
      CUDA_CHECK(cudaMemsetAsync(b.d_labels.get(), 0xFF, b.d_labels.bytes(), stream_));
      rung->forward(b.d_images.get(), batch, b.d_logits.get(), b.d_labels.get(), stream_);
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      std::vector<int> reference(static_cast<std::size_t>(batch));
      b.d_labels.download(reference.data(), reference.size());
      for (const Mode mode : options_.modes) ok = time_mode(p, *rung, b, batch, mode, reference) && ok;
    }
    return ok;
  }

  void time_cpu(const Pipeline& p, const Split& split) {
    for (const int batch : options_.batches) {
      if (batch > kCpuMaxBatch) {
        std::printf("  cpu    batch %5d: skipped (the CPU is timed up to %d images; its time per image is flat)\n",
                    batch, kCpuMaxBatch);
        continue;
      }
      course::Tensor images(course::Shape{batch, 1, 28, 28});
      const std::size_t have = split.data.images.numel();
      for (std::size_t i = 0; i < images.numel(); ++i) images[i] = split.data.images[i % have];
      const auto once = [&] { (void)golden::lenet_forward(split.weights, images); };
      const Clock::time_point probe = Clock::now();
      once();
      const course::TimerOptions plan = plan_runs(ms_since(probe), options_.repetitions);
      for (int i = 0; i < plan.warmup; ++i) once();
      std::vector<double> samples;
      for (int i = 0; i < plan.repetitions; ++i) {
        const Clock::time_point start = Clock::now();
        once();
        samples.push_back(ms_since(start));
      }
      record(p, "host", batch, course::summarize_samples(samples), "");
    }
  }

 private:
  bool time_mode(const Pipeline& p, ladder::Rung& rung, Bench& b, int batch, Mode mode,
                 const std::vector<int>& reference) {
    const char* mode_name = to_string(mode);
    const bool fp32 = !rung.reduced_precision();
    try {
      course::TimingStats stats;
      std::string wrong;
      if (mode == Mode::device) {
        const auto work = [&](cudaStream_t s) {
          rung.forward(b.d_images.get(), batch, b.d_logits.get(), b.d_labels.get(), s);
        };
        stats = gpu_timer_.time(work, plan_runs(probe_gpu(work), options_.repetitions));
        wrong = b.verify(download_labels(b, batch).data(), batch, reference, fp32);
      } else if (mode == Mode::graph) {
        Graph g;
        capture(rung, b, batch, stream_, g);
        if (!g.not_capturable.empty()) {
          record_not_available(p, mode_name, batch, g.not_capturable);
          return true;
        }
        CUDA_CHECK(cudaMemsetAsync(b.d_labels.get(), 0xFF, b.d_labels.bytes(), stream_));
        const auto work = [&](cudaStream_t s) { CUDA_CHECK(cudaGraphLaunch(g.exec, s)); };
        stats = gpu_timer_.time(work, plan_runs(probe_gpu(work), options_.repetitions));
        wrong = b.verify(download_labels(b, batch).data(), batch, reference, fp32);
      } else {
        std::fill(b.h_labels, b.h_labels + batch, -1);
        const auto once = [&] { rung.classify_from_host(b.h_pixels, batch, b.h_labels, stream_); };
        const Clock::time_point probe = Clock::now();
        once();
        const course::TimerOptions plan = plan_runs(ms_since(probe), options_.repetitions);
        for (int i = 0; i < plan.warmup; ++i) once();
        std::vector<double> samples;
        for (int i = 0; i < plan.repetitions; ++i) {
          gpu_timer_.flush_l2();
          CUDA_CHECK(cudaDeviceSynchronize());
          const Clock::time_point start = Clock::now();
          once();
          samples.push_back(ms_since(start));
        }
        stats = course::summarize_samples(samples);
        wrong = b.verify(b.h_labels, batch, reference, fp32);
      }
      record(p, mode_name, batch, stats, wrong);
      return wrong.empty();
    } catch (const std::exception& e) {
      std::printf("  %-6s batch %5d: FAILED: %s\n", mode_name, batch, first_line(e.what()).c_str());
      return false;
    }
  }

  double probe_gpu(const std::function<void(cudaStream_t)>& work) {
    const Clock::time_point start = Clock::now();
    work(stream_);
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    return ms_since(start);
  }

  std::vector<int> download_labels(const Bench& b, int batch) {
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::vector<int> labels(static_cast<std::size_t>(batch));
    b.d_labels.download(labels.data(), labels.size());
    return labels;
  }

  void record(const Pipeline& p, const char* mode, int batch, const course::TimingStats& stats,
              const std::string& wrong) {
    Row row = make_row(p, mode, batch, stats.median_ms, stats.min_ms, peak_.flops_per_s, device_.name);
    std::printf("  %-6s batch %5d: %s%s%s\n", mode, batch, stats.summary().c_str(), wrong.empty() ? "" : "  WRONG: ",
                wrong.c_str());
    if (!wrong.empty()) return;  // a wrong result has no time worth keeping
    csv_.write(row);
    rows_.push_back(row);
  }

  void record_not_available(const Pipeline& p, const char* mode, int batch, const std::string& why) {
    Row row = make_row(p, mode, batch, -1.0, -1.0, peak_.flops_per_s, device_.name);
    std::printf("  %-6s batch %5d: n/a (%s)\n", mode, batch, why.c_str());
    csv_.write(row);
    rows_.push_back(row);
  }

  const Options& options_;
  const course::DeviceInfo& device_;
  const course::speed::MachinePeak& peak_;
  CsvWriter& csv_;
  cudaStream_t stream_;
  course::GpuTimer gpu_timer_;
  std::vector<Row> rows_;
};

// ---------------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------------

int run(const Options& options, const std::vector<Pipeline>& chosen) {
  if (!course::has_gpu()) {
    std::printf("lab07_ladder: no GPU (%s); nothing to check or time\n", course::gpu_unavailable_reason().c_str());
    return course::kSkipReturnCode;
  }
  CsvWriter csv(options.csv);  // opened first: a bad path fails now, not after minutes of timing
  const course::DeviceInfo device = course::query_device(0);
  const course::speed::MachinePeak peak = course::speed::peak_from_device(device);
  std::printf("lab07_ladder: %s\nFP32 peak %.1f TFLOP/s (%s); %d timed runs per row; FLOPs per image %lld\n\n",
              device.summary().c_str(), peak.flops_per_s / 1e12, peak.source.c_str(), options.repetitions,
              static_cast<long long>(2 * ln::multiply_adds_per_image()));

  const Split fashion = load_split("Fashion-MNIST", course::fashion_mnist_files(), "lenet_fashion_mnist.safetensors",
                                   options.check);
  Split mnist;
  if (options.check)
    mnist = load_split("MNIST", course::mnist_files(COURSE_DATA_DIR), "lenet_mnist.safetensors", true);

  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int failures = 0;
  {
    Timer timer(options, device, peak, csv, stream);
    for (const Pipeline& p : chosen) {
      std::printf("\n%s -- %s\n", describe(p).c_str(), p.reason.c_str());
      try {
        if (p.source == Source::cpu) {
          timer.time_cpu(p, fashion);
          continue;
        }
        if (const std::string why = p.make()->unsupported_reason(); !why.empty()) {
          std::printf("  skipped on this GPU: %s\n", why.c_str());  // e.g. rung 13 before Hopper
          continue;
        }
        if (options.check) {
          const bool ok_mnist = check_split(p, mnist, stream);
          const bool ok_fashion = check_split(p, fashion, stream);
          if (!ok_mnist || !ok_fashion) {
            std::printf("  check FAILED: not timed\n");
            ++failures;
            continue;
          }
        }
        if (!timer.time_gpu(p, fashion)) ++failures;
      } catch (const std::exception& e) {
        std::printf("  FAILED: %s\n", e.what());
        ++failures;
      }
    }
    print_table(timer.rows(), device, peak);
  }
  ladder::release_host_path_scratch();
  CUDA_CHECK(cudaStreamDestroy(stream));
  if (!options.csv.empty()) std::printf("\nCSV rows appended to %s\n", options.csv.c_str());
  if (failures > 0) std::printf("\n%d pipeline(s) FAILED (see above)\n", failures);
  return failures > 0 ? 1 : 0;
}

}  // namespace
}  // namespace runner

int main(int argc, char** argv) {
  runner::Options options;
  std::vector<runner::Pipeline> chosen;
  try {
    options = runner::parse_options(argc, argv);
    if (!options.help && !options.list) chosen = runner::select_pipelines(runner::available_pipelines(), options.versions);
  } catch (const course::Error& e) {
    std::fprintf(stderr, "lab07_ladder: %s\n(lab07_ladder --help lists the options)\n", e.what());
    return 2;
  }
  if (options.help) {
    std::printf("%s", runner::usage().c_str());
    return 0;
  }
  try {
    if (options.list) {
      runner::print_list(runner::available_pipelines());
      return 0;
    }
    return runner::run(options, chosen);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab07_ladder: %s\n", e.what());
    return 1;
  }
}
