// The worker's seccomp filter: system calls the student's code has no business making fail with
// EPERM, whatever sandbox tool (bubblewrap, unshare, none) runs the worker. It is defence in depth
// behind check_symbols.py (which refuses these calls by name at build time, but cannot see code
// that finds a libc function by reading memory) and behind the sandbox (which may be weak: `none`
// mode has no namespaces at all).
//
// It is installed from .preinit_array: the dynamic loader runs that before any constructor of the
// worker's own objects, of the student's objects and of every shared library, so no student code
// runs unfiltered (check_symbols.py refuses student objects that carry .preinit_array or a
// prioritised constructor). The filter is inherited by every thread and child and can never be
// removed; PR_SET_NO_NEW_PRIVS also means nothing the worker runs can gain privileges.
//
// Refused (EPERM):
//   ptrace, process_vm_readv/writev, pidfd_getfd  reading or steering another process
//   execve, execveat                              running another program (the worker is already
//                                                 running when the filter is installed)
//   mprotect/pkey_mprotect with PROT_EXEC         making memory executable: patching code, e.g. a
//   mmap with PROT_WRITE and PROT_EXEC            jump over a function; file-backed read+execute
//                                                 mappings stay allowed (dlopen of libcuda by the
//                                                 static CUDA runtime, cuDNN's sub-libraries)
//   personality, kexec_*, bpf, perf_event_open, userfaultfd, io_uring_* (its operations bypass
//   seccomp), mount, umount2, pivot_root, chroot, unshare, setns, keyctl, add_key,
//   request_key, open_by_handle_at, init/finit/delete_module, reboot, iopl, ioperm
//   clone with a namespace flag (CLONE_NEWUSER, CLONE_NEWNS, ...): threads and plain fork stay
// clone3 gets ENOSYS (its flags are in memory a filter cannot read), so glibc falls back to clone.
// A system call of another architecture (the 32-bit ABI via int $0x80, x32) kills the process.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <initializer_list>

namespace {

#if defined(__x86_64__)
constexpr unsigned kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "worker_seccomp.cpp: add this architecture's AUDIT_ARCH_ constant"
#endif

constexpr unsigned kErrnoEperm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
constexpr unsigned kErrnoEnosys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);
constexpr unsigned kNamespaceFlags = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                                     CLONE_NEWUTS | CLONE_NEWCGROUP;

// The system calls refused outright; the ones this architecture lacks are left out.
constexpr long kRefused[] = {
    __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev, __NR_execve, __NR_execveat, __NR_personality,
    __NR_kexec_load, __NR_bpf, __NR_perf_event_open, __NR_userfaultfd, __NR_mount, __NR_umount2,
    __NR_pivot_root, __NR_chroot, __NR_unshare, __NR_setns, __NR_keyctl, __NR_add_key, __NR_request_key,
    __NR_open_by_handle_at, __NR_init_module, __NR_finit_module, __NR_delete_module, __NR_reboot,
#ifdef __NR_kexec_file_load
    __NR_kexec_file_load,
#endif
#ifdef __NR_pidfd_getfd
    __NR_pidfd_getfd,
#endif
#ifdef __NR_io_uring_setup
    __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
#endif
#ifdef __NR_iopl
    __NR_iopl, __NR_ioperm,
#endif
#ifdef __NR_mount_setattr
    __NR_mount_setattr, __NR_move_mount, __NR_open_tree, __NR_fsopen, __NR_fsmount, __NR_fsconfig,
#endif
};

constexpr std::size_t kMaxInstructions = 160;

struct Program {
  sock_filter code[kMaxInstructions];
  unsigned short size = 0;
  void add(unsigned short op, unsigned k, unsigned char jt = 0, unsigned char jf = 0) {
    if (size < kMaxInstructions) code[size] = sock_filter{op, jt, jf, k};
    ++size;  // an overflow is caught before installing
  }
  void load(std::size_t offset) { add(BPF_LD | BPF_W | BPF_ABS, static_cast<unsigned>(offset)); }
  void ret(unsigned action) { add(BPF_RET | BPF_K, action); }
};

// The low 32 bits of argument i (little-endian on both architectures; every flag tested below
// lives in those bits).
constexpr std::size_t arg_low(int i) { return offsetof(seccomp_data, args) + 8 * static_cast<std::size_t>(i); }

void build(Program& p) {
  p.load(offsetof(seccomp_data, arch));
  p.add(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 1, 0);
  p.ret(SECCOMP_RET_KILL_PROCESS);
  p.load(offsetof(seccomp_data, nr));
#if defined(__x86_64__)
  // x32 system calls carry bit 30 in the number under the x86-64 architecture tag.
  p.add(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
  p.ret(SECCOMP_RET_KILL_PROCESS);
#endif
  for (const long nr : kRefused) {
    p.add(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1);
    p.ret(kErrnoEperm);
  }
#ifdef __NR_clone3
  p.add(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1);
  p.ret(kErrnoEnosys);
#endif
  // clone(flags, ...): no new namespaces.
  p.add(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4);
  p.load(arg_low(0));
  p.add(BPF_JMP | BPF_JSET | BPF_K, kNamespaceFlags, 0, 1);
  p.ret(kErrnoEperm);
  p.ret(SECCOMP_RET_ALLOW);
  // mprotect(addr, len, prot) and pkey_mprotect(addr, len, prot, key): never to executable.
  for (const long nr : {static_cast<long>(__NR_mprotect), static_cast<long>(__NR_pkey_mprotect)}) {
    p.add(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 4);
    p.load(arg_low(2));
    p.add(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1);
    p.ret(kErrnoEperm);
    p.ret(SECCOMP_RET_ALLOW);
  }
  // mmap(addr, len, prot, ...): never writable and executable at once.
  p.add(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 5);
  p.load(arg_low(2));
  p.add(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC);
  p.add(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1);
  p.ret(kErrnoEperm);
  p.ret(SECCOMP_RET_ALLOW);
  p.ret(SECCOMP_RET_ALLOW);  // every other system call
}

void fail(const char* what) {
  // No stdio yet (this runs before any constructor): write(2) and _exit(2) only.
  const char* reason = std::strerror(errno);
  for (const char* part : {"course worker: cannot install its seccomp filter (", what, ": ", reason,
                           "); the worker refuses to run student code without it. Does this kernel or "
                           "container allow seccomp filters (Linux >= 4.14, CONFIG_SECCOMP_FILTER)?\n"}) {
    [[maybe_unused]] const ssize_t n = ::write(2, part, std::strlen(part));
  }
  ::_exit(126);
}

void install_worker_seccomp(int, char**, char**) {
  static Program program;
  build(program);
  if (program.size > kMaxInstructions) {
    errno = E2BIG;
    fail("the filter is longer than its buffer");
  }
  sock_fprog prog{program.size, program.code};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("PR_SET_NO_NEW_PRIVS");
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) fail("PR_SET_SECCOMP");
}

}  // namespace

// Runs before every constructor (see the top of this file). `used` keeps it through -O2 and
// --gc-sections; a .preinit_array entry is honoured only in the main executable, which the worker is.
__attribute__((section(".preinit_array"), used)) void (*const course_worker_seccomp_entry)(int, char**, char**) =
    install_worker_seccomp;
