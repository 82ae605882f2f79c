// `course_grader handout DEST`: exports the course for students -- everything a clone has
// (git's tracked and not-ignored files, or a plain walk without git), minus solutions/, the
// planted faults (grader/planted/: solution files with one bug each, so solutions all the same)
// and any folder named hidden/ (instructors' hidden tests). The copy builds and grades as it is:
// grader/CMakeLists.txt builds only the exercises when solutions/ is absent.
#pragma once

#include <string>

#include "cli.hpp"

namespace course_grader {

/// True for a path (relative to the course root, '/'-separated) that must not reach students.
bool excluded_from_handout(const std::string& relative_path);

/// Returns the exit code; throws UsageError for a bad destination.
int run_handout(const HandoutOptions& options);

}  // namespace course_grader
