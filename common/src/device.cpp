#include "course/device.hpp"

#include <sstream>

#include "course/error.hpp"

// COURSE_HAS_CUDA (set by common/CMakeLists.txt) is 0 in a build without the CUDA toolkit: then
// this file needs no CUDA header, there is never a GPU, and the reason says why.
#if COURSE_HAS_CUDA
#include <cuda_runtime_api.h>

#include "course/cuda_check.hpp"
#endif

namespace course {

#if !COURSE_HAS_CUDA

namespace {
const char* const kNoToolkit = "built without the CUDA toolkit";
}  // namespace

bool has_gpu() { return false; }

std::string gpu_unavailable_reason() { return kNoToolkit; }

DeviceInfo query_device(int index) {
  throw Error("query_device(" + std::to_string(index) + "): " + kNoToolkit);
}

#else

namespace {

// cudaGetDeviceCount is the one call that is safe without a driver: it returns an error code
// (cudaErrorInsufficientDriver, cudaErrorNoDevice, ...) instead of crashing. Ask once.
cudaError_t device_count_status(int* count) {
  static int cached_count = 0;
  static const cudaError_t status = cudaGetDeviceCount(&cached_count);
  *count = status == cudaSuccess ? cached_count : 0;
  return status;
}

}  // namespace

bool has_gpu() {
  int count = 0;
  return device_count_status(&count) == cudaSuccess && count > 0;
}

std::string gpu_unavailable_reason() {
  int count = 0;
  const cudaError_t status = device_count_status(&count);
  if (status == cudaSuccess && count > 0) return "";
  if (status == cudaSuccess) return "no CUDA device found";
  switch (status) {
    case cudaErrorInsufficientDriver:
      return "no CUDA driver on this machine (or it is older than the CUDA runtime)";
    case cudaErrorNoDevice:
      return "no CUDA-capable device found";
    default:
      return std::string("CUDA is unavailable: ") + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  }
}

DeviceInfo query_device(int index) {
  int count = 0;
  if (device_count_status(&count) != cudaSuccess || index < 0 || index >= count)
    throw Error("query_device(" + std::to_string(index) + "): " +
                (has_gpu() ? "no such device (" + std::to_string(count) + " present)" : gpu_unavailable_reason()));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceInfo info;
  info.index = index;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.global_memory_bytes = prop.totalGlobalMem;
  info.l2_cache_bytes = prop.l2CacheSize;
  info.max_threads_per_block = prop.maxThreadsPerBlock;
  info.shared_memory_per_block = prop.sharedMemPerBlock;
  info.shared_memory_per_sm = prop.sharedMemPerMultiprocessor;
  info.memory_bus_width_bits = prop.memoryBusWidth;
  // Clock rates left cudaDeviceProp in CUDA 13; the attribute query works on every version.
  CUDA_CHECK(cudaDeviceGetAttribute(&info.clock_khz, cudaDevAttrClockRate, index));
  CUDA_CHECK(cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, index));
  return info;
}

#endif  // COURSE_HAS_CUDA

double DeviceInfo::peak_bandwidth_gbs() const {
  // Double data rate: two transfers per clock, bus width in bits -> bytes.
  return 2.0 * memory_clock_khz * 1e3 * (memory_bus_width_bits / 8.0) / 1e9;
}

std::string DeviceInfo::summary() const {
  std::ostringstream out;
  out << name << " (compute capability " << cc_major << "." << cc_minor << ", " << sm_count << " SMs, "
      << global_memory_bytes / (1024 * 1024 * 1024) << " GiB)";
  return out.str();
}

}  // namespace course
