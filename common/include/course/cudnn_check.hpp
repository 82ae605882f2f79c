// Error check for cuDNN calls: throws course::Error with cuDNN's own status string.
#pragma once

#include <cudnn.h>

#include <sstream>

#include "course/error.hpp"

namespace course::detail {

[[noreturn]] inline void throw_cudnn_error(cudnnStatus_t status, const char* expr, const char* file, int line) {
  std::ostringstream msg;
  msg << "cuDNN error " << cudnnGetErrorString(status) << " (" << static_cast<int>(status) << ")";
  char last[512] = {0};
  cudnnGetLastErrorString(last, sizeof(last));  // cuDNN 9 keeps a more detailed message
  if (last[0] != '\0') msg << ": " << last;
  msg << "\n  in " << expr << "\n  at " << file << ":" << line;
  throw course::Error(msg.str());
}

}  // namespace course::detail

#define CUDNN_CHECK(expr)                                                           \
  do {                                                                              \
    const cudnnStatus_t course_status_ = (expr);                                    \
    if (course_status_ != CUDNN_STATUS_SUCCESS)                                     \
      ::course::detail::throw_cudnn_error(course_status_, #expr, __FILE__, __LINE__); \
  } while (0)
