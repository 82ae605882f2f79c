// The grader's tests: test suites "unit", "isolation", "cli" and "gpu" (see CMakeLists.txt).
// The "gpu" suite needs a CUDA GPU: asked for without one, the program exits 77 (CTest: skipped).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "course/device.hpp"
#include "gpu_probe.hpp"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "-ts=gpu") {
      // Ask in a child process, as the grader does: CUDA initialised in this process would not
      // work in the children the tests fork.
      const course_grader::GpuProbe gpu = course_grader::probe_gpu();
      if (!gpu.available) {
        std::printf("SKIPPED: the grader's GPU tests need a CUDA GPU: %s\n", gpu.reason.c_str());
        return course::kSkipReturnCode;
      }
    }
  doctest::Context context(argc, argv);
  return context.run();
}
