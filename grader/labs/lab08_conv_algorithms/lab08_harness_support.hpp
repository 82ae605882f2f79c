// What both lab 08 harnesses (lab08_harness.cu, lab08_mobilenet_harness.cu) check and hand out:
// the argument checks before a student function is called, the largest workspace they hand out,
// and the workspace a rejection call gets (conv2d_im2col_gemm, conv2d_winograd,
// inverted_residual_block). The student's own workspace query says what a call needs; the call
// is then given that size minus `short_by` (a test of "workspace too small"). When the query
// rejects the sizes, as it should for invalid ones, the function must reject them by itself: it
// gets a scratch buffer's size, so that the workspace is not what stops it. Real memory backs
// the claim only as far as a valid small call needs: a larger claim is a lie that the function
// must see through by rejecting the sizes before it launches anything.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/tensor.hpp"

namespace lab08_harness {

inline void require(bool ok, const std::string& message) {
  if (!ok) throw course::Error("lab08 harness: " + message);
}

inline int as_int(std::int64_t value, const std::string& what) {
  require(value >= 0 && value <= INT_MAX, what + " does not fit an int: " + std::to_string(value));
  return static_cast<int>(value);
}

inline void require_rank(const course::Tensor& t, std::size_t rank, const std::string& name) {
  require(t.rank() == rank && t.numel() > 0,
          name + " must be a non-empty " + std::to_string(rank) + "-D tensor, got " + course::shape_to_string(t.shape()));
}

// The most workspace the harnesses hand out: a student's workspace query asking for more (for the
// tests' shapes, a few MB are plenty) is a bug, reported as such.
constexpr std::uint64_t kMaxWorkspaceBytes = std::uint64_t{2} << 30;

struct RejectionWorkspace {
  course::DeviceBuffer<unsigned char> buffer;
  std::size_t claimed = 0;  ///< the workspace_bytes the call is given
};

/// `query()` is the student's workspace function for the call's sizes; NotImplemented passes on.
template <typename Query>
RejectionWorkspace rejection_workspace(Query query, int short_by) {
  constexpr std::size_t kScratchBytes = std::size_t{1} << 20;
  std::size_t needed = kScratchBytes;
  try {
    needed = query();
  } catch (const course::NotImplemented&) {
    throw;
  } catch (const course::Error&) {
    needed = kScratchBytes;
  }
  const auto shorter = static_cast<std::size_t>(std::max(short_by, 0));
  RejectionWorkspace w;
  w.claimed = needed > shorter ? needed - shorter : 0;
  w.buffer = course::DeviceBuffer<unsigned char>(std::max<std::size_t>(std::min(w.claimed, kScratchBytes), 1));
  w.buffer.fill_bytes(0xFF);
  CUDA_CHECK(cudaDeviceSynchronize());
  return w;
}

}  // namespace lab08_harness
