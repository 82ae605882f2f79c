// What grading produces: per lab a verdict with its reason, per test case what happened, and the
// context the reports need. Filled by lab_runner/verdict and the build driver; read by reports.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace course_grader {

enum class LabStatus { passed, failed, skipped };

const char* to_string(LabStatus status);

struct CaseResult {
  std::string name;
  bool passed = false;
  double seconds = 0;
  std::vector<std::string> messages;  ///< first failed checks, as the runner reported them
  std::string exception;              ///< an exception that escaped the test case, if any
};

struct Metric {
  std::string name;   ///< e.g. "speedup_vs_reference"
  double value = 0;
  std::string test_case;
};

struct LabResult {
  std::string lab;                     ///< e.g. lab01_conv2d
  std::string device;                  ///< cpu or gpu
  LabStatus status = LabStatus::failed;
  std::string reason;                  ///< one line: why it failed or was skipped (empty if passed)
  std::string skipped_because = "no GPU";  ///< skipped: the short form for summaries ("no GPU", "no CUDA toolkit")
  std::string hint;                    ///< what to do about it (may be empty)
  std::string details;                 ///< first failure message(s) or compiler errors
  bool failed_by_cases = false;        ///< failed only because test cases failed (not a crash etc.)
  bool built_only = false;             ///< --build-only: built, not run (status passed)
  std::vector<CaseResult> cases;       ///< test cases in the order they ran
  int cases_listed = 0;                ///< how many the program listed before running
  std::vector<Metric> metrics;
  std::string sandbox;                 ///< how the lab's worker was isolated (the runner's "sandbox" record)
  bool sandbox_degraded = false;       ///< the worker ran without isolation: the report says so
  std::string sanitizer_tool;          ///< set by a sanitizer pass's "sanitizer" record
  bool sanitizer_available = false;
  bool sanitizer_clean = false;
  bool sanitizer_worker_started = true;  ///< the pass started the student's worker (a part may not)
  std::string sanitizer_report;        ///< compute-sanitizer's first report block
  std::vector<std::string> notes;      ///< shown with the lab (e.g. a gate that was skipped)
  std::string output;                  ///< captured stdout+stderr of the test run (bounded)
  std::vector<std::string> student_files;  ///< the files to edit (absolute paths)
  double seconds = 0;                  ///< test run time
  double build_seconds = 0;
  /// Not the student's doing: "timeout", "degraded sandbox", "GPU interference", "worker crash",
  /// "not graded" (infrastructure_problem()); "" otherwise. The instructor report lists these apart.
  std::string infrastructure;
  std::string files_hash;              ///< FNV-1a-64 of the student's files (names + bytes), hex

  int cases_passed() const {
    int n = 0;
    for (const auto& c : cases) n += c.passed ? 1 : 0;
    return n;
  }
};

/// The speed gate's result of a lab, from its metrics (speedup_vs_reference, speedup_ci_low,
/// speedup_ci_high), if it reported one.
struct Speedup {
  double point = 0, low = 0, high = 0;
  double required = 0;  ///< the gate: passes when point >= required (0: measured only)
};
std::optional<Speedup> lab_speedup(const LabResult& lab);
/// "1.02x (95% CI 0.98-1.05x)", or "1.02 [0.98-1.05]" for a spreadsheet cell.
std::string format_speedup(const Speedup& s, bool words = true);

struct SubmissionResult {
  std::string name;    ///< variant name (sanitized), e.g. exercises, solutions, alice
  std::string folder;  ///< the folder that was graded
  std::vector<LabResult> labs;
  std::uint64_t seed = 0;  ///< this submission's COURSE_SEED (student_seed() in a batch)
  // Where it was graded (a Slurm batch grades students on different nodes and GPUs):
  std::string host;        ///< the machine's host name
  std::string gpu;         ///< the GPU's summary, "" without one (then gpu_reason says why)
  std::string gpu_reason;
  std::string slurm_job;   ///< "<array job>_<task>" (or the job id) under Slurm, else ""
  std::string not_graded;  ///< merge only: why this expected student has no results ("" = graded)
};

struct GradeRun {
  std::vector<SubmissionResult> submissions;
  std::uint64_t seed = 0;  ///< the run's seed (COURSE_SEED or random)
  bool batch = false;      ///< --submissions: every submission has its own seed derived from `seed`
  bool has_gpu = false;
  std::string gpu_reason;  ///< why not, when has_gpu is false
  int points_per_lab = 10;
  std::string sandbox_mode;         ///< the worker sandbox this machine gives: bwrap, unshare, user or none
  bool sandbox_degraded = false;    ///< student code runs without isolation: every report says DEGRADED
  std::string sandbox_description;  ///< one line: what the sandbox is (or lacks)
  bool hidden_cases = false;  ///< --hidden ran: program output stays out of student-visible results
  double seconds = 0;
  std::string started_at;       ///< UTC, ISO 8601
  std::string regrade_command;  ///< e.g. "./course grade" (+ the lab), for the next-step hint
};

}  // namespace course_grader
