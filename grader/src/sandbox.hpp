// Runs one program in an isolated child process: its own process group, a wall-clock limit, a
// memory limit, no core files, bounded file size, stdin from /dev/null, a fresh temporary working
// directory, stdout+stderr captured (bounded), and optionally the signed result channel.
//
// Memory limit, two mechanisms (chosen per lab by the caller):
//   * address space (RLIMIT_AS): exact and immediate -- an oversized allocation fails with
//     std::bad_alloc / nullptr at the allocation itself. Used for CPU labs.
//   * resident-set polling: the grader reads VmRSS from /proc/<pid>/status every few ms and kills
//     the process group when it is over the limit. Used for GPU labs, because the CUDA runtime
//     reserves tens of GiB of virtual address space at start-up (unified addressing), so any
//     useful RLIMIT_AS would break every CUDA program. Polling runs for CPU labs too (it costs
//     nothing and catches what RLIMIT_AS cannot, e.g. memory mapped by a child process).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace course_grader {

struct SandboxLimits {
  double timeout_s = 60;             ///< wall clock; 0 = none
  std::size_t memory_mb = 2048;      ///< 0 = none
  bool limit_address_space = true;   ///< RLIMIT_AS as well as RSS polling (false for GPU labs)
  std::size_t max_file_mb = 64;      ///< RLIMIT_FSIZE; 0 = none
  std::size_t output_head_bytes = 8 * 1024;
  std::size_t output_tail_bytes = 56 * 1024;
};

struct SandboxRequest {
  std::vector<std::string> argv;     ///< argv[0] is the program's path
  SandboxLimits limits;
  std::vector<std::pair<std::string, std::string>> set_env;
  std::vector<std::string> unset_env;
  bool result_channel = true;        ///< open the signed channel (lab programs); false for cmake etc.
  std::string working_dir;           ///< empty: a fresh temporary folder, removed afterwards
  /// When set and it becomes true, the process group is killed (Ending::cancelled): the grader's
  /// lab schedule no longer needs the run's verdict (a sanitizer part of a lab that failed).
  std::shared_ptr<const std::atomic<bool>> cancel;
};

enum class Ending { exited, signaled, timed_out, memory_exceeded, not_started, cancelled };

struct SandboxResult {
  Ending ending = Ending::not_started;
  int exit_code = -1;                ///< when ending == exited
  int signal = 0;                    ///< when ending == signaled
  double seconds = 0;
  std::size_t peak_rss_mb = 0;
  std::string output;                ///< stdout and stderr interleaved, head + tail if long
  bool output_truncated = false;
  std::string start_error;           ///< why the program could not be started
  std::vector<nlohmann::json> records;  ///< verified result-channel records, in order
  std::string channel_error;         ///< non-empty when the channel carried something not from the runner
};

SandboxResult run_sandboxed(const SandboxRequest& request);

/// "SIGSEGV" for 11, ... ("signal 42" for unknown numbers).
std::string signal_name(int signal);

}  // namespace course_grader
