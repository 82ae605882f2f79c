// `course_grader grade`: decides what to grade (exercises, solutions, one submission, a folder of
// submissions), prepares the build folder, builds and runs every lab of every submission, and
// writes the reports. Returns the process exit code (0 all passed, 1 a lab failed).
#pragma once

#include <cstdint>
#include <string>

#include "cli.hpp"

namespace course_grader {

/// Throws UsageError for a bad request (unknown lab, missing folder, no solutions/ in a handout)
/// and std::runtime_error when the grader itself cannot work (CMake fails to configure).
int run_grade(const GradeOptions& options);

/// A student's own seed in a `--submissions` batch, so that no two students of one run share
/// their random cases (a worker cannot leave answers for the next student): FNV-1a (64 bit) of
/// the text "<run seed>:<name>" (the run seed in decimal, the submission's name as the reports
/// show it), modulo 1,000,000,000. The same run seed and name always give the same seed; the
/// student's seed alone replays that student: COURSE_SEED=<student seed> with --submission DIR.
std::uint64_t student_seed(std::uint64_t run_seed, const std::string& name);

}  // namespace course_grader
