// Lab 02: instructor-supplied hidden cases.
//
// Put a file lab02_padding_stride.json in the folder named by COURSE_HIDDEN_DIR:
//   {"cases": [ {"n": 2, "c": 3, "h": 17, "w": 9, "k": 4, "r": 3, "s": 2,
//                "pad_top": 1, "pad_bottom": 0, "pad_left": 2, "pad_right": 1,
//                "stride_h": 2, "stride_w": 1, "dilation_h": 1, "dilation_w": 3}, ... ]}
// Keys:
//   n, c, h, w            input shape [N, C, H, W]                        (required)
//   k, r, s               weight shape [K, C, R, S]                       (required)
//   pad_top, pad_bottom, pad_left, pad_right                               (default 0)
//   stride_h, stride_w, dilation_h, dilation_w                             (default 1)
//   expect_error          true: the parameters are invalid and conv2d_output_shape and
//                         conv2d_forward must throw course::Error          (default false)
// Each case runs like a random case: random input, weight and bias from
// grader::case_rng("hidden case <index>"), a poisoned output, comparison with the golden reference.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "lab02_test_support.hpp"

namespace {

int get_int(const nlohmann::json& c, const char* key, int fallback, bool required, std::size_t index) {
  if (!c.contains(key)) {
    if (required)
      throw course::Error("hidden case " + std::to_string(index) + ": missing required key \"" + key + "\"");
    return fallback;
  }
  if (!c[key].is_number_integer())
    throw course::Error("hidden case " + std::to_string(index) + ": \"" + key + "\" must be an integer");
  return c[key].get<int>();
}

// Runs one case; a malformed case throws course::Error, which fails the test with its message.
void run_hidden_case(const nlohmann::json& c, std::size_t index) {
  const auto req = [&](const char* key) { return get_int(c, key, 0, true, index); };
  const auto opt = [&](const char* key, int fallback) { return get_int(c, key, fallback, false, index); };
  const course::Shape x_shape{req("n"), req("c"), req("h"), req("w")};
  const course::Shape w_shape{req("k"), req("c"), req("r"), req("s")};
  const lab02::Conv2dParams p =
      lab02_tests::params(opt("pad_top", 0), opt("pad_bottom", 0), opt("pad_left", 0), opt("pad_right", 0),
                          opt("stride_h", 1), opt("stride_w", 1), opt("dilation_h", 1), opt("dilation_w", 1));
  const bool expect_error = c.contains("expect_error") && c["expect_error"].is_boolean() && c["expect_error"].get<bool>();
  const std::string what = "hidden case " + std::to_string(index) + " (" + lab02_tests::describe(x_shape, w_shape, p) + ")";
  INFO(what);
  for (auto extent : x_shape)
    if (extent < 1) throw course::Error(what + ": every extent must be >= 1");
  for (auto extent : w_shape)
    if (extent < 1) throw course::Error(what + ": every extent must be >= 1");

  if (expect_error) {
    CHECK_MESSAGE(!golden::lab02_valid(x_shape, w_shape, p), what << " is marked expect_error but is valid");
    grader::check_rejects(what + ", conv2d_output_shape", [&] { lab02::conv2d_output_shape(x_shape, w_shape, p); });
    course::Rng rng = grader::case_rng("hidden case " + std::to_string(index));
    const course::Tensor x = rng.tensor(x_shape), w = rng.tensor(w_shape), b = rng.tensor({w_shape[0]});
    course::Tensor out(course::Shape{x_shape[0], w_shape[0], 1, 1});
    grader::check_rejects(what + ", conv2d_forward", [&] { lab02::conv2d_forward(x, w, b, p, out); });
    return;
  }
  if (!golden::lab02_valid(x_shape, w_shape, p)) throw course::Error(what + ": invalid parameters (set expect_error)");
  course::Rng rng = grader::case_rng("hidden case " + std::to_string(index));
  lab02_tests::check_random_conv(rng, x_shape, w_shape, p);
}

}  // namespace

TEST_CASE("hidden cases (instructor-supplied, COURSE_HIDDEN_DIR)") {
  // One built-in case in the instructor's format runs first, so that this test case grades the
  // student's code even when no hidden cases are installed (it must never pass on its own).
  run_hidden_case(nlohmann::json::parse(R"({"n": 2, "c": 2, "h": 7, "w": 6, "k": 3, "r": 3, "s": 2, "pad_top": 1,
                                           "pad_right": 2, "stride_w": 2, "dilation_h": 2})"),
                  0);
  const std::vector<nlohmann::json> cases = grader::hidden_cases(COURSE_LAB_NAME);
  if (cases.empty()) MESSAGE("no hidden cases for " COURSE_LAB_NAME " (set COURSE_HIDDEN_DIR to run them)");
  for (std::size_t i = 0; i < cases.size(); ++i) run_hidden_case(cases[i], i);
}

TEST_CASE("hidden cases: the mechanism reads a lab02_padding_stride.json file and runs its cases") {
  std::vector<nlohmann::json> cases;
  {
    grader::TemporaryHiddenDir hidden;
    hidden.write(COURSE_LAB_NAME, R"({"cases": [
      {"n": 1, "c": 2, "h": 9, "w": 7, "k": 3, "r": 3, "s": 2,
       "pad_top": 2, "pad_left": 1, "stride_h": 2, "dilation_w": 3},
      {"n": 2, "c": 1, "h": 5, "w": 5, "k": 1, "r": 1, "s": 1},
      {"n": 1, "c": 1, "h": 4, "w": 4, "k": 1, "r": 5, "s": 1, "stride_h": 2, "expect_error": true}
    ]})");
    cases = grader::hidden_cases(COURSE_LAB_NAME);
  }
  REQUIRE(cases.size() == 3);
  CHECK(cases[0].at("dilation_w").get<int>() == 3);
  for (std::size_t i = 0; i < cases.size(); ++i) run_hidden_case(cases[i], i);

  // A malformed case is reported, not silently skipped.
  CHECK_THROWS_AS(run_hidden_case(nlohmann::json::parse(R"({"n": 1, "c": 1, "h": 4})"), 99), course::Error);
}
