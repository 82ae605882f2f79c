// Whether this machine can run the GPU labs, asked in a child process: the grader itself never
// initialises CUDA (a process that has, must not fork children that use CUDA).
#pragma once

#include <cstddef>
#include <string>

namespace course_grader {

struct GpuProbe {
  bool available = false;
  std::string reason;  ///< why not, when unavailable
  std::string name;    ///< the device, when available
  std::size_t memory_gib = 0;  ///< its memory, when available (how many test programs share it)
};

GpuProbe probe_gpu();

}  // namespace course_grader
