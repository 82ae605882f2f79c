// The worker side of the GPU labs' speed gate (see grader/testkit/gpu_speed.hpp). Nothing here
// decides anything: the test program times each round on its own clock, from the request it sends
// to the last byte of the reply, and checks every output of every round against the reference
// solution's outputs for the same nonce. What this side must do is make every round real work:
//
//   one round (nonce, R):
//     build R input batches on the GPU from the nonce: each image a nonce-chosen image of the
//       real test split plus nonce-seeded noise of +-1/256 per pixel, so no two rounds, no two
//       batches and no two images repeat, and nothing computed before the round can be reused
//     poison every output (NaN logits, -1 labels) and flush the L2 cache
//     call the pipeline R times, one batch each, on the harness's stream
//     synchronise the WHOLE device (work hidden on another stream is waited for)
//     copy every output into the memory region shared with the test program (a sealed memfd,
//     kWorkerSharedFd in grader/rpc/frames.hpp, pinned here so the copy runs at full speed);
//     the test program stops its clock once it has copied them out
//   a "null" round does all of the above except calling the pipeline: the fixed cost of a round,
//   which the test program measures in the reference worker and subtracts for both sides.
//
// CUDA events around each call are kept as information (the report prints them next to the
// trusted times); they never decide. Header-only; included by a lab's harness (.cu).
#pragma once

#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/tensor.hpp"
#include "rpc/frames.hpp"

namespace grader_gpu_timing {

/// What a lab's pipeline does with one batch: images [n,1,28,28] -> logits [n,classes] (+ labels).
using Launch = std::function<void(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream)>;

/// The pixels of one image.
constexpr int kImageFloats = 28 * 28;
/// Largest noise added to a pixel: small against the 1/255 steps of the real images' grey levels,
/// large enough that every image of every round is new.
constexpr float kNoise = 1.0f / 256;

/// splitmix64's finaliser: a bijective mix of 64 bits, the same on the host and the device.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

namespace {

/// Fills `out` with `total_images` images: image j is pool image mix(nonce, j) mod pool_images,
/// every pixel plus a nonce-seeded noise in [-kNoise, kNoise).
__global__ void make_round_inputs(const float* pool, std::int64_t pool_images, float* out, std::int64_t total_images,
                                  std::uint64_t nonce) {
  const std::int64_t total = total_images * kImageFloats;
  for (std::int64_t idx = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t image = idx / kImageFloats;
    const std::int64_t pixel = idx % kImageFloats;
    const std::int64_t source = static_cast<std::int64_t>(mix64(nonce ^ mix64(static_cast<std::uint64_t>(image))) %
                                                          static_cast<std::uint64_t>(pool_images));
    const std::uint64_t bits = mix64(nonce + 0xD1B54A32D192ED03ull * static_cast<std::uint64_t>(idx + 1));
    const float unit = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    out[idx] = pool[source * kImageFloats + pixel] + (2.0f * unit - 1.0f) * kNoise;
  }
}

}  // namespace

/// The region shared with the test program, mapped once (read-write) in this worker.
inline unsigned char* shared_region() {
  static unsigned char* region = [] {
    void* map = ::mmap(nullptr, grader::rpc::kSharedRegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                       grader::rpc::kWorkerSharedFd, 0);
    if (map == MAP_FAILED) throw course::Error("timing: the region shared with the test program cannot be mapped");
    return static_cast<unsigned char*>(map);
  }();
  return region;
}

class Session {
 public:
  /// `pool`: the real images [N,1,28,28] the rounds are made from; every batch has N images.
  /// `forwards`: how many pipeline calls one round makes (R).
  Session(const course::Tensor& pool, int classes, int forwards) : classes_(classes), forwards_(forwards) {
    if (pool.rank() != 4 || pool.dim(0) < 1 || pool.dim(1) * pool.dim(2) * pool.dim(3) != kImageFloats)
      throw course::Error("timing: the image pool must be [N,1,28,28]");
    if (forwards < 1 || forwards > 64) throw course::Error("timing: forwards per round must be 1..64");
    images_ = pool.dim(0);
    pool_ = course::DeviceBuffer<float>(pool.values());
    const auto batches = static_cast<std::size_t>(forwards_);
    inputs_ = course::DeviceBuffer<float>(batches * static_cast<std::size_t>(images_) * kImageFloats);
    logits_ = course::DeviceBuffer<float>(batches * static_cast<std::size_t>(images_) * static_cast<std::size_t>(classes));
    labels_ = course::DeviceBuffer<int>(batches * static_cast<std::size_t>(images_));
    int device = 0, l2_bytes = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute");
    flush_ = course::DeviceBuffer<char>(static_cast<std::size_t>(l2_bytes > 0 ? 2 * l2_bytes : 64 << 20));
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    output_bytes_ = logits_.size() * sizeof(float) + labels_.size() * sizeof(int);
    if (output_bytes_ > grader::rpc::kSharedRegionBytes) throw course::Error("timing: a round's outputs do not fit the shared region");
    // Pinned, so that the copies out of the GPU run at full speed; if the driver refuses, they
    // still work from pageable memory (slower, the same for both sides).
    pinned_ = cudaHostRegister(shared_region(), (output_bytes_ + 4095) / 4096 * 4096, cudaHostRegisterDefault) == cudaSuccess;
    cudaGetLastError();
    events_.resize(2 * batches);
    for (cudaEvent_t& e : events_) check(cudaEventCreate(&e), "cudaEventCreate");
  }
  ~Session() {
    if (pinned_) cudaHostUnregister(shared_region());
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    cudaStreamDestroy(stream_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// One round (see the top of this file). `run` false: the null round, without the pipeline.
  /// Leaves logits [R*N, classes] and then labels [R*N] of every call, in call order, at the start
  /// of the shared region; event_ms: the harness's CUDA-event time of each call (information only).
  void round(std::uint64_t nonce, bool run, const Launch& launch, const std::string& function,
             std::vector<double>& event_ms) {
    const std::int64_t total = forwards_ * images_;
    make_round_inputs<<<1024, 256, 0, stream_>>>(pool_.get(), images_, inputs_.get(), total, nonce);
    check(cudaGetLastError(), "timing: making the round's inputs");
    check(cudaMemsetAsync(logits_.get(), 0xff, logits_.size() * sizeof(float), stream_), "cudaMemsetAsync");  // NaN
    check(cudaMemsetAsync(labels_.get(), 0xff, labels_.size() * sizeof(int), stream_), "cudaMemsetAsync");
    check(cudaMemsetAsync(flush_.get(), static_cast<int>(nonce & 0x7f), flush_.size(), stream_), "cudaMemsetAsync");
    for (int r = 0; r < forwards_; ++r) {
      check(cudaEventRecord(events_[2 * r], stream_), "cudaEventRecord");
      if (run) {
        const std::int64_t first = std::int64_t{r} * images_;
        launch(inputs_.get() + first * kImageFloats, static_cast<int>(images_), logits_.get() + first * classes_,
               labels_.get() + first, stream_);
      }
      check(cudaEventRecord(events_[2 * r + 1], stream_), "cudaEventRecord");
    }
    check(cudaDeviceSynchronize(), function + " (while the timed round executed)");
    check(cudaGetLastError(), function);
    unsigned char* out = shared_region();
    const std::size_t logit_bytes = logits_.size() * sizeof(float);
    check(cudaMemcpy(out, logits_.get(), logit_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    check(cudaMemcpy(out + logit_bytes, labels_.get(), labels_.size() * sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
    event_ms.assign(static_cast<std::size_t>(forwards_), 0.0);
    for (int r = 0; r < forwards_; ++r) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, events_[2 * r], events_[2 * r + 1]), "cudaEventElapsedTime");
      event_ms[static_cast<std::size_t>(r)] = ms;
    }
  }

  std::int64_t images() const { return images_; }

 private:
  static void check(cudaError_t status, const std::string& what) {
    if (status != cudaSuccess) throw course::Error(what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
  }

  std::int64_t classes_;
  std::int64_t forwards_;
  std::int64_t images_ = 0;
  course::DeviceBuffer<float> pool_;
  course::DeviceBuffer<float> inputs_;
  course::DeviceBuffer<float> logits_;
  course::DeviceBuffer<int> labels_;
  course::DeviceBuffer<char> flush_;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> events_;
  std::size_t output_bytes_ = 0;
  bool pinned_ = false;
};

/// What a lab's harness keeps between the speed gate's calls: the pipeline (built by
/// timing_prepare for batches of the pool's size) and the Session.
template <class Pipeline>
class TimedPipeline {
 public:
  void prepare(std::unique_ptr<Pipeline> pipeline, const course::Tensor& pool, int classes, int forwards) {
    session_.reset();
    pipeline_ = std::move(pipeline);
    session_ = std::make_unique<Session>(pool, classes, forwards);
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
