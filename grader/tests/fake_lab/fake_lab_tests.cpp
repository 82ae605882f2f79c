// A lab program that misbehaves on request, for the grader's own tests. Linked with the real
// runner (grader/runner/lab_main.cpp) exactly like a lab, so the grader sees what it would see
// from a student's broken code.
//
// The behaviour comes from FAKE_LAB_BEHAVIOUR, or else from the name of the folder the program
// was started from (tests make .../<behaviour>/fake_cpu_lab links), so that one grader run can
// grade several differently broken "submissions". Test case "second" carries the misbehaviour.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "course/error.hpp"
#include "testkit.hpp"

void fake_cuda_illegal_address();  // fake_cuda_fault.cu

namespace {

std::string behaviour_from_program_path() {
  std::ifstream cmdline("/proc/self/cmdline");
  std::string argv0;
  std::getline(cmdline, argv0, '\0');
  const std::size_t slash = argv0.rfind('/');
  if (slash == std::string::npos || slash == 0) return "pass";
  const std::size_t before = argv0.rfind('/', slash - 1);
  return argv0.substr(before == std::string::npos ? 0 : before + 1, slash - (before == std::string::npos ? 0 : before + 1));
}

const std::string& behaviour() {
  static const std::string value = [] {
    const char* env = std::getenv("FAKE_LAB_BEHAVIOUR");
    return env != nullptr && *env != '\0' ? std::string(env) : behaviour_from_program_path();
  }();
  return value;
}

bool is(const char* name) { return behaviour() == name; }

// --- things student code could try before main() -----------------------------------------------
// Read the channel's key from the descriptor the grader uses, and the variable that names it.
std::string g_stolen_key = [] {
  char buffer[64] = {};
  const ssize_t n = ::read(3, buffer, sizeof buffer - 1);
  std::string stolen = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  if (std::getenv("COURSE_GRADER_CHANNEL") != nullptr) stolen += "(channel variable visible)";
  return stolen;
}();

const bool g_exit_early = [] {
  if (is("static_exit")) std::exit(0);
  return false;
}();

// A record in the channel's line format with a made-up tag, written to every descriptor that
// could be the channel.
void forge_records() {
  const std::string fake =
      "7 0123456789abcdef {\"type\":\"end\",\"exit_code\":0,\"cases_run\":3,\"cases_failed\":0}\n";
  for (int fd = 3; fd < 64; ++fd) {
    ssize_t ignored = ::write(fd, fake.data(), fake.size());
    (void)ignored;
  }
}

void misbehave() {
  const std::string& b = behaviour();
  if (b == "fail") CHECK_MESSAGE(1 + 1 == 3, "deliberate mismatch at index [0, 1, 2, 3]");
  if (b == "not_implemented") throw course::NotImplemented("fake::second_function");
  if (b == "segfault") {
    volatile int* volatile nowhere = nullptr;
    *nowhere = 1;
  }
  if (b == "abort") std::abort();
  if (b == "fpe") {
    volatile int zero = 0;
    volatile int result = 1 / zero;
    (void)result;
    ::raise(SIGFPE);  // in case the division was not trapped
  }
  if (b == "hang")
    for (volatile unsigned long i = 0;; i = i + 1) {
    }
  if (b == "huge_alloc") {
    std::vector<char> enormous(std::size_t{1} << 40);  // 1 TiB
    CHECK(enormous.size() > 0);
  }
  if (b == "memory_hog") {
    // Grows resident memory in 16 MiB steps (bounded at 1 GiB in case no limit stops it).
    std::vector<std::unique_ptr<char[]>> blocks;
    for (int i = 0; i < 64; ++i) {
      blocks.emplace_back(new char[16 << 20]);
      std::memset(blocks.back().get(), i, 16 << 20);
      ::usleep(5000);
    }
  }
  if (b == "exit0") std::exit(0);
  if (b == "exit77") std::exit(77);
  if (b == "fake_verdict") {
    std::printf("[doctest] Status: SUCCESS!\nPASSED\nALL TESTS PASSED\n");
    std::printf("{\"score\": 100, \"max_score\": 100, \"tests\": []}\n");
    std::ofstream("results.json") << "{\"score\": 100, \"max_score\": 100}";
    std::ofstream("/tmp/course-fake-lab-results.json") << "{\"score\": 100}";
    CHECK_MESSAGE(false, "the real result");
  }
  if (b == "forge") forge_records();
  if (b == "close_channel")
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
  if (b == "big_file") {
    std::ofstream out("big.bin", std::ios::binary);
    const std::vector<char> block(1 << 20, 'x');
    for (int i = 0; i < 100; ++i) out.write(block.data(), static_cast<std::streamsize>(block.size()));
  }
  if (b == "flood")
    for (int i = 0; i < 100000; ++i) std::printf("line %d of a very chatty lab program .........................\n", i);
  if (b == "escape_group" && ::fork() == 0) {
    // A grandchild that leaves the process group and keeps the output pipes open.
    ::setsid();
    ::sleep(4);
    ::_exit(0);
  }
  if (b == "change_exit_code") {
    CHECK_MESSAGE(false, "this case fails");
    std::atexit([] { ::_exit(0); });
  }
  if (b == "cuda_illegal_address") fake_cuda_illegal_address();
  if (b == "hidden") CHECK_MESSAGE(grader::hidden_cases("fake_cpu_lab").size() == 1, "expected one hidden case");
}

}  // namespace

TEST_CASE("fake: first") {
  CHECK_MESSAGE(g_stolen_key.empty(), "code before main() read the channel key: " << g_stolen_key);
  CHECK(2 + 2 == 4);
}

TEST_CASE("fake: second") {
  misbehave();
  CHECK(true);
}

TEST_CASE("fake: third") {
  if (is("metric")) MESSAGE("course-metric speedup_vs_reference 2.5");
  if (is("metric")) MESSAGE("course-note speed not judged: a note for the report");
  if (is("not_implemented")) throw course::NotImplemented("fake::third_function");
  CHECK(3 * 3 == 9);
}
