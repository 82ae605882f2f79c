#include "sandbox.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <stdexcept>

#include "bounded_capture.hpp"
#include "channel_protocol.hpp"
#include "channel_reader.hpp"

extern char** environ;

namespace course_grader {
namespace {

using Clock = std::chrono::steady_clock;

// The process groups of the children being run, so that Ctrl-C on the grader does not leave one
// running: each lives in a group of its own and would not get the terminal's SIGINT. Several run
// at once (the grader runs test programs in parallel): one slot each, lock-free atomics, which a
// signal handler may read.
constexpr int kGroupSlots = 256;
std::atomic<pid_t> g_running_groups[kGroupSlots];
static_assert(std::atomic<pid_t>::is_always_lock_free, "the signal handler reads these");

int claim_group_slot(pid_t pid) {
  for (int i = 0; i < kGroupSlots; ++i) {
    pid_t expected = 0;
    if (g_running_groups[i].compare_exchange_strong(expected, pid)) return i;
  }
  return -1;  // more children than slots: this one is not killed on Ctrl-C (its watchdog still is)
}

void release_group_slot(int& slot) {
  if (slot >= 0) g_running_groups[slot].store(0);
  slot = -1;
}

extern "C" void kill_children_and_leave(int sig) {
  for (auto& group : g_running_groups) {
    const pid_t pid = group.load();
    if (pid > 0) ::kill(-pid, SIGKILL);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_signal_handlers_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::signal(SIGINT, kill_children_and_leave);
    std::signal(SIGTERM, kill_children_and_leave);
    std::signal(SIGHUP, kill_children_and_leave);
    std::signal(SIGPIPE, SIG_IGN);  // a child that dies early must not kill the grader
  });
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// A pipe whose ends sit at descriptor 10 or above, close-on-exec: the child moves the ends it
// needs to their fixed numbers with dup2 without clobbering another end on the way.
void make_pipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  for (int& fd : fds) {
    const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
    ::close(fd);
    if (high < 0) throw std::runtime_error(std::string("fcntl: ") + std::strerror(errno));
    fd = high;
  }
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
}

course_channel::Key random_key() {
  course_channel::Key key{};
  std::size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = ::getrandom(key.data() + got, key.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  return key;
}

std::size_t resident_mb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      std::size_t kib = 0;
      status >> kib;
      return kib / 1024;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

std::vector<std::string> child_environment(const SandboxRequest& request, const std::string& work_dir) {
  std::vector<std::pair<std::string, std::string>> set = request.set_env;
  // Temporary files of a lab program land in its own folder, which is removed afterwards.
  if (request.working_dir.empty()) set.emplace_back("TMPDIR", work_dir);
  auto overridden = [&](const std::string& entry) {
    const std::string name = entry.substr(0, entry.find('='));
    if (std::find(request.unset_env.begin(), request.unset_env.end(), name) != request.unset_env.end()) return true;
    return std::any_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == name; });
  };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (!overridden(*e)) env.emplace_back(*e);
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void set_limit(int resource, rlim_t value) {
  const rlimit limit{value, value};
  ::setrlimit(resource, &limit);
}

// Between fork and exec only async-signal-safe calls: the grader may have other threads' locks.
[[noreturn]] void become_child(const SandboxRequest& request, const char* work_dir, char* const* argv,
                               char* const* envp, int output_fd, int nonce_fd, int result_fd, int exec_status_fd) {
  ::setpgid(0, 0);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  ::dup2(null_fd, 0);
  ::dup2(output_fd, 1);
  ::dup2(output_fd, 2);
  int first_to_close = 3;
  if (nonce_fd >= 0) {
    ::dup2(nonce_fd, course_channel::kNonceFd);
    ::dup2(result_fd, course_channel::kResultFd);
    first_to_close = course_channel::kResultFd + 1;
  }
  // Nothing else of the grader's leaks into the child (the exec-status pipe closes on exec).
  ::close_range(static_cast<unsigned>(first_to_close), static_cast<unsigned>(exec_status_fd - 1), 0);
  ::close_range(static_cast<unsigned>(exec_status_fd + 1), ~0U, 0);
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGHUP, SIG_DFL);
  sigset_t all;
  sigemptyset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  set_limit(RLIMIT_CORE, 0);
  if (request.limits.max_file_mb > 0) set_limit(RLIMIT_FSIZE, static_cast<rlim_t>(request.limits.max_file_mb) << 20);
  if (request.limits.memory_mb > 0 && request.limits.limit_address_space)
    set_limit(RLIMIT_AS, static_cast<rlim_t>(request.limits.memory_mb) << 20);
  if (::chdir(work_dir) == 0) ::execve(argv[0], argv, envp);
  const int error = errno;
  ssize_t ignored = ::write(exec_status_fd, &error, sizeof error);
  (void)ignored;
  ::_exit(127);
}

// Reads what is available; returns false at end of stream.
bool drain(int fd, std::vector<char>& buffer, const std::function<void(const char*, std::size_t)>& sink) {
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n > 0) {
      sink(buffer.data(), static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
}

std::string make_work_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "course-grader-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error(std::string("cannot create a temporary folder: ") + std::strerror(errno));
  return pattern;
}

// execve does not search PATH; do it here, before the fork.
std::string resolve_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = (end > start ? dirs.substr(start, end - start) : ".") + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return program;
}

void remove_work_dir(const std::string& dir) {
  std::error_code ignored;
  // Student code may have made sub-folders read-only; make them writable so they can go.
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ignored);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ignored))
    if (it->is_directory(ignored) && !it->is_symlink(ignored))
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ignored);
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace

std::string signal_name(int signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGPIPE: return "SIGPIPE";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGXCPU: return "SIGXCPU";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGHUP: return "SIGHUP";
    case SIGALRM: return "SIGALRM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return "signal " + std::to_string(signal);
  }
}

SandboxResult run_sandboxed(const SandboxRequest& request) {
  install_signal_handlers_once();
  SandboxResult result;
  if (request.argv.empty()) {
    result.start_error = "no program given";
    return result;
  }
  const bool own_dir = request.working_dir.empty();
  const std::string work_dir = own_dir ? make_work_dir() : request.working_dir;

  Fd out_read, out_write, nonce_read, nonce_write, result_read, result_write, status_read, status_write;
  make_pipe(out_read, out_write);
  make_pipe(status_read, status_write);
  course_channel::Key key{};
  std::vector<std::pair<std::string, std::string>> extra_env;
  if (request.result_channel) {
    make_pipe(nonce_read, nonce_write);
    make_pipe(result_read, result_write);
    key = random_key();
    extra_env.emplace_back(course_channel::kEnvVar, std::to_string(course_channel::kNonceFd) + "," +
                                                        std::to_string(course_channel::kResultFd));
  }
  SandboxRequest with_env = request;
  with_env.set_env.insert(with_env.set_env.end(), extra_env.begin(), extra_env.end());
  std::vector<std::string> env_strings = child_environment(with_env, work_dir);
  std::vector<std::string> argv_strings = request.argv;
  argv_strings[0] = resolve_program(argv_strings[0]);
  std::vector<char*> envp = c_strings(env_strings);
  std::vector<char*> argv = c_strings(argv_strings);

  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.start_error = std::string("fork: ") + std::strerror(errno);
    if (own_dir) remove_work_dir(work_dir);
    return result;
  }
  if (pid == 0)
    become_child(request, work_dir.c_str(), argv.data(), envp.data(), out_write.get(), nonce_read.get(),
                 result_read.get() >= 0 ? result_write.get() : -1, status_write.get());
  ::setpgid(pid, pid);  // also done by the child: whichever runs first wins the race
  int group_slot = claim_group_slot(pid);
  out_write.reset();
  status_write.reset();
  nonce_read.reset();
  result_write.reset();
  if (request.result_channel) {
    const std::string hex = course_channel::key_to_hex(key);
    ssize_t ignored = ::write(nonce_write.get(), hex.data(), hex.size());
    (void)ignored;
    nonce_write.reset();
  }

  int exec_error = 0;
  ssize_t got;
  do got = ::read(status_read.get(), &exec_error, sizeof exec_error);
  while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof exec_error)) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    release_group_slot(group_slot);
    result.start_error = "cannot run " + request.argv[0] + ": " + std::strerror(exec_error);
    if (own_dir) remove_work_dir(work_dir);
    return result;
  }

  ::fcntl(out_read.get(), F_SETFL, O_NONBLOCK);
  if (request.result_channel) ::fcntl(result_read.get(), F_SETFL, O_NONBLOCK);
  BoundedCapture output(request.limits.output_head_bytes, request.limits.output_tail_bytes);
  ChannelReader channel(key);
  std::vector<char> buffer(64 * 1024);
  bool out_open = true, channel_open = request.result_channel;
  bool reaped = false;
  int status = 0;
  rusage usage{};
  Ending killed_for = Ending::exited;  // exited = not killed by the grader
  Clock::time_point killed_at{}, drain_until{};
  const auto timeout = std::chrono::duration<double>(request.limits.timeout_s);

  for (;;) {
    const auto now = Clock::now();
    if (!reaped && ::wait4(pid, &status, WNOHANG, &usage) == pid) {
      reaped = true;
      release_group_slot(group_slot);
      ::kill(-pid, SIGKILL);  // whatever it forked goes with it
      // Grandchildren that left the group could hold the pipes open forever: read for a short
      // while more, then stop listening.
      drain_until = now + std::chrono::seconds(1);
    }
    if (reaped && ((!out_open && !channel_open) || now >= drain_until)) break;
    if (!reaped && killed_for == Ending::exited) {
      if (request.limits.timeout_s > 0 && now - start > timeout) {
        killed_for = Ending::timed_out;
      } else if (request.cancel && request.cancel->load()) {
        killed_for = Ending::cancelled;
      } else if (request.limits.memory_mb > 0) {
        const std::size_t rss = resident_mb(pid);
        result.peak_rss_mb = std::max(result.peak_rss_mb, rss);
        if (rss > request.limits.memory_mb) killed_for = Ending::memory_exceeded;
      }
      if (killed_for != Ending::exited) {
        ::kill(-pid, SIGKILL);
        killed_at = now;
      }
    }
    // A process stuck in the kernel (e.g. a wedged GPU driver call) may not die at once; do not
    // wait for it forever.
    if (!reaped && killed_for != Ending::exited && now - killed_at > std::chrono::seconds(10)) break;

    pollfd fds[2];
    nfds_t count = 0;
    if (out_open) fds[count++] = {out_read.get(), POLLIN, 0};
    if (channel_open) fds[count++] = {result_read.get(), POLLIN, 0};
    if (count == 0) {
      ::usleep(10'000);
      continue;
    }
    ::poll(fds, count, 10);
    if (out_open)
      out_open = drain(out_read.get(), buffer, [&](const char* d, std::size_t n) { output.append(d, n); });
    if (channel_open)
      channel_open = drain(result_read.get(), buffer, [&](const char* d, std::size_t n) { channel.feed(d, n); });
  }
  release_group_slot(group_slot);
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.peak_rss_mb = std::max(result.peak_rss_mb, static_cast<std::size_t>(usage.ru_maxrss) / 1024);
  if (killed_for != Ending::exited) {
    result.ending = killed_for;
  } else if (WIFSIGNALED(status)) {
    result.ending = Ending::signaled;
    result.signal = WTERMSIG(status);
  } else {
    result.ending = Ending::exited;
    result.exit_code = WEXITSTATUS(status);
  }
  result.output = output.text();
  result.output_truncated = output.truncated();
  if (request.result_channel) {
    channel.finish(result.ending != Ending::exited);
    result.records = channel.records();
    result.channel_error = channel.error();
  }
  if (own_dir) remove_work_dir(work_dir);
  return result;
}

}  // namespace course_grader
