// Device query that is safe on a machine without a GPU or without a driver.
//
// has_gpu() never throws and never aborts: on CI (nvcc but no driver) it returns false and
// gpu_unavailable_reason() says why, so GPU tests and GPU labs can report "skipped".
#pragma once

#include <string>

namespace course {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;       ///< compute capability, e.g. 9.0 for H100
  int sm_count = 0;                     ///< streaming multiprocessors
  std::size_t global_memory_bytes = 0;
  int l2_cache_bytes = 0;
  int max_threads_per_block = 0;
  std::size_t shared_memory_per_block = 0;
  std::size_t shared_memory_per_sm = 0;
  int clock_khz = 0;                    ///< peak SM clock
  int memory_clock_khz = 0;             ///< peak memory clock
  int memory_bus_width_bits = 0;
  double peak_bandwidth_gbs() const;    ///< 2 (DDR) x clock x bus width; a theoretical upper bound
  std::string summary() const;          ///< one line: name, CC, SMs, memory
};

/// True if at least one CUDA device is usable. Never throws.
bool has_gpu();
/// Empty if has_gpu(); otherwise a human-readable reason ("no CUDA driver", "no device", ...).
std::string gpu_unavailable_reason();
/// Properties of device `index`. Throws course::Error if there is no such device.
DeviceInfo query_device(int index = 0);

/// Exit code that CTest maps to "skipped" (SKIP_RETURN_CODE) for GPU tests without a GPU.
constexpr int kSkipReturnCode = 77;

}  // namespace course
