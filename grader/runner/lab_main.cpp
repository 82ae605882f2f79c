// main() of every lab's test program. Prints the seed before anything else so any failure can
// be replayed with COURSE_SEED=<seed>, and reports GPU labs as skipped (exit 77) without a GPU.
// The grader (grader/src) runs this program in an isolated child process and decides the verdict.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "course/device.hpp"
#include "testkit.hpp"

int main(int argc, char** argv) {
  std::printf("%s: seed %llu (replay with COURSE_SEED=%llu)\n", COURSE_LAB_NAME,
              static_cast<unsigned long long>(grader::seed()), static_cast<unsigned long long>(grader::seed()));
  std::fflush(stdout);
  if (COURSE_LAB_DEVICE_IS_GPU && !course::has_gpu()) {
    std::printf("SKIPPED: %s needs a CUDA GPU: %s\n", COURSE_LAB_NAME, course::gpu_unavailable_reason().c_str());
    return course::kSkipReturnCode;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
