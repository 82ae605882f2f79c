// Shared by the fuzz targets: the readers take a path, so each input is written to a scratch file
// first (in /dev/shm where it exists: a file in RAM costs microseconds per run).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace course_fuzz {

// One input as a scratch file unique to this process (libFuzzer's -jobs/-workers run several at
// once), removed again after the run: libFuzzer ends with _Exit, so nothing may wait for exit.
class ScratchFile {
 public:
  ScratchFile(const char* tag, const std::uint8_t* data, std::size_t size) {
    const char* tmp = std::getenv("TMPDIR");
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (tmp != nullptr ? tmp : "/tmp");
    path_ = std::string(dir) + "/course-fuzz-" + tag + "-" + std::to_string(getpid());
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr) std::abort();  // the harness itself is broken, not the reader
    if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A failed invariant is a finding: abort so libFuzzer saves the input as a crash.
inline void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace course_fuzz
