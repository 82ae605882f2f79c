// A lab run in parts (lab_schedule.cpp): the parts' verdicts must add up to the one its single
// program would have got -- never a pass that the single run would not have given.
#include <doctest/doctest.h>

#include "lab_runner.hpp"
#include "verdict.hpp"

using namespace course_grader;
using nlohmann::json;

namespace {

JudgeContext context() {
  JudgeContext c;
  c.lab = "lab07_optimized_cuda";
  c.device = "gpu";
  c.grader_has_gpu = true;
  c.limits.timeout_s = 10;
  return c;
}

json hello() { return {{"type", "hello"}, {"lab", "lab07_optimized_cuda"}}; }

// One part's run of `names`, those in `failing` failing, judged against `names`.
LabResult part(const std::vector<std::string>& names, const std::vector<std::string>& failing = {},
               double seconds = 1) {
  std::vector<json> records = {hello()};
  int failed = 0;
  for (const auto& n : names) {
    const bool ok = std::find(failing.begin(), failing.end(), n) == failing.end();
    failed += ok ? 0 : 1;
    records.push_back({{"type", "start"}, {"case", n}});
    records.push_back({{"type", "case"}, {"case", n}, {"status", ok ? "passed" : "failed"}, {"messages", json::array()}});
  }
  records.push_back({{"type", "end"}, {"exit_code", failed ? 1 : 0}, {"cases_run", names.size()}, {"cases_failed", failed}});
  SandboxResult r;
  r.ending = Ending::exited;
  r.exit_code = failed ? 1 : 0;
  r.records = records;
  r.seconds = seconds;
  LabResult out;
  judge_run(context(), names, r, out);
  return out;
}

const std::vector<std::string> kListed = {"a", "b", "c", "speed: d"};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("parts: ranges cover every case once, in order, sizes within one") {
  CHECK(shard_ranges(0, 4).empty());
  const auto r = shard_ranges(10, 4);
  REQUIRE(r.size() == 4);
  std::size_t next = 0;
  for (const auto& [first, last] : r) {
    CHECK(first == next);
    CHECK(last - first >= 2);
    CHECK(last - first <= 3);
    next = last;
  }
  CHECK(next == 10);
  CHECK(shard_ranges(3, 8).size() == 3);
  CHECK(shard_ranges(5, 1) == std::vector<std::pair<std::size_t, std::size_t>>{{0, 5}});
  CHECK(range_arguments({2, 5}) == std::vector<std::string>{"--first=3", "--last=5"});
}

TEST_CASE("parts: passing parts pass, cases in the listing's order") {
  LabResult out;
  judge_parts(context(), kListed, {part({"c"}), part({"a", "b"}), part({"speed: d"})}, out);
  CHECK(out.status == LabStatus::passed);
  REQUIRE(out.cases.size() == 4);
  CHECK(out.cases[0].name == "a");
  CHECK(out.cases[2].name == "c");
  CHECK(out.cases_listed == 4);
  CHECK(out.seconds == doctest::Approx(3));
}

TEST_CASE("parts: failures are counted over the whole lab") {
  LabResult out;
  judge_parts(context(), kListed, {part({"a", "b"}, {"b"}), part({"c"}), part({"speed: d"}, {"speed: d"})}, out);
  CHECK(out.status == LabStatus::failed);
  CHECK(out.failed_by_cases);
  CHECK(contains(out.reason, "2 of 4 test cases failed"));
  CHECK(contains(out.reason, "\"b\""));
}

TEST_CASE("parts: a part that did not end cleanly decides") {
  LabResult crashed;
  crashed.status = LabStatus::failed;
  crashed.reason = "crashed with a segmentation fault (SIGSEGV) in test case \"c\"";
  LabResult out;
  judge_parts(context(), kListed, {part({"a", "b"}, {"a"}), crashed, part({"speed: d"})}, out);
  CHECK(out.status == LabStatus::failed);
  CHECK(contains(out.reason, "SIGSEGV"));
}

TEST_CASE("parts: a case missing from every part fails the lab") {
  LabResult out;
  judge_parts(context(), kListed, {part({"a", "b"}), part({"speed: d"})}, out);
  CHECK(out.status == LabStatus::failed);
  CHECK(contains(out.reason, "a different set"));
}

TEST_CASE("parts: together the parts stay within the lab's time limit") {
  LabResult out;
  judge_parts(context(), kListed, {part({"a", "b"}, {}, 6), part({"c"}, {}, 3), part({"speed: d"}, {}, 2)}, out);
  CHECK(out.status == LabStatus::failed);
  CHECK(contains(out.reason, "timed out"));
  CHECK(contains(out.reason, "limit of 10 s"));
}

TEST_CASE("parts: a sanitizer pass in parts -- clean, errors, and a part that started no worker") {
  auto pass = [](bool clean, bool started) {
    LabResult p = part({"a"});
    p.sanitizer_tool = "racecheck";
    p.sanitizer_available = true;
    p.sanitizer_clean = clean;
    p.sanitizer_worker_started = started;
    p.sanitizer_report = clean ? "" : "========= Race reported";
    return p;
  };
  LabResult ok = part({"a"});
  apply_sanitizer("racecheck", {pass(true, true), pass(true, true)}, ok);
  CHECK(ok.status == LabStatus::passed);
  REQUIRE(ok.notes.size() == 1);
  CHECK(ok.notes[0] == "compute-sanitizer racecheck: no errors in 2 test cases");

  LabResult raced = part({"a"});
  apply_sanitizer("racecheck", {pass(true, true), pass(false, true)}, raced);
  CHECK(raced.status == LabStatus::failed);
  CHECK(raced.details == "========= Race reported");

  // A part whose cases call no student code has no worker to stop: nothing it could hide.
  LabResult quiet = part({"a"});
  apply_sanitizer("racecheck", {pass(false, false), pass(true, true)}, quiet);
  CHECK(quiet.status == LabStatus::passed);
  // But a pass that never started the worker at all checked nothing: not a pass.
  LabResult none = part({"a"});
  apply_sanitizer("racecheck", {pass(false, false)}, none);
  CHECK(none.status == LabStatus::failed);
}

}  // TEST_SUITE
