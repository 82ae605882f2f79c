// Rung 10: pinned memory, async copies and streams -- the whole trip from host pixels to host labels.
// Why faster: uint8 pixels (4x fewer bytes than float) cross PCIe in chunks while the GPU computes
// the chunk before, so the copy (~0.16 ms for 10,000 images) hides behind the compute.
//
// The network is the lab 07 solution (rung 9) unchanged; only the host side is new. For 4 chunks
// the copy engines and the SMs work at the same time:
//
//   upload stream   : [H2D 0][H2D 1][H2D 2][H2D 3]
//   compute stream  :        [net 0]  [net 1]  [net 2]  [net 3]          (net = uint8->float + LeNet)
//   download stream :                 [D2H 0]  [D2H 1]  [D2H 2]  [D2H 3]  (labels, 4 bytes an image)
//
// Events carry the order between streams: "chunk c uploaded" gates its compute, "chunk c computed"
// gates its download. The compute stays on ONE stream (the caller's), because FastLeNet may use
// internal scratch buffers that two concurrent forward() calls would share.
//
// Asynchronous copies need pinned (page-locked) host memory: from pageable memory the driver first
// copies into a pinned buffer of its own and the "async" copy waits for that. The runner allocates
// the pixels with cudaMallocHost; the labels land in our pinned buffer (or straight in the caller's,
// when that is pinned too).
//
// COURSE_LADDER_CHUNKS=N (environment) changes the number of chunks, to measure the trade-off:
// more chunks hide more of the copy, but every chunk costs a few launches and copies (~10 us).
#include <cuda_runtime.h>

#include <algorithm>
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
#include "labs/lab07_optimized_cuda.hpp"
#include "ladder.hpp"

namespace {

constexpr int kPixels = course::lenet::kInputSize * course::lenet::kInputSize;  // 784 per image
constexpr int kDefaultChunks = 8;     // measured on the H100: see lectures/07-optimized-cuda.md
constexpr int kMinChunkImages = 256;  // below this a chunk is all overhead: small batches use fewer
constexpr int kMaxChunks = 64;

/// uint8 pixels -> float in [0,1], four pixels per thread (784 is a multiple of 4, so every chunk
/// starts 16-byte aligned in the float buffer and 4-byte aligned in the byte buffer).
/// The division is the CPU's (course/idx.hpp: float(pixel) / 255.0f): nvcc divides IEEE-exactly
/// unless -use_fast_math is given, so the GPU sees bit-identical images.
__global__ void pixels_to_float(const uchar4* __restrict__ pixels, float4* __restrict__ images, int quads) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= quads) return;
  const uchar4 p = pixels[i];
  images[i] = make_float4(static_cast<float>(p.x) / 255.0f, static_cast<float>(p.y) / 255.0f,
                          static_cast<float>(p.z) / 255.0f, static_cast<float>(p.w) / 255.0f);
}

// RAII owners, so that an exception in prepare() leaks nothing.
struct StreamDeleter {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
struct PinnedDeleter {
  void operator()(void* p) const { cudaFreeHost(p); }
};
using Stream = std::unique_ptr<CUstream_st, StreamDeleter>;
using Event = std::unique_ptr<CUevent_st, EventDeleter>;

/// A stream that never waits for the legacy default stream (nor it for us): with a blocking stream
/// every launch on stream 0 would serialise against our copies and the overlap would be gone.
Stream make_stream() {
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

/// Events used only for ordering skip the timestamp, which makes recording them cheaper.
Event make_event() {
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return Event(e);
}

int chunks_from_environment() {
  const char* text = std::getenv("COURSE_LADDER_CHUNKS");
  if (text == nullptr || *text == '\0') return kDefaultChunks;
  const int chunks = std::atoi(text);
  if (chunks < 1 || chunks > kMaxChunks)
    throw course::Error("COURSE_LADDER_CHUNKS must be 1.." + std::to_string(kMaxChunks) + ", got '" + text + "'");
  return chunks;
}

bool is_pinned(const void* host) {
  cudaPointerAttributes attributes{};
  return cudaPointerGetAttributes(&attributes, host) == cudaSuccess && attributes.type == cudaMemoryTypeHost;
}

class PinnedStreams : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    net_ = std::make_unique<lab07::FastLeNet>(net, max_batch);
    max_chunks_ = chunks_from_environment();
    const auto batch = static_cast<std::size_t>(max_batch);
    pixels_ = course::DeviceBuffer<std::uint8_t>(batch * kPixels);
    images_ = course::DeviceBuffer<float>(batch * kPixels);
    logits_ = course::DeviceBuffer<float>(batch * course::lenet::kNumClasses);
    labels_ = course::DeviceBuffer<int>(batch);
    void* pinned = nullptr;
    CUDA_CHECK(cudaMallocHost(&pinned, batch * sizeof(int)));
    host_labels_.reset(static_cast<int*>(pinned));
    upload_ = make_stream();
    download_ = make_stream();
    forked_ = make_event();
    downloaded_ = make_event();
    uploaded_.clear();
    computed_.clear();
    for (int c = 0; c < max_chunks_; ++c) {
      uploaded_.push_back(make_event());
      computed_.push_back(make_event());
    }
  }

  // Device-resident images: nothing to overlap, this is rung 9.
  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    net_->forward(d_images, n, d_logits, d_labels, stream);
  }

  void classify_from_host(const std::uint8_t* h_pixels, int n, int* h_labels, cudaStream_t stream) override {
    if (h_pixels == nullptr) throw course::Error("pinned_streams: h_pixels is null");
    if (h_labels == nullptr) throw course::Error("pinned_streams: h_labels is null");
    if (n < 1 || n > net_->max_batch())
      throw course::Error("pinned_streams: n = " + std::to_string(n) + " is not in [1, max_batch = " +
                          std::to_string(net_->max_batch()) + "]");
    // Equal chunks (the last one shorter), at most max_chunks_, none much smaller than kMinChunkImages.
    const int chunks = std::clamp(n / kMinChunkImages, 1, max_chunks_);
    const int per_chunk = (n + chunks - 1) / chunks;
    const bool direct = is_pinned(h_labels);  // else: our pinned buffer, then one memcpy
    int* label_target = direct ? h_labels : host_labels_.get();

    // Fork: the side streams start after whatever the caller put on `stream` before (its timer).
    CUDA_CHECK(cudaEventRecord(forked_.get(), stream));
    CUDA_CHECK(cudaStreamWaitEvent(upload_.get(), forked_.get(), 0));
    CUDA_CHECK(cudaStreamWaitEvent(download_.get(), forked_.get(), 0));

    // All uploads first: the copy engine gets its whole queue at once and never waits for the host.
    for (int c = 0; c < chunks; ++c) {
      const std::size_t first = static_cast<std::size_t>(c) * per_chunk;
      const std::size_t count = std::min<std::size_t>(per_chunk, n - first);
      CUDA_CHECK(cudaMemcpyAsync(pixels_.get() + first * kPixels, h_pixels + first * kPixels, count * kPixels,
                                 cudaMemcpyHostToDevice, upload_.get()));
      CUDA_CHECK(cudaEventRecord(uploaded_[c].get(), upload_.get()));
    }
    // Compute chunk c as soon as it has arrived (while c+1 is still on its way), then send its labels.
    for (int c = 0; c < chunks; ++c) {
      const std::size_t first = static_cast<std::size_t>(c) * per_chunk;
      const int count = static_cast<int>(std::min<std::size_t>(per_chunk, n - first));
      CUDA_CHECK(cudaStreamWaitEvent(stream, uploaded_[c].get(), 0));
      const int quads = count * kPixels / 4;
      constexpr int kThreads = 256;
      pixels_to_float<<<(quads + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
          reinterpret_cast<const uchar4*>(pixels_.get() + first * kPixels),
          reinterpret_cast<float4*>(images_.get() + first * kPixels), quads);
      CUDA_CHECK_LAST_LAUNCH();
      net_->forward(images_.get() + first * kPixels, count, logits_.get() + first * course::lenet::kNumClasses,
                    labels_.get() + first, stream);
      CUDA_CHECK(cudaEventRecord(computed_[c].get(), stream));
      CUDA_CHECK(cudaStreamWaitEvent(download_.get(), computed_[c].get(), 0));
      CUDA_CHECK(cudaMemcpyAsync(label_target + first, labels_.get() + first, count * sizeof(int),
                                 cudaMemcpyDeviceToHost, download_.get()));
    }
    // Join: `stream` ends after the last download, so the caller's own events see the whole trip.
    CUDA_CHECK(cudaEventRecord(downloaded_.get(), download_.get()));
    CUDA_CHECK(cudaStreamWaitEvent(stream, downloaded_.get(), 0));
    CUDA_CHECK(cudaStreamSynchronize(stream));  // the one wait of the whole call
    if (!direct) std::memcpy(h_labels, host_labels_.get(), static_cast<std::size_t>(n) * sizeof(int));
  }

 private:
  std::unique_ptr<lab07::FastLeNet> net_;
  int max_chunks_ = kDefaultChunks;
  course::DeviceBuffer<std::uint8_t> pixels_;  // the uint8 images as they came from the host
  course::DeviceBuffer<float> images_;         // the same as floats in [0,1], FastLeNet's input
  course::DeviceBuffer<float> logits_;
  course::DeviceBuffer<int> labels_;
  std::unique_ptr<int, PinnedDeleter> host_labels_;
  Stream upload_, download_;
  Event forked_, downloaded_;
  std::vector<Event> uploaded_, computed_;  // one per chunk
};

}  // namespace

COURSE_LADDER_RUNG(10, "pinned_streams",
                   "uint8 pixels copied in chunks on a second stream, overlapping the previous chunk's compute",
                   PinnedStreams);
