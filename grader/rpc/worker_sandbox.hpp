// One sandbox engine for everything of the student's that runs: the lab's worker (started by the
// test program, client.cpp) and the compiler of the student's files (started by course_sandbox,
// sandbox_main.cpp, which the guarded compiler guard_compile.py calls).
//
// The mode is chosen once per process, in this order (COURSE_SANDBOX=bwrap|unshare|user|none
// forces one):
//   bwrap    bubblewrap: a new root holding only the system folders (/usr, /etc, /lib...), read
//            only, the paths asked for (--ro/--rw), a private size-limited /tmp and /dev/shm,
//            /proc, a minimal /dev (+ the NVIDIA devices and /sys for GPU labs); new user, PID,
//            network, IPC and UTS namespaces; root and /dev read-only; killed with its parent.
//            As root, bubblewrap itself runs as the sandbox's dedicated user.
//   unshare  util-linux unshare + setpriv (machines without bubblewrap, e.g. the GPU machine):
//            the same allow-list root built by hand in new mount, PID, network, IPC and UTS
//            namespaces (a tmpfs root, system folders bound read-only, sized /tmp and /dev/shm,
//            minimal /dev, /proc), then chroot and setpriv: the dedicated user with no
//            capabilities and no_new_privs (as root), or a user namespace (not root).
//   user     root without namespaces (a Docker container such as Gradescope's): the command runs
//            as a dedicated unprivileged uid (COURSE_SANDBOX_UID, default 64999 and up) with no
//            capabilities and no_new_privs; before the run every folder of the grader's (course
//            tree, build tree, hidden cases, submissions) is made unreachable to that uid; after
//            it every process of that uid is killed and its files in the shared temporary
//            folders removed. It shares the host's file system view and network: said plainly.
//   none     no isolation (not root, no namespaces): DEGRADED, said in every report.
// In every mode: the program to run can come in through a descriptor (never needs to be reachable
// by path, e.g. a checkout in a folder the sandbox user cannot enter), resource limits are set by
// the caller, and everything the command started is killed when the run ends.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace grader::rpc {

struct SandboxPlan {
  std::string mode;         ///< "bwrap", "unshare", "user" or "none"
  bool degraded = false;    ///< true when the command is not isolated at all ("none")
  std::string description;  ///< one line for the report
};

/// The descriptor through which the program comes in when SandboxSpec::program_fd is used.
constexpr int kSandboxProgramFd = 5;
/// The path that runs it inside the sandbox (the descriptor's magic link).
constexpr const char* kSandboxProgramPath = "/proc/self/fd/5";

/// What to run and what it may see.
struct SandboxSpec {
  bool gpu = false;                ///< NVIDIA devices and /sys visible
  std::vector<std::string> ro;     ///< host paths visible read-only at the same absolute path
  std::vector<std::string> rw;     ///< host paths visible writable at the same absolute path
  std::vector<std::string> cover;  ///< paths never visible (covered where they lie under a system folder)
  std::size_t tmp_mb = 256;        ///< private /tmp plus /dev/shm, in MiB
  std::string chdir = "/tmp";      ///< working folder inside
  /// The command; with program_fd, its first element should be kSandboxProgramPath (or a tool
  /// such as compute-sanitizer that starts it).
  std::vector<std::string> command;
  bool program_fd = false;  ///< the caller puts the program on descriptor kSandboxProgramFd
};

/// One run of a command in the sandbox: prepare() claims the sandbox user and the folders the
/// run needs and starts a watchdog; exec `argv` in a child (after setting its resource limits);
/// finish() (or the destructor) kills every process of the run and cleans up. The watchdog does
/// the same if this process dies first, even by SIGKILL.
class SandboxRun {
 public:
  static std::unique_ptr<SandboxRun> prepare(const SandboxPlan& plan, const SandboxSpec& spec, std::string& error);
  ~SandboxRun();
  SandboxRun(const SandboxRun&) = delete;
  SandboxRun& operator=(const SandboxRun&) = delete;

  const std::vector<std::string>& argv() const { return argv_; }
  /// Records the process that was started (its process group is killed at the end).
  void started(pid_t pid);
  /// Kills everything of the run and removes its folders; waits for that to be done.
  void finish();
  /// The dedicated uid (-1 when the mode keeps the caller's user).
  int uid() const { return uid_; }

 private:
  SandboxRun() = default;
  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  int uid_ = -1;
  int lock_fd_ = -1;
  int watchdog_fd_ = -1;
  pid_t watchdog_ = -1;
  std::vector<std::string> remove_dirs_;
  std::vector<std::pair<std::string, std::pair<uid_t, gid_t>>> chowned_;
  bool finished_ = false;
};

/// The plan for this process (probed once, cached). `gpu` adds the NVIDIA device files.
const SandboxPlan& sandbox_plan(bool gpu);

/// Paths the sandbox must not see (course tree, build tree, hidden cases, submissions...): the
/// course's own source and build folders plus COURSE_SANDBOX_HIDE (colon-separated) and
/// COURSE_HIDDEN_DIR.
std::vector<std::string> hidden_paths();

/// Size of the private /tmp for a command whose memory limit is `memory_mb` (0: none): a quarter
/// of it, at most 256 MiB; the caller lowers the address-space limit by as much.
std::size_t sandbox_tmp_mb(std::size_t memory_mb);

}  // namespace grader::rpc
