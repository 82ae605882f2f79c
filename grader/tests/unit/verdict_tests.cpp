// Verdicts from made-up observations: every way a run can end maps to the right status and a
// reason that names what happened.
#include <doctest/doctest.h>

#include <csignal>

#include "verdict.hpp"

using namespace course_grader;
using nlohmann::json;

namespace {

JudgeContext context(const std::string& device = "cpu", bool has_gpu = false) {
  JudgeContext c;
  c.lab = "lab01_conv2d";
  c.device = device;
  c.grader_has_gpu = has_gpu;
  c.grader_gpu_reason = "no CUDA driver";
  c.limits.timeout_s = 2;
  c.limits.memory_mb = 256;
  return c;
}

json hello() { return {{"type", "hello"}, {"lab", "lab01_conv2d"}}; }
json start(const std::string& name) { return {{"type", "start"}, {"case", name}}; }
json done(const std::string& name, bool passed, const std::string& exception = "") {
  json r = {{"type", "case"}, {"case", name}, {"status", passed ? "passed" : "failed"}, {"messages", json::array()}};
  if (!exception.empty()) r["exception"] = exception;
  return r;
}
json end(int exit_code, int run, int failed) {
  return {{"type", "end"}, {"exit_code", exit_code}, {"cases_run", run}, {"cases_failed", failed}};
}

SandboxResult exited(int code, std::vector<json> records) {
  SandboxResult r;
  r.ending = Ending::exited;
  r.exit_code = code;
  r.records = std::move(records);
  return r;
}

const std::vector<std::string> kListed = {"a", "b"};

SandboxResult full_run(bool b_passes) {
  return exited(b_passes ? 0 : 1, {hello(), start("a"), done("a", true), start("b"), done("b", b_passes),
                                   end(b_passes ? 0 : 1, 2, b_passes ? 0 : 1)});
}

LabResult judged(const SandboxResult& r, const JudgeContext& c = context()) {
  LabResult out;
  judge_run(c, kListed, r, out);
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("verdict: a clean listing yields the names") {
  LabResult out;
  std::vector<std::string> listed;
  const auto r = exited(0, {hello(), {{"type", "list"}, {"cases", {"a", "b"}}}, end(0, 0, 0)});
  CHECK(judge_listing(context(), r, out, listed));
  CHECK(listed == kListed);
  CHECK(out.cases_listed == 2);
}

TEST_CASE("verdict: an empty listing or a listing that never came fails") {
  LabResult out;
  std::vector<std::string> listed;
  CHECK_FALSE(judge_listing(context(), exited(0, {hello(), {{"type", "list"}, {"cases", json::array()}}, end(0, 0, 0)}), out, listed));
  CHECK(contains(out.reason, "no test cases"));
  LabResult out2;
  CHECK_FALSE(judge_listing(context(), exited(0, {hello()}), out2, listed));
  CHECK(out2.status == LabStatus::failed);
}

TEST_CASE("verdict: GPU labs are skipped only with the runner's record, exit 77 and no GPU here") {
  const json skip = {{"type", "skip"}, {"reason", "no CUDA driver"}};
  std::vector<std::string> listed;
  {
    LabResult out;
    CHECK_FALSE(judge_listing(context("gpu", false), exited(77, {hello(), skip}), out, listed));
    CHECK(out.status == LabStatus::skipped);
    CHECK(contains(out.reason, "needs a CUDA GPU (no CUDA driver)"));
  }
  {
    LabResult out;  // the grader sees a GPU: a skip is a failure
    CHECK_FALSE(judge_listing(context("gpu", true), exited(77, {hello(), skip}), out, listed));
    CHECK(out.status == LabStatus::failed);
  }
  {
    LabResult out;  // a CPU lab never skips
    CHECK_FALSE(judge_listing(context("cpu", false), exited(77, {hello(), skip}), out, listed));
    CHECK(out.status == LabStatus::failed);
  }
  {
    LabResult out;  // exit 77 alone (student code calling exit(77)) is not a skip
    CHECK_FALSE(judge_listing(context("gpu", false), exited(77, {hello()}), out, listed));
    CHECK(out.status == LabStatus::failed);
  }
}

TEST_CASE("verdict: all cases passed, totals and exit code consistent -> passed") {
  const LabResult out = judged(full_run(true));
  CHECK(out.status == LabStatus::passed);
  CHECK(out.cases_passed() == 2);
}

TEST_CASE("verdict: a failing case fails the lab and names it") {
  const LabResult out = judged(full_run(false));
  CHECK(out.status == LabStatus::failed);
  CHECK(out.failed_by_cases);
  CHECK(contains(out.reason, "1 of 2 test cases failed"));
  CHECK(contains(out.reason, "\"b\""));
}

TEST_CASE("verdict: skeleton functions are reported as not implemented") {
  auto r = exited(1, {hello(), start("a"), done("a", false, "not implemented: lab01::conv2d_forward"), start("b"),
                      done("b", false, "not implemented: lab01::conv2d_output_shape"), end(1, 2, 2)});
  const LabResult out = judged(r);
  CHECK(out.reason == "not implemented: lab01::conv2d_forward, lab01::conv2d_output_shape");
}

TEST_CASE("verdict: ending before the final record fails, naming the case in progress") {
  const LabResult out = judged(exited(0, {hello(), start("a"), done("a", true), start("b")}));
  CHECK(out.status == LabStatus::failed);
  CHECK(contains(out.reason, "exited with code 0 before its tests finished in test case \"b\""));
}

TEST_CASE("verdict: inconsistent records fail the lab") {
  SUBCASE("totals") {
    auto r = full_run(true);
    r.records.back() = end(0, 3, 0);
    CHECK(contains(judged(r).reason, "totals"));
  }
  SUBCASE("exit code differs from the final record") {
    auto r = full_run(false);
    r.exit_code = 0;
    CHECK(contains(judged(r).reason, "after the runner finished with code 1"));
  }
  SUBCASE("cases that ran are not the cases listed") {
    auto r = exited(0, {hello(), start("a"), done("a", true), start("z"), done("z", true), end(0, 2, 0)});
    CHECK(contains(judged(r).reason, "different set"));
  }
  SUBCASE("a case that ended without starting") {
    auto r = exited(0, {hello(), start("a"), done("a", true), done("b", true), end(0, 2, 0)});
    CHECK(contains(judged(r).reason, "inconsistent"));
  }
  SUBCASE("the program claims to be another lab") {
    auto r = full_run(true);
    r.records.front()["lab"] = "lab02_padding_stride";
    CHECK(contains(judged(r).reason, "reports itself as"));
  }
  SUBCASE("no runner at all") {
    CHECK(contains(judged(exited(0, {})).reason, "before the course's test runner started"));
  }
}

TEST_CASE("verdict: a tampered channel fails even when every record says passed") {
  auto r = full_run(true);
  r.channel_error = "record 6 has a wrong tag";
  const LabResult out = judged(r);
  CHECK(out.status == LabStatus::failed);
  CHECK(contains(out.reason, "tampered"));
}

TEST_CASE("verdict: signals, time-outs and memory kills say what happened and where") {
  SandboxResult r = exited(0, {hello(), start("a"), done("a", true), start("b")});
  SUBCASE("segfault") {
    r.ending = Ending::signaled;
    r.signal = SIGSEGV;
    const LabResult out = judged(r);
    CHECK(contains(out.reason, "segmentation fault (SIGSEGV) in test case \"b\""));
    CHECK_FALSE(out.hint.empty());
    CHECK(contains(out.details, "1 of 2 test cases passed"));
  }
  SUBCASE("abort after a failed allocation") {
    r.ending = Ending::signaled;
    r.signal = SIGABRT;
    r.output = "terminate called after throwing an instance of 'std::bad_alloc'";
    CHECK(contains(judged(r).reason, "exceeded the memory limit of 256 MiB"));
  }
  SUBCASE("time-out") {
    r.ending = Ending::timed_out;
    CHECK(contains(judged(r).reason, "timed out after 2 s in test case \"b\""));
  }
  SUBCASE("memory") {
    r.ending = Ending::memory_exceeded;
    CHECK(contains(judged(r).reason, "exceeded the memory limit of 256 MiB in test case \"b\""));
  }
  SUBCASE("file size") {
    r.ending = Ending::signaled;
    r.signal = SIGXFSZ;
    CHECK(contains(judged(r).reason, "larger than the limit"));
  }
}

TEST_CASE("verdict: a CUDA illegal address gets the compute-sanitizer hint") {
  auto r = exited(1, {hello(), start("a"), done("a", true), start("b"),
                      done("b", false, "CUDA error cudaErrorIllegalAddress (700): an illegal memory access was encountered"),
                      end(1, 2, 1)});
  const LabResult out = judged(r, context("gpu", true));
  CHECK(out.status == LabStatus::failed);
  CHECK(contains(out.hint, "compute-sanitizer"));
}

TEST_CASE("verdict: metrics are collected") {
  auto r = full_run(true);
  r.records.insert(r.records.begin() + 2, json{{"type", "metric"}, {"case", "a"}, {"name", "speedup"}, {"value", 1.5}});
  const LabResult out = judged(r);
  CHECK(out.status == LabStatus::passed);
  REQUIRE(out.metrics.size() == 1);
  CHECK(out.metrics[0].value == doctest::Approx(1.5));
}

TEST_CASE("verdict: notes of the course's tests reach the report once each, made inert") {
  auto r = full_run(true);
  const json note = {{"type", "note"}, {"case", "a"}, {"text", "speed not judged: no reference \x1b[31mworker"}};
  r.records.insert(r.records.begin() + 2, note);
  r.records.insert(r.records.begin() + 2, note);  // every timed case says it: the report once
  const LabResult out = judged(r);
  CHECK(out.status == LabStatus::passed);
  REQUIRE(out.notes.size() == 1);
  CHECK(out.notes[0] == "speed not judged: no reference ?[31mworker");
}

}  // TEST_SUITE
