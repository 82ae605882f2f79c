#!/usr/bin/env python3
"""grader.build_guard: check_symbols.py on real objects compiled here.

    test_check_symbols.py CXX LIBCOURSE_COMMON

Each case is a small C++ file compiled with CXX into a one-object archive; the check must refuse
it naming the given texts, or (honest code) accept it. Exit code 0 when every case holds.
"""
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

HONEST = r'''
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <mutex>
#include <new>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>
void* operator new(std::size_t n) { if (void* p = std::malloc(n ? n : 1)) return p; throw std::bad_alloc(); }
void operator delete(void* p) noexcept { std::free(p); }
namespace lab01 {
namespace { __attribute__((constructor)) void plain_constructor() { std::srand(1); } }
float honest(std::vector<float>& v) {
  std::mutex m; std::condition_variable cv; std::atomic<int> done{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([&, i] { std::lock_guard<std::mutex> l(m); v[i] = std::exp(v[i]) + std::sqrt(v[i]) +
                                 std::tanh(v[i]) + std::pow(v[i], 2.5f) + std::erf(v[i]); done++; cv.notify_one(); });
  for (auto& t : ts) t.join();
  std::this_thread::sleep_for(std::chrono::microseconds(1));
  auto f = std::async(std::launch::async, [&] { return std::accumulate(v.begin(), v.end(), 0.0f); });
  std::mt19937 g(1); std::shuffle(v.begin(), v.end(), g);
  std::ostringstream os; os << v[0]; std::cerr << os.str() << std::endl; std::printf("%f\n", v[0]);
  std::ofstream dbg("debug.txt"); dbg << v[1];
  float copy[4]; std::memcpy(copy, v.data(), sizeof copy);
  if (v.empty()) throw std::runtime_error("empty");
  std::sort(v.begin(), v.end());
  return f.get() + copy[0] + static_cast<float>(std::thread::hardware_concurrency()) + std::fmax(v[0], 1.0f);
}
}  // namespace lab01
'''

# (name, source, texts every one of which the refusal must contain)
REFUSED = [
    ("dlopen", '#include <dlfcn.h>\nnamespace lab01 { void* f() { return dlsym(dlopen("libm.so.6", 0), "sqrtf"); } }',
     ["calls dlopen, which is not allowed", "calls dlsym, which is not allowed"]),
    ("mprotect", '#include <sys/mman.h>\nnamespace lab01 { int f(void* p) { return mprotect(p, 4096, 7); } }',
     ["calls mprotect"]),
    ("execve and ptrace", '#include <unistd.h>\n#include <sys/ptrace.h>\nnamespace lab01 { long f() { '
     'execl("/bin/sh", "sh", nullptr); return ptrace(PTRACE_ATTACH, 1, nullptr, nullptr); } }',
     ["calls execl", "calls ptrace"]),
    ("unknown libc function", '#include <unistd.h>\nnamespace lab01 { long f() { return getpid(); } }',
     ["calls getpid", "not on this lab's list"]),
    ("CUDA outside a GPU lab", 'extern "C" int cudaMalloc(void**, unsigned long);\n'
     'namespace lab01 { int f(void** p) { return cudaMalloc(p, 4); } }', ["calls cudaMalloc"]),
    ("weak read/write", 'extern "C" {\n__attribute__((weak)) long read(int, void*, unsigned long) { return 0; }\n'
     '__attribute__((weak)) long write(int, const void*, unsigned long n) { return (long)n; }\n}',
     ["read is a weak definition outside namespace lab01", "write is a weak definition outside namespace lab01"]),
    ("ifunc memcmp", 'extern "C" {\nstatic int eq(const void*, const void*, unsigned long) { return 0; }\n'
     'static void* pick() { return (void*)&eq; }\n'
     'int memcmp(const void*, const void*, unsigned long) __attribute__((ifunc("pick")));\n}',
     ["memcmp is an indirect function (ifunc)"]),
    ("alias", 'extern "C" {\nunsigned long mine(const char*) { return 0; }\n'
     'unsigned long strlen(const char*) __attribute__((weak, alias("mine")));\n}',
     ["strlen is a weak definition outside namespace lab01"]),
    ("weak grader function", 'namespace grader { __attribute__((weak)) unsigned long seed() { return 1; } }',
     ["grader::seed() is a weak definition"]),
    ("weak course function the library defines", '#include "course/tensor.hpp"\n'
     'namespace course { __attribute__((weak)) std::string shape_to_string(const Shape&) { return "[]"; } }',
     ["course::shape_to_string", "is a weak definition"]),
    ("symver", 'extern "C" void* old_copy(void*, const void*, unsigned long);\n'
     'asm(".symver old_copy, dlopen@GLIBC_2.2.5");\n'
     'namespace lab01 { void* f(void* d) { return old_copy(d, d, 0); } }',
     ["dlopen@GLIBC_2.2.5: a versioned symbol name (.symver) is not allowed"]),
    ("prioritised constructor", 'namespace lab01 { volatile int x; }\n'
     '__attribute__((constructor(101))) static void early() { lab01::x = 1; }', ["section .init_array.00101"]),
    ("preinit_array", 'static void early() {}\n'
     '__attribute__((section(".preinit_array"), used)) static void (*entry)() = early;', ["section .preinit_array"]),
    ("raw syscall", 'namespace lab01 { long f() { long r = 39; asm volatile("syscall" : "+a"(r) : : "rcx", "r11"); '
     'return r; } }', ["contains the instruction 'syscall'"]),
]


def check(cxx, common, include_dir, source, extra_args=()):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "case.cpp")
        with open(src, "w") as f:
            f.write(source)
        obj, lib = os.path.join(tmp, "case.o"), os.path.join(tmp, "libcase.a")
        subprocess.run([cxx, "-std=c++17", "-O2", "-fPIC", "-pthread", "-I", include_dir, "-c", src, "-o", obj], check=True)
        subprocess.run(["ar", "rcs", lib, obj], check=True)
        r = subprocess.run([sys.executable, os.path.join(HERE, "check_symbols.py"), "--namespace", "lab01",
                            *extra_args, "--trusted", common, lib], capture_output=True, text=True)
        return r.returncode, r.stderr


def main():
    cxx, common = sys.argv[1], sys.argv[2]
    include_dir = os.path.join(HERE, "..", "..", "common", "include")
    failures = 0
    rc, err = check(cxx, common, include_dir, HONEST)
    if rc != 0:
        print(f"FAIL: honest code (threads, async, streams, math, own operator new) was refused:\n{err}")
        failures += 1
    else:
        print("ok: honest code accepted")
    for name, source, texts in REFUSED:
        if name == "raw syscall" and platform.machine() != "x86_64":
            continue  # the case is written in x86-64 assembly
        rc, err = check(cxx, common, include_dir, source)
        missing = [t for t in texts if t not in err]
        if rc == 0 or missing:
            print(f"FAIL: {name}: exit code {rc}, missing {missing} in:\n{err}")
            failures += 1
        else:
            print(f"ok: {name} refused")
    # The same CUDA call is fine where the lab's CMake allows the CUDA runtime.
    rc, err = check(cxx, common, include_dir, REFUSED[4][1], ["--allow", "cuda"])
    if rc != 0:
        print(f"FAIL: cudaMalloc refused with --allow cuda:\n{err}")
        failures += 1
    else:
        print("ok: cudaMalloc accepted with --allow cuda")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
