#include "worker_sandbox.hpp"

#include <fcntl.h>
#include <glob.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace grader::rpc {
namespace {

// The host folders every sandbox shows, read-only: programs, libraries, configuration.
const char* const kSystemDirs[] = {"/usr", "/etc", "/lib", "/lib64", "/bin", "/sbin", "/opt"};

std::string find_program(const std::string& name) {
  for (const char* dir : {"/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/", "/usr/local/bin/"}) {
    const std::string path = std::string(dir) + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

bool under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

bool under_system_dir(const std::string& path) {
  for (const char* d : kSystemDirs)
    if (under(path, d)) return true;
  return false;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

// The unshare mode's set-up, run by /bin/sh as root inside the new namespaces. It builds a new
// root from an allow-list -- nothing of the host is visible unless bound here -- and then runs
// the command chrooted into it through setpriv: no capabilities (so nothing mounted here can be
// undone), no_new_privs, and the dedicated user when the caller is really root.
//   $1 root mount point (an empty host folder; the tmpfs root hides it in this namespace only)
//   $2 1 = GPU (NVIDIA devices, /sys)   $3 /tmp size (MiB)   $4 /dev/shm size (MiB)
//   $5 working folder   $6 uid to become ("" = keep)
//   then: covered paths..., --ro paths..., --rw paths..., --, the command
constexpr const char* kUnshareScript = R"sh(set -eu
R=$1 gpu=$2 tmp=$3 shm=$4 dir=$5 uid=$6; shift 6
mount --make-rprivate /
mount -t tmpfs -o size=1m,mode=755 course-root "$R"
for d in /usr /etc /lib /lib64 /bin /sbin /opt; do
  if [ -L "$d" ]; then ln -s "$(readlink "$d")" "$R$d"
  elif [ -d "$d" ]; then
    # Recursive: mounts below a system folder come along (the GPU driver's libraries may sit in
    # one of their own, e.g. /usr/local/nvidia); the top is then made read-only.
    mkdir -p "$R$d"; mount --rbind "$d" "$R$d"; mount -o remount,bind,ro,nosuid,nodev "$R$d"
  fi
done
mkdir -p "$R/tmp" "$R/proc" "$R/dev" "$R/run"
mount -t tmpfs -o size="$tmp"m,mode=1777,nosuid,nodev course-tmp "$R/tmp"
mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
mount -t tmpfs -o size=64k,mode=755,nosuid course-dev "$R/dev"
for n in null zero full random urandom tty; do
  : > "$R/dev/$n"; mount --bind "/dev/$n" "$R/dev/$n"
done
if [ "$gpu" = 1 ]; then
  for n in /dev/nvidia*; do
    [ -e "$n" ] || continue
    if [ -d "$n" ]; then mkdir -p "$R$n"; else : > "$R$n"; fi
    mount --bind "$n" "$R$n"
  done
  mkdir -p "$R/sys"; mount --rbind /sys "$R/sys"; mount -o remount,bind,ro "$R/sys"
fi
ln -s /proc/self/fd "$R/dev/fd"; ln -s /proc/self/fd/0 "$R/dev/stdin"
ln -s /proc/self/fd/1 "$R/dev/stdout"; ln -s /proc/self/fd/2 "$R/dev/stderr"
mkdir "$R/dev/shm"
mount -t tmpfs -o size="$shm"m,mode=1777,nosuid,nodev course-shm "$R/dev/shm"
mount -o remount,bind,ro,nosuid "$R/dev"
what=cover
while [ $# -gt 0 ]; do
  p=$1; shift
  case "$p" in
    --ro) what=ro; continue ;;
    --rw) what=rw; continue ;;
    --) break ;;
  esac
  case $what in
    cover) if [ -d "$R$p" ]; then mount -t tmpfs -o ro,size=4k,mode=755 course-hidden "$R$p"; fi ;;
    *) if [ -d "$p" ]; then mkdir -p "$R$p"; else mkdir -p "$R$(dirname "$p")"; : > "$R$p"; fi
       if [ $what = ro ]; then mount --bind -o ro,nosuid,nodev "$p" "$R$p"
       else mount --bind -o nosuid,nodev "$p" "$R$p"; fi ;;
  esac
done
mount -o remount,bind,ro "$R"
if [ -n "$uid" ]; then
  set -- setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"
else
  set -- setpriv --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"
fi
exec unshare --root="$R" --wd="$dir" "$@"
)sh";

// Changes to the working folder (and, in the modes without a private /tmp, points TMPDIR and
// HOME at the run's own folder), then runs the command.
constexpr const char* kChdirScript = R"sh(cd "$1" || exit 125
if [ -n "$2" ]; then export TMPDIR="$2" HOME="$2"; fi
shift 2; exec "$@")sh";

std::vector<std::string> nvidia_devices() {
  std::vector<std::string> devices;
  glob_t g{};
  if (::glob("/dev/nvidia*", 0, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) devices.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  return devices;
}

std::vector<std::string> bwrap_argv(const SandboxSpec& spec, int uid, const std::string& bwrap, const std::string& setpriv) {
  std::vector<std::string> argv;
  if (uid >= 0) {
    // bubblewrap run by root keeps uid 0 outside its user namespace; run it as the sandbox's
    // user instead so the command is an unprivileged user on the host too.
    argv = {setpriv, "--reuid=" + std::to_string(uid), "--regid=" + std::to_string(uid), "--clear-groups", "--"};
  }
  const std::size_t shm_mb = std::max<std::size_t>(1, spec.tmp_mb / 4);
  const std::size_t tmp_mb = std::max<std::size_t>(1, spec.tmp_mb - shm_mb);
  argv.insert(argv.end(), {bwrap, "--unshare-all", "--die-with-parent", "--new-session"});
  for (const char* d : kSystemDirs) argv.insert(argv.end(), {"--ro-bind-try", d, d});
  argv.insert(argv.end(), {"--proc", "/proc", "--dev", "/dev", "--size", std::to_string(tmp_mb << 20), "--tmpfs", "/tmp",
                           "--size", std::to_string(shm_mb << 20), "--tmpfs", "/dev/shm"});
  for (const std::string& p : spec.cover)
    if (under_system_dir(p) && is_dir(p)) argv.insert(argv.end(), {"--size", "4096", "--tmpfs", p, "--remount-ro", p});
  for (const std::string& p : spec.ro) argv.insert(argv.end(), {"--ro-bind", p, p});
  for (const std::string& p : spec.rw) argv.insert(argv.end(), {"--bind", p, p});
  if (spec.gpu) {
    for (const std::string& dev : nvidia_devices()) argv.insert(argv.end(), {"--dev-bind", dev, dev});
    argv.insert(argv.end(), {"--ro-bind-try", "/sys", "/sys"});
  }
  // The root and /dev are tmpfs mounts owned by the sandbox's user: read-only, or they would be
  // unbounded writable memory.
  argv.insert(argv.end(), {"--remount-ro", "/dev", "--remount-ro", "/", "--chdir", spec.chdir, "--"});
  argv.insert(argv.end(), spec.command.begin(), spec.command.end());
  return argv;
}

std::vector<std::string> unshare_argv(const SandboxSpec& spec, int uid, const std::string& unshare,
                                      const std::string& root_dir) {
  std::vector<std::string> argv = {unshare};
  if (::geteuid() != 0) argv.insert(argv.end(), {"--user", "--map-root-user"});
  const std::size_t shm_mb = std::max<std::size_t>(1, spec.tmp_mb / 4);
  const std::size_t tmp_mb = std::max<std::size_t>(1, spec.tmp_mb - shm_mb);
  argv.insert(argv.end(), {"--mount", "--pid", "--fork", "--kill-child", "--net", "--ipc", "--uts", "--", "/bin/sh",
                           "-c", kUnshareScript, "course-sandbox", root_dir, spec.gpu ? "1" : "0",
                           std::to_string(tmp_mb), std::to_string(shm_mb), spec.chdir,
                           uid >= 0 ? std::to_string(uid) : ""});
  argv.insert(argv.end(), spec.cover.begin(), spec.cover.end());
  argv.push_back("--ro");
  argv.insert(argv.end(), spec.ro.begin(), spec.ro.end());
  argv.push_back("--rw");
  argv.insert(argv.end(), spec.rw.begin(), spec.rw.end());
  argv.push_back("--");
  argv.insert(argv.end(), spec.command.begin(), spec.command.end());
  return argv;
}

// --- the dedicated user --------------------------------------------------------------------------

// Whether a process of `uid` other than `self` exists (zombies included). Raw system calls
// only, no allocation: async-signal-safe, for the watchdog.
bool uid_alive(uid_t uid, pid_t self) {
  const int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  struct Entry {
    std::uint64_t ino;
    std::int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[1];
  };
  alignas(8) char buf[16384];
  bool found = false;
  while (!found) {
    const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n <= 0) break;
    for (long at = 0; at < n && !found;) {
      const auto* e = reinterpret_cast<const Entry*>(buf + at);
      at += e->reclen;
      long pid = 0;
      const char* c = e->name;
      for (; *c >= '0' && *c <= '9'; ++c) pid = pid * 10 + (*c - '0');
      if (c == e->name || *c != '\0' || pid == self) continue;
      struct stat st {};
      if (::fstatat(dir, e->name, &st, 0) != 0 || st.st_uid != uid) continue;
      // A zombie (state Z) is dead already; reaping it is its new parent's business.
      char path[64] = {};
      std::size_t k = 0;
      for (const char* q = e->name; *q != '\0' && k < 40; ++q) path[k++] = *q;
      for (const char* q = "/stat"; *q != '\0'; ++q) path[k++] = *q;
      const int fd = ::openat(dir, path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      char text[512];
      const ssize_t got = ::read(fd, text, sizeof text - 1);
      ::close(fd);
      if (got <= 0) continue;
      char state = '?';
      for (ssize_t j = got - 1; j > 0; --j)
        if (text[j] == ')' && j + 2 < got) {
          state = text[j + 2];
          break;
        }
      if (state != 'Z' && state != 'X') found = true;
    }
  }
  ::close(dir);
  return found;
}

// A root-owned folder only root can enter, for the uid locks.
std::string lock_dir() {
  for (const char* dir : {"/run/course-sandbox", "/tmp/.course-sandbox-root"}) {
    ::mkdir(dir, 0700);
    struct stat st {};
    if (::lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 && (st.st_mode & 077) == 0) return dir;
  }
  return "";
}

// Claims a uid for this run: the first of COURSE_SANDBOX_UID (default 64999) and the next 99
// that has no account, runs no process and is not locked by another run. The lock (flock on a
// file only root can reach) is held until the run's watchdog has killed every process of it, so
// two runs at once (the grader's --jobs) never share a uid.
int claim_uid(int& lock_fd, std::string& error) {
  long base = 64999;
  if (const char* text = std::getenv("COURSE_SANDBOX_UID"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    base = std::strtol(text, &end, 10);
    if (end == nullptr || *end != '\0' || base < 1000 || base > 4000000000L) {
      error = "COURSE_SANDBOX_UID=" + std::string(text) + " is not a uid of 1000 or more";
      return -1;
    }
  }
  const std::string dir = lock_dir();
  if (dir.empty()) {
    error = "cannot create a root-only folder for the sandbox's uid locks (/run/course-sandbox)";
    return -1;
  }
  for (long uid = base; uid < base + 100; ++uid) {
    if (uid == 65534 || ::getpwuid(static_cast<uid_t>(uid)) != nullptr) continue;
    const std::string path = dir + "/uid-" + std::to_string(uid);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || uid_alive(static_cast<uid_t>(uid), -1)) {
      ::close(fd);
      continue;
    }
    lock_fd = fd;
    return static_cast<int>(uid);
  }
  error = "no free sandbox uid in " + std::to_string(base) + "..." + std::to_string(base + 99) +
          " (each must have no account and no process); set COURSE_SANDBOX_UID to another range";
  return -1;
}

// Whether user `uid` (no groups of its own) can reach `path`: every folder above it searchable
// by "other", and the path itself open to "other" in any way.
bool other_can_reach(const std::string& path) {
  std::string prefix;
  std::stringstream parts(path);
  std::string part;
  std::vector<std::string> chain = {"/"};
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    prefix += "/" + part;
    chain.push_back(prefix);
  }
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    struct stat st {};
    if (::stat(chain[i].c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
  }
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IRWXO) != 0;
}

// user mode: nothing of the grader's may be reachable by the sandbox's uid.
void protect_for_user(const std::vector<std::string>& paths) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  for (const std::string& given : paths) {
    const std::string path = real_path(given);
    // /root and /home are covered in the modes with namespaces; here they are the host's own
    // business (changing /home would lock every user out of their home).
    if (path == "/root" || path == "/home" || path == "/") continue;
    if (!other_can_reach(path)) continue;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    if (::chmod(path.c_str(), st.st_mode & 07770) == 0) {
      if (said.insert(path).second)
        std::fprintf(stderr,
                     "course-sandbox: %s was readable by every user; removed the \"other\" permissions (chmod o-rwx) so "
                     "the sandbox's user cannot reach it\n",
                     path.c_str());
    } else {
      std::fprintf(stderr, "course-sandbox: WARNING: cannot chmod o-rwx %s: %s\n", path.c_str(), std::strerror(errno));
    }
  }
}

bool readable_by_other(const std::string& path) {
  if (!other_can_reach(path)) return false;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH) != 0 &&
         (!S_ISDIR(st.st_mode) || (st.st_mode & S_IXOTH) != 0);
}

// --- mode selection --------------------------------------------------------------------------------

// Runs `plan` with /usr/bin/true; true if it ran and exited 0 within 10 s.
bool probe(const SandboxPlan& plan, bool gpu) {
  SandboxSpec spec;
  spec.gpu = gpu;
  spec.tmp_mb = 8;
  spec.command = {"/usr/bin/true"};
  std::string error;
  std::unique_ptr<SandboxRun> run = SandboxRun::prepare(plan, spec, error);
  if (!run) return false;
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    ::setpgid(0, 0);
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    std::vector<char*> args;
    for (const std::string& a : run->argv()) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  run->started(pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 || std::chrono::steady_clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  run->finish();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

SandboxPlan make_plan(bool gpu) {
  const char* forced_env = std::getenv("COURSE_SANDBOX");
  const std::string forced = forced_env != nullptr ? forced_env : "";
  const bool root = ::geteuid() == 0;
  const bool have_setpriv = !find_program("setpriv").empty();
  std::vector<std::string> tried;
  auto wanted = [&](const char* mode) { return forced.empty() || forced == "auto" || forced == mode; };

  if (wanted("bwrap")) {
    SandboxPlan plan{"bwrap", false,
                     std::string("bubblewrap: ") + (root ? "dedicated unprivileged user, " : "") +
                         "only system folders visible (read-only), private size-limited /tmp, no network, own PID namespace"};
    if (find_program("bwrap").empty()) tried.push_back("bubblewrap (bwrap) is not installed");
    else if (root && !have_setpriv) tried.push_back("setpriv is not installed (needed as root)");
    else if (probe(plan, gpu)) return plan;
    else tried.push_back("bubblewrap could not create its namespaces here");
  }
  if (wanted("unshare")) {
    SandboxPlan plan{"unshare", false,
                     std::string("unshare+setpriv: ") + (root ? "dedicated unprivileged user, " : "user namespace, ") +
                         "no capabilities, new root of system folders only (read-only), private size-limited /tmp, "
                         "no network, own PID namespace"};
    if (find_program("unshare").empty() || !have_setpriv) tried.push_back("unshare or setpriv is not installed");
    else if (probe(plan, gpu)) return plan;
    else tried.push_back("unshare could not create its namespaces here");
  }
  if (wanted("user")) {
    SandboxPlan plan{"user", false,
                     "dedicated user (no namespaces available): an unprivileged uid with no capabilities; the course, "
                     "build, hidden-case and submission folders made unreachable to it; every process of it killed "
                     "afterwards; it still sees the host's world-readable files and the network, and /tmp is not "
                     "size-limited"};
    if (!root) tried.push_back("the dedicated-user mode needs root");
    else if (!have_setpriv) tried.push_back("setpriv is not installed");
    else if (probe(plan, gpu)) return plan;
    else tried.push_back("the dedicated user could not be set up");
  }
  SandboxPlan plan;
  plan.mode = "none";
  plan.degraded = true;
  std::ostringstream why;
  why << "DEGRADED: student code runs without isolation (own process group and resource limits only)";
  if (forced == "none") why << "; COURSE_SANDBOX=none was set";
  else if (!forced.empty() && forced != "auto") why << "; COURSE_SANDBOX=" << forced << " could not be used";
  for (const std::string& t : tried) why << "; " << t;
  plan.description = why.str();
  return plan;
}

// --- the watchdog ------------------------------------------------------------------------------------

// Kills every process of `uid` the way only that uid can be sure to: a child that becomes the
// uid and sends SIGKILL to every process it may signal, until /proc shows none (at most ~5 s;
// kill(-1) itself cannot tell, it succeeds whenever any other process exists).
// Only async-signal-safe calls: it also runs in the watchdog, a child of a threaded program.
void kill_uid(uid_t uid) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0) ::_exit(1);
    for (int i = 0; i < 5000; ++i) {
      ::kill(-1, SIGKILL);
      if (!uid_alive(uid, ::getpid())) ::_exit(0);
      const timespec ms{0, 1000000};
      ::nanosleep(&ms, nullptr);
    }
    ::_exit(2);
  }
  if (pid > 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void run_and_wait(char* const* argv) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(argv[0], argv);
    ::_exit(127);
  }
  if (pid > 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace

std::size_t sandbox_tmp_mb(std::size_t memory_mb) {
  if (memory_mb == 0) return 256;
  return std::max<std::size_t>(8, std::min<std::size_t>(256, memory_mb / 4));
}

std::unique_ptr<SandboxRun> SandboxRun::prepare(const SandboxPlan& plan, const SandboxSpec& given, std::string& error) {
  std::unique_ptr<SandboxRun> run(new SandboxRun());
  SandboxSpec spec = given;
  for (std::string& p : spec.ro) p = real_path(p);
  for (std::string& p : spec.rw) p = real_path(p);
  const bool root = ::geteuid() == 0;
  const std::string setpriv = find_program("setpriv");

  if (root && plan.mode != "none") {
    run->uid_ = claim_uid(run->lock_fd_, error);
    if (run->uid_ < 0) return nullptr;
  }
  const auto uid = static_cast<uid_t>(run->uid_);
  if (plan.mode == "bwrap" || plan.mode == "user") {
    // Without a root of its own, the user needs a path to what it may read.
    for (const std::string& p : spec.ro) {
      if (run->uid_ >= 0 && !readable_by_other(p)) {
        error = p + " is not readable by the sandbox's user (uid " + std::to_string(run->uid_) +
                "): make it and the folders above it readable by every user (chmod o+rx)";
        return nullptr;
      }
    }
  }

  // The command's writable folders belong to the sandbox's user for the run (given back after).
  if (run->uid_ >= 0) {
    for (const std::string& p : spec.rw) {
      struct stat st {};
      if (::stat(p.c_str(), &st) != 0 || ::chown(p.c_str(), uid, uid) != 0) {
        error = "cannot hand " + p + " to the sandbox's user: " + std::strerror(errno);
        return nullptr;
      }
      run->chowned_.push_back({p, {st.st_uid, st.st_gid}});
    }
  }
  std::string private_dir;
  if (plan.mode == "user" || plan.mode == "none") {
    // No private /tmp: the run gets a fresh folder of its own, removed afterwards.
    char templ[] = "/tmp/course-sandbox-XXXXXX";
    if (::mkdtemp(templ) == nullptr) {
      error = std::string("cannot create a temporary folder: ") + std::strerror(errno);
      return nullptr;
    }
    private_dir = templ;
    run->remove_dirs_.push_back(private_dir);
    if (run->uid_ >= 0 && ::chown(templ, uid, uid) != 0) {
      error = std::string("cannot hand the temporary folder to the sandbox's user: ") + std::strerror(errno);
      return nullptr;
    }
  }

  if (plan.mode == "bwrap") {
    run->argv_ = bwrap_argv(spec, run->uid_, find_program("bwrap"), setpriv);
  } else if (plan.mode == "unshare") {
    char templ[] = "/tmp/course-root-XXXXXX";
    if (::mkdtemp(templ) == nullptr) {
      error = std::string("cannot create the sandbox's root folder: ") + std::strerror(errno);
      return nullptr;
    }
    run->remove_dirs_.push_back(templ);
    run->argv_ = unshare_argv(spec, run->uid_, find_program("unshare"), templ);
  } else {
    if (plan.mode == "user") {
      protect_for_user(spec.cover);
      run->argv_ = {setpriv,         "--reuid=" + std::to_string(uid), "--regid=" + std::to_string(uid),
                    "--clear-groups", "--inh-caps=-all",               "--bounding-set=-all",
                    "--no-new-privs", "--"};
    }
    const bool private_tmp = spec.chdir == "/tmp";
    run->argv_.insert(run->argv_.end(), {"/bin/sh", "-c", kChdirScript, "course-sandbox",
                                         private_tmp ? private_dir : spec.chdir, private_tmp ? private_dir : ""});
    run->argv_.insert(run->argv_.end(), spec.command.begin(), spec.command.end());
  }

  // The watchdog: a child in a session of its own that waits for this process to finish the run
  // (or to die) and then kills what is left and cleans up. Everything it needs is prepared here:
  // after fork() it makes only async-signal-safe calls.
  std::vector<std::vector<std::string>> cleanup;
  for (const std::string& dir : run->remove_dirs_) cleanup.push_back({"/bin/rm", "-rf", "--", dir});
  if (plan.mode == "user") {
    // Whatever the user left in the host's shared temporary folders (answers for the next student).
    cleanup.push_back({find_program("find"), "/tmp", "/var/tmp", "/dev/shm", "/run/lock", "-xdev", "-mindepth", "1",
                       "-maxdepth", "1", "-user", std::to_string(uid), "-exec", "rm", "-rf", "--", "{}", "+"});
  }
  std::vector<std::vector<char*>> cleanup_argv;
  for (auto& c : cleanup) {
    std::vector<char*> a;
    for (std::string& s : c) a.push_back(s.data());
    a.push_back(nullptr);
    cleanup_argv.push_back(std::move(a));
  }
  std::vector<std::pair<const char*, std::pair<uid_t, gid_t>>> chown_back;
  for (const auto& [path, owner] : run->chowned_) chown_back.push_back({path.c_str(), owner});
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return nullptr;
  }
  const int claimed = run->uid_;
  const pid_t watchdog = ::fork();
  if (watchdog < 0) {
    error = std::string("cannot start the sandbox's watchdog: ") + std::strerror(errno);
    return nullptr;
  }
  if (watchdog == 0) {
    ::setsid();
    ::signal(SIGPIPE, SIG_IGN);
    // Only the pipe and the uid lock: holding anything else of the caller's (its output, other
    // workers' channels) would keep those open after the caller ends.
    const int keep[2] = {std::min(pipe_fds[0], run->lock_fd_ >= 0 ? run->lock_fd_ : pipe_fds[0]),
                         std::max(pipe_fds[0], run->lock_fd_)};
    if (keep[0] > 0) ::close_range(0, static_cast<unsigned>(keep[0] - 1), 0);
    if (keep[1] > keep[0] + 1) ::close_range(static_cast<unsigned>(keep[0] + 1), static_cast<unsigned>(keep[1] - 1), 0);
    ::close_range(static_cast<unsigned>(keep[1] + 1), ~0U, 0);
    // First the started process's pid (SandboxRun::started), then end of file (finish(), or
    // this process's death).
    pid_t target = -1;
    std::size_t got = 0;
    while (got < sizeof target) {
      const ssize_t n = ::read(pipe_fds[0], reinterpret_cast<char*>(&target) + got, sizeof target - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (got < sizeof target) target = -1;
    char c;
    while (got == sizeof target) {
      const ssize_t n = ::read(pipe_fds[0], &c, 1);
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    if (target > 0) {
      ::kill(-target, SIGKILL);
      ::kill(target, SIGKILL);
    }
    if (claimed >= 0) kill_uid(static_cast<uid_t>(claimed));
    // --rw folders go back to their owners first: the sweep below removes what the uid owns.
    for (auto& [path, owner] : chown_back) [[maybe_unused]] const int ignored = ::chown(path, owner.first, owner.second);
    for (auto& a : cleanup_argv) run_and_wait(a.data());
    ::_exit(0);
  }
  ::close(pipe_fds[0]);
  run->watchdog_ = watchdog;
  run->watchdog_fd_ = pipe_fds[1];
  return run;
}

SandboxRun::~SandboxRun() { finish(); }

void SandboxRun::started(pid_t pid) {
  pid_ = pid;
  if (watchdog_fd_ >= 0) [[maybe_unused]] const ssize_t ignored = ::write(watchdog_fd_, &pid_, sizeof pid_);
}

void SandboxRun::finish() {
  if (finished_) return;
  finished_ = true;
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
  }
  if (watchdog_fd_ >= 0) {
    ::close(watchdog_fd_);
    watchdog_fd_ = -1;
  }
  if (watchdog_ > 0) {
    int status = 0;
    while (::waitpid(watchdog_, &status, 0) < 0 && errno == EINTR) {
    }
    watchdog_ = -1;
  } else {  // set-up failed before the watchdog started: undo what was done
    for (const auto& [path, owner] : chowned_) [[maybe_unused]] const int ignored = ::chown(path.c_str(), owner.first, owner.second);
    for (const std::string& dir : remove_dirs_) ::rmdir(dir.c_str());
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
}

std::vector<std::string> hidden_paths() {
  std::vector<std::string> paths = {COURSE_RPC_SOURCE_DIR, COURSE_RPC_BINARY_DIR, "/root", "/home"};
  if (const char* extra = std::getenv("COURSE_SANDBOX_HIDE")) {
    std::stringstream list(extra);
    std::string item;
    while (std::getline(list, item, ':'))
      if (!item.empty() && item[0] == '/') paths.push_back(item);
  }
  if (const char* hidden = std::getenv("COURSE_HIDDEN_DIR"); hidden != nullptr && hidden[0] == '/') paths.push_back(hidden);
  std::vector<std::string> both;  // as given and with links resolved: either may lie under /usr, /opt...
  for (const std::string& p : paths) {
    both.push_back(p);
    const std::string r = real_path(p);
    if (r != p) both.push_back(r);
  }
  return both;
}

const SandboxPlan& sandbox_plan(bool gpu) {
  static std::once_flag once;
  static SandboxPlan plan;
  std::call_once(once, [&] { plan = make_plan(gpu); });
  return plan;
}

}  // namespace grader::rpc
