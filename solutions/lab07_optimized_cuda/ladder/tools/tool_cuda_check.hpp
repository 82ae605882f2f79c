// TOOL_CUDA(call): the ladder's stand-alone tools (self-tests, latency floors) check every CUDA call
// with it: on an error, file, line, the call and CUDA's message on stderr, then exit 1. The tools
// link nothing of the course (no course::Error to throw), and a tool stops at its first error.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define TOOL_CUDA(call)                                                                                   \
  do {                                                                                                    \
    const cudaError_t tool_cuda_error = (call);                                                           \
    if (tool_cuda_error != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(tool_cuda_error)); \
      std::exit(1);                                                                                       \
    }                                                                                                     \
  } while (0)
