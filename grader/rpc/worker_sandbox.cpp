#include "worker_sandbox.hpp"

#include <fcntl.h>
#include <glob.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>

namespace grader::rpc {
namespace {

std::string find_program(const std::string& name) {
  for (const char* dir : {"/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/", "/usr/local/bin/"}) {
    const std::string path = std::string(dir) + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// The unshare mode's set-up, run by /bin/sh inside the new namespaces (as root there): cover
// every hidden path and /tmp with empty tmpfs mounts, then drop every capability (and, where the
// caller was really root, become nobody) and run the worker through the descriptor the test
// program opened before the paths disappeared. Without capabilities the worker cannot unmount
// what covers the hidden paths.
constexpr const char* kUnshareScript = R"sh(set -e
drop="$1"; shift
for p in "$@"; do
  if [ -d "$p" ]; then mount -t tmpfs -o size=16k,mode=755 course-hidden "$p"; fi
done
mount -t tmpfs -o mode=1777,size=512m course-tmp /tmp
if [ -d /dev/shm ]; then mount -t tmpfs -o mode=1777,size=64m course-shm /dev/shm; fi
cd /tmp
if [ -n "${COURSE_SANITIZER_TOOL:-}" ]; then
  set -- "$COURSE_SANITIZER_TOOL" --tool "$COURSE_SANITIZER_NAME" --error-exitcode 86 --print-limit 20 --padding "${COURSE_SANITIZER_PADDING:-0}" /proc/self/fd/5
else
  set -- /proc/self/fd/5
fi
if [ "$drop" = nobody ]; then
  exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"
fi
exec setpriv --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"
)sh";

std::vector<std::string> nvidia_devices() {
  std::vector<std::string> devices;
  glob_t g{};
  if (::glob("/dev/nvidia*", 0, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) devices.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  return devices;
}

std::vector<std::string> bwrap_prefix(const std::string& bwrap, const std::string& setpriv, const std::string& worker,
                                      bool gpu) {
  std::vector<std::string> argv;
  if (::geteuid() == 0) {
    // bubblewrap run by root keeps uid 0 outside its user namespace; run it as nobody instead so
    // the worker is an unprivileged user on the host too (and the process limit counts nobody).
    argv = {setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
  }
  argv.insert(argv.end(), {bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr",
                           "--ro-bind-try", "/etc", "/etc", "--ro-bind-try", "/lib", "/lib", "--ro-bind-try", "/lib64",
                           "/lib64", "--ro-bind-try", "/bin", "/bin", "--ro-bind-try", "/sbin", "/sbin",
                           "--ro-bind-try", "/opt", "/opt", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                           "--ro-bind", worker, "/run/course/worker", "--chdir", "/tmp"});
  if (gpu) {
    for (const std::string& dev : nvidia_devices()) argv.insert(argv.end(), {"--dev-bind", dev, dev});
    argv.insert(argv.end(), {"--ro-bind-try", "/sys", "/sys"});
  }
  argv.insert(argv.end(), {"--", "/run/course/worker"});
  return argv;
}

std::vector<std::string> unshare_prefix(const std::string& unshare, bool as_root) {
  std::vector<std::string> argv = {unshare};
  if (!as_root) argv.insert(argv.end(), {"--user", "--map-root-user"});
  argv.insert(argv.end(), {"--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--net", "--ipc", "--uts",
                           "--", "/bin/sh", "-c", kUnshareScript, "course-sandbox", as_root ? "nobody" : "keep"});
  for (const std::string& p : hidden_paths()) argv.push_back(p);
  return argv;
}

// Runs the plan with /bin/true as the worker; true if it ran and exited 0 within 10 s.
bool probe(const SandboxPlan& plan, const std::string& probe_worker) {
  std::vector<std::string> argv = plan.prefix;
  int fd = -1;
  for (std::string& a : argv)
    if (a == kWorkerPlaceholder) a = probe_worker;
  if (plan.worker_via_fd) {
    fd = ::open(probe_worker.c_str(), O_RDONLY);
    if (fd < 0) return false;
  } else if (plan.mode == "none") {
    argv.push_back(probe_worker);
  }
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    if (fd >= 0) ::dup2(fd, 5);
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  if (fd >= 0) ::close(fd);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 || std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

SandboxPlan make_plan(bool gpu) {
  const char* forced_env = std::getenv("COURSE_SANDBOX");
  const std::string forced = forced_env != nullptr ? forced_env : "";
  const std::string bwrap = find_program("bwrap");
  const std::string setpriv = find_program("setpriv");
  const std::string unshare = find_program("unshare");
  const bool root = ::geteuid() == 0;
  std::vector<std::string> tried;

  if ((forced.empty() || forced == "bwrap") && !bwrap.empty() && (!root || !setpriv.empty())) {
    SandboxPlan plan;
    plan.mode = "bwrap";
    plan.description = std::string("bubblewrap: ") + (root ? "user nobody, " : "") +
                       "only system folders visible, private /tmp, no network, own PID namespace";
    plan.prefix = bwrap_prefix(bwrap, setpriv, kWorkerPlaceholder, gpu);
    if (probe(plan, "/usr/bin/true")) return plan;
    tried.push_back("bubblewrap could not create its namespaces here");
  } else if (forced.empty() || forced == "bwrap") {
    tried.push_back("bubblewrap (bwrap) is not installed");
  }
  if ((forced.empty() || forced == "unshare") && !unshare.empty() && !setpriv.empty()) {
    SandboxPlan plan;
    plan.mode = "unshare";
    plan.worker_via_fd = true;
    plan.description = std::string("unshare+setpriv: ") + (root ? "user nobody, " : "user namespace, ") +
                       "no capabilities, course/build/hidden folders and /tmp covered, no network, own PID namespace";
    plan.prefix = unshare_prefix(unshare, root);
    if (probe(plan, "/usr/bin/true")) return plan;
    tried.push_back("unshare could not create its namespaces here");
  }
  SandboxPlan plan;
  plan.mode = "none";
  plan.degraded = true;
  std::ostringstream why;
  why << "DEGRADED: the worker runs without isolation (own process group and resource limits only)";
  if (forced == "none") why << "; COURSE_SANDBOX=none was set";
  for (const std::string& t : tried) why << "; " << t;
  plan.description = why.str();
  return plan;
}

}  // namespace

std::vector<std::string> hidden_paths() {
  std::vector<std::string> paths = {COURSE_RPC_SOURCE_DIR, COURSE_RPC_BINARY_DIR, "/root", "/home"};
  if (const char* extra = std::getenv("COURSE_SANDBOX_HIDE")) {
    std::stringstream list(extra);
    std::string item;
    while (std::getline(list, item, ':'))
      if (!item.empty() && item[0] == '/') paths.push_back(item);
  }
  if (const char* hidden = std::getenv("COURSE_HIDDEN_DIR"); hidden != nullptr && hidden[0] == '/') paths.push_back(hidden);
  return paths;
}

const SandboxPlan& sandbox_plan(bool gpu) {
  static std::once_flag once;
  static SandboxPlan plan;
  std::call_once(once, [&] { plan = make_plan(gpu); });
  return plan;
}

}  // namespace grader::rpc
