// Settings of this test program's worker (see client.cpp).
#pragma once

#include <cstddef>
#include <string>

namespace grader::rpc {

struct WorkerOptions {
  bool gpu = false;              ///< GPU lab: NVIDIA devices visible, no address-space limit
  std::size_t memory_mb = 2048;  ///< address-space limit of a CPU lab's worker (COURSE_WORKER_MEMORY_MB)
  double call_timeout_s = 30;    ///< longest one call may take (COURSE_CALL_TIMEOUT_S)
};

const WorkerOptions& options();
/// Called by the runner before any test runs.
void set_worker_gpu(bool gpu);

struct SandboxInfo {
  std::string mode;         ///< bwrap, unshare or none
  bool degraded = false;
  std::string description;
};
/// How this program's worker is (or will be) isolated; probes the sandbox tools once.
SandboxInfo worker_sandbox();

}  // namespace grader::rpc
