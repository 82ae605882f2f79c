// Shared pieces of lab 06's tests: tolerances, and (from grader/testkit/lenet_checks.hpp, shared
// with lab 07) the golden folded network, random networks, and the trained models with their test
// splits (loaded once per test file).
#pragma once

#include "course/compare.hpp"
#include "course/lenet.hpp"
#include "course/rng.hpp"
#include "course/tensor.hpp"
#include "lab06_harness.hpp"
#include "lenet_checks.hpp"
#include "testkit.hpp"

namespace lab06_tests {
namespace {

namespace ln = course::lenet;

// The GPU computes in float (and may contract a*b+c into one fused multiply-add), the golden
// references in double. A convolution or linear layer sums up to a few hundred products of
// values near 1: its error is ~1e-5. Pooling, ReLU and argmax pick existing values: exact.
const course::Tolerance kSumTolerance{1e-4, 1e-4};
const course::Tolerance kExact{0.0, 0.0};
using grader::lenet_checks::kLogitTolerance;

using grader::lenet_checks::check_labels;
using grader::lenet_checks::fashion_model;
using grader::lenet_checks::mnist_model;
using grader::lenet_checks::Model;
using grader::lenet_checks::random_weights;
using grader::lenet_checks::row_argmax;
using grader::image_slice;

}  // namespace
}  // namespace lab06_tests
