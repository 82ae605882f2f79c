// Exhaustive sweeps over small shapes: one doctest TEST_CASE runs every small case of a function
// (hundreds to a few thousand calls) and reports only the first few failing cases, each by name.
//
//   grader::Sweep sweep("conv2d_forward over every small shape");
//   for (...; sweep.running(); ...)
//     sweep.run(describe(shape), [&] { ...; return grader::mismatch(out, expected, tol); });
//   sweep.finish(100);   // the sweep must really have run its cases
//
// A case's body returns "" when it passed, else what went wrong. Because every small shape runs
// on every grading run, a bug that shows on one small shape fails every run, not only unlucky ones.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <utility>

#include "course/compare.hpp"
#include "course/error.hpp"
#include "testkit.hpp"

namespace grader {

/// "" when `actual` matches `expected` (shape, values within tolerance, no NaN/Inf), else the
/// comparison's report with the first mismatching indices.
inline std::string mismatch(const course::Tensor& actual, const course::Tensor& expected,
                            const course::Tolerance& tol) {
  const course::Comparison c = course::compare(actual, expected, tol);
  return c.ok() ? std::string() : c.report(expected.shape());
}

/// "" when `call` throws course::Error (the contract's way to reject bad input), else a message
/// saying it returned normally. "not implemented" propagates, as everywhere in the tests.
inline std::string rejection(const std::function<void()>& call) {
  try {
    call();
  } catch (const course::NotImplemented&) {
    throw;
  } catch (const course::Error&) {
    return "";
  }
  return "expected a course::Error, but the call returned normally";
}

class Sweep {
 public:
  explicit Sweep(std::string title, int max_failures = 3) : title_(std::move(title)), max_failures_(max_failures) {}

  /// False once `max_failures` cases have failed: the caller's loops stop there.
  bool running() const { return failures_ < max_failures_; }

  /// Runs one case. A course::Error thrown by the code under test fails this case (naming it);
  /// anything else -- "not implemented", a worker failure -- ends the test case as usual.
  void run(const std::string& case_name, const std::function<std::string()>& body) {
    if (!running()) return;
    ++cases_;
    std::string problem;
    try {
      problem = body();
    } catch (const course::NotImplemented&) {
      throw;
    } catch (const course::Error& e) {
      problem = std::string("threw course::Error: ") + e.what();
    }
    if (problem.empty()) return;
    ++failures_;
    FAIL_CHECK(title_ << ": case " << case_name << " fails: " << problem << "\n  (seed " << seed()
                      << "; replay with COURSE_SEED=" << seed() << ")");
    if (!running()) MESSAGE(title_ << ": stopped after " << failures_ << " failing cases");
  }

  /// Call after the loops: checks that at least `minimum_cases` ran when nothing failed (a sweep
  /// whose loops were cut short by a bug in the test itself must not pass silently).
  void finish(int minimum_cases) const {
    if (failures_ == 0)
      CHECK_MESSAGE(cases_ >= minimum_cases,
                    title_ << ": only " << cases_ << " cases ran, expected at least " << minimum_cases);
  }

  int cases() const { return cases_; }
  int failures() const { return failures_; }

 private:
  std::string title_;
  int max_failures_;
  int cases_ = 0;
  int failures_ = 0;
};

}  // namespace grader
