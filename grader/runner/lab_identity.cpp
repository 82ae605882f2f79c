// The per-lab constants of lab_identity.hpp, from the lab target's compile definitions
// (course_add_lab() in cmake/CourseLab.cmake, the fake labs in grader/tests/CMakeLists.txt).
#include "lab_identity.hpp"

#ifndef COURSE_SANITIZE_TESTS
#define COURSE_SANITIZE_TESTS "*"
#endif

namespace course_lab_identity {
const char* const kName = COURSE_LAB_NAME;
const bool kIsGpu = COURSE_LAB_DEVICE_IS_GPU != 0;
const char* const kSanitizeTests = COURSE_SANITIZE_TESTS;
}  // namespace course_lab_identity
