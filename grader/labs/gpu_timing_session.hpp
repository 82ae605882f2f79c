// The worker side of the GPU labs' speed gate (see grader/testkit/gpu_speed.hpp): device-resident
// input sets, the outputs, a stream and two events of the harness's own. One timed run:
//   poison the outputs and flush the L2 cache (untimed), record the start event, let the
//   student's pipeline enqueue its work on the harness's stream, record the stop event,
//   synchronise the WHOLE device (work hidden on another stream is waited for here, so it shows
//   in the caller's wall clock even though the events miss it), check for CUDA errors.
// Header-only; included by a lab's harness (.cu), which keeps one Session between calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/tensor.hpp"

namespace grader_gpu_timing {

/// What a lab's pipeline does with one batch: images [n,1,28,28] -> logits [n,classes] (+ labels).
using Launch = std::function<void(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream)>;

class Session {
 public:
  Session(const std::vector<course::Tensor>& image_sets, int classes) : classes_(classes) {
    if (image_sets.empty()) throw course::Error("timing: no input sets");
    images_per_set_ = image_sets[0].dim(0);
    for (const course::Tensor& set : image_sets) {
      if (set.rank() != 4 || set.dim(0) != images_per_set_)
        throw course::Error("timing: every input set must be [N,1,28,28] with the same N");
      sets_.emplace_back(set.values());
    }
    logits_ = course::DeviceBuffer<float>(static_cast<std::size_t>(images_per_set_) * static_cast<std::size_t>(classes));
    labels_ = course::DeviceBuffer<int>(static_cast<std::size_t>(images_per_set_));
    int device = 0, l2_bytes = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute");
    flush_ = course::DeviceBuffer<char>(static_cast<std::size_t>(l2_bytes > 0 ? 2 * l2_bytes : 64 << 20));
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~Session() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// One timed run of `launch` on input set `set`; returns the GPU time in milliseconds.
  double run(int set, const Launch& launch, const std::string& function) {
    if (set < 0 || set >= static_cast<int>(sets_.size())) throw course::Error("timing: no input set " + std::to_string(set));
    check(cudaMemsetAsync(logits_.get(), 0xff, logits_.size() * sizeof(float), stream_), "cudaMemsetAsync");  // NaN
    check(cudaMemsetAsync(labels_.get(), 0xff, labels_.size() * sizeof(int), stream_), "cudaMemsetAsync");
    check(cudaMemsetAsync(flush_.get(), set, flush_.size(), stream_), "cudaMemsetAsync");  // evicts the L2
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    launch(sets_[static_cast<std::size_t>(set)].get(), static_cast<int>(images_per_set_), logits_.get(), labels_.get(),
           stream_);
    check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    check(cudaDeviceSynchronize(), function + " (while the timed run executed)");
    check(cudaGetLastError(), function);
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return static_cast<double>(ms);
  }

  /// The outputs of the last run.
  void result(course::Tensor& logits, std::vector<int>& labels) {
    logits = course::Tensor(course::Shape{images_per_set_, classes_});
    check(cudaMemcpy(logits.data(), logits_.get(), logits.bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy");
    labels.assign(static_cast<std::size_t>(images_per_set_), -1);
    check(cudaMemcpy(labels.data(), labels_.get(), labels.size() * sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

 private:
  static void check(cudaError_t status, const std::string& what) {
    if (status != cudaSuccess) throw course::Error(what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
  }

  int classes_;
  std::int64_t images_per_set_ = 0;
  std::vector<course::DeviceBuffer<float>> sets_;
  course::DeviceBuffer<float> logits_;
  course::DeviceBuffer<int> labels_;
  course::DeviceBuffer<char> flush_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

/// What a lab's harness keeps between the speed gate's calls: the student's pipeline (built by
/// timing_prepare) and the Session with the input sets.
template <class Pipeline>
class TimedPipeline {
 public:
  void prepare(std::unique_ptr<Pipeline> pipeline, const std::vector<course::Tensor>& image_sets, int classes) {
    session_.reset();
    pipeline_ = std::move(pipeline);
    session_ = std::make_unique<Session>(image_sets, classes);
    if (cudaDeviceSynchronize() != cudaSuccess) throw course::Error("timing_prepare: the GPU failed while uploading");
  }
  Pipeline& pipeline() {
    require_prepared();
    return *pipeline_;
  }
  Session& session() {
    require_prepared();
    return *session_;
  }
  void reset() {
    session_.reset();
    pipeline_.reset();
  }

 private:
  void require_prepared() const {
    if (!pipeline_ || !session_) throw course::Error("timing: timing_prepare was not called (or failed)");
  }
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<Session> session_;
};

}  // namespace grader_gpu_timing
