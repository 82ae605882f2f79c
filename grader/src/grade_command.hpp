// `course_grader grade`: decides what to grade (exercises, solutions, one submission, a folder of
// submissions), prepares the build folder, builds and runs every lab of every submission, and
// writes the reports. Returns the process exit code (0 all passed, 1 a lab failed).
#pragma once

#include "cli.hpp"

namespace course_grader {

/// Throws UsageError for a bad request (unknown lab, missing folder, no solutions/ in a handout)
/// and std::runtime_error when the grader itself cannot work (CMake fails to configure).
int run_grade(const GradeOptions& options);

}  // namespace course_grader
