// Shared pieces of lab 01's tests: one convolution "case" (its seven extents), random inputs for
// it, and the check of the student's conv2d_forward against the golden reference.
#pragma once

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "course/compare.hpp"
#include "course/error.hpp"
#include "course/rng.hpp"
#include "course/tensor.hpp"
#include "lab01_reference.hpp"
#include "labs/lab01_conv2d.hpp"
#include "sweep.hpp"
#include "testkit.hpp"

namespace lab01_tests {
namespace {

// The student accumulates in float, the golden reference in double. With at most a few hundred
// terms of magnitude <= 1 the float rounding error stays far below 1e-4; a wrong index or a
// missing term is off by ~0.1 or more.
const course::Tolerance kTolerance{1e-4, 1e-4};

/// One convolution problem: input [n, c, h, w], weight [k, c, r, s], bias [k].
struct ConvCase {
  std::int64_t n = 1, c = 1, h = 1, w = 1, k = 1, r = 1, s = 1;

  course::Shape input_shape() const { return {n, c, h, w}; }
  course::Shape weight_shape() const { return {k, c, r, s}; }
  course::Shape bias_shape() const { return {k}; }
  course::Shape output_shape() const { return {n, k, h - r + 1, w - s + 1}; }

  std::string describe() const {
    std::ostringstream out;
    out << "input " << course::shape_to_string(input_shape()) << ", weight "
        << course::shape_to_string(weight_shape()) << ", bias " << course::shape_to_string(bias_shape());
    return out.str();
  }
};

/// Random extents in the ranges the lab promises to handle: N 1..3, C 1..4, K 1..5, H and W
/// 1..12 independently (non-square), kernels 1..H by 1..W (non-square).
inline ConvCase random_case(course::Rng& rng) {
  ConvCase cc;
  cc.n = rng.integer(1, 3);
  cc.c = rng.integer(1, 4);
  cc.k = rng.integer(1, 5);
  cc.h = rng.integer(1, 12);
  cc.w = rng.integer(1, 12);
  cc.r = rng.integer(1, static_cast<int>(cc.h));
  cc.s = rng.integer(1, static_cast<int>(cc.w));
  return cc;
}

/// The (N, C, K) of small sweep case number `index`: cycles through all 27 combinations of
/// 1..3, so that across a sweep every combination meets many spatial shapes.
inline void cycle_batch_and_channels(int index, ConvCase& cc) {
  cc.n = 1 + index % 3;
  cc.c = 1 + (index / 3) % 3;
  cc.k = 1 + (index / 9) % 3;
}

/// Calls the student's conv2d_forward on a NaN-poisoned output of the expected shape.
inline course::Tensor student_conv2d(const course::Tensor& input, const course::Tensor& weight,
                                     const course::Tensor& bias) {
  course::Tensor output = grader::poisoned(golden::lab01_output_shape(input.shape(), weight.shape()));
  lab01::conv2d_forward(input, weight, bias, output);
  return output;
}

/// Random input, weight and bias for `cc`; the student's result must match the golden one.
inline bool check_random_case(const std::string& what, const ConvCase& cc, course::Rng& rng) {
  const course::Tensor input = rng.tensor(cc.input_shape());
  const course::Tensor weight = rng.tensor(cc.weight_shape());
  const course::Tensor bias = rng.tensor(cc.bias_shape());
  const course::Tensor expected = golden::lab01_conv2d(input, weight, bias);
  const course::Tensor actual = student_conv2d(input, weight, bias);
  return grader::check_tensor(what + " (" + cc.describe() + ")", actual, expected, kTolerance);
}

/// Like grader::check_rejects, but calls once and checks that the message contains every part
/// (e.g. the tensor's name, the expected and the actual shape).
inline void check_rejects_with(const std::string& what, const std::function<void()>& call,
                               const std::vector<std::string>& parts) {
  std::string message;
  bool threw = false;
  try {
    call();
  } catch (const course::NotImplemented&) {
    throw;  // reported by the runner as "not implemented", not as a failed check
  } catch (const course::Error& e) {
    threw = true;
    message = e.what();
  }
  CHECK_MESSAGE(threw, what << ": expected a course::Error, but the call returned normally");
  if (!threw) return;
  for (const std::string& part : parts)
    CHECK_MESSAGE(message.find(part) != std::string::npos,
                  what << ": error message \"" << message << "\" should mention \"" << part << "\"");
}

}  // namespace
}  // namespace lab01_tests
