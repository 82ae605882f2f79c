// course_sandbox, the sandbox the compiler of student code runs in (and the engine of the
// workers' sandbox), in every mode this machine can run: what a command inside can read and
// write, the /tmp limit, the time limit, the exit code. A mode that cannot run here is reported
// with the reason and its checks are left out; each check has a positive control (the same
// command allowed) so that it can fail.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../test_support.hpp"

using namespace grader_test;

namespace {

struct Ran {
  int code = -1;
  std::string output;
  double seconds = 0;
};

// Runs course_sandbox with `args` (shell words, already quoted where needed) and `env` prefixed.
Ran sandbox(const std::string& mode, const std::string& args, const std::string& env = "") {
  const std::string out = std::filesystem::temp_directory_path() / ("course-sandbox-test-" + std::to_string(::getpid()));
  const std::string command =
      "env " + env + " " + COURSE_SANDBOX_EXE + " --mode " + mode + " " + args + " > " + out + " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  Ran r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(out);
  r.output.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  std::remove(out.c_str());
  return r;
}

// Whether `mode` can run here; `why` says why not.
bool mode_works(const std::string& mode, std::string& why) {
  const Ran r = sandbox(mode, "-- /bin/true");
  if (r.code == 0) return true;
  why = r.output;
  return false;
}

bool process_with_argument(const std::string& marker) {
  DIR* proc = ::opendir("/proc");
  bool found = false;
  while (dirent* e = proc != nullptr ? ::readdir(proc) : nullptr) {
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmdline.find(marker) != std::string::npos && cmdline.find("course_sandbox") == std::string::npos) found = true;
  }
  if (proc != nullptr) ::closedir(proc);
  return found;
}

}  // namespace

TEST_SUITE("isolation") {

TEST_CASE("isolation: course_sandbox fences a command in every mode that runs here") {
  int modes_run = 0;
  for (const std::string mode : {"bwrap", "unshare", "user"}) {
    CAPTURE(mode);
    std::string why;
    if (!mode_works(mode, why)) {
      MESSAGE("course_sandbox mode " << mode << " cannot run on this machine, its checks are left out: " << why);
      continue;
    }
    ++modes_run;
    TempDir ro_dir, rw_dir;
    ::chmod(ro_dir.path().c_str(), 0755);  // readable by the sandbox's user (as root: another uid)
    write_file(ro_dir.path() + "/input.txt", "input\n");
    ::chmod((ro_dir.path() + "/input.txt").c_str(), 0644);
    const std::string binds = "--ro " + ro_dir.path() + " --rw " + rw_dir.path();

    SUBCASE("reads what --ro gives, cannot write it; writes what --rw gives") {
      CHECK(sandbox(mode, binds + " -- /bin/cat " + ro_dir.path() + "/input.txt").code == 0);
      CHECK(sandbox(mode, binds + " -- /bin/sh -c 'echo x > " + ro_dir.path() + "/new'").code != 0);
      CHECK_FALSE(std::filesystem::exists(ro_dir.path() + "/new"));
      const Ran w = sandbox(mode, binds + " -- /bin/sh -c 'echo written > " + rw_dir.path() + "/out.txt'");
      CHECK_MESSAGE(w.code == 0, w.output);
      CHECK(read_file(rw_dir.path() + "/out.txt") == "written\n");
    }
    SUBCASE("the course tree is not readable inside") {
      const std::string file = std::string(COURSE_TEST_SOURCE_DIR) + "/grader/reference/lab01_reference.hpp";
      REQUIRE(::access(file.c_str(), R_OK) == 0);  // readable out here
      const Ran r = sandbox(mode, binds + " -- /bin/cat " + file);
      CHECK_MESSAGE(r.code != 0, r.output);
    }
    SUBCASE("a path named hidden is not readable, even under a system folder") {
      // A folder of its own under /opt (visible read-only in every mode) when we may create one.
      char templ[] = "/opt/course-hidden-test-XXXXXX";
      if (::mkdtemp(templ) == nullptr) {
        MESSAGE("cannot create a folder under /opt here; the hidden-path check under a system folder is left out");
      } else {
        const std::string dir = templ;
        ::chmod(dir.c_str(), 0755);
        write_file(dir + "/secret.txt", "the-hidden-content\n");
        ::chmod((dir + "/secret.txt").c_str(), 0644);
        if (mode != "user") {  // the positive control: without the hiding it is readable
          const Ran open = sandbox(mode, "-- /bin/cat " + dir + "/secret.txt");
          CHECK_MESSAGE(open.code == 0, open.output);
        }
        const Ran hidden = sandbox(mode, "-- /bin/cat " + dir + "/secret.txt", "COURSE_SANDBOX_HIDE=" + dir);
        CHECK_MESSAGE(hidden.code != 0, hidden.output);
        CHECK(hidden.output.find("the-hidden-content") == std::string::npos);
        std::filesystem::remove_all(dir);
      }
    }
    SUBCASE("the private /tmp is size-limited") {
      if (mode == "user") {
        MESSAGE("mode user has no private /tmp (no namespaces): no size limit to check");
      } else {
        const Ran small = sandbox(mode, "--tmp-mb 32 -- /bin/sh -c 'head -c 8000000 /dev/zero > /tmp/f'");
        CHECK_MESSAGE(small.code == 0, small.output);  // within the limit: fine
        const Ran big = sandbox(mode, "--tmp-mb 32 -- /bin/sh -c 'head -c 64000000 /dev/zero > /tmp/f'");
        CHECK_MESSAGE(big.code != 0, big.output);
        const Ran shm = sandbox(mode, "--tmp-mb 32 -- /bin/sh -c 'head -c 64000000 /dev/zero > /dev/shm/f'");
        CHECK_MESSAGE(shm.code != 0, shm.output);
      }
    }
    SUBCASE("a command over its time is stopped with everything it started; exit codes pass through") {
      const Ran ok = sandbox(mode, "--timeout-s 20 -- /bin/sh -c 'exit 42'");
      CHECK(ok.code == 42);
      const Ran slow = sandbox(mode, "--timeout-s 1 -- /bin/sh -c '(sleep 47.25 &); setsid sleep 47.5 & sleep 47.75'");
      CHECK(slow.code == 124);
      CHECK(slow.seconds < 10);
      CHECK(slow.output.find("did not finish within 1 s") != std::string::npos);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      CHECK_FALSE(process_with_argument("47.25"));
      CHECK_FALSE(process_with_argument("47.5"));
      CHECK_FALSE(process_with_argument("47.75"));
    }
  }
  if (::geteuid() == 0) CHECK(modes_run > 0);  // as root at least the dedicated-user mode runs
}

TEST_CASE("isolation: course_sandbox --describe names the mode; an unknown mode is refused") {
  const Ran d = sandbox("auto", "--describe");
  CHECK(d.code == 0);
  CHECK(d.output.rfind("sandbox: ", 0) == 0);
  CHECK(sandbox("nonsense", "-- /bin/true").code == 125);
}

}  // TEST_SUITE
