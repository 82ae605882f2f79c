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
/// `allow_empty`: a listing of a filtered subset may be empty (a lab with no timed cases).
bool judge_listing(const JudgeContext& context, const SandboxResult& listing, LabResult& out,
                   std::vector<std::string>& listed, bool allow_empty = false);

/// Judges the test run; fills status, reason, hint, details, cases and metrics of `out`.
void judge_run(const JudgeContext& context, const std::vector<std::string>& listed, const SandboxResult& run,
               LabResult& out);

/// One verdict from a lab whose listed cases ran in several programs ("parts", each judged by
/// judge_run against its own share of the listing): the first part that did not end cleanly
/// decides; otherwise every listed case must have run exactly once, the parts' run times together
/// must stay within the lab's time limit, and the failed cases are summarised as one program's
/// would be. Cases are reported in the order of `listed`.
void judge_parts(const JudgeContext& context, const std::vector<std::string>& listed,
                 const std::vector<LabResult>& parts, LabResult& out);

}  // namespace course_grader
