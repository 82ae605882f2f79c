// Shared pieces of lab 08's tests: tolerances and small helpers. The golden references are
// grader/reference/conv_algorithms_reference.hpp (depthwise, im2col, GEMM, all in double) and
// lab04_reference.hpp (the direct convolution with padding and stride).
#pragma once

#include <cstdint>
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

inline std::string shape_text(const course::Tensor& t) { return course::shape_to_string(t.shape()); }

}  // namespace
}  // namespace lab08_tests
