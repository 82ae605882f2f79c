// Shared pieces of lab 08's tests: tolerances and small helpers. The golden references are
// grader/reference/conv_algorithms_reference.hpp (depthwise, im2col, GEMM, all in double) and
// lab04_reference.hpp (the direct convolution with padding and stride).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "conv_algorithms_reference.hpp"
#include "course/compare.hpp"
#include "course/rng.hpp"
#include "course/tensor.hpp"
#include "lab04_reference.hpp"
#include "lab08_harness.hpp"
#include "testkit.hpp"

namespace lab08_tests {
namespace {

// The GPU computes in float (fused multiply-adds), the references in double and round once.
// im2col only moves values: exact. The depthwise convolution sums 9 products and a bias:
// |error| ~ 1e-6 for the tests' values. A GEMM (and a convolution, a GEMM with K = C*R*S) sums
// K products: its rounding error grows with K, so atol grows with K (1e-5 + 2e-6 * K: 2.6e-5 for
// K = 8, 5.3e-4 for K = 257, far below the size of any indexing mistake).
const course::Tolerance kExact{0.0, 0.0};
const course::Tolerance kDepthwiseTolerance{1e-5, 1e-5};
inline course::Tolerance gemm_tolerance(std::int64_t K) { return {1e-5 + 2e-6 * static_cast<double>(K), 1e-4}; }

// Part B, Winograd F(2x2, 3x3). The transforms only add and subtract (and halve, in G: exact):
// a transformed value is a sum of at most 9 (U, Y) or 16 (V) inputs, each addition rounding once,
// so |error| ~ 1e-6 for values in [-1, 1]; 1e-5 leaves a margin. The 16 products are GEMMs with
// K = C: part A's gemm_tolerance(C).
const course::Tolerance kWinogradTransformTolerance{1e-5, 1e-5};

// The whole Winograd convolution against the DIRECT convolution (golden::lab04_conv2d, double).
// Its error is larger than a direct convolution's in float: the input transform makes values up
// to 4 times the inputs (sums of 4 with signs), the filter transform sums of up to 9 weights, and
// the output transform adds 9 products that largely cancel (the exact output is much smaller than
// the terms it is computed from), so each rounding is made on a larger number than the direct sum
// ever holds. A bound relative to |expected| would fail exactly where that cancellation is
// strongest (outputs near 0). The bound therefore scales with the size of the terms each output
// sums, S = |bias| + sum_{c,r,s} |w| |x| (golden::lab08_conv3x3_abs_sum):
//   |actual - expected| <= 1e-5 + kWinogradRelToAbsSum * S.
// Measured on a CPU emulation of the reference (FP32, every operation rounded), C up to 65: the
// largest |error| / S was 7.7e-7 for Winograd and 2.1e-7 for a direct FP32 sum (13 and 3.6 unit
// roundoffs of 5.96e-8). 1e-5 (168 unit roundoffs) leaves a margin of 13 over the measured
// worst; a wrong tile, a missing bias or a flipped sign gives errors of order 1e-2 * S and more
// (an input of the wrong pixel is as large as the right one).
constexpr double kWinogradRelToAbsSum = 1e-5;

/// CHECKs the Winograd convolution's output element by element against the bound above; the
/// message names the first elements out of it (with their bound). NaN and Inf never pass.
inline bool check_winograd_conv(const std::string& what, const course::Tensor& actual, const course::Tensor& expected,
                                const course::Tensor& abs_sum) {
  if (actual.shape() != expected.shape() || abs_sum.shape() != expected.shape()) {
    CHECK_MESSAGE(false, what << ": shape " << course::shape_to_string(actual.shape()) << ", expected "
                              << course::shape_to_string(expected.shape()));
    return false;
  }
  std::size_t bad = 0, nonfinite = 0;
  double worst_ratio = 0;  // largest |error| / bound
  std::ostringstream first;
  for (std::size_t i = 0; i < actual.numel(); ++i) {
    const double a = actual[i], e = expected[i];
    const double bound = 1e-5 + kWinogradRelToAbsSum * abs_sum[i];
    const double err = std::fabs(a - e);
    const bool finite = std::isfinite(a);
    if (finite) worst_ratio = std::max(worst_ratio, err / bound);
    if (finite && err <= bound) continue;
    nonfinite += finite ? 0 : 1;
    if (bad++ < 8)
      first << "\n    at " << course::unravel_index(i, expected.shape()) << ": got " << a << ", expected " << e
            << " (allowed error " << bound << ")";
  }
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << actual.numel() << " elements outside |error| <= 1e-5 + "
                               << kWinogradRelToAbsSum << " * sum|w||x| (" << nonfinite
                               << " NaN/Inf; NaN: an output never written, or a NaN read from the poisoned "
                                  "workspace); largest |error| / bound among the finite ones "
                               << worst_ratio << first.str() << "\n  (seed " << grader::seed()
                               << "; replay with COURSE_SEED=" << grader::seed() << ")");
  return bad == 0;
}

inline std::string shape_text(const course::Tensor& t) { return course::shape_to_string(t.shape()); }

}  // namespace
}  // namespace lab08_tests
