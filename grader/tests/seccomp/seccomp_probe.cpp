// grader.seccomp: a stand-in worker linked with the real worker_seccomp.cpp. It makes the calls a
// cheating student would (through syscall(2), as code that found them in memory would) and checks
// each is refused with EPERM, and that what honest code and the CUDA runtime need still works.
// Exit code 0 only when every check holds; each failure is printed.
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

namespace {

int failures = 0;

void expect_refused(const char* what, long result) {
  if (result == -1 && errno == EPERM) {
    std::printf("refused as it should be: %s\n", what);
  } else {
    std::printf("NOT REFUSED: %s (result %ld, errno %d %s)\n", what, result, errno, std::strerror(errno));
    ++failures;
  }
}

void expect_works(const char* what, bool ok) {
  std::printf("%s: %s\n", ok ? "works as it should" : "BROKEN", what);
  if (!ok) ++failures;
}

void code_page_marker() {}

}  // namespace

int main() {
  // The attacks.
  long page = sysconf(_SC_PAGESIZE);
  auto code = reinterpret_cast<std::uintptr_t>(&code_page_marker) & ~static_cast<std::uintptr_t>(page - 1);
  expect_refused("mprotect of the worker's own code page to read+write+execute",
                 syscall(SYS_mprotect, code, page, PROT_READ | PROT_WRITE | PROT_EXEC));
  expect_refused("pkey_mprotect to executable", syscall(SYS_pkey_mprotect, code, page, PROT_READ | PROT_EXEC, -1));
  expect_refused("mmap of anonymous write+execute memory",
                 syscall(SYS_mmap, 0, page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  // A process of the same user to attach to: a child (attaching to the real parent would stop the
  // test runner if the filter were missing).
  const pid_t victim = fork();
  if (victim == 0) {
    pause();
    _exit(0);
  }
  expect_refused("ptrace(PTRACE_ATTACH) of another process", syscall(SYS_ptrace, PTRACE_ATTACH, victim, 0, 0));
  expect_refused("process_vm_readv of another process", syscall(SYS_process_vm_readv, victim, nullptr, 0, nullptr, 0, 0));
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  expect_refused("unshare(CLONE_NEWUSER)", syscall(SYS_unshare, CLONE_NEWUSER));
  expect_refused("clone with CLONE_NEWUSER", syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
  expect_refused("personality", syscall(SYS_personality, 0x0400000 /* READ_IMPLIES_EXEC */));
  expect_refused("userfaultfd", syscall(SYS_userfaultfd, 0));
  expect_refused("io_uring_setup", syscall(SYS_io_uring_setup, 1, nullptr));
  errno = 0;
  const long clone3 = syscall(SYS_clone3, nullptr, 0);
  expect_works("clone3 answers ENOSYS (glibc falls back to clone)", clone3 == -1 && errno == ENOSYS);

  // Last of the attacks: if it is not refused, the probe becomes a shell that exits 99 (a failure).
  char sh[] = "/bin/sh", dash_c[] = "-c", script[] = "exit 99";
  char* argv[] = {sh, dash_c, script, nullptr};
  expect_refused("execve(\"/bin/sh\")", syscall(SYS_execve, sh, argv, nullptr));

  // What honest code and the CUDA runtime need.
  void* data = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  expect_works("mmap of read+write memory", data != MAP_FAILED);
  expect_works("mprotect of data to read-only", data != MAP_FAILED && mprotect(data, page, PROT_READ) == 0);
  int value = 0;
  std::thread helper([&] { value = 42; });
  helper.join();
  expect_works("std::thread", value == 42);
  const pid_t child = fork();
  if (child == 0) _exit(7);
  int status = 0;
  expect_works("fork and wait", child > 0 && waitpid(child, &status, 0) == child && WEXITSTATUS(status) == 7);
  // dlopen maps a library's code read+execute from its file, as the static CUDA runtime does with libcuda.
  void* lib = dlopen("libz.so.1", RTLD_NOW);
  if (lib == nullptr) lib = dlopen("libm.so.6", RTLD_NOW);
  expect_works("dlopen of a shared library (file-backed read+execute mappings)", lib != nullptr);
  return failures == 0 ? 0 : 1;
}
