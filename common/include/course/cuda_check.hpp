// Error checks for the CUDA runtime. Every CUDA call in the course goes through one of these:
// a failing call throws course::Error naming the call, the file, the line and CUDA's message,
// instead of letting the program continue with garbage.
#pragma once

#include <cuda_runtime_api.h>

#include <sstream>
#include <string>

#include "course/error.hpp"

namespace course::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* expr, const char* file, int line) {
  std::ostringstream msg;
  msg << "CUDA error " << cudaGetErrorName(status) << " (" << static_cast<int>(status) << "): "
      << cudaGetErrorString(status) << "\n  in " << expr << "\n  at " << file << ":" << line;
  throw course::Error(msg.str());
}

}  // namespace course::detail

/// CUDA_CHECK(cudaMalloc(&p, n)); -- throws course::Error if the call fails.
#define CUDA_CHECK(expr)                                                          \
  do {                                                                            \
    const cudaError_t course_status_ = (expr);                                    \
    if (course_status_ != cudaSuccess)                                            \
      ::course::detail::throw_cuda_error(course_status_, #expr, __FILE__, __LINE__); \
  } while (0)

/// After a kernel launch: catches bad launch configurations (cudaGetLastError) right away.
/// Faults inside the kernel surface at the next synchronising call, which is CUDA_CHECKed too.
#define CUDA_CHECK_LAST_LAUNCH() CUDA_CHECK(cudaGetLastError())
