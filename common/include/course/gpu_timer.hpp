// Timing GPU work properly: CUDA events around the work, warm-up runs first, many repetitions,
// the median reported, and the L2 cache flushed before every timed run so that a kernel does not
// look fast just because the previous run left its inputs in cache.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "course/timing_stats.hpp"

namespace course {

struct TimerOptions {
  int warmup = 3;          ///< untimed runs first: module load, first-touch, clocks ramping up
  int repetitions = 20;    ///< timed runs; the median of these is the result
  bool flush_l2 = true;    ///< overwrite a buffer larger than L2 before each timed run
};

/// Times `work(stream)` with CUDA events on `stream`. The work must enqueue everything on that
/// stream. Throws course::Error on any CUDA failure (including faults inside the timed kernels).
class GpuTimer {
 public:
  explicit GpuTimer(cudaStream_t stream = nullptr);
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  TimingStats time(const std::function<void(cudaStream_t)>& work, const TimerOptions& options = {});
  /// Evicts L2 by writing a buffer twice its size (the write itself is not timed).
  void flush_l2();

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  DeviceBuffer<unsigned char> flush_buffer_;
};

}  // namespace course
