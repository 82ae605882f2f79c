// Runs one lab program twice in the sandbox -- first with --list-test-cases (what will run), then
// for real -- and judges both runs (verdict.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "manifest.hpp"
#include "results.hpp"
#include "sandbox.hpp"

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

LabResult run_lab(const ManifestLab& lab, const std::string& program, const LabRunSettings& settings);

}  // namespace course_grader
