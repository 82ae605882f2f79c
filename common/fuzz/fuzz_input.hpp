// Shared by the fuzz targets: the readers take a path, so each input is written to a scratch file
// first (in /dev/shm where it exists: a RAM file keeps tens of thousands of runs a second).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace course_fuzz {

// A scratch path unique to this process (libFuzzer's -jobs/-workers run several at once).
inline std::string scratch_path(const char* tag) {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  return std::string(dir) + "/course-fuzz-" + tag + "-" + std::to_string(getpid());
}

inline void write_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();  // the harness itself is broken, not the reader
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

// A failed invariant is a finding: abort so libFuzzer saves the input as a crash.
inline void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace course_fuzz
