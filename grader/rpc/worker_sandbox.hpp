// How the test program starts its worker: inside a sandbox built from the system's own tools.
//
// Chosen once per test program, in this order (COURSE_SANDBOX=bwrap|unshare|none forces one):
//   bwrap    bubblewrap: a new root holding only the system folders (/usr, /etc, /lib...), the
//            worker binary, a private /tmp, /proc and a minimal /dev (+ the NVIDIA devices for
//            GPU labs); new user, PID, network, IPC and UTS namespaces; killed with its parent.
//            As root it is started through setpriv as user nobody first.
//   unshare  util-linux unshare + setpriv (machines without bubblewrap, e.g. the GPU machine):
//            new mount, PID, network, IPC and UTS namespaces; the course tree, the build tree, the
//            hidden-case folder, /root, /home and /tmp are covered by empty tmpfs mounts, then
//            setpriv drops to user nobody with no capabilities (as root), or a user namespace
//            maps the caller (not root).
//   none     no isolation (a container without namespaces): the worker still gets its own
//            process group and resource limits, and the report says the sandbox is degraded.
// In every mode: resource limits (no core files, file size, processes, and address space for
// CPU labs), an environment with nothing of the grader's in it, stdin from /dev/null, and every
// process of the sandbox killed when the worker is stopped (a PID namespace dies with its first
// process).
#pragma once

#include <string>
#include <vector>

namespace grader::rpc {

struct SandboxPlan {
  std::string mode;         ///< "bwrap", "unshare" or "none"
  bool degraded = false;    ///< true when the worker is not isolated
  std::string description;  ///< one line for the report
  std::vector<std::string> prefix;  ///< argv up to the worker (kWorkerPlaceholder marks its path)
  bool worker_via_fd = false;       ///< the worker is executed through /proc/self/fd/N
};

/// Stands for the worker's path in SandboxPlan::prefix.
constexpr const char* kWorkerPlaceholder = "@COURSE_WORKER@";

/// The plan for this process (probed once, cached). `gpu` adds the NVIDIA device files.
const SandboxPlan& sandbox_plan(bool gpu);

/// Paths the worker must not see (course tree, build tree, hidden cases, submissions...): the
/// test program's own source and build folders plus COURSE_SANDBOX_HIDE (colon-separated).
std::vector<std::string> hidden_paths();

}  // namespace grader::rpc
