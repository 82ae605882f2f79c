// Lab 04: instructor-supplied hidden cases for the three layer operations.
//
// With COURSE_HIDDEN_DIR=<dir>, the file <dir>/lab04_lenet_cpu.json is read:
//   {"cases": [
//     {"op": "batchnorm", "n": 2, "c": 3, "h": 5, "w": 4, "eps": 0.001},
//     {"op": "fold", "n": 1, "c": 3, "h": 8, "w": 8, "out": 4, "kernel": 3, "pad": 1, "stride": 1,
//      "eps": 1e-5, "bias": false},
//     {"op": "linear", "n": 4, "in": 400, "out": 120},
//     ...]}
//   op          "batchnorm" (batchnorm_inference), "fold" (fold_batchnorm, checked as in the
//               random fold tests: folded parameters AND conv -> BN == folded conv), "linear"
//   n, c, h, w  input [n, c, h, w] (batchnorm, fold); required, integers >= 1
//   out         fold: number of filters; linear: output features; required, >= 1
//   in          linear: input features; required, >= 1 (linear uses n, in, out only)
//   kernel      fold: square kernel size, required, >= 1; pad (>= 0, default 0) and stride
//               (>= 1, default 1) must leave an output of at least 1x1
//   eps         batchnorm and fold: optional, > 0, default 1e-5
//   bias        fold: optional boolean, default true (false = convolution without bias)
//   name        optional label shown in failure messages
// Each case gets random values from the run's seed and is compared with the golden reference,
// exactly like the random cases of 1_batchnorm_tests.cpp, 2_fold_tests.cpp and 3_linear_tests.cpp.
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
#include "lab04_test_support.hpp"

namespace {

constexpr const char* kLab = "lab04_lenet_cpu";

// Reads and validates one case; a malformed case is the instructor's mistake and is reported
// as course::Error naming the case and the key.
class HiddenCase {
 public:
  HiddenCase(const nlohmann::json& j, std::size_t index) : j_(j), where_("hidden case #" + std::to_string(index)) {
    if (!j.is_object()) fail("expected a JSON object");
    if (!j.contains("op") || !j.at("op").is_string()) fail("missing string key \"op\"");
  }

  std::string op() const { return j_.at("op").get<std::string>(); }
  std::string label() const { return j_.value("name", where_) + " (" + op() + ")"; }

  std::int64_t integer(const char* key, std::int64_t minimum, std::optional<std::int64_t> fallback = {}) const {
    if (!j_.contains(key)) {
      if (fallback) return *fallback;
      fail(std::string("missing key \"") + key + "\"");
    }
    const nlohmann::json& v = j_.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < minimum)
      fail(std::string("\"") + key + "\" must be an integer >= " + std::to_string(minimum) + ", got " + v.dump());
    return v.get<std::int64_t>();
  }

  double eps() const {
    if (!j_.contains("eps")) return 1e-5;
    const nlohmann::json& v = j_.at("eps");
    if (!v.is_number() || !(v.get<double>() > 0.0)) fail("\"eps\" must be a number > 0, got " + v.dump());
    return v.get<double>();
  }

  bool flag(const char* key, bool fallback) const {
    if (!j_.contains(key)) return fallback;
    if (!j_.at(key).is_boolean()) fail(std::string("\"") + key + "\" must be true or false");
    return j_.at(key).get<bool>();
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw course::Error(where_ + ": " + problem + " in " + j_.dump());
  }

 private:
  const nlohmann::json& j_;
  std::string where_;
};

void run_case(const HiddenCase& hc, course::Rng& rng) {
  const std::string op = hc.op();
  if (op == "batchnorm") {
    lab04_tests::check_batchnorm_case(hc.label(), hc.integer("n", 1), hc.integer("c", 1), hc.integer("h", 1),
                                      hc.integer("w", 1), hc.eps(), rng);
  } else if (op == "fold") {
    lab04_tests::FoldCase fc;
    fc.n = hc.integer("n", 1);
    fc.c = hc.integer("c", 1);
    fc.h = hc.integer("h", 1);
    fc.w = hc.integer("w", 1);
    fc.out = hc.integer("out", 1);
    fc.kernel = hc.integer("kernel", 1);
    fc.pad = static_cast<int>(hc.integer("pad", 0, 0));
    fc.stride = static_cast<int>(hc.integer("stride", 1, 1));
    fc.eps = hc.eps();
    fc.bias = hc.flag("bias", true);
    if (fc.h + 2 * fc.pad < fc.kernel || fc.w + 2 * fc.pad < fc.kernel)
      hc.fail("the kernel must fit in the padded input (h + 2*pad >= kernel, w + 2*pad >= kernel)");
    lab04_tests::check_fold_case(hc.label(), fc, rng);
  } else if (op == "linear") {
    lab04_tests::check_linear_case(hc.label(), hc.integer("n", 1), hc.integer("in", 1), hc.integer("out", 1), rng);
  } else {
    hc.fail("unknown \"op\" \"" + op + "\" (expected batchnorm, fold or linear)");
  }
}

// Runs every hidden case like a random case with those parameters; returns how many ran.
std::size_t run_hidden_cases() {
  const std::vector<nlohmann::json> cases = grader::hidden_cases(kLab);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const HiddenCase hc(cases[i], i);
    course::Rng rng = grader::case_rng("lab04 hidden " + std::to_string(i));
    run_case(hc, rng);
  }
  return cases.size();
}

}  // namespace

TEST_CASE("hidden cases: instructor-supplied cases (COURSE_HIDDEN_DIR)") {
  // One built-in case in the instructor's format runs first, so that this test case grades the
  // student's code even when no hidden cases are installed (it must never pass on its own).
  const nlohmann::json example = nlohmann::json::parse(
      R"({"op": "fold", "n": 2, "c": 2, "h": 6, "w": 5, "out": 3, "kernel": 3, "pad": 1, "stride": 2, "eps": 0.001})");
  course::Rng rng = grader::case_rng("lab04 hidden built-in example");
  run_case(HiddenCase(example, 0), rng);
  const std::size_t ran = run_hidden_cases();
  if (ran > 0) MESSAGE("ran " << ran << " hidden case(s) for " << std::string(kLab));
}

TEST_CASE("hidden cases: the mechanism reads lab04_lenet_cpu.json and runs every op") {
  grader::TemporaryHiddenDir hidden;
  hidden.write(kLab, R"({"cases": [
    {"op": "batchnorm", "n": 2, "c": 3, "h": 5, "w": 4, "eps": 0.001, "name": "bn with eps 1e-3"},
    {"op": "fold", "n": 1, "c": 3, "h": 8, "w": 8, "out": 4, "kernel": 3, "pad": 1, "stride": 2, "bias": false},
    {"op": "linear", "n": 4, "in": 400, "out": 120}
  ]})");
  CHECK(grader::hidden_cases(kLab).size() == 3);
  CHECK(run_hidden_cases() == 3);

  // Malformed cases are reported, not silently skipped.
  hidden.write(kLab, R"({"cases": [{"op": "softmax", "n": 1}]})");
  CHECK_THROWS_WITH_AS(run_hidden_cases(), doctest::Contains("unknown \"op\""), course::Error);
  hidden.write(kLab, R"({"cases": [{"op": "linear", "n": 2, "out": 3}]})");
  CHECK_THROWS_WITH_AS(run_hidden_cases(), doctest::Contains("missing key \"in\""), course::Error);
  hidden.write(kLab, R"({"cases": [{"op": "batchnorm", "n": 1, "c": 1, "h": 1, "w": 1, "eps": 0}]})");
  CHECK_THROWS_WITH_AS(run_hidden_cases(), doctest::Contains("eps"), course::Error);
  hidden.write(kLab, R"({"cases": [{"op": "fold", "n": 1, "c": 1, "h": 2, "w": 2, "out": 1, "kernel": 5}]})");
  CHECK_THROWS_WITH_AS(run_hidden_cases(), doctest::Contains("must fit"), course::Error);
}
