// Error check for cuBLAS calls: throws course::Error with cuBLAS's name and description.
#pragma once

#include <cublas_v2.h>

#include <sstream>

#include "course/error.hpp"

namespace course::detail {

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* expr, const char* file, int line) {
  std::ostringstream msg;
  msg << "cuBLAS error " << cublasGetStatusName(status) << " (" << static_cast<int>(status)
      << "): " << cublasGetStatusString(status) << "\n  in " << expr << "\n  at " << file << ":" << line;
  throw course::Error(msg.str());
}

}  // namespace course::detail

#define CUBLAS_CHECK(expr)                                                           \
  do {                                                                               \
    const cublasStatus_t course_status_ = (expr);                                    \
    if (course_status_ != CUBLAS_STATUS_SUCCESS)                                     \
      ::course::detail::throw_cublas_error(course_status_, #expr, __FILE__, __LINE__); \
  } while (0)
