// Turns what the sandbox observed (how the process ended, the verified result records) into a
// lab verdict with a reason a student can act on. Pure functions: unit-tested with made-up runs.
//
// A lab passes only if ALL of these hold:
//   * the listing run (--list-test-cases) reported a non-empty list through the channel;
//   * the test run ended by itself (no signal, no time-out, no memory kill) with an exit code that
//     matches the runner's final record, and every record carried a valid tag;
//   * the final record is present and its totals match the per-case records, and the cases that
//     ran are exactly the cases that were listed;
//   * no case failed.
#pragma once

#include <string>
#include <vector>

#include "results.hpp"
#include "sandbox.hpp"

namespace course_grader {

struct JudgeContext {
  std::string lab;        ///< the name the manifest gives
  std::string device;     ///< cpu or gpu
  bool grader_has_gpu = false;
  std::string grader_gpu_reason;
  SandboxLimits limits;
};

/// Judges the --list-test-cases run. Returns true when the test run should follow, with the
/// listed names in `listed`; otherwise `out` holds the final verdict (failed or skipped).
bool judge_listing(const JudgeContext& context, const SandboxResult& listing, LabResult& out,
                   std::vector<std::string>& listed);

/// Judges the test run; fills status, reason, hint, details, cases and metrics of `out`.
void judge_run(const JudgeContext& context, const std::vector<std::string>& listed, const SandboxResult& run,
               LabResult& out);

}  // namespace course_grader
