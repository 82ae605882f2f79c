// What the GPU labs' trusted harnesses (labs 06 and 07) share: a stream of the harness's own,
// CUDA errors turned into course::Error naming the student's function, poisoned outputs with a
// guard zone after them, and the CUDA-graph check of a forward() that must only enqueue work on
// the stream it is given. Header-only; included by a lab's harness (.cu) in the worker.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/lenet.hpp"
#include "course/tensor.hpp"

namespace grader_gpu_harness {

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

/// Turns a pending CUDA error into a course::Error that names the student's function; `when`
/// says whether it showed at the launch or only when the GPU ran the kernel.
inline void check_cuda(cudaError_t status, const std::string& function, const char* when) {
  if (status == cudaSuccess) return;
  std::string message = "CUDA error " + std::string(cudaGetErrorName(status)) + " " + when + " " + function + ": " +
                        cudaGetErrorString(status);
  if (status == cudaErrorIllegalAddress || status == cudaErrorMisalignedAddress)
    message += " (an index outside a buffer; run the test program under compute-sanitizer to find the line)";
  throw course::Error(message);
}

/// Waits for everything on the stream and reports the first error of `function`.
inline void finish(const Stream& stream, const std::string& function) {
  check_cuda(cudaGetLastError(), function, "at the launch of a kernel in");
  check_cuda(cudaStreamSynchronize(stream.get()), function, "while the GPU ran");
  // Work the student wrongly put on another stream of their own: wait for it too, so that its
  // faults are reported here and not in the next test.
  check_cuda(cudaDeviceSynchronize(), function, "while the GPU ran");
}

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

// Every input gets a guard zone too: four images' worth of NaN after its end. A kernel that reads
// past its input (an index computed for a larger batch, a missing bounds check on a load) does not
// crash and, inside one allocation, is invisible to compute-sanitizer -- but it reads NaN, which
// spreads into the outputs the tests check. After the call the input and its guard must be
// unchanged: inputs are const, and a pipeline that scribbles on them is wrong even when its own
// outputs happen to be right.
// Under compute-sanitizer (the grader's sanitizer runs set COURSE_UNDER_SANITIZER) the input is
// allocated without its guard, so that memcheck sees a read past its end as an error.
constexpr std::size_t kInputGuard = 4 * 28 * 28;

inline std::size_t input_guard() {
  static const std::size_t guard = std::getenv("COURSE_UNDER_SANITIZER") != nullptr ? 0 : kInputGuard;
  return guard;
}

/// A device copy of a host tensor followed by input_guard() NaNs; cudaMemcpy is synchronous, so it
/// is complete when the student's kernels start.
class GuardedInput {
 public:
  explicit GuardedInput(const course::Tensor& t) : host_(t.values()), buffer_(t.numel() + input_guard()) {
    buffer_.fill_bytes(0xFF);
    if (!host_.empty()) CUDA_CHECK(cudaMemcpy(buffer_.get(), host_.data(), host_.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  const float* get() const { return buffer_.get(); }

  /// Throws course::Error if `function` changed the input or wrote into the guard after it.
  void check_unchanged(const std::string& function) const {
    std::vector<float> now(host_.size() + input_guard());
    buffer_.download(now.data(), now.size());
    const auto* was = reinterpret_cast<const unsigned char*>(host_.data());
    const auto* is = reinterpret_cast<const unsigned char*>(now.data());
    for (std::size_t j = 0; j < now.size() * sizeof(float); ++j) {
      const unsigned char expected = j < host_.size() * sizeof(float) ? was[j] : 0xFF;
      if (is[j] == expected) continue;
      const std::size_t element = j / sizeof(float);
      throw course::Error(element < host_.size()
                              ? function + " changed its input: element " + std::to_string(element) + " of " +
                                    std::to_string(host_.size()) + " (inputs are const: write only to the outputs)"
                              : function + " wrote past the end of its input: element " + std::to_string(element) +
                                    " of an input of " + std::to_string(host_.size()) + " elements");
    }
  }

 private:
  std::vector<float> host_;
  course::DeviceBuffer<float> buffer_;
};

inline GuardedInput upload(const course::Tensor& t) { return GuardedInput(t); }

/// A LeNet pipeline's forward() (lab06::NaiveLeNet, lab07::FastLeNet), already built for
/// max_batch images, on all `images` [total,1,28,28] in consecutive batches of max_batch, the last
/// one possibly smaller; logits [total,10] and labels come back, guard zones checked.
template <class Pipeline>
void forward_in_batches(Pipeline& model, const course::Tensor& images, int total, int max_batch,
                        course::Tensor& logits, std::vector<int>& labels, const std::string& function) {
  namespace ln = course::lenet;
  constexpr std::int64_t kImageFloats = std::int64_t{ln::kInputSize} * ln::kInputSize;
  Stream stream;
  const auto d_images = upload(images);
  GuardedOutput<float> d_logits(logits.numel());
  GuardedOutput<int> d_labels(static_cast<std::size_t>(total));
  // All batches back to back without waiting in between: that is how the network is meant to
  // run, and a forward() that leans on a synchronisation it does not do itself (a scratch buffer
  // reused while the previous batch still reads it) shows here.
  for (int begin = 0; begin < total; begin += max_batch) {
    const int count = std::min(max_batch, total - begin);
    model.forward(d_images.get() + begin * kImageFloats, count, d_logits.get() + std::int64_t{begin} * ln::kNumClasses,
                  d_labels.get() + begin, stream.get());
  }
  finish(stream, function);
  d_images.check_unchanged(function);
  d_logits.download(logits.data(), function);
  labels = d_labels.download(function);
}


/// Records `enqueue` (the student's forward() on `stream`) into a CUDA graph in global capture
/// mode, then launches the graph twice, calling `poison` (which enqueues memsets of the outputs on
/// the stream it is given) in between: the second run must write every output again. Global mode
/// makes an allocation, a synchronisation, a blocking copy or a launch on the legacy default
/// stream an error instead of happening, so this proves that forward() only enqueues kernels on
/// its stream. Throws course::Error describing what broke the capture; a
/// course::NotImplemented from `enqueue` passes through unchanged. Returns after finish().
inline void capture_and_replay(const Stream& stream, const std::function<void(cudaStream_t)>& enqueue,
                               const std::function<cudaError_t(cudaStream_t)>& poison, const std::string& function) {
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
    enqueue(stream.get());
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
    throw course::Error(function +
                        " must only launch kernels on the stream it is given (no cudaMalloc, no cudaMemcpy, no "
                        "synchronisation, no other stream) -- recording it as a CUDA graph failed: " + failure);
  }

  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check_cuda(made, function, "when instantiating the graph recorded from");
  // Twice, with the outputs poisoned in between: the second run must write them all again.
  cudaError_t status = cudaGraphLaunch(exec, stream.get());
  if (status == cudaSuccess) status = cudaStreamSynchronize(stream.get());
  if (status == cudaSuccess) status = poison(stream.get());
  if (status == cudaSuccess) status = cudaGraphLaunch(exec, stream.get());
  cudaGraphExecDestroy(exec);
  check_cuda(status, function, "when replaying the graph recorded from");
  finish(stream, function + " (replayed as a CUDA graph)");
}

/// A pipeline's forward() on all `total` images in one call, recorded into a CUDA graph and
/// replayed twice (capture_and_replay); logits and labels of the second replay come back.
template <class Pipeline>
void forward_captured(Pipeline& model, const course::Tensor& images, int total, course::Tensor& logits,
                      std::vector<int>& labels, const std::string& function) {
  Stream stream;
  const auto d_images = upload(images);
  GuardedOutput<float> d_logits(logits.numel());
  GuardedOutput<int> d_labels(static_cast<std::size_t>(total));
  capture_and_replay(
      stream, [&](cudaStream_t s) { model.forward(d_images.get(), total, d_logits.get(), d_labels.get(), s); },
      [&](cudaStream_t s) {  // outputs only, not the guards
        cudaError_t status = cudaMemsetAsync(d_logits.get(), 0xFF, d_logits.bytes(), s);
        if (status == cudaSuccess) status = cudaMemsetAsync(d_labels.get(), 0xFF, d_labels.bytes(), s);
        return status;
      },
      function);
  d_images.check_unchanged(function);
  d_logits.download(logits.data(), function);
  labels = d_labels.download(function);
}

}  // namespace grader_gpu_harness
