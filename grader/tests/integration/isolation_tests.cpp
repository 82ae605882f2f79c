// The sandbox and the result channel against a real lab program (the fake lab, linked with the
// real runner) that misbehaves on request: each misbehaviour must fail the lab with a reason that
// says what happened, and nothing the program prints or writes may make it pass.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>

#include "../test_support.hpp"
#include "gpu_probe.hpp"
#include "lab_runner.hpp"
#include "lab_schedule.hpp"
#include "sandbox.hpp"
#include "verdict.hpp"

using namespace course_grader;

namespace {

LabRunSettings settings() {
  LabRunSettings s;
  s.timeout_s = 10;
  s.memory_mb = 512;
  s.seed = 1234;
  s.has_gpu = false;
  s.gpu_reason = "no CUDA driver";
  return s;
}

LabResult grade_fake(const std::string& behaviour, const LabRunSettings& s = settings(), bool gpu = false) {
  ::setenv("FAKE_LAB_BEHAVIOUR", behaviour.c_str(), 1);
  ManifestLab lab;
  lab.name = gpu ? "fake_gpu_lab" : "fake_cpu_lab";
  lab.device = gpu ? "gpu" : "cpu";
  LabResult result = run_lab(lab, gpu ? FAKE_GPU_LAB : FAKE_CPU_LAB, s);
  ::unsetenv("FAKE_LAB_BEHAVIOUR");
  INFO("behaviour " << behaviour << ": " << to_string(result.status) << " -- " << result.reason << "\n"
                    << result.details << "\n--- output ---\n" << result.output);
  return result;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

#define CHECK_FAILS_WITH(result, part)                                        \
  do {                                                                        \
    const LabResult& r_ = (result);                                           \
    CHECK_MESSAGE(r_.status == LabStatus::failed, r_.reason);                 \
    CHECK_MESSAGE(contains(r_.reason, part), "reason: " << r_.reason);        \
  } while (0)

}  // namespace

TEST_SUITE("isolation") {

TEST_CASE("isolation: a well-behaved lab passes, and code before main() cannot read the key") {
  const LabResult r = grade_fake("pass");
  CHECK_MESSAGE(r.status == LabStatus::passed, r.reason << "\n" << r.details << "\n" << r.output);
  CHECK(r.cases.size() == 3);
  CHECK(r.cases_listed == 3);
  CHECK(contains(r.output, "seed 1234"));  // the grader's seed reached the program
}

TEST_CASE("isolation: failing checks and missing functions are reported from the records") {
  const LabResult failed = grade_fake("fail");
  CHECK_FAILS_WITH(failed, "1 of 3 test cases failed; first: \"fake: second\"");
  CHECK(contains(failed.details, "deliberate mismatch at index [0, 1, 2, 3]"));
  CHECK_FAILS_WITH(grade_fake("not_implemented"), "not implemented: fake::second_function, fake::third_function");
}

TEST_CASE("isolation: crashes name the signal and the test case") {
  CHECK_FAILS_WITH(grade_fake("segfault"), "segmentation fault (SIGSEGV) in test case \"fake: second\"");
  CHECK_FAILS_WITH(grade_fake("abort"), "aborted (SIGABRT) in test case \"fake: second\"");
  CHECK_FAILS_WITH(grade_fake("fpe"), "(SIGFPE) in test case \"fake: second\"");
}

TEST_CASE("isolation: an endless loop is stopped at the time limit") {
  LabRunSettings s = settings();
  s.timeout_s = 1.5;
  const auto start = std::chrono::steady_clock::now();
  CHECK_FAILS_WITH(grade_fake("hang", s), "timed out after 1.5 s in test case \"fake: second\"");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("isolation: memory limits: an oversized allocation fails at once, growth is stopped") {
  CHECK_FAILS_WITH(grade_fake("huge_alloc"), "memory limit of 512 MiB");
  LabRunSettings s = settings();
  s.memory_mb = 256;
  CHECK_FAILS_WITH(grade_fake("memory_hog", s), "memory limit of 256 MiB");
}

TEST_CASE("isolation: the resident-memory watch (used for GPU labs) kills a growing process") {
  ::setenv("FAKE_LAB_BEHAVIOUR", "memory_hog", 1);
  SandboxRequest request;
  request.argv = {FAKE_CPU_LAB};
  request.limits.memory_mb = 200;
  request.limits.limit_address_space = false;
  request.limits.timeout_s = 20;
  const SandboxResult r = run_sandboxed(request);
  ::unsetenv("FAKE_LAB_BEHAVIOUR");
  CHECK(r.ending == Ending::memory_exceeded);
  CHECK(r.peak_rss_mb > 200);
  CHECK(r.peak_rss_mb < 600);  // stopped soon after crossing the line
}

TEST_CASE("isolation: ending the program in the middle of the tests fails the lab") {
  CHECK_FAILS_WITH(grade_fake("exit0"), "exited with code 0 before its tests finished in test case \"fake: second\"");
  CHECK_FAILS_WITH(grade_fake("exit77"), "exited with code 77 before its tests finished");
  CHECK_FAILS_WITH(grade_fake("static_exit"), "before the course's test runner started");
  CHECK_FAILS_WITH(grade_fake("change_exit_code"), "after the runner finished with code 1");
}

TEST_CASE("isolation: printed verdicts, fake JSON and files written do not change the verdict") {
  const LabResult r = grade_fake("fake_verdict");
  CHECK_FAILS_WITH(r, "1 of 3 test cases failed");
  CHECK(contains(r.output, "ALL TESTS PASSED"));  // printed, shown, ignored
  std::filesystem::remove("/tmp/course-fake-lab-results.json");
}

TEST_CASE("isolation: records forged into the channel are detected") {
  CHECK_FAILS_WITH(grade_fake("forge"), "result channel was tampered with");
}

TEST_CASE("isolation: closing the channel cannot hide failures") {
  CHECK_FAILS_WITH(grade_fake("close_channel"), "before its tests finished");
}

TEST_CASE("isolation: a large file is stopped by the file-size limit") {
  CHECK_FAILS_WITH(grade_fake("big_file"), "wrote a file larger than the limit of 64 MiB (SIGXFSZ)");
}

TEST_CASE("isolation: a flood of output is kept bounded and does not fail a passing lab") {
  const LabResult r = grade_fake("flood");
  CHECK(r.status == LabStatus::passed);
  CHECK(r.output.size() < 70 * 1024);
  CHECK(contains(r.output, "bytes of output omitted"));
}

TEST_CASE("isolation: a grandchild that escapes the process group does not hang the grader") {
  const auto start = std::chrono::steady_clock::now();
  const LabResult r = grade_fake("escape_group");
  CHECK(r.status == LabStatus::passed);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(4));
}

TEST_CASE("isolation: speed metrics from the lab's test files reach the result") {
  const LabResult r = grade_fake("metric");
  CHECK(r.status == LabStatus::passed);
  REQUIRE(r.metrics.size() == 1);
  CHECK(r.metrics[0].name == "speedup_vs_reference");
  CHECK(r.metrics[0].value == doctest::Approx(2.5));
  CHECK(r.notes == std::vector<std::string>{"speed not judged: a note for the report"});
}

TEST_CASE("isolation: a GPU lab is skipped without a GPU, and runs with one") {
  LabRunSettings s = settings();
  s.has_gpu = probe_gpu().available;
  const LabResult r = grade_fake("pass", s, /*gpu=*/true);
  if (!s.has_gpu) {
    CHECK(r.status == LabStatus::skipped);
    CHECK(contains(r.reason, "needs a CUDA GPU"));
  } else {
    CHECK(r.status == LabStatus::passed);
  }
}

TEST_CASE("isolation: hidden cases reach the lab program only through the grader's --hidden") {
  grader_test::TempDir dir;
  grader_test::write_file(dir / "fake_cpu_lab.json", R"({"cases": [{"anything": 1}]})");
  LabRunSettings s = settings();
  s.hidden_dir = dir.path();
  CHECK(grade_fake("hidden", s).status == LabStatus::passed);
  // A COURSE_HIDDEN_DIR left in the grader's environment is not passed on.
  ::setenv("COURSE_HIDDEN_DIR", dir.path().c_str(), 1);
  CHECK_FAILS_WITH(grade_fake("hidden"), "1 of 3 test cases failed");
  ::unsetenv("COURSE_HIDDEN_DIR");
}

TEST_CASE("isolation: a program that cannot start is reported, not fatal") {
  ManifestLab lab;
  lab.name = "fake_cpu_lab";
  lab.device = "cpu";
  const LabResult r = run_lab(lab, "/nonexistent/lab_program", settings());
  CHECK(r.status == LabStatus::failed);
  CHECK(contains(r.reason, "could not be started"));
}

TEST_CASE("isolation: a run whose result is no longer needed is stopped at once (SandboxRequest::cancel)") {
  // The lab schedule stops a lab's sanitizer parts once its untimed cases failed: a hanging part
  // must not keep the grader waiting for its (ten times longer) time limit.
  SandboxRequest request;
  request.argv = {"/bin/sleep", "30"};
  request.result_channel = false;
  request.limits.timeout_s = 20;
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  request.cancel = cancel;
  std::thread later([cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel->store(true);
  });
  const SandboxResult r = run_sandboxed(request);
  later.join();
  CHECK(r.ending == Ending::cancelled);
  CHECK(r.seconds < 5);
  LabResult judged;
  judge_run(JudgeContext{}, {"a"}, r, judged);
  CHECK(judged.status == LabStatus::failed);  // never a pass
}

TEST_CASE("isolation: the lab schedule reports labs in the course's order, whatever order they started in") {
  // grade_command.cpp starts the longest labs first; the reports must not notice.
  ::setenv("FAKE_LAB_BEHAVIOUR", "pass", 1);
  ManifestLab lab;
  lab.name = "fake_cpu_lab";
  lab.device = "cpu";
  auto base = [](const std::string& tag) {
    LabResult r;
    r.student_files = {tag};
    return r;
  };
  std::vector<std::string> order;
  {
    LabSchedule schedule(settings(), 2, 1, 4, 8);
    schedule.add_run(2, lab, FAKE_CPU_LAB, base("third"));
    LabResult skipped = base("second");
    skipped.status = LabStatus::skipped;
    schedule.add_result(1, skipped);
    for (const LabResult& r : schedule.take_finished()) order.push_back(r.student_files.at(0));
    CHECK(order.empty());  // position 0 was not added yet
    schedule.add_run(0, lab, FAKE_CPU_LAB, base("first"));
    schedule.finish([](const std::string&, const std::string&) {});
    for (const LabResult& r : schedule.take_finished()) {
      order.push_back(r.student_files.at(0));
      if (r.student_files.at(0) != "second") CHECK_MESSAGE(r.status == LabStatus::passed, r.reason);
    }
    CHECK(schedule.spans().size() == 2);  // the two programs, each run whole
  }
  ::unsetenv("FAKE_LAB_BEHAVIOUR");
  CHECK(order == std::vector<std::string>{"first", "second", "third"});
}

}  // TEST_SUITE

// Needs a GPU: CTest runs this suite as grader.gpu, which reports "skipped" without one (the
// test program's main() exits 77 before any test runs).
TEST_SUITE("gpu") {

TEST_CASE("gpu: a kernel writing out of bounds fails its lab with a CUDA hint; the memory watch works") {
  LabRunSettings s = settings();
  s.has_gpu = probe_gpu().available;
  REQUIRE(s.has_gpu);
  const LabResult fault = grade_fake("cuda_illegal_address", s, true);
  CHECK(fault.status == LabStatus::failed);
  CHECK(contains(fault.hint, "compute-sanitizer"));
  MESSAGE("out-of-bounds kernel: " << fault.reason);
  // No address-space limit for a CUDA process: the resident-memory watch must stop it.
  LabRunSettings small = s;
  small.memory_mb = 256;
  CHECK_FAILS_WITH(grade_fake("memory_hog", small, true), "exceeded the memory limit of 256 MiB");
}

}  // TEST_SUITE
