// The test program's connection to its worker: starts it in the sandbox on first use, sends
// requests, waits for replies with a time limit, and turns every way a worker can fail into a
// WorkerFailure that names the function -- the test case fails, the test program carries on.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client.hpp"
#include "course/error.hpp"
#include "proxy.hpp"
#include "text/inert_text.hpp"
#include "worker_sandbox.hpp"

namespace grader::rpc {
namespace {

double env_number(const char* name, double fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  return (end != nullptr && *end == '\0' && value > 0 && value < 1e7) ? value : fallback;
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::string signal_text(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  std::string name = abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
  switch (sig) {
    case SIGSEGV: return name + " (invalid memory access: an index out of bounds or a bad pointer?)";
    case SIGBUS: return name + " (bad memory access)";
    case SIGFPE: return name + " (arithmetic error: integer division by zero?)";
    case SIGABRT: return name + " (abort: a failed assert, std::terminate or heap corruption)";
    case SIGKILL: return name + " (killed: out of memory or stopped from outside)";
    case SIGXFSZ: return name + " (wrote a file larger than allowed)";
    case SIGXCPU: return name + " (used more CPU time than allowed)";
    default: return name;
  }
}

// Student-originated text reaches terminals, JSON, XML and CSV: made inert by the same function
// the grader's reports use (controls, C1, bidi and zero-width characters, invalid UTF-8 become
// '?'), and bounded in length.
std::string clean(const std::string& text) {
  std::string out = grader::text::inert_text(text);
  if (out.size() > 4000) {
    // Cut at a character boundary so the cut cannot leave half a UTF-8 sequence behind.
    std::size_t cut = 4000;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;
    out.resize(cut);
    out += " [...]";
  }
  return out;
}

// Processes the user owns now: the process limit for a non-root worker is this plus a margin
// (RLIMIT_NPROC counts every process of the user, not only the worker's).
rlim_t processes_of_this_user() {
  rlim_t count = 0;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return 512;
  const uid_t uid = ::getuid();
  while (dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string status = std::string("/proc/") + e->d_name + "/status";
    if (FILE* f = std::fopen(status.c_str(), "r")) {
      char line[256];
      while (std::fgets(line, sizeof line, f) != nullptr) {
        unsigned real = 0;
        if (std::sscanf(line, "Uid: %u", &real) == 1) {
          if (real == uid) ++count;
          break;
        }
      }
      std::fclose(f);
    }
  }
  ::closedir(proc);
  return count;
}

// The worker's stdout and stderr come through a pipe: copied to this program's stdout as they
// arrive (students see their debug output next to the test that caused it), and the last part
// kept, so that a sanitizer's first report can be quoted.
class OutputTap {
 public:
  int start() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
    // The reading thread shares the state, not this object: it may still be draining the pipe
    // while the program exits and the static Worker (and this tap) are destroyed.
    std::thread([read_fd = fds[0], state = state_] {
      char buf[4096];
      // A UTF-8 character split between two reads waits for its other half instead of becoming
      // '?'s; the pieces are made inert whole (no length cut here: the pipe's output is bounded
      // by the grader, and a cut per read would drop the end of every full buffer).
      std::string carry;
      while (true) {
        const ssize_t n = ::read(read_fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        std::string raw = carry + std::string(buf, static_cast<std::size_t>(n));
        const std::size_t keep = grader::text::incomplete_utf8_tail(raw);
        carry = raw.substr(raw.size() - keep);
        raw.resize(raw.size() - keep);
        std::string text = grader::text::inert_text(raw);
        [[maybe_unused]] const ssize_t w = ::write(1, text.data(), text.size());
        std::lock_guard<std::mutex> lock(state->mutex);
        state->recent += text;
        if (state->recent.size() > 64 * 1024) state->recent.erase(0, state->recent.size() - 48 * 1024);
      }
      if (!carry.empty()) {  // a character the worker never finished: '?'s
        const std::string text = grader::text::inert_text(carry);
        [[maybe_unused]] const ssize_t w = ::write(1, text.data(), text.size());
        std::lock_guard<std::mutex> lock(state->mutex);
        state->recent += text;
      }
      ::close(read_fd);
    }).detach();
    return fds[1];
  }
  std::string recent() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->recent;
  }

 private:
  struct State {
    std::mutex mutex;
    std::string recent;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

class Worker {
 public:
  Worker(std::string path, std::string label) : path_(std::move(path)), label_(std::move(label)) {}
  ~Worker() {
    stop(false);
    close_shared_region();
  }
  const std::string& path() const { return path_; }
  std::string recent_output() { return tap_.recent(); }

  /// Copies `bytes` from the start of the region shared with the running worker.
  void read_shared(void* out, std::size_t bytes) const {
    if (shared_map_ == nullptr || bytes > kSharedRegionBytes) throw WorkerFailure("no shared region of that size with the worker");
    std::memcpy(out, shared_map_, bytes);
  }

  /// Closes the channel and waits for the worker to end (at most `grace`); its wait status, or -1.
  int finish(std::chrono::milliseconds grace) { return pid_ > 0 ? reap(grace) : -1; }

  std::string call(const std::string& function, const std::string& request) {
    if (!poisoned_.empty()) throw WorkerFailure(function + " was not called: " + poisoned_);
    if (pid_ <= 0) start();
    if (!write_frame(request_fd_, request)) return after_death(function, "the worker closed its channel");
    std::string reply;
    switch (read_frame(reply_fd_, reply, options().call_timeout_s)) {
      case FrameResult::ok: break;
      case FrameResult::closed: return after_death(function, "the worker ended during the call");
      case FrameResult::too_large:
        stop(true);
        throw WorkerFailure(function + ": the worker sent a reply larger than allowed");
      case FrameResult::timed_out: {
        stop(true);
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.0f", options().call_timeout_s);
        poisoned_ = function + " ran for more than " + seconds + " s earlier in this run and was stopped";
        throw WorkerFailure(function + " did not return within " + seconds +
                            " s (an endless loop or a deadlock?); the worker was stopped and the remaining "
                            "calls of this run are not made");
      }
    }
    if (reply.empty()) throw WorkerFailure(function + ": the worker sent an empty reply");
    const auto status = static_cast<ReplyStatus>(static_cast<unsigned char>(reply[0]));
    std::string rest = reply.substr(1);
    auto message = [&] {
      Reader r(rest);
      std::string text;
      try {
        rpc::read(r, text);
      } catch (const ProtocolError&) {
        text = "(unreadable message)";
      }
      return clean(text);
    };
    switch (status) {
      case ReplyStatus::ok: return rest;
      case ReplyStatus::not_implemented: {
        std::string text = message();
        const std::string prefix = "not implemented: ";
        if (text.rfind(prefix, 0) == 0) text = text.substr(prefix.size());
        throw course::NotImplemented(text);
      }
      case ReplyStatus::course_error: throw course::Error(message());
      case ReplyStatus::other_exception: throw std::runtime_error(message());
      case ReplyStatus::unknown_function:
        throw WorkerFailure(function + ": the worker has no such function (" + message() + ")");
      case ReplyStatus::bad_request: throw WorkerFailure(function + ": the worker could not read the call (" + message() + ")");
      case ReplyStatus::crashed: {
        int sig = 0;
        if (rest.size() >= sizeof sig) std::memcpy(&sig, rest.data(), sizeof sig);
        stop(true);
        ++crashes_;
        throw WorkerFailure(function + " crashed: " + signal_text(sig));
      }
    }
    stop(true);
    throw WorkerFailure(function + ": the worker sent an unknown reply status");
  }

 private:
  void start() {
    if (crashes_ >= 50) {
      poisoned_ = "the worker crashed 50 times in this run";
      throw WorkerFailure(poisoned_);
    }
    const std::string& worker = path_;
    if (::access(worker.c_str(), X_OK) != 0)
      throw WorkerFailure("cannot start the " + label_ + " " + worker + ": " + std::strerror(errno) + " (build the lab again)");
    const SandboxPlan& plan = sandbox_plan(options().gpu);
    std::signal(SIGPIPE, SIG_IGN);

    // The worker comes in through a descriptor: it never has to be reachable by path from the
    // sandbox's user (a checkout in a folder only root can enter works).
    SandboxSpec spec;
    spec.gpu = options().gpu;
    spec.cover = hidden_paths();
    spec.program_fd = true;
    spec.command = {kSandboxProgramPath};
    // Every writable tmpfs counts against the memory limit: a CPU lab's address space is lowered
    // by the size of its /tmp (+ /dev/shm); a GPU worker (no address-space limit) gets 256 MiB.
    spec.tmp_mb = sandbox_tmp_mb(options().gpu ? 0 : options().memory_mb);
    // Sanitizer runs: compute-sanitizer starts the worker inside the sandbox and decides the
    // worker's exit code (--error-exitcode), which the student's code cannot change.
    // memcheck pads every allocation, so that a read just past the end of a buffer touches no
    // neighbouring allocation and is reported.
    if (!options().sanitizer.empty() && !sanitizer_program().empty()) {
      spec.command = {sanitizer_program(), "--tool", options().sanitizer, "--error-exitcode", "86", "--print-limit", "20"};
      if (options().sanitizer == "memcheck") spec.command.insert(spec.command.end(), {"--padding", "4096"});
      spec.command.push_back(kSandboxProgramPath);
    }
    const int worker_fd = ::open(worker.c_str(), O_RDONLY | O_CLOEXEC);
    if (worker_fd < 0)
      throw WorkerFailure("cannot open the " + label_ + " " + worker + ": " + std::strerror(errno));
    std::string why;
    run_ = SandboxRun::prepare(plan, spec, why);
    if (!run_) {
      ::close(worker_fd);
      throw WorkerFailure("cannot set up the worker's sandbox (" + plan.mode + "): " + why);
    }
    std::vector<std::string> argv = run_->argv();

    int request[2], reply[2];
    if (::pipe2(request, O_CLOEXEC) != 0 || ::pipe2(reply, O_CLOEXEC) != 0)
      throw WorkerFailure(std::string("cannot create the worker's pipes: ") + std::strerror(errno));
    open_shared_region();
    std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8",
                                    "COURSE_WORKER_MEMORY_MB=" + std::to_string(options().gpu ? 0 : options().memory_mb)};
    for (const char* keep : {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH",
                             "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"})
      if (const char* v = std::getenv(keep)) env.push_back(std::string(keep) + "=" + v);
    // Tells a GPU harness to allocate inputs without guard zones, so that compute-sanitizer sees
    // a read past an input as what it is (inside one allocation a guard zone would hide it).
    if (!options().sanitizer.empty() && !sanitizer_program().empty()) env.push_back("COURSE_UNDER_SANITIZER=1");
    const int output_fd = tap_.start();
    std::vector<char*> args, envp;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    // As root the worker runs as a freshly claimed uid of its own: 256 processes of that uid.
    const rlim_t nproc = run_->uid() >= 0 ? 256 : processes_of_this_user() + 256;
    const std::size_t memory_mb = options().memory_mb;
#ifdef COURSE_SANITIZE
    // AddressSanitizer reserves terabytes of shadow address space: no address-space limit in the
    // course's own sanitizer build (the grader never grades students with one).
    const bool limit_address_space = false;
#else
    const bool limit_address_space = !options().gpu && memory_mb > 0;
#endif
    const std::size_t address_space_mb = memory_mb > spec.tmp_mb ? memory_mb - spec.tmp_mb : memory_mb;

    const pid_t pid = ::fork();
    if (pid < 0) throw WorkerFailure(std::string("cannot start the worker: ") + std::strerror(errno));
    if (pid == 0) {
      // Child: the channel on descriptors 3 and 4 and the worker binary on 5, nothing else
      // inherited; limits; then the sandbox.
      ::setpgid(0, 0);
      const int in = ::fcntl(request[0], F_DUPFD, 10);
      const int out = ::fcntl(reply[1], F_DUPFD, 10);
      const int bin = ::fcntl(worker_fd, F_DUPFD, 10);
      const int devnull = ::open("/dev/null", O_RDONLY);
      ::dup2(devnull, 0);
      if (output_fd >= 0) {
        ::dup2(output_fd, 1);
        ::dup2(output_fd, 2);
      }
      ::dup2(in, kWorkerRequestFd);
      ::dup2(out, kWorkerReplyFd);
      const int shared = ::fcntl(shared_fd_, F_DUPFD, 10);
      ::dup2(bin, kSandboxProgramFd);
      ::dup2(shared, kWorkerSharedFd);
      ::close_range(kWorkerSharedFd + 1, ~0U, 0);
      const rlimit no_core{0, 0};
      ::setrlimit(RLIMIT_CORE, &no_core);
      const rlimit fsize{64ull << 20, 64ull << 20};
      ::setrlimit(RLIMIT_FSIZE, &fsize);
      const rlimit procs{nproc, nproc};
      ::setrlimit(RLIMIT_NPROC, &procs);
      if (limit_address_space) {
        const rlim_t bytes = static_cast<rlim_t>(address_space_mb) << 20;
        const rlimit as{bytes, bytes};
        ::setrlimit(RLIMIT_AS, &as);
      }
      ::execve(args[0], args.data(), envp.data());
      const char msg[] = "course: cannot start the worker's sandbox\n";
      [[maybe_unused]] const ssize_t ignored = ::write(2, msg, sizeof msg - 1);
      ::_exit(127);
    }
    ::close(request[0]);
    ::close(reply[1]);
    ::close(worker_fd);
    if (output_fd >= 0) ::close(output_fd);
    run_->started(pid);
    pid_ = pid;
    ever_started_ = true;
    request_fd_ = request[1];
    reply_fd_ = reply[0];
  }

  // A fresh sealed memfd per worker (its size can no longer change, so the worker cannot make this
  // side's mapping fault), mapped here read-only.
  void open_shared_region() {
    close_shared_region();
    shared_fd_ = ::memfd_create("course-shared", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (shared_fd_ < 0 || ::ftruncate(shared_fd_, static_cast<off_t>(kSharedRegionBytes)) != 0 ||
        ::fcntl(shared_fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
      throw WorkerFailure(std::string("cannot create the region shared with the worker: ") + std::strerror(errno));
    void* map = ::mmap(nullptr, kSharedRegionBytes, PROT_READ, MAP_SHARED, shared_fd_, 0);
    if (map == MAP_FAILED) throw WorkerFailure(std::string("cannot map the region shared with the worker: ") + std::strerror(errno));
    shared_map_ = static_cast<const unsigned char*>(map);
  }
  void close_shared_region() {
    if (shared_map_ != nullptr) ::munmap(const_cast<unsigned char*>(shared_map_), kSharedRegionBytes);
    if (shared_fd_ >= 0) ::close(shared_fd_);
    shared_map_ = nullptr;
    shared_fd_ = -1;
  }

  // The worker is gone (or going) without a proper reply: say how it ended.
  std::string after_death(const std::string& function, const std::string& what) {
    const int status = reap(std::chrono::seconds(2));
    ++crashes_;
    std::string how;
    if (status == -1) how = "";
    else if (WIFSIGNALED(status)) how = ": killed by " + signal_text(WTERMSIG(status));
    else if (WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + 65)
      how = ": killed by " + signal_text(WEXITSTATUS(status) - 128);  // as the sandbox tools report it
    else if (WIFEXITED(status)) how = ": it exited with code " + std::to_string(WEXITSTATUS(status)) + " (exit() called?)";
    throw WorkerFailure(function + ": " + what + how);
  }

  // Closes the channel and waits for the worker; returns its wait status (-1 if it had to be
  // killed or was not running).
  int reap(std::chrono::milliseconds grace) {
    if (pid_ <= 0) return -1;
    ::close(request_fd_);
    ::close(reply_fd_);
    request_fd_ = reply_fd_ = -1;
    const auto deadline = std::chrono::steady_clock::now() + grace;
    int status = 0;
    while (true) {
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (r < 0) {
        status = -1;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(-pid_, SIGKILL);
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        status = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ::kill(-pid_, SIGKILL);  // anything left in the worker's process group (mode "none")
    pid_ = -1;
    // Everything else of the run: every process of the sandbox's uid (mode "user"), its folders.
    if (run_) run_->finish();
    run_.reset();
    return status;
  }

  void stop(bool kill_now) {
    if (pid_ <= 0) return;
    if (kill_now) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
    }
    reap(std::chrono::milliseconds(kill_now ? 2000 : 1000));
  }

  std::string path_;
  std::string label_;
  OutputTap tap_;
  std::unique_ptr<SandboxRun> run_;
  pid_t pid_ = -1;
  bool ever_started_ = false;  // this process started the worker at least once

 public:
  bool ever_started() const { return ever_started_; }

 private:
  int request_fd_ = -1;
  int reply_fd_ = -1;
  int crashes_ = 0;
  std::string poisoned_;
  int shared_fd_ = -1;
  const unsigned char* shared_map_ = nullptr;
};

Worker& student_worker() {
  static Worker w(self_exe() + ".worker", "worker");
  return w;
}

// The reference solution's worker of the same lab, for speed comparisons in the same run:
// COURSE_REFERENCE_WORKER_DIR/<lab>.worker, else the solutions variant of the same build.
std::string reference_worker_path() {
  const std::string exe = self_exe();
  const std::string name = exe.substr(exe.find_last_of('/') + 1);
  if (const char* dir = std::getenv("COURSE_REFERENCE_WORKER_DIR"); dir != nullptr && *dir != '\0')
    return std::string(dir) + "/" + name + ".worker";
  const std::string variant_dir = exe.substr(0, exe.find_last_of('/'));
  return variant_dir.substr(0, variant_dir.find_last_of('/')) + "/solutions/" + name + ".worker";
}

Worker& reference_worker() {
  static Worker w(reference_worker_path(), "reference worker");
  return w;
}

bool g_use_reference = false;

Worker& active_worker() { return g_use_reference ? reference_worker() : student_worker(); }

WorkerOptions& mutable_options() {
  static WorkerOptions o = [] {
    WorkerOptions w;
    w.memory_mb = static_cast<std::size_t>(env_number("COURSE_WORKER_MEMORY_MB", 2048));
    w.call_timeout_s = env_number("COURSE_CALL_TIMEOUT_S", 30);
    if (const char* tool = std::getenv("COURSE_SANITIZER"); tool != nullptr && *tool != '\0') {
      w.sanitizer = tool;
      w.call_timeout_s *= 20;  // everything runs many times slower under the sanitizer
    }
    return w;
  }();
  return o;
}

}  // namespace

const WorkerOptions& options() { return mutable_options(); }
void set_worker_gpu(bool gpu) { mutable_options().gpu = gpu; }

SandboxInfo worker_sandbox() {
  const SandboxPlan& plan = sandbox_plan(options().gpu);
  return {plan.mode, plan.degraded, plan.description};
}

std::string call_worker(const std::string& function, const std::string& request) {
  return active_worker().call(function, request);
}

ReferenceWorkerScope::ReferenceWorkerScope() : previous_(g_use_reference) { g_use_reference = true; }
ReferenceWorkerScope::~ReferenceWorkerScope() { g_use_reference = previous_; }

void read_shared_region(void* out, std::size_t bytes) { active_worker().read_shared(out, bytes); }

void stop_workers() {
  student_worker().finish(std::chrono::seconds(5));
  reference_worker().finish(std::chrono::seconds(5));
}

bool reference_worker_available(std::string* why) {
  const std::string path = reference_worker_path();
  if (::access(path.c_str(), X_OK) == 0) return true;
  if (why != nullptr) *why = "no reference solution worker at " + path;
  return false;
}

std::string sanitizer_program() {
  for (const char* candidate : {"/usr/local/cuda/bin/compute-sanitizer", "/usr/bin/compute-sanitizer",
                                "/opt/cuda/bin/compute-sanitizer"})
    if (::access(candidate, X_OK) == 0) return candidate;
  return "";
}

SanitizerOutcome finish_sanitizer() {
  SanitizerOutcome outcome;
  outcome.tool = options().sanitizer;
  if (outcome.tool.empty()) return outcome;
  Worker& w = student_worker();
  outcome.worker_started = w.ever_started();
  const int status = w.finish(std::chrono::seconds(120));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the output tap drain
  const std::string output = w.recent_output();
  outcome.ran = status != -1 || output.find("COMPUTE-SANITIZER") != std::string::npos;
  outcome.clean = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  // The first report block: from the first "=========" error line, a few lines.
  const std::size_t first = output.find("========= ");
  std::size_t at = output.find("========= Invalid");
  for (const char* key : {"========= Race", "========= Uninitialized", "========= Program hit", "========= ERROR"}) {
    const std::size_t k = output.find(key);
    if (k != std::string::npos && (at == std::string::npos || k < at)) at = k;
  }
  if (at == std::string::npos) at = first;
  if (at != std::string::npos) {
    std::size_t end = at;
    for (int lines = 0; lines < 8 && end != std::string::npos; ++lines) end = output.find('\n', end + 1);
    outcome.first_report = output.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }
  return outcome;
}

}  // namespace grader::rpc
