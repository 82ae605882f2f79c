// Settings of this test program's worker (see client.cpp).
#pragma once

#include <cstddef>
#include <string>

namespace grader::rpc {

struct WorkerOptions {
  bool gpu = false;              ///< GPU lab: NVIDIA devices visible, no address-space limit
  std::size_t memory_mb = 2048;  ///< address-space limit of a CPU lab's worker (COURSE_WORKER_MEMORY_MB)
  double call_timeout_s = 30;    ///< longest one call may take (COURSE_CALL_TIMEOUT_S)
  std::string sanitizer;         ///< COURSE_SANITIZER=memcheck|racecheck|...: run the worker under compute-sanitizer
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

/// While one of these lives, calls go to the reference solution's worker of the same lab
/// (speed comparisons in the same run) instead of the student's.
class ReferenceWorkerScope {
 public:
  ReferenceWorkerScope();
  ~ReferenceWorkerScope();
  ReferenceWorkerScope(const ReferenceWorkerScope&) = delete;
  ReferenceWorkerScope& operator=(const ReferenceWorkerScope&) = delete;

 private:
  bool previous_;
};
/// Copies the first `bytes` of the memory region shared with the active worker (see
/// kWorkerSharedFd in frames.hpp) into `out`. The worker can write there at any time: copy first,
/// then check the copy.
void read_shared_region(void* out, std::size_t bytes);

/// Stops the student's and the reference's workers (each ends with its sandbox: in the bwrap and
/// unshare modes the kernel tears the PID namespace down, every process in it included, before
/// the wait for the worker returns). The next call starts a fresh one. The speed gate calls this
/// between its blocks, so that no process of one side holds the GPU while the other is timed.
void stop_workers();

/// Whether the reference worker exists (it is built with the solutions variant, or found via
/// COURSE_REFERENCE_WORKER_DIR); `why` says what is missing.
bool reference_worker_available(std::string* why = nullptr);

/// compute-sanitizer's path, or "" when it is not installed.
std::string sanitizer_program();

struct SanitizerOutcome {
  std::string tool;          ///< empty: not a sanitizer run
  bool ran = false;          ///< the worker ran under the sanitizer
  /// The student's worker was started at all: test cases that call no student code (a part of
  /// the sanitizer's subset cut off by the grader) leave nothing for the sanitizer to check.
  bool worker_started = false;
  bool clean = false;        ///< compute-sanitizer's exit code says no errors
  std::string first_report;  ///< the first report block of its output (kernel, source line)
};
/// At the end of a sanitizer run: stops the student's worker and reads compute-sanitizer's verdict.
SanitizerOutcome finish_sanitizer();

}  // namespace grader::rpc
