// course_sandbox: runs one command in the same sandbox as a lab's worker (worker_sandbox.hpp).
// The guarded compiler (grader/build_guard/guard_compile.py) runs every compile of student code
// through it, so that the compiler -- and whatever a student's file makes it read, e.g.
// asm(".incbin ...") -- sees only the system folders and the staged copy of the lab folder.
//
//   course_sandbox [--mode auto|bwrap|unshare|user|none] [--ro PATH]... [--rw PATH]... [--tmp-mb N]
//                  [--memory-mb N] [--timeout-s N] [--chdir DIR] [--describe] -- COMMAND ARGS...
//
// Exit code: the command's (128 + signal when it was killed by one); 124 when it ran over
// --timeout-s (everything it started is killed); 125 when the sandbox could not be set up.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "worker_sandbox.hpp"

namespace {

volatile std::sig_atomic_t g_stop = 0;

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "course_sandbox: %s\nusage: course_sandbox [--mode auto|bwrap|unshare|user|none] [--ro PATH]... "
               "[--rw PATH]... [--tmp-mb N] [--memory-mb N] [--timeout-s N] [--chdir DIR] [--describe] -- COMMAND "
               "ARGS...\n",
               problem.c_str());
  std::exit(125);
}

long number(const std::string& flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == nullptr || *end != '\0' || value < 0) usage(flag + " needs a number, not '" + text + "'");
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace grader::rpc;
  SandboxSpec spec;
  long memory_mb = 0, timeout_s = 0, tmp_mb = -1;
  bool describe = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--mode") ::setenv("COURSE_SANDBOX", value(), 1);  // the same selection as the worker's
    else if (a == "--ro") spec.ro.push_back(value());
    else if (a == "--rw") spec.rw.push_back(value());
    else if (a == "--tmp-mb") tmp_mb = number(a, value());
    else if (a == "--memory-mb") memory_mb = number(a, value());
    else if (a == "--timeout-s") timeout_s = number(a, value());
    else if (a == "--chdir") spec.chdir = value();
    else if (a == "--describe") describe = true;
    else usage("unknown option " + a);
  }
  for (const std::string& p : spec.ro)
    if (p.empty() || p[0] != '/' || ::access(p.c_str(), F_OK) != 0) usage("--ro " + p + ": not an existing absolute path");
  for (const std::string& p : spec.rw)
    if (p.empty() || p[0] != '/' || ::access(p.c_str(), F_OK) != 0) usage("--rw " + p + ": not an existing absolute path");
  if (const char* mode = std::getenv("COURSE_SANDBOX");
      mode != nullptr && *mode != '\0' && std::string("auto bwrap unshare user none").find(mode) == std::string::npos)
    usage(std::string("unknown sandbox mode '") + mode + "'");

  const SandboxPlan& plan = sandbox_plan(false);
  if (describe) {
    std::printf("sandbox: %s: %s\n", plan.mode.c_str(), plan.description.c_str());
    std::fflush(stdout);
  }
  if (i >= argc) {
    if (describe) return 0;
    usage("no command given");
  }
  if (const char* forced = std::getenv("COURSE_SANDBOX");
      forced != nullptr && *forced != '\0' && std::string(forced) != "auto" && plan.mode != forced) {
    std::fprintf(stderr, "course_sandbox: the sandbox mode '%s' cannot run here: %s\n", forced, plan.description.c_str());
    return 125;
  }
  spec.command.assign(argv + i, argv + argc);
  spec.cover = hidden_paths();
  spec.tmp_mb = tmp_mb >= 0 ? static_cast<std::size_t>(tmp_mb) : sandbox_tmp_mb(static_cast<std::size_t>(memory_mb));
  std::string error;
  std::unique_ptr<SandboxRun> run = SandboxRun::prepare(plan, spec, error);
  if (!run) {
    std::fprintf(stderr, "course_sandbox: cannot set up the sandbox (%s): %s\n", plan.mode.c_str(), error.c_str());
    return 125;
  }
  std::vector<std::string> args = run->argv();
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  // The private /tmp counts against the memory limit.
  const long address_space_mb = memory_mb > static_cast<long>(spec.tmp_mb) ? memory_mb - static_cast<long>(spec.tmp_mb) : memory_mb;
  const rlim_t nproc = run->uid() >= 0 ? 512 : RLIM_INFINITY;

  const pid_t pid = ::fork();
  if (pid < 0) {
    std::fprintf(stderr, "course_sandbox: cannot fork: %s\n", std::strerror(errno));
    return 125;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::close_range(3, ~0U, 0);
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    if (nproc != RLIM_INFINITY) {
      const rlimit procs{nproc, nproc};
      ::setrlimit(RLIMIT_NPROC, &procs);
    }
    if (address_space_mb > 0) {
      const rlimit as{static_cast<rlim_t>(address_space_mb) << 20, static_cast<rlim_t>(address_space_mb) << 20};
      ::setrlimit(RLIMIT_AS, &as);
    }
    ::execv(cargs[0], cargs.data());
    std::fprintf(stderr, "course_sandbox: cannot run %s: %s\n", cargs[0], std::strerror(errno));
    ::_exit(125);
  }
  run->started(pid);
  // Signals that end this program end the command too (the watchdog would anyway).
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, [](int) { g_stop = 1; });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  bool timed_out = false;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      status = 0x7f00;
      break;
    }
    if (g_stop) {  // this program is being stopped: stop the command
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    if (timeout_s > 0 && std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  run->finish();
  if (timed_out) {
    std::fprintf(stderr, "course_sandbox: the command did not finish within %ld s and was stopped: %s\n", timeout_s,
                 spec.command[0].c_str());
    return 124;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 125;
}
