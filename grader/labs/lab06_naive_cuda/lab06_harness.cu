// Lab 06's trusted harness (see lab06_harness.hpp): host tensors in, host tensors out, the
// student's device-pointer functions in between.
#include "lab06_harness.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "gpu_timing_session.hpp"
#include "course/error.hpp"
#include "course/lenet.hpp"
#include "labs/lab06_naive_cuda.hpp"

namespace lab06_harness {
namespace {

using course::Tensor;

/// A stream of the harness's own. A blocking one (the default flags) on purpose: it is ordered
/// with the legacy default stream, so while it is being captured into a graph, a launch the
/// student put on the default stream breaks the capture with an error instead of running
/// unseen outside the graph.
class Stream {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreate(&stream_)); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

void require(bool ok, const std::string& message) {
  if (!ok) throw course::Error("lab06 harness: " + message);
}

int as_int(std::int64_t value, const std::string& what) {
  require(value >= 0 && value <= INT_MAX, what + " does not fit an int: " + std::to_string(value));
  return static_cast<int>(value);
}

/// Turns a pending CUDA error into a course::Error that names the student's function; `when`
/// says whether it showed at the launch or only when the GPU ran the kernel.
void check_cuda(cudaError_t status, const std::string& function, const char* when) {
  if (status == cudaSuccess) return;
  std::string message = "CUDA error " + std::string(cudaGetErrorName(status)) + " " + when + " " + function + ": " +
                        cudaGetErrorString(status);
  if (status == cudaErrorIllegalAddress || status == cudaErrorMisalignedAddress)
    message += " (an index outside a buffer; run the test program under compute-sanitizer to find the line)";
  throw course::Error(message);
}

/// Waits for everything on the stream and reports the first error of `function`.
void finish(const Stream& stream, const std::string& function) {
  check_cuda(cudaGetLastError(), function, "at the launch of a kernel in");
  check_cuda(cudaStreamSynchronize(stream.get()), function, "while the GPU ran");
  // Work the student wrongly put on another stream of their own: wait for it too, so that its
  // faults are reported here and not in the next test.
  check_cuda(cudaDeviceSynchronize(), function, "while the GPU ran");
}

/// Device copy of a host tensor; upload is synchronous (cudaMemcpy), so it is complete when the
/// student's kernels start.
course::DeviceBuffer<float> upload(const Tensor& t) { return course::DeviceBuffer<float>(t.values()); }

// Every output buffer gets a guard zone of 1,024 poisoned elements after its end (more than the
// largest block), checked after the call: a kernel without a bounds check writes past the end
// of its output, which usually does not crash -- it silently overwrites a neighbour. Here it is
// caught and named.
constexpr std::size_t kGuard = 1024;

/// An output of `count` elements in a buffer of count + kGuard, every byte 0xFF: NaN as a
/// float, -1 as an int.
template <typename T>
class GuardedOutput {
 public:
  explicit GuardedOutput(std::size_t count) : count_(count), buffer_(count + kGuard) {
    buffer_.fill_bytes(0xFF);
    CUDA_CHECK(cudaDeviceSynchronize());  // the memset is complete before any student kernel runs
  }
  T* get() { return buffer_.get(); }
  std::size_t count() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  /// Throws course::Error if `function` wrote into the guard zone.
  void check_guard(const std::string& function) const {
    std::vector<T> guard(kGuard);
    CUDA_CHECK(cudaMemcpy(guard.data(), buffer_.get() + count_, kGuard * sizeof(T), cudaMemcpyDeviceToHost));
    const auto* bytes = reinterpret_cast<const unsigned char*>(guard.data());
    for (std::size_t j = 0; j < kGuard * sizeof(T); ++j)
      if (bytes[j] != 0xFF)
        throw course::Error(function + " wrote past the end of its output: element " +
                            std::to_string(count_ + j / sizeof(T)) + " of an output of " + std::to_string(count_) +
                            " elements (a missing bounds check, or a wrong offset?)");
  }
  /// Checks the guard, then copies the `count` output elements to the host.
  void download(T* host, const std::string& function) const {
    check_guard(function);
    buffer_.download(host, count_);
  }
  std::vector<T> download(const std::string& function) const {
    std::vector<T> host(count_);
    download(host.data(), function);
    return host;
  }

 private:
  std::size_t count_;
  course::DeviceBuffer<T> buffer_;
};

void require_rank(const Tensor& t, std::size_t rank, const std::string& name) {
  require(t.rank() == rank && t.numel() > 0,
          name + " must be a non-empty " + std::to_string(rank) + "-D tensor, got " + course::shape_to_string(t.shape()));
}

}  // namespace

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, int pad, Tensor& out) {
  require_rank(x, 4, "x");
  require_rank(w, 4, "w");
  require(w.dim(1) == x.dim(1), "w's channels differ from x's");
  b.expect_shape({w.dim(0)}, "b");
  const std::int64_t P = x.dim(2) + 2 * pad - w.dim(2) + 1, Q = x.dim(3) + 2 * pad - w.dim(3) + 1;
  require(P >= 1 && Q >= 1, "the kernel does not fit the padded input");
  out.expect_shape({x.dim(0), w.dim(0), P, Q}, "out");

  Stream stream;
  const auto d_x = upload(x), d_w = upload(w), d_b = upload(b);
  GuardedOutput<float> d_out(out.numel());
  lab06::conv2d_forward(d_x.get(), d_w.get(), d_b.get(), d_out.get(), as_int(x.dim(0), "N"), as_int(x.dim(1), "C"),
                        as_int(x.dim(2), "H"), as_int(x.dim(3), "W"), as_int(w.dim(0), "K"), as_int(w.dim(2), "R"),
                        as_int(w.dim(3), "S"), pad, stream.get());
  finish(stream, "lab06::conv2d_forward");
  d_out.download(out.data(), "lab06::conv2d_forward");
}

void relu_inplace(Tensor& data) {
  require(data.numel() > 0, "data must not be empty");
  Stream stream;
  GuardedOutput<float> d_data(data.numel());
  CUDA_CHECK(cudaMemcpy(d_data.get(), data.data(), d_data.bytes(), cudaMemcpyHostToDevice));
  lab06::relu_inplace(d_data.get(), as_int(static_cast<std::int64_t>(data.numel()), "count"), stream.get());
  finish(stream, "lab06::relu_inplace");
  d_data.download(data.data(), "lab06::relu_inplace");
}

void max_pool2d(const Tensor& x, int window, int stride, Tensor& out) {
  require_rank(x, 4, "x");
  require(window >= 1 && stride >= 1 && window <= x.dim(2) && window <= x.dim(3), "invalid window or stride");
  out.expect_shape({x.dim(0), x.dim(1), (x.dim(2) - window) / stride + 1, (x.dim(3) - window) / stride + 1}, "out");

  Stream stream;
  const auto d_x = upload(x);
  GuardedOutput<float> d_out(out.numel());
  lab06::max_pool2d(d_x.get(), d_out.get(), as_int(x.dim(0), "N"), as_int(x.dim(1), "C"), as_int(x.dim(2), "H"),
                    as_int(x.dim(3), "W"), window, stride, stream.get());
  finish(stream, "lab06::max_pool2d");
  d_out.download(out.data(), "lab06::max_pool2d");
}

void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& out) {
  require_rank(x, 2, "x");
  require_rank(w, 2, "w");
  require(w.dim(1) == x.dim(1), "w's in_features differ from x's");
  b.expect_shape({w.dim(0)}, "b");
  out.expect_shape({x.dim(0), w.dim(0)}, "out");

  Stream stream;
  const auto d_x = upload(x), d_w = upload(w), d_b = upload(b);
  GuardedOutput<float> d_out(out.numel());
  lab06::linear_forward(d_x.get(), d_w.get(), d_b.get(), d_out.get(), as_int(x.dim(0), "N"),
                        as_int(x.dim(1), "in_features"), as_int(w.dim(0), "out_features"), stream.get());
  finish(stream, "lab06::linear_forward");
  d_out.download(out.data(), "lab06::linear_forward");
}

std::vector<int> argmax_rows(const Tensor& logits) {
  require_rank(logits, 2, "logits");
  Stream stream;
  const auto d_logits = upload(logits);
  GuardedOutput<int> d_labels(static_cast<std::size_t>(logits.dim(0)));
  lab06::argmax_rows(d_logits.get(), d_labels.get(), as_int(logits.dim(0), "N"), as_int(logits.dim(1), "classes"),
                     stream.get());
  finish(stream, "lab06::argmax_rows");
  return d_labels.download("lab06::argmax_rows");
}

namespace {

constexpr std::int64_t kImageFloats = std::int64_t{course::lenet::kInputSize} * course::lenet::kInputSize;

void require_images(const Tensor& images, const Tensor& logits) {
  namespace ln = course::lenet;
  require(images.rank() == 4 && images.dim(0) >= 1 && images.dim(1) == ln::kInputChannels &&
              images.dim(2) == ln::kInputSize && images.dim(3) == ln::kInputSize,
          "images must be [N, 1, 28, 28], got " + course::shape_to_string(images.shape()));
  logits.expect_shape({images.dim(0), ln::kNumClasses}, "logits");
}

}  // namespace

void lenet_forward(const lab04::FoldedLeNet& net, const Tensor& images, int max_batch, Tensor& logits,
                   std::vector<int>& labels) {
  require_images(images, logits);
  require(max_batch >= 1, "max_batch must be >= 1");
  const int total = as_int(images.dim(0), "N");

  Stream stream;
  lab06::NaiveLeNet model(net, max_batch);  // construction may upload synchronously; that is fine
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto d_images = upload(images);
  GuardedOutput<float> d_logits(logits.numel());
  GuardedOutput<int> d_labels(static_cast<std::size_t>(total));
  // All batches back to back without waiting in between: that is how the network is meant to
  // run, and a forward() that leans on a synchronisation it does not do itself shows here.
  for (int begin = 0; begin < total; begin += max_batch) {
    const int count = std::min(max_batch, total - begin);
    model.forward(d_images.get() + begin * kImageFloats, count, d_logits.get() + std::int64_t{begin} * course::lenet::kNumClasses,
                  d_labels.get() + begin, stream.get());
  }
  finish(stream, "lab06::NaiveLeNet::forward");
  d_logits.download(logits.data(), "lab06::NaiveLeNet::forward");
  labels = d_labels.download("lab06::NaiveLeNet::forward");
}

void lenet_forward_captured(const lab04::FoldedLeNet& net, const Tensor& images, Tensor& logits,
                            std::vector<int>& labels) {
  require_images(images, logits);
  const int total = as_int(images.dim(0), "N");

  Stream stream;
  lab06::NaiveLeNet model(net, total);
  const auto d_images = upload(images);
  GuardedOutput<float> d_logits(logits.numel());
  GuardedOutput<int> d_labels(static_cast<std::size_t>(total));

  // Global mode: while the capture runs, an allocation, a synchronisation, a blocking copy or a
  // launch on the legacy default stream is an error instead of happening.
  CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
  std::string failure;
  cudaGraph_t graph = nullptr;
  // Whatever happens inside forward(), the capture must be ended, or the stream stays unusable.
  const auto end_capture = [&stream, &graph] {
    const cudaError_t status = cudaStreamEndCapture(stream.get(), &graph);
    cudaGetLastError();  // capture errors are not sticky; clear them so that later calls start clean
    return status;
  };
  try {
    model.forward(d_images.get(), total, d_logits.get(), d_labels.get(), stream.get());
  } catch (const course::NotImplemented&) {
    end_capture();
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;  // "not implemented" stays what it is
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "an exception that is not a std::exception";
  }
  const cudaError_t end = end_capture();
  if (!failure.empty() || end != cudaSuccess || graph == nullptr) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (failure.empty()) failure = std::string("the capture ended with ") + cudaGetErrorName(end) + ": " + cudaGetErrorString(end);
    throw course::Error(
        "lab06::NaiveLeNet::forward must only launch kernels on the stream it is given (no cudaMalloc, no "
        "cudaMemcpy, no synchronisation, no other stream) -- recording it as a CUDA graph failed: " + failure);
  }

  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check_cuda(made, "lab06::NaiveLeNet::forward", "when instantiating the graph recorded from");
  // Twice, with the outputs poisoned in between: the second run must write them all again.
  cudaError_t status = cudaGraphLaunch(exec, stream.get());
  if (status == cudaSuccess) status = cudaStreamSynchronize(stream.get());
  if (status == cudaSuccess) status = cudaMemsetAsync(d_logits.get(), 0xFF, d_logits.bytes(), stream.get());  // outputs only, not the guards
  if (status == cudaSuccess) status = cudaMemsetAsync(d_labels.get(), 0xFF, d_labels.bytes(), stream.get());
  if (status == cudaSuccess) status = cudaGraphLaunch(exec, stream.get());
  cudaGraphExecDestroy(exec);
  check_cuda(status, "lab06::NaiveLeNet::forward", "when replaying the graph recorded from");
  finish(stream, "lab06::NaiveLeNet::forward (replayed as a CUDA graph)");
  d_logits.download(logits.data(), "lab06::NaiveLeNet::forward");
  labels = d_labels.download("lab06::NaiveLeNet::forward");
}

void call_with_arguments(const std::string& function, const std::vector<int>& sizes, const std::string& null_argument) {
  constexpr std::size_t kScratch = 1 << 16;
  course::DeviceBuffer<float> a(kScratch), b(kScratch), c(kScratch), d(kScratch);
  course::DeviceBuffer<int> labels(kScratch);
  a.fill_bytes(0);
  b.fill_bytes(0);
  c.fill_bytes(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  // The named pointer becomes nullptr; every other one points at scratch memory.
  const auto ptr = [&](const char* name, course::DeviceBuffer<float>& buffer) {
    return null_argument == name ? nullptr : buffer.get();
  };
  const auto need = [&](std::size_t count) {
    require(sizes.size() == count, function + " takes " + std::to_string(count) + " sizes, got " + std::to_string(sizes.size()));
  };
  Stream stream;
  const std::vector<int>& s = sizes;
  if (function == "conv2d_forward") {
    need(8);
    lab06::conv2d_forward(ptr("d_input", a), ptr("d_weight", b), ptr("d_bias", c), ptr("d_output", d), s[0], s[1], s[2],
                          s[3], s[4], s[5], s[6], s[7], stream.get());
  } else if (function == "relu_inplace") {
    need(1);
    lab06::relu_inplace(ptr("d_data", a), s[0], stream.get());
  } else if (function == "max_pool2d") {
    need(6);
    lab06::max_pool2d(ptr("d_input", a), ptr("d_output", d), s[0], s[1], s[2], s[3], s[4], s[5], stream.get());
  } else if (function == "linear_forward") {
    need(3);
    lab06::linear_forward(ptr("d_input", a), ptr("d_weight", b), ptr("d_bias", c), ptr("d_output", d), s[0], s[1], s[2],
                          stream.get());
  } else if (function == "argmax_rows") {
    need(2);
    lab06::argmax_rows(ptr("d_logits", a), null_argument == "d_labels" ? nullptr : labels.get(), s[0], s[1], stream.get());
  } else {
    require(false, "unknown function '" + function + "'");
  }
  finish(stream, "lab06::" + function);
}

void call_lenet_with_arguments(const lab04::FoldedLeNet& net, int max_batch, int n, const std::string& null_argument) {
  const auto images = static_cast<std::size_t>(std::max(n, 1));
  course::DeviceBuffer<float> d_images(images * static_cast<std::size_t>(kImageFloats)), d_logits(images * course::lenet::kNumClasses);
  course::DeviceBuffer<int> d_labels(images);
  d_images.fill_bytes(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  Stream stream;
  lab06::NaiveLeNet model(net, max_batch);
  model.forward(null_argument == "d_images" ? nullptr : d_images.get(), n,
                null_argument == "d_logits" ? nullptr : d_logits.get(),
                null_argument == "d_labels" ? nullptr : d_labels.get(), stream.get());
  finish(stream, "lab06::NaiveLeNet::forward");
}

namespace {

grader_gpu_timing::TimedPipeline<lab06::NaiveLeNet>& timing() {
  static grader_gpu_timing::TimedPipeline<lab06::NaiveLeNet> t;
  return t;
}

}  // namespace

void timing_prepare(const lab04::FoldedLeNet& net, const std::vector<Tensor>& image_sets) {
  timing().reset();
  require(!image_sets.empty(), "timing_prepare: no input sets");
  timing().prepare(std::make_unique<lab06::NaiveLeNet>(net, as_int(image_sets[0].dim(0), "N")), image_sets, course::lenet::kNumClasses);
}

double timing_run(int set) {
  auto& t = timing();
  return t.session().run(set, [&](const float* images, int n, float* logits, int* labels, cudaStream_t stream) { t.pipeline().forward(images, n, logits, labels, stream); }, "lab06::NaiveLeNet::forward");
}

void timing_result(Tensor& logits, std::vector<int>& labels) {
  timing().session().result(logits, labels);
}

}  // namespace lab06_harness
