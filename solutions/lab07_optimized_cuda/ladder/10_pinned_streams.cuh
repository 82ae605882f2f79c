// Rung 10's pipeline (the story is in 10_pinned_streams.cu): pinned uint8 pixels in, labels out,
// copies on two side streams overlapping the compute of the chunk before. Generic over the network
// it runs (PinnedStreams<Net>): rungs 10 and 11 run the lab 07 solution (FastLeNetFromHost; rung 11
// derives from it and adds its graphs to forward()), rung 14 the tensor-core network of rung 12.
// Everything is in an anonymous namespace: each including .cu file gets its own copy, no link clash.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/lenet.hpp"
#include "cuda_owners.cuh"
#include "labs/lab07_optimized_cuda.hpp"
#include "ladder.hpp"

namespace {

constexpr int kPixels = course::lenet::kInputSize * course::lenet::kInputSize;  // 784 per image
constexpr int kClasses = course::lenet::kNumClasses;
constexpr int kMaxChunks = 64;

/// How a batch is cut into chunks: the right cut depends on the network's cost per forward() call.
struct ChunkPolicy {
  int max_chunks;        ///< the most chunks a batch is cut into ...
  int min_chunk_images;  ///< ... each at least this big on average
  double growth;         ///< each chunk this many times the one before (1: all equal, < 1: shrinking)
};

// Measured on the H100 (10_pinned_streams.cu lists the sweep): the lab 07 solution's forward() costs
// about 55 us plus 22 ns an image, so every extra chunk costs ~55 us of compute. Two chunks, the
// second twice the first, win at 10,000 images; below 10,000 one chunk (no overlap at all) is faster.
constexpr ChunkPolicy kFastLeNetChunks{2, 5000, 2.0};

/// uint8 pixels -> float in [0,1], four pixels per thread (784 is a multiple of 4, so every chunk
/// starts 16-byte aligned in the float buffer and 4-byte aligned in the byte buffer).
/// The division is the CPU's (course/idx.hpp: float(pixel) / 255.0f): nvcc divides IEEE-exactly
/// unless -use_fast_math is given, so the GPU sees bit-identical images.
__global__ void pixels_to_float(const uchar4* __restrict__ pixels, float4* __restrict__ images, int quads) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= quads) return;
  const uchar4 p = pixels[i];
  images[i] = make_float4(static_cast<float>(p.x) / 255.0f, static_cast<float>(p.y) / 255.0f,
                          static_cast<float>(p.z) / 255.0f, static_cast<float>(p.w) / 255.0f);
}

/// COURSE_LADDER_CHUNKS=N forces N chunks (at most one per image), to measure the trade-off; 0 = unset.
int forced_chunks() {
  const char* text = std::getenv("COURSE_LADDER_CHUNKS");
  if (text == nullptr || *text == '\0') return 0;
  const int chunks = std::atoi(text);
  if (chunks < 1 || chunks > kMaxChunks)
    throw course::Error("COURSE_LADDER_CHUNKS must be 1.." + std::to_string(kMaxChunks) + ", got '" + text + "'");
  return chunks;
}

/// COURSE_LADDER_CHUNK_GROWTH=g: each chunk g times the one before (0.25..4; else the policy's).
double chunk_growth(double fallback) {
  const char* text = std::getenv("COURSE_LADDER_CHUNK_GROWTH");
  if (text == nullptr || *text == '\0') return fallback;
  const double growth = std::atof(text);
  if (!(growth >= 0.25 && growth <= 4.0))
    throw course::Error(std::string("COURSE_LADDER_CHUNK_GROWTH must be 0.25..4, got '") + text + "'");
  return growth;
}

bool is_pinned(const void* host) {
  cudaPointerAttributes attributes{};
  return cudaPointerGetAttributes(&attributes, host) == cudaSuccess && attributes.type == cudaMemoryTypeHost;
}

/// lab07::FastLeNet (the lab 07 solution, rung 9) as a network of the pipeline. Built in prepare():
/// the old one released first, because only one FastLeNet may exist at a time.
class FastLeNetNet {
 public:
  static constexpr bool kReadsPixels = false;  // takes float images: the pipeline converts first
  void prepare(const lab04::FoldedLeNet& net, int max_batch) {
    net_.reset();
    net_ = std::make_unique<lab07::FastLeNet>(net, max_batch);
  }
  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) {
    net_->forward(d_images, n, d_logits, d_labels, stream);
  }
  int max_batch() const { return net_ ? net_->max_batch() : 0; }
  bool reduced_precision() const { return false; }

 private:
  std::unique_ptr<lab07::FastLeNet> net_;
};

/// The host pipeline around a network Net, which has prepare(net, max_batch), forward(d_images, n,
/// d_logits, d_labels, stream), max_batch(), reduced_precision() and kReadsPixels; when that is
/// true, also forward_pixels(d_pixels, ...) reading the uint8 pixels itself (no conversion kernel).
template <class Net>
class PinnedStreams : public ladder::Rung {
 public:
  explicit PinnedStreams(ChunkPolicy policy) : policy_(policy) {}

  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    net_.prepare(net, max_batch);
    forced_chunks_ = forced_chunks();
    growth_ = chunk_growth(policy_.growth);
    const auto batch = static_cast<std::size_t>(max_batch);
    pixels_ = course::DeviceBuffer<std::uint8_t>(batch * kPixels);
    if constexpr (!Net::kReadsPixels) images_ = course::DeviceBuffer<float>(batch * kPixels);
    logits_ = course::DeviceBuffer<float>(batch * kClasses);
    labels_ = course::DeviceBuffer<int>(batch);
    host_labels_ = make_pinned<int>(batch);
    upload_ = make_stream();
    download_ = make_stream();
    forked_ = make_event();
    downloaded_ = make_event();
    uploaded_.clear();
    computed_.clear();
    for (int c = 0; c < kMaxChunks; ++c) {
      uploaded_.push_back(make_event());
      computed_.push_back(make_event());
    }
  }

  // Device-resident images: nothing to overlap, this is the network's own forward().
  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    net_.forward(d_images, n, d_logits, d_labels, stream);
  }

  bool reduced_precision() const override { return net_.reduced_precision(); }

  void classify_from_host(const std::uint8_t* h_pixels, int n, int* h_labels, cudaStream_t stream) override {
    if (h_pixels == nullptr) throw course::Error("pinned_streams: h_pixels is null");
    if (h_labels == nullptr) throw course::Error("pinned_streams: h_labels is null");
    if (n < 1 || n > net_.max_batch())
      throw course::Error("pinned_streams: n = " + std::to_string(n) + " is not in [1, max_batch = " +
                          std::to_string(net_.max_batch()) + "]");
    // At most policy_.max_chunks chunks, and not more than n / policy_.min_chunk_images.
    const int chunks = forced_chunks_ > 0 ? std::min(forced_chunks_, n)
                                          : std::clamp(n / policy_.min_chunk_images, 1, policy_.max_chunks);
    const bool direct = is_pinned(h_labels);  // else: our pinned buffer, then one memcpy
    int* labels_to = direct ? h_labels : host_labels_.get();
    if (chunks == 1)
      one_stream(h_pixels, n, labels_to, stream);
    else
      overlapped(h_pixels, chunk_bounds(n, chunks, growth_), labels_to, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));  // the one wait of the whole call
    if (!direct) std::memcpy(h_labels, host_labels_.get(), static_cast<std::size_t>(n) * sizeof(int));
  }

 protected:
  Net net_;

 private:
  /// uint8 -> float and the network for images [first, first + count), enqueued on `stream`.
  /// forward() is virtual: rung 11 replays a graph per chunk here. A network that reads the uint8
  /// pixels itself gets them as they came.
  void compute(std::size_t first, int count, cudaStream_t stream) {
    if constexpr (Net::kReadsPixels) {
      net_.forward_pixels(pixels_.get() + first * kPixels, count, logits_.get() + first * kClasses,
                          labels_.get() + first, stream);
    } else {
      const int quads = count * kPixels / 4;
      constexpr int kThreads = 256;
      pixels_to_float<<<(quads + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
          reinterpret_cast<const uchar4*>(pixels_.get() + first * kPixels),
          reinterpret_cast<float4*>(images_.get() + first * kPixels), quads);
      CUDA_CHECK_LAST_LAUNCH();
      forward(images_.get() + first * kPixels, count, logits_.get() + first * kClasses, labels_.get() + first, stream);
    }
  }

  /// A small batch has nothing to overlap: everything in order on one stream, no events.
  void one_stream(const std::uint8_t* h_pixels, int n, int* labels_to, cudaStream_t stream) {
    CUDA_CHECK(cudaMemcpyAsync(pixels_.get(), h_pixels, static_cast<std::size_t>(n) * kPixels, cudaMemcpyHostToDevice,
                               stream));
    compute(0, n, stream);
    CUDA_CHECK(cudaMemcpyAsync(labels_to, labels_.get(), static_cast<std::size_t>(n) * sizeof(int),
                               cudaMemcpyDeviceToHost, stream));
  }

  /// Uploads on upload_, compute on `stream`, downloads on download_, chained by events per chunk.
  void overlapped(const std::uint8_t* h_pixels, const std::vector<int>& bounds, int* labels_to, cudaStream_t stream) {
    const int chunks = static_cast<int>(bounds.size()) - 1;
    const auto first_of = [&](int c) { return static_cast<std::size_t>(bounds[static_cast<std::size_t>(c)]); };
    const auto count_of = [&](int c) { return bounds[static_cast<std::size_t>(c) + 1] - bounds[static_cast<std::size_t>(c)]; };

    // Fork: the side streams start after whatever the caller put on `stream` before (its timer).
    CUDA_CHECK(cudaEventRecord(forked_.get(), stream));
    CUDA_CHECK(cudaStreamWaitEvent(upload_.get(), forked_.get(), 0));
    CUDA_CHECK(cudaStreamWaitEvent(download_.get(), forked_.get(), 0));
    // All uploads first: the copy engine gets its whole queue at once and never waits for the host.
    for (int c = 0; c < chunks; ++c) {
      const std::size_t first = first_of(c);
      CUDA_CHECK(cudaMemcpyAsync(pixels_.get() + first * kPixels, h_pixels + first * kPixels,
                                 static_cast<std::size_t>(count_of(c)) * kPixels, cudaMemcpyHostToDevice, upload_.get()));
      CUDA_CHECK(cudaEventRecord(uploaded_[c].get(), upload_.get()));
    }
    // Compute chunk c as soon as it has arrived (while c+1 is still on its way), then send its labels.
    for (int c = 0; c < chunks; ++c) {
      const std::size_t first = first_of(c);
      CUDA_CHECK(cudaStreamWaitEvent(stream, uploaded_[c].get(), 0));
      compute(first, count_of(c), stream);
      CUDA_CHECK(cudaEventRecord(computed_[c].get(), stream));
      CUDA_CHECK(cudaStreamWaitEvent(download_.get(), computed_[c].get(), 0));
      CUDA_CHECK(cudaMemcpyAsync(labels_to + first, labels_.get() + first,
                                 static_cast<std::size_t>(count_of(c)) * sizeof(int), cudaMemcpyDeviceToHost,
                                 download_.get()));
    }
    // Join: `stream` ends after the last download, so the caller's own events see the whole trip.
    CUDA_CHECK(cudaEventRecord(downloaded_.get(), download_.get()));
    CUDA_CHECK(cudaStreamWaitEvent(stream, downloaded_.get(), 0));
  }

  ChunkPolicy policy_;
  int forced_chunks_ = 0;
  double growth_ = 1.0;
  course::DeviceBuffer<std::uint8_t> pixels_;  // the uint8 images as they came from the host
  course::DeviceBuffer<float> images_;         // the same as floats in [0,1] (unless Net reads pixels)
  course::DeviceBuffer<float> logits_;
  course::DeviceBuffer<int> labels_;
  std::unique_ptr<int, PinnedDeleter> host_labels_;
  Stream upload_, download_;
  Event forked_, downloaded_;
  std::vector<Event> uploaded_, computed_;  // one per chunk
};

/// Rungs 10 and 11: the lab 07 solution behind the pipeline, chunked as measured for it.
class FastLeNetFromHost : public PinnedStreams<FastLeNetNet> {
 public:
  FastLeNetFromHost() : PinnedStreams<FastLeNetNet>(kFastLeNetChunks) {}
};

}  // namespace
