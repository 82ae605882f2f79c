// RAII owners of the CUDA objects the host-side rungs hold (streams, events, pinned memory), the
// GPU's address of a pinned host buffer, and how a batch is cut into chunks for a copy/compute
// pipeline. One copy for rungs 10, 11, 14 (10_pinned_streams.cuh), 20 and 21, so that an exception
// in prepare() leaks nothing in any of them.
// Anonymous namespace: each including .cu gets its own copy, no link clash.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "course/cuda_check.hpp"

namespace {

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
[[maybe_unused]] Stream make_stream() {
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

/// Events used only for ordering skip the timestamp (timing = false), which makes recording them cheaper.
[[maybe_unused]] Event make_event(bool timing = false) {
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return Event(e);
}

/// Pinned host memory for `count` T (cudaMallocHost: page-locked, and mapped into the GPU's address space).
template <typename T>
std::unique_ptr<T, PinnedDeleter> make_pinned(std::size_t count) {
  void* p = nullptr;
  CUDA_CHECK(cudaMallocHost(&p, count * sizeof(T)));
  return std::unique_ptr<T, PinnedDeleter>(static_cast<T*>(p));
}

/// The GPU's address of a pinned, mapped host buffer (a kernel may read and write it over PCIe);
/// nullptr for pageable memory (never touch that from a kernel).
template <typename T>
T* mapped(T* host) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, host) != cudaSuccess || a.type != cudaMemoryTypeHost || a.devicePointer == nullptr) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return static_cast<T*>(a.devicePointer);
}

/// Chunk c is images [bounds[c], bounds[c + 1]). With growth g > 1 the sizes grow geometrically:
/// a small first chunk lets the compute start early (the only copy nobody waits behind), and the
/// later, bigger ones keep forward() efficient. g near compute time / copy time keeps both busy.
/// g < 1 shrinks them: a small last chunk shortens the tail after the last copy.
[[maybe_unused]] std::vector<int> chunk_bounds(int n, int chunks, double growth) {
  std::vector<double> weight(static_cast<std::size_t>(chunks), 1.0);
  for (std::size_t c = 1; c < weight.size(); ++c) weight[c] = weight[c - 1] * growth;
  double total = 0.0;
  for (const double w : weight) total += w;
  std::vector<int> bounds{0};
  double sum = 0.0;
  for (int c = 0; c < chunks; ++c) {
    sum += weight[static_cast<std::size_t>(c)];
    const int end = static_cast<int>(std::lround(n * sum / total));
    // At least one image per chunk, and room left for one per remaining chunk.
    bounds.push_back(std::clamp(end, bounds.back() + 1, n - (chunks - 1 - c)));
  }
  return bounds;
}

}  // namespace
