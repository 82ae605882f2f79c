// Runs one lab program twice in the sandbox -- first with --list-test-cases (what will run), then
// for real -- and judges both runs (verdict.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "manifest.hpp"
#include "results.hpp"
#include "sandbox.hpp"
#include "verdict.hpp"

namespace course_grader {

struct LabRunSettings {
  double timeout_s = 60;
  std::size_t memory_mb = 2048;
  bool allow_degraded = false;  ///< --allow-degraded: COURSE_ALLOW_DEGRADED=1 for the lab program
  std::string hidden_dir;      ///< passed as COURSE_HIDDEN_DIR; empty = the variable is removed
  std::uint64_t seed = 0;      ///< passed as COURSE_SEED
  bool has_gpu = false;        ///< the grader's own check
  std::string gpu_reason;
  /// Folders the lab's worker must not see (COURSE_SANDBOX_HIDE): the course tree, the build
  /// tree, every submission (others' work), the hidden cases.
  std::vector<std::string> hide_from_worker;
  /// Where the reference solution's workers are (COURSE_REFERENCE_WORKER_DIR), for speed gates.
  std::string reference_worker_dir;
};

/// The sandbox limits for a lab: address-space limit for CPU labs, RSS watch for GPU labs.
SandboxLimits limits_for(const std::string& device, const LabRunSettings& settings);

/// The verdict's context and the sandbox request (environment, limits; no argv) of a lab's runs.
JudgeContext lab_context(const ManifestLab& lab, const LabRunSettings& settings);
SandboxRequest lab_request(const ManifestLab& lab, const LabRunSettings& settings);
/// The same request for a sanitizer pass with `tool`: COURSE_SANITIZER, ten times the time.
SandboxRequest sanitizer_request(SandboxRequest request, const std::string& tool);

/// `cases` listed cases cut into at most `shards` consecutive ranges [first, last) of sizes that
/// differ by at most one; and the doctest arguments that run one range of them.
std::vector<std::pair<std::size_t, std::size_t>> shard_ranges(std::size_t cases, std::size_t shards);
std::vector<std::string> range_arguments(std::pair<std::size_t, std::size_t> range);

/// The sanitizer gate's verdict for `tool` from its passes (one, or the parts of one, in the
/// listing's order), added to `result`: a note when clean or not installed, else a failure.
void apply_sanitizer(const std::string& tool, const std::vector<LabResult>& passes, LabResult& result);

/// The whole lab in one program, then its sanitizer passes one after the other (the way a lab
/// runs when it cannot be split: a CPU lab, a GPU lab without TIMED_TESTS in its manifest).
LabResult run_lab(const ManifestLab& lab, const std::string& program, const LabRunSettings& settings);

}  // namespace course_grader
