// Lab 03 tests: instructor-supplied hidden cases.
//
// If COURSE_HIDDEN_DIR names a folder holding lab03_pooling_activations.json, of the form
//   {"cases": [ {"op": "avg_pool2d", "n": 2, "c": 3, "h": 9, "w": 7, "kernel_h": 3, "kernel_w": 2,
//                "stride_h": 2, "stride_w": 1, "pad_h": 1, "pad_w": 0, "count_include_pad": false}, ... ]}
// each case runs like a random case: a random input (from the run's seed, so COURSE_SEED
// replays it) through the student's function, compared with the golden reference.
//
// Keys of one case (defaults in brackets):
//   op                 "max_pool2d" | "avg_pool2d" | "global_avg_pool2d" | "relu" | "leaky_relu" |
//                      "sigmoid" | "tanh" | "softmax"                                  (required)
//   n, c, h, w         input shape [n, c, h, w]; softmax reads it as [n, c*h*w]         [1 each]
//   kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w                               [2, 2, 2, 2, 0, 0]
//   count_include_pad  avg_pool2d divisor mode                                          [true]
//   negative_slope     leaky_relu slope                                                 [0.01]
//   low, high          range of the uniform random input values                         [-3, 3]
//   expect_error       pooling only: the parameters are invalid and the call must throw
//                      course::Error                                                    [false]
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "lab03_test_support.hpp"

TEST_CASE("hidden cases (COURSE_HIDDEN_DIR)") {
  // One built-in case in the instructor's format runs first, so that this test case grades the
  // student's code even when no hidden cases are installed (it must never pass on its own).
  lab03_tests::run_json_case(nlohmann::json::parse(R"({"op": "avg_pool2d", "n": 2, "c": 2, "h": 7, "w": 6,
      "kernel_h": 3, "kernel_w": 2, "stride_h": 2, "stride_w": 1, "pad_h": 1, "count_include_pad": false})"),
                             "built-in example case");
  const auto cases = grader::hidden_cases(COURSE_LAB_NAME);
  if (cases.empty()) MESSAGE("no hidden cases for " COURSE_LAB_NAME " (COURSE_HIDDEN_DIR unset or without the file)");
  for (std::size_t i = 0; i < cases.size(); ++i)
    lab03_tests::run_json_case(cases[i], "hidden case " + std::to_string(i));
}

TEST_CASE("hidden cases: the mechanism works for this lab (temporary COURSE_HIDDEN_DIR)") {
  grader::TemporaryHiddenDir hidden;
  hidden.write(COURSE_LAB_NAME, R"({"cases": [
      {"op": "max_pool2d", "n": 2, "c": 3, "h": 9, "w": 7, "kernel_h": 3, "kernel_w": 2,
       "stride_h": 2, "stride_w": 1, "pad_h": 1, "pad_w": 1, "low": -5, "high": -1},
      {"op": "avg_pool2d", "n": 1, "c": 2, "h": 6, "w": 8, "kernel_h": 3, "kernel_w": 3,
       "stride_h": 1, "stride_w": 2, "pad_h": 1, "pad_w": 1, "count_include_pad": false},
      {"op": "avg_pool2d", "h": 5, "w": 5, "kernel_h": 3, "kernel_w": 3, "pad_h": 2, "pad_w": 0,
       "expect_error": true},
      {"op": "global_avg_pool2d", "n": 2, "c": 4, "h": 7, "w": 3},
      {"op": "leaky_relu", "n": 3, "c": 2, "h": 4, "w": 4, "negative_slope": 0.2},
      {"op": "sigmoid", "n": 1, "c": 1, "h": 1, "w": 32, "low": -120, "high": 120},
      {"op": "tanh", "n": 2, "c": 2, "h": 3, "w": 3},
      {"op": "relu", "n": 2, "c": 2, "h": 2, "w": 2},
      {"op": "softmax", "n": 4, "c": 10, "low": 900, "high": 1100}
    ]})");
  const auto cases = grader::hidden_cases(COURSE_LAB_NAME);
  REQUIRE(cases.size() == 9);
  for (std::size_t i = 0; i < cases.size(); ++i)
    lab03_tests::run_json_case(cases[i], "mechanism case " + std::to_string(i));
}
