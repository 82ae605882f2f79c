// Comparing a computed tensor with a reference, the way the grader does it.
//
// An element passes when |actual - expected| <= atol + rtol * |expected|, and NaN or Inf in the
// actual output never passes (a NaN compares false with everything, so a naive `abs(a-e) > tol`
// check would let it through). The result keeps the first mismatches with their indices so a
// failure message can point at the exact element.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "course/tensor.hpp"

namespace course {

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-4;
};

struct Mismatch {
  std::size_t flat_index;
  float actual, expected;
};

struct Comparison {
  std::size_t count = 0;          ///< elements compared
  std::size_t mismatches = 0;     ///< elements outside tolerance (NaN/Inf included)
  std::size_t nonfinite = 0;      ///< NaN or Inf in `actual`
  double max_abs_error = 0;
  double max_rel_error = 0;       ///< |a-e| / max(|e|, tiny) over finite elements
  double relative_l2_error = 0;   ///< ||a-e|| / ||e|| (||a-e|| if ||e|| == 0)
  std::vector<Mismatch> first;    ///< up to max_reported mismatches, in index order
  bool shape_mismatch = false;
  std::string shape_message;

  bool ok() const { return !shape_mismatch && mismatches == 0; }
  /// Multi-line report: the statistics plus the first mismatches with multi-indices like
  /// "[0, 2, 5, 7]" when the shape is known.
  std::string report(const Shape& shape = {}) const;
};

Comparison compare(const float* actual, const float* expected, std::size_t count,
                   const Tolerance& tol = {}, std::size_t max_reported = 8);
/// Shape-checked variant: a shape difference is reported as such, not as value mismatches.
Comparison compare(const Tensor& actual, const Tensor& expected, const Tolerance& tol = {},
                   std::size_t max_reported = 8);

/// Relative L2 error ||a-e|| / ||e|| in double precision.
double relative_l2_error(const float* actual, const float* expected, std::size_t count);

/// "[n, c, h, w]" multi-index of a flat offset in a contiguous tensor of this shape.
std::string unravel_index(std::size_t flat_index, const Shape& shape);

/// Counts NaN and Inf values.
std::size_t count_nonfinite(const float* values, std::size_t count);

/// Fills with NaN so that any element a kernel forgot to write is caught by compare().
void poison(float* values, std::size_t count);
inline void poison(Tensor& t) { poison(t.data(), t.numel()); }

}  // namespace course
