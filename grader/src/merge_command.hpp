// `course_grader merge`: the --results records of several grade runs (a Slurm class's tasks) into
// one record and one gradebook, JUnit file and Gradescope-style JSON, written by the same report
// writers as `grade`. Returns the exit code (0 written; problems throw, main() says them, exit 2).
#pragma once

#include "cli.hpp"
#include "results.hpp"

namespace course_grader {

int run_merge(const MergeOptions& options);

/// The merge itself (no files): throws std::runtime_error when the runs do not belong together
/// (different run seeds or points) or a student appears twice. `sources` name the runs in errors.
/// Every name in `expected` without results is added as not graded.
GradeRun merge_runs(const std::vector<GradeRun>& runs, const std::vector<std::string>& sources,
                    const std::vector<std::string>& expected);

}  // namespace course_grader
