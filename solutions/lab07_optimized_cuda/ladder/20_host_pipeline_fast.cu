// Rung 20: pinned host pixels to host labels in 0.207 ms (rung 14: 0.211 ms; H100, same call) --
// rung 14's chunked uploads, with the kernels writing the labels straight into the caller's
// pinned buffer and the chunks' kernels spread over two compute streams.
// The 0.18 ms target is NOT met; the measured floor and the timeline say why (lecture 07, 15g).
//
// What the timeline showed (COURSE_LADDER_TIMELINE below; bench/plot_host_timeline.py): in rung
// 14 the copy is not the limiter. Each chunk's kernel (1,667 images) takes 28-41 us, as long as or
// longer than the chunk's upload (29 us; both with the timeline's events), because rung 12's
// kernel is latency-bound on a chunk: every block walks
// a short chain of images, then the three FC layers. So the single compute stream is busy back to
// back and ends well after the last upload. Changes, each aimed at that:
//   - chunk c's kernel on compute stream c % 2: the next chunk's blocks fill the SM slots that the
//     previous kernel's finished blocks leave, instead of waiting for the whole kernel;
//   - labels written by the kernel into host memory (the pinned buffer is mapped into the GPU's
//     address space): no download stream, no events per chunk, no copy after the last kernel;
//   - 8 chunks of 1,250 images (the sweep below: 6 to 8 are equal within the noise).
// Measured on an H100 SXM (PCIe 5; bench/results/lab07_latency_h100_80gb_hbm3.txt), 10,000 images,
// median ms, each a separate process in one call (run to run: about +-0.004 ms):
//   rung 14 0.209-0.213; rung 20 0.207-0.210 (one outlier, 0.254, in the checked run)
//   streams x chunks (x growth): 2x8 0.210, 3x8 0.209, 2x6 0.205, 3x6 (x0.8) 0.204, 3x8 (x0.8) 0.211,
//   3x8 (x0.7) 0.213, 4x10 (x0.8) 0.214, 3x12 (x0.8) 0.231; one stream: 6 chunks 0.232, 8 chunks 0.286
// The floor (lab07_latency_floors, same call): one 7.84 MB pinned copy 0.153 ms (51 GB/s), and the
// last chunk's kernel cannot take less than rung 12's latency for one image (~17 us), so about
// 0.17 ms is the least this design could reach; the per-chunk gaps of the copy engine and the
// kernels' latency keep it at 0.205.
//
// Tried and kept as a knob: the kernel reading the pinned pixels itself over PCIe (zero copy, one
// launch, no chunks): 0.239 ms. The bus delivers (a plain coalesced read kernel: 49.5 GB/s), but
// rung 12's kernel stages one image per warp at a time, so each warp waits a PCIe round trip per image.
// (Rung 21 found the real cause: each image's 784 bytes straddle 128-byte lines shared with its
// neighbours, so the reads are partial lines and get ~40 GB/s; whole lines, a step ahead: 0.198 ms.)
//
// Knobs, for measuring (read by prepare()):
//   COURSE_LADDER_HOST_PATH=copies|zerocopy    chunked copies (default) / the kernel reads host memory
//   COURSE_LADDER_CHUNKS=N (1..64), COURSE_LADDER_CHUNK_GROWTH=g (0.25..4)   the split (default: up
//                                              to 8 chunks of at least 800 images, equal sizes)
//   COURSE_LADDER_COMPUTE_STREAMS=S (1..4)     compute streams (default 2)
//   COURSE_LADDER_LABELS=mapped|copy           labels written by the kernel into host memory, or
//                                              copied back per chunk on a third stream (rung 14)
//   COURSE_LADDER_TIMELINE=FILE.csv            record every call's copies and kernels with CUDA
//                                              events and append them to FILE (the events cost time:
//                                              ~0.24 ms instead of 0.21; for the picture, not the numbers)
// Rung 14's pipeline exactly: COURSE_LADDER_CHUNKS=6 COURSE_LADDER_COMPUTE_STREAMS=1 COURSE_LADDER_LABELS=copy.
//
// forward() (device-resident images) and the accuracy cost are rung 12's: reduced precision (FP16).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "12_tensor_cores.cuh"
#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "cuda_owners.cuh"
#include "ladder.hpp"

namespace {

using ladder::support::env_or;

constexpr int kPixels = 784, kClasses = 10, kMaxChunks = 64, kMaxComputeStreams = 4;
// The default split (measured, lecture 07 section 15g): chunks of at least kMinChunkImages, at most
// kDefaultChunks of them, round-robin over kDefaultComputeStreams streams.
constexpr int kMinChunkImages = 800, kDefaultChunks = 8, kDefaultComputeStreams = 2;
const char* const kComputeLanes[kMaxComputeStreams] = {"compute", "compute 2", "compute 3", "compute 4"};

/// COURSE_LADDER_TIMELINE: start/end events around every copy and kernel of one call, written
/// as CSV rows (microseconds after the call's first event) once the call has finished.
class Timeline {
 public:
  explicit Timeline(std::string path) : path_(std::move(path)) {}
  bool on() const { return !path_.empty(); }

  void begin(cudaStream_t stream, const std::string& pipeline, int images) {
    spans_.clear();
    pipeline_ = pipeline;
    images_ = images;
    origin_ = event();
    CUDA_CHECK(cudaEventRecord(origin_, stream));
    host_start_ = std::chrono::steady_clock::now();
  }
  /// Marks the start of an operation on `stream`; end() marks its end.
  int start(cudaStream_t stream, const char* lane, const char* op, int chunk) {
    Span s{lane, op, chunk, event(), nullptr};
    CUDA_CHECK(cudaEventRecord(s.start, stream));
    spans_.push_back(s);
    return static_cast<int>(spans_.size()) - 1;
  }
  void end(int span, cudaStream_t stream) {
    spans_[static_cast<std::size_t>(span)].end = event();
    CUDA_CHECK(cudaEventRecord(spans_[static_cast<std::size_t>(span)].end, stream));
  }
  /// After the call's synchronisation: the rows, plus the host's view of the call and, as the
  /// floor, one copy of the same pixels alone (timed on `stream` now, after everything else).
  void finish(cudaStream_t stream, const std::uint8_t* h_pixels, std::uint8_t* d_pixels) {
    const double host_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_start_).count();
    const std::size_t bytes = static_cast<std::size_t>(images_) * kPixels;
    const int alone = start(stream, "reference", "h2d_alone", -1);
    CUDA_CHECK(cudaMemcpyAsync(d_pixels, h_pixels, bytes, cudaMemcpyHostToDevice, stream));
    end(alone, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const bool fresh = !written_;
    std::FILE* f = std::fopen(path_.c_str(), "a");
    if (f == nullptr) throw course::Error("COURSE_LADDER_TIMELINE: cannot append to " + path_);
    if (fresh && std::ftell(f) == 0) std::fprintf(f, "call,pipeline,images,lane,op,chunk,start_us,end_us,device\n");
    written_ = true;
    cudaDeviceProp prop{};
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    for (const Span& s : spans_) {
      float a = 0, b = 0;
      CUDA_CHECK(cudaEventElapsedTime(&a, origin_, s.start));
      CUDA_CHECK(cudaEventElapsedTime(&b, origin_, s.end));
      double start_us = 1000.0 * a, end_us = 1000.0 * b;
      if (s.chunk < 0) {  // the reference copy: drawn from 0, it ran after the call
        end_us -= start_us;
        start_us = 0.0;
      }
      std::fprintf(f, "%d,%s,%d,%s,%s,%d,%.2f,%.2f,\"%s\"\n", call_, pipeline_.c_str(), images_, s.lane, s.op, s.chunk,
                   start_us, end_us, prop.name);
    }
    std::fprintf(f, "%d,%s,%d,host,call,-1,0.00,%.2f,\"%s\"\n", call_, pipeline_.c_str(), images_, host_us, prop.name);
    std::fclose(f);
    ++call_;
  }

 private:
  struct Span {
    const char* lane;
    const char* op;
    int chunk;
    cudaEvent_t start, end;
  };
  cudaEvent_t event() {  // pooled: created once, reused by every call
    if (used_ == pool_.size()) pool_.push_back(make_event(true));
    return pool_[used_++].get();
  }

 public:
  void reset_pool() { used_ = 0; }

 private:
  std::string path_;
  std::string pipeline_;
  int images_ = 0, call_ = 0;
  bool written_ = false;
  std::vector<Event> pool_;
  std::size_t used_ = 0;
  cudaEvent_t origin_ = nullptr;
  std::vector<Span> spans_;
  std::chrono::steady_clock::time_point host_start_;
};

class HostPipelineFast final : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    net_.prepare(net, max_batch);
    const std::string path = env_or("COURSE_LADDER_HOST_PATH", "copies");
    if (path != "zerocopy" && path != "copies")
      throw course::Error("COURSE_LADDER_HOST_PATH must be zerocopy or copies, got '" + path + "'");
    zero_copy_ = path == "zerocopy";
    const std::string labels = env_or("COURSE_LADDER_LABELS", "mapped");
    if (labels != "mapped" && labels != "copy")
      throw course::Error("COURSE_LADDER_LABELS must be mapped or copy, got '" + labels + "'");
    mapped_labels_ = labels == "mapped";
    compute_streams_ = std::atoi(env_or("COURSE_LADDER_COMPUTE_STREAMS", std::to_string(kDefaultComputeStreams)).c_str());
    if (compute_streams_ < 1 || compute_streams_ > kMaxComputeStreams)
      throw course::Error("COURSE_LADDER_COMPUTE_STREAMS must be 1..4");
    forced_chunks_ = std::atoi(env_or("COURSE_LADDER_CHUNKS", "0").c_str());
    if (forced_chunks_ < 0 || forced_chunks_ > kMaxChunks) throw course::Error("COURSE_LADDER_CHUNKS must be 1..64");
    growth_ = std::atof(env_or("COURSE_LADDER_CHUNK_GROWTH", "1").c_str());
    if (!(growth_ >= 0.25 && growth_ <= 4.0)) throw course::Error("COURSE_LADDER_CHUNK_GROWTH must be 0.25..4");
    timeline_ = std::make_unique<Timeline>(env_or("COURSE_LADDER_TIMELINE", ""));

    const auto batch = static_cast<std::size_t>(max_batch);
    pixels_ = course::DeviceBuffer<std::uint8_t>(batch * kPixels);
    logits_ = course::DeviceBuffer<float>(batch * kClasses);
    labels_ = course::DeviceBuffer<int>(batch);
    host_labels_ = make_pinned<int>(batch);
    upload_ = make_stream();
    download_ = make_stream();
    forked_ = make_event(false);
    joined_ = make_event(false);
    side_.clear();
    side_done_.clear();
    for (int s = 1; s < kMaxComputeStreams; ++s) {
      side_.push_back(make_stream());
      side_done_.push_back(make_event(false));
    }
    uploaded_.clear();
    computed_.clear();
    for (int c = 0; c < kMaxChunks; ++c) {
      uploaded_.push_back(make_event(false));
      computed_.push_back(make_event(false));
    }
    static bool told = false;
    if (!told) {
      told = true;
      std::printf("  rung 20: %s path%s%s\n", zero_copy_ ? "zero-copy" : "copies",
                  zero_copy_ ? "" : (mapped_labels_ ? ", labels written to host memory by the kernel" : ", labels copied back"),
                  timeline_->on() ? ", recording a timeline" : "");
    }
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    net_.forward(d_images, n, d_logits, d_labels, stream);
  }
  bool reduced_precision() const override { return true; }

  void classify_from_host(const std::uint8_t* h_pixels, int n, int* h_labels, cudaStream_t stream) override {
    if (h_pixels == nullptr) throw course::Error("rung 20: h_pixels is null");
    if (h_labels == nullptr) throw course::Error("rung 20: h_labels is null");
    if (n < 1 || n > net_.max_batch())
      throw course::Error("rung 20: n = " + std::to_string(n) + " is not in [1, " + std::to_string(net_.max_batch()) + "]");
    // Where the kernel may write the labels directly: the caller's buffer if pinned, else ours.
    int* labels_host = mapped(h_labels) != nullptr ? h_labels : host_labels_.get();
    int* labels_device = mapped(labels_host);
    const std::uint8_t* pixels_device = mapped(h_pixels);
    Timeline& tl = *timeline_;
    tl.reset_pool();
    if (zero_copy_ && pixels_device != nullptr && labels_device != nullptr) {
      if (tl.on()) tl.begin(stream, "zerocopy", n);
      const int span = tl.on() ? tl.start(stream, "compute", "kernel", 0) : -1;
      net_.forward_pixels(pixels_device, n, logits_.get(), labels_device, stream);
      if (tl.on()) tl.end(span, stream);
    } else {
      const int chunks = forced_chunks_ > 0 ? std::min(forced_chunks_, n) : std::clamp(n / kMinChunkImages, 1, kDefaultChunks);
      if (tl.on()) {
        // The pipeline's name in the CSV says its split: "copies/6x1/s1" = 6 chunks growing x1, 1 compute stream.
        char name[96];
        std::snprintf(name, sizeof(name), "%s/%dx%g/s%d", mapped_labels_ ? "mapped_labels" : "copies", chunks, growth_,
                      std::min(compute_streams_, chunks));
        tl.begin(stream, name, n);
      }
      copies(h_pixels, chunk_bounds(n, chunks, growth_), labels_host,
             mapped_labels_ ? labels_device : nullptr, stream);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));  // the one wait of the call: labels are in host memory
    if (tl.on()) tl.finish(stream, h_pixels, pixels_.get());
    if (labels_host != h_labels) std::memcpy(h_labels, labels_host, static_cast<std::size_t>(n) * sizeof(int));
  }

 private:
  /// Rung 14's pipeline: every upload on upload_ first, chunk c's kernel on `stream` once it has
  /// arrived, its labels back on download_ -- or, with labels_device, written by the kernel into
  /// host memory (no download stream, nothing to wait for after the last kernel).
  void copies(const std::uint8_t* h_pixels, const std::vector<int>& bounds, int* labels_host, int* labels_device,
              cudaStream_t stream) {
    Timeline& tl = *timeline_;
    const int chunks = static_cast<int>(bounds.size()) - 1;
    const auto first_of = [&](int c) { return static_cast<std::size_t>(bounds[static_cast<std::size_t>(c)]); };
    const auto count_of = [&](int c) { return bounds[static_cast<std::size_t>(c) + 1] - bounds[static_cast<std::size_t>(c)]; };
    CUDA_CHECK(cudaEventRecord(forked_.get(), stream));
    CUDA_CHECK(cudaStreamWaitEvent(upload_.get(), forked_.get(), 0));
    if (labels_device == nullptr) CUDA_CHECK(cudaStreamWaitEvent(download_.get(), forked_.get(), 0));
    // Chunk c's kernel runs on compute stream c % S: `stream` and S - 1 side streams. A chunk's
    // kernel is latency-bound (each block walks a short chain of images), so the next chunk's
    // kernel can fill the SMs the first one leaves idle instead of waiting for it to finish.
    const int streams = std::min(compute_streams_, chunks);
    const auto compute_stream = [&](int c) { return c % streams == 0 ? stream : side_[static_cast<std::size_t>(c % streams - 1)].get(); };
    for (int s = 1; s < streams; ++s) CUDA_CHECK(cudaStreamWaitEvent(side_[static_cast<std::size_t>(s - 1)].get(), forked_.get(), 0));
    for (int c = 0; c < chunks; ++c) {
      const std::size_t first = first_of(c);
      const int span = tl.on() ? tl.start(upload_.get(), "upload", "h2d", c) : -1;
      CUDA_CHECK(cudaMemcpyAsync(pixels_.get() + first * kPixels, h_pixels + first * kPixels,
                                 static_cast<std::size_t>(count_of(c)) * kPixels, cudaMemcpyHostToDevice, upload_.get()));
      if (tl.on()) tl.end(span, upload_.get());
      CUDA_CHECK(cudaEventRecord(uploaded_[static_cast<std::size_t>(c)].get(), upload_.get()));
    }
    for (int c = 0; c < chunks; ++c) {
      const std::size_t first = first_of(c);
      cudaStream_t on = compute_stream(c);
      CUDA_CHECK(cudaStreamWaitEvent(on, uploaded_[static_cast<std::size_t>(c)].get(), 0));
      const int span = tl.on() ? tl.start(on, kComputeLanes[c % streams], "kernel", c) : -1;
      int* labels_to = labels_device != nullptr ? labels_device + first : labels_.get() + first;
      net_.forward_pixels(pixels_.get() + first * kPixels, count_of(c), logits_.get() + first * kClasses, labels_to, on);
      if (tl.on()) tl.end(span, on);
      if (labels_device != nullptr) continue;
      CUDA_CHECK(cudaEventRecord(computed_[static_cast<std::size_t>(c)].get(), on));
      CUDA_CHECK(cudaStreamWaitEvent(download_.get(), computed_[static_cast<std::size_t>(c)].get(), 0));
      const int back = tl.on() ? tl.start(download_.get(), "download", "d2h", c) : -1;
      CUDA_CHECK(cudaMemcpyAsync(labels_host + first, labels_.get() + first, static_cast<std::size_t>(count_of(c)) * sizeof(int),
                                 cudaMemcpyDeviceToHost, download_.get()));
      if (tl.on()) tl.end(back, download_.get());
    }
    // Join: `stream` ends after the side streams' kernels and the last upload (and download), so
    // the caller's sync covers them all.
    for (int s = 1; s < streams; ++s) {
      CUDA_CHECK(cudaEventRecord(side_done_[static_cast<std::size_t>(s - 1)].get(), side_[static_cast<std::size_t>(s - 1)].get()));
      CUDA_CHECK(cudaStreamWaitEvent(stream, side_done_[static_cast<std::size_t>(s - 1)].get(), 0));
    }
    CUDA_CHECK(cudaEventRecord(joined_.get(), labels_device != nullptr ? upload_.get() : download_.get()));
    CUDA_CHECK(cudaStreamWaitEvent(stream, joined_.get(), 0));
  }

  TensorCoreLeNet net_;
  bool zero_copy_ = true, mapped_labels_ = true;
  int forced_chunks_ = 0, compute_streams_ = kDefaultComputeStreams;
  double growth_ = 1.0;
  std::unique_ptr<Timeline> timeline_;
  course::DeviceBuffer<std::uint8_t> pixels_;
  course::DeviceBuffer<float> logits_;
  course::DeviceBuffer<int> labels_;
  std::unique_ptr<int, PinnedDeleter> host_labels_;
  Stream upload_, download_;
  std::vector<Stream> side_;  // compute streams besides the caller's
  Event forked_, joined_;
  std::vector<Event> side_done_;
  std::vector<Event> uploaded_, computed_;
};

}  // namespace

COURSE_LADDER_RUNG(20, "host_pipeline_fast",
                   "rung 14's uploads with the labels written by the kernels into host memory and chunk kernels on two streams",
                   HostPipelineFast);
