// Lab 07's trusted harness (see lab07_harness.hpp): host tensors in, host tensors out, the
// student's FastLeNet in between; and the speed gate's timed pipelines (the student's, or in the
// reference worker the lab 06 naive one registered by naive_baseline.cu).
#include "lab07_harness.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/lenet.hpp"
#include "gpu_harness_kit.hpp"
#include "gpu_timing_session.hpp"
#include "lab07_baseline.hpp"
#include "labs/lab07_optimized_cuda.hpp"

namespace lab07_harness {
namespace {

using course::Tensor;
using grader_gpu_harness::finish;
using grader_gpu_harness::GuardedOutput;
using grader_gpu_harness::Stream;
using grader_gpu_harness::upload;

const std::string kForward = "lab07::FastLeNet::forward";
constexpr std::int64_t kImageFloats = std::int64_t{course::lenet::kInputSize} * course::lenet::kInputSize;

void require(bool ok, const std::string& message) {
  if (!ok) throw course::Error("lab07 harness: " + message);
}

int as_int(std::int64_t value, const std::string& what) {
  require(value >= 0 && value <= INT_MAX, what + " does not fit an int: " + std::to_string(value));
  return static_cast<int>(value);
}


void require_images(const Tensor& images, const Tensor& logits) {
  namespace ln = course::lenet;
  require(images.rank() == 4 && images.dim(0) >= 1 && images.dim(1) == ln::kInputChannels &&
              images.dim(2) == ln::kInputSize && images.dim(3) == ln::kInputSize,
          "images must be [N, 1, 28, 28], got " + course::shape_to_string(images.shape()));
  logits.expect_shape({images.dim(0), ln::kNumClasses}, "logits");
}

// ---- the speed gate's pipelines -------------------------------------------------------------

/// The student's FastLeNet as the speed gate times it.
class StudentPipeline final : public TimedLeNet {
 public:
  StudentPipeline(const lab04::FoldedLeNet& net, int max_batch) : model_(net, max_batch) {}
  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    model_.forward(d_images, n, d_logits, d_labels, stream);
  }

 private:
  lab07::FastLeNet model_;
};

BaselineFactory& naive_factory() {
  static BaselineFactory factory = nullptr;  // set before main() in the reference worker only
  return factory;
}

grader_gpu_timing::TimedPipeline<TimedLeNet>& timing() {
  static grader_gpu_timing::TimedPipeline<TimedLeNet> t;
  return t;
}

/// Every function that builds a FastLeNet calls this first: the one a previous timing_prepare
/// built must be gone (its weights may sit in __constant__ memory, which the new one overwrites).
void release_timing_pipeline() { timing().reset(); }

}  // namespace

bool register_naive_baseline(BaselineFactory factory) {
  naive_factory() = factory;
  return true;
}

void lenet_forward(const lab04::FoldedLeNet& net, const Tensor& images, int max_batch, Tensor& logits,
                   std::vector<int>& labels) {
  require_images(images, logits);
  require(max_batch >= 1, "max_batch must be >= 1");
  const int total = as_int(images.dim(0), "N");

  release_timing_pipeline();
  lab07::FastLeNet model(net, max_batch);  // construction may upload synchronously; that is fine
  CUDA_CHECK(cudaDeviceSynchronize());
  grader_gpu_harness::forward_in_batches(model, images, total, max_batch, logits, labels, kForward);
}

void lenet_forward_captured(const lab04::FoldedLeNet& net, const Tensor& images, Tensor& logits,
                            std::vector<int>& labels) {
  require_images(images, logits);
  const int total = as_int(images.dim(0), "N");

  release_timing_pipeline();
  lab07::FastLeNet model(net, total);
  CUDA_CHECK(cudaDeviceSynchronize());  // the constructor's uploads are done before the capture starts
  grader_gpu_harness::forward_captured(model, images, total, logits, labels, kForward);
}

void call_lenet_with_arguments(const lab04::FoldedLeNet& net, int max_batch, int n, const std::string& null_argument) {
  const auto images = static_cast<std::size_t>(std::max(n, 1));
  course::DeviceBuffer<float> d_images(images * static_cast<std::size_t>(kImageFloats));
  course::DeviceBuffer<float> d_logits(images * course::lenet::kNumClasses);
  course::DeviceBuffer<int> d_labels(images);
  d_images.fill_bytes(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  release_timing_pipeline();
  Stream stream;
  lab07::FastLeNet model(net, max_batch);
  model.forward(null_argument == "d_images" ? nullptr : d_images.get(), n,
                null_argument == "d_logits" ? nullptr : d_logits.get(),
                null_argument == "d_labels" ? nullptr : d_labels.get(), stream.get());
  finish(stream, kForward);
}

void timing_prepare(const lab04::FoldedLeNet& net, const Tensor& pool, const std::string& pipeline, int forwards) {
  release_timing_pipeline();
  require(pool.rank() == 4 && pool.dim(0) >= 1, "timing_prepare: the pool must be [N,1,28,28]");
  const int batch = as_int(pool.dim(0), "N");
  std::unique_ptr<TimedLeNet> timed;
  if (pipeline == "student") {
    timed = std::make_unique<StudentPipeline>(net, batch);
  } else if (pipeline == "naive") {
    if (naive_factory() == nullptr) throw course::Error("the naive baseline exists only in the reference worker");
    timed = naive_factory()(net, batch);
  } else {
    throw course::Error("lab07 harness: timing_prepare: unknown pipeline '" + pipeline + "' (\"student\" or \"naive\")");
  }
  timing().prepare(std::move(timed), pool, course::lenet::kNumClasses, forwards);
}

void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms) {
  auto& t = timing();
  t.session().round(
      nonce, run,
      [&](const float* images, int n, float* out, int* out_labels, cudaStream_t stream) {
        t.pipeline().forward(images, n, out, out_labels, stream);
      },
      kForward, event_ms);
}

}  // namespace lab07_harness
