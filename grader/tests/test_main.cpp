// The grader's tests: test suites "unit", "isolation", "cli" and "gpu" (see CMakeLists.txt).
// The "gpu" suite needs a CUDA GPU: asked for without one, the program exits 77 (CTest: skipped).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "course/device.hpp"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "-ts=gpu" && !course::has_gpu()) {
      std::printf("SKIPPED: the grader's GPU tests need a CUDA GPU: %s\n", course::gpu_unavailable_reason().c_str());
      return course::kSkipReturnCode;
    }
  doctest::Context context(argc, argv);
  return context.run();
}
