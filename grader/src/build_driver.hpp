// Drives CMake for the grader: configures build folders (one per submission or batch of
// submissions, each submission a COURSE_VARIANTS entry), builds one lab target at a time so that
// a compile error is attributed to that lab only, and pulls the first compiler errors out of the
// build log for the report.
#pragma once

#include <string>
#include <vector>

namespace course_grader {

struct CommandResult {
  int exit_code = -1;      ///< -1 when it could not run or was killed
  std::string output;      ///< stdout + stderr (head and tail if long)
  double seconds = 0;
  bool ok() const { return exit_code == 0; }
};

/// Runs a command (no sandbox limits, no result channel) in `working_dir` (empty = current),
/// keeping the first `head_bytes` of its output (and the last 64 KiB).
CommandResult run_command(const std::vector<std::string>& argv, const std::string& working_dir = "",
                          std::size_t head_bytes = 256 * 1024);

struct Submission {
  std::string name;    ///< variant name: [A-Za-z0-9_]+, unique within a batch
  std::string folder;  ///< absolute path of the folder holding labNN_*/
};

/// Reduces a folder name to [A-Za-z0-9_] (what a CMake target name and a variant allow).
std::string sanitize_name(const std::string& raw);

/// The folder that holds the lab folders: `folder` itself, or folder/exercises when a student
/// handed in a whole copy of the course.
std::string submission_root(const std::string& folder);

/// Every sub-folder of `folder` (sorted, dot-folders skipped) as a submission, names made unique.
std::vector<Submission> find_submissions(const std::string& folder);

/// "alice=/x/alice;bob=/x/bob" -- the COURSE_VARIANTS value. Throws std::invalid_argument for a
/// folder whose path CMake cannot carry in a list (contains ';' or '=').
std::string variants_value(const std::vector<Submission>& submissions);

/// A value from <build_dir>/CMakeCache.txt, or "" when absent.
std::string cache_value(const std::string& build_dir, const std::string& key);

/// Configures `build_dir` from `source_dir` with the given -D definitions when it is not
/// configured yet or when a definition differs from its cache. `like_build_dir`, if configured,
/// lends its generator, build type, compilers and CUDA architectures to a fresh folder.
CommandResult ensure_configured(const std::string& source_dir, const std::string& build_dir,
                                const std::vector<std::pair<std::string, std::string>>& definitions,
                                const std::string& like_build_dir = "");

/// cmake --build <build_dir> --target <target> --parallel <jobs>.
CommandResult build_target(const std::string& build_dir, const std::string& target, int jobs);

/// The first compiler/linker/CMake error of a build log and the lines after it (build-tool noise
/// removed), at most `max_lines` lines.
std::string first_errors(const std::string& log, std::size_t max_lines = 12);

/// What of a failed build's log a student may see: the diagnostics about files under one of
/// `own_dirs` (their submission, the course's public headers, the system's headers) with the
/// source lines and carets that follow them, the guard's own "course-guard:" messages and the
/// linker's. A diagnostic about any other file -- a hidden case, a golden reference, another
/// student's file that a hostile #include pulled in -- is dropped with every line after it that
/// quotes it; a last line counts what was dropped. Paths are compared after removing "..".
std::string own_files_only(const std::string& log, const std::vector<std::string>& own_dirs);

/// "conv2d.cpp:12:5" from the first compiler error about one of `own_dirs` (file name, line,
/// column: none of the message), "" when there is none. For official grading (--hidden), where
/// compiler output is never written to a report.
std::string first_error_location(const std::string& log, const std::vector<std::string>& own_dirs);

}  // namespace course_grader
