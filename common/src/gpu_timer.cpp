#include "course/gpu_timer.hpp"

#include <algorithm>

#include "course/device.hpp"

namespace course {

GpuTimer::GpuTimer(cudaStream_t stream) : stream_(stream) {
  CUDA_CHECK(cudaEventCreate(&start_));
  CUDA_CHECK(cudaEventCreate(&stop_));
}

GpuTimer::~GpuTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

void GpuTimer::flush_l2() {
  if (flush_buffer_.empty()) {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const int l2 = query_device(device).l2_cache_bytes;
    flush_buffer_ = DeviceBuffer<unsigned char>(static_cast<std::size_t>(std::max(l2, 1 << 20)) * 2);
  }
  CUDA_CHECK(cudaMemsetAsync(flush_buffer_.get(), 0, flush_buffer_.bytes(), stream_));
}

TimingStats GpuTimer::time(const std::function<void(cudaStream_t)>& work, const TimerOptions& options) {
  if (options.repetitions < 1) throw Error("GpuTimer: repetitions must be at least 1");
  for (int i = 0; i < options.warmup; ++i) work(stream_);
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  CUDA_CHECK(cudaGetLastError());

  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(options.repetitions));
  for (int i = 0; i < options.repetitions; ++i) {
    if (options.flush_l2) flush_l2();  // enqueued before the start event: not part of the time
    CUDA_CHECK(cudaEventRecord(start_, stream_));
    work(stream_);
    CUDA_CHECK(cudaEventRecord(stop_, stream_));
    CUDA_CHECK(cudaEventSynchronize(stop_));
    CUDA_CHECK(cudaGetLastError());
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    samples.push_back(ms);
  }
  return summarize_samples(std::move(samples));
}

}  // namespace course
