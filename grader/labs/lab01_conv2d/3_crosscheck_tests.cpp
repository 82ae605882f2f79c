// Lab 01: checks against numbers that did not come from this repository's C++ code -- PyTorch's
// F.conv2d (fixtures) and instructor-supplied hidden cases. (The golden reference's own check
// against the same fixtures is in grader/reference/tests/, run by the course's test suite.)
//
// Hidden cases: with COURSE_HIDDEN_DIR=<dir>, the file <dir>/lab01_conv2d.json is read:
//   {"cases": [ {"n": 2, "c": 3, "h": 9, "w": 7, "k": 4, "r": 3, "s": 2, "name": "optional label"}, ... ]}
//   n  batch size            c  input channels     h, w  input height and width
//   k  output channels       r, s  kernel height and width (r <= h, s <= w)
// All seven integers are required and must be >= 1; "name" is optional. Each case gets random
// input, weight and bias (from the run's seed) and is compared with the golden reference.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "course/error.hpp"
#include "course/safetensors.hpp"
#include "lab01_test_support.hpp"

namespace {

using course::Tensor;
using lab01_tests::ConvCase;

// Case names written by data/tools/fixtures_lab01.py (each has .input/.weight/.bias/.output).
const std::vector<std::string> kFixtureCases = {"lecture_single", "lecture_two_channel", "batch_nonsquare",
                                                "lenet_conv2",    "pointwise",           "full_kernel"};

const Tensor& fixture_tensor(const std::string& name) { return grader::fixture_tensor("lab01_conv2d.safetensors", name); }

ConvCase case_from_json(const nlohmann::json& j, std::size_t index) {
  const std::string where = "hidden case #" + std::to_string(index);
  if (!j.is_object()) throw course::Error(where + ": expected a JSON object, got " + j.dump());
  const auto extent = [&](const char* key) -> std::int64_t {
    if (!j.contains(key)) throw course::Error(where + ": missing key \"" + key + "\" in " + j.dump());
    const nlohmann::json& v = j.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
      throw course::Error(where + ": \"" + key + "\" must be an integer >= 1, got " + v.dump());
    return v.get<std::int64_t>();
  };
  ConvCase cc;
  cc.n = extent("n");
  cc.c = extent("c");
  cc.h = extent("h");
  cc.w = extent("w");
  cc.k = extent("k");
  cc.r = extent("r");
  cc.s = extent("s");
  if (cc.r > cc.h || cc.s > cc.w)
    throw course::Error(where + ": the kernel (r, s) must fit in the image (h, w), got " + j.dump());
  return cc;
}

// Runs every hidden case like a random case with those extents; returns how many ran.
std::size_t run_hidden_cases() {
  const std::vector<nlohmann::json> cases = grader::hidden_cases("lab01_conv2d");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const ConvCase cc = case_from_json(cases[i], i);
    const std::string label = cases[i].value("name", std::string("hidden case #") + std::to_string(i));
    course::Rng rng = grader::case_rng("lab01 hidden " + std::to_string(i));
    lab01_tests::check_random_case(label, cc, rng);
  }
  return cases.size();
}

}  // namespace

TEST_CASE("lab01 PyTorch fixtures: conv2d_forward matches F.conv2d") {
  for (const std::string& name : kFixtureCases) {
    const Tensor x = fixture_tensor(name + ".input");
    const Tensor w = fixture_tensor(name + ".weight");
    const Tensor b = fixture_tensor(name + ".bias");
    grader::check_tensor("conv2d_forward vs PyTorch, case " + name, lab01_tests::student_conv2d(x, w, b),
                         fixture_tensor(name + ".output"), lab01_tests::kTolerance);
  }
}

TEST_CASE("lab01 hidden cases (COURSE_HIDDEN_DIR)") {
  // One built-in case in the instructor's format runs first, so that this test case grades the
  // student's code even when no hidden cases are installed (it must never pass on its own).
  const nlohmann::json example = nlohmann::json::parse(R"({"n": 2, "c": 2, "h": 5, "w": 6, "k": 3, "r": 2, "s": 3})");
  course::Rng rng = grader::case_rng("lab01 hidden built-in example");
  lab01_tests::check_random_case("built-in example case", case_from_json(example, 0), rng);
  const std::size_t ran = run_hidden_cases();
  if (ran > 0) MESSAGE("ran " << ran << " hidden case(s) for lab01_conv2d");
}

TEST_CASE("lab01 hidden cases: the mechanism reads lab01_conv2d.json") {
  grader::TemporaryHiddenDir hidden;
  hidden.write("lab01_conv2d", R"({"cases": [
      {"n": 2, "c": 3, "h": 9, "w": 7, "k": 4, "r": 3, "s": 2, "name": "instructor case"},
      {"n": 1, "c": 1, "h": 1, "w": 12, "k": 2, "r": 1, "s": 12},
      {"n": 3, "c": 4, "h": 6, "w": 6, "k": 5, "r": 6, "s": 1}
  ]})");
  CHECK(grader::hidden_cases("lab01_conv2d").size() == 3);
  CHECK(run_hidden_cases() == 3);

  // A case with a missing or impossible extent is an error in the instructor's file, reported
  // as such (not silently skipped).
  hidden.write("lab01_conv2d", R"({"cases": [{"n": 1, "c": 1, "h": 4, "w": 4, "k": 1, "r": 3}]})");
  CHECK_THROWS_WITH_AS(run_hidden_cases(), doctest::Contains("missing key \"s\""), course::Error);
  hidden.write("lab01_conv2d", R"({"cases": [{"n": 1, "c": 1, "h": 4, "w": 4, "k": 1, "r": 5, "s": 1}]})");
  CHECK_THROWS_WITH_AS(run_hidden_cases(), doctest::Contains("must fit"), course::Error);
}
