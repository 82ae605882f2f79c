// libFuzzer target: course::read_idx on arbitrary bytes (raw IDX, or gzip when the bytes start
// with the gzip magic 1f 8b). The contract: every input either reads back consistently or throws
// course::Error; any other exception, a crash or a sanitizer report is a bug.
#include <cstdint>
#include <string>

#include "course/error.hpp"
#include "course/idx.hpp"
#include "fuzz_input.hpp"
#include "idx_invariants.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const course_fuzz::ScratchFile file("idx", data, size);
  try {
    course_fuzz::check_idx(course::read_idx(file.path()));
  } catch (const course::Error&) {
    // rejected with a message: exactly what a malformed file should get
  }
  return 0;
}
