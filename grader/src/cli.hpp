// Command line of course_grader: `grade [...]`, `handout DEST`, `--help`. Parsing only; no side
// effects, so it is unit-tested directly.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace course_grader {

/// A mistake on the command line: main() prints it with a pointer to --help and exits with 2.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

enum class Mode { exercises, solutions, submission, submissions };

struct GradeOptions {
  Mode mode = Mode::exercises;
  std::string submission_path;   ///< --submission DIR / --submissions DIR
  std::string hidden_dir;        ///< --hidden DIR
  std::string json_path, junit_path, csv_path;
  double timeout_s = 60;
  std::size_t memory_mb = 2048;
  std::string source_dir, build_dir;
  std::string manifest_path;     ///< --manifest FILE (default <build>/labs/manifest.json)
  int jobs = 0;                  ///< build parallelism, 0 = number of cores
  int points = 10;               ///< points per lab in results.json and the gradebook
  bool no_build = false;         ///< use the lab programs as they are
  bool build_only = false;       ///< build, do not run
  bool allow_degraded = false;   ///< --allow-degraded: grade --hidden even without worker isolation
  std::vector<std::string> labs; ///< as typed (lab01, 1, lab01_conv2d); empty = all
};

struct HandoutOptions {
  std::string destination;
  std::string source_dir;
};

struct Command {
  enum class Kind { help, grade, handout } kind = Kind::help;
  GradeOptions grade;
  HandoutOptions handout;
};

/// Parses the arguments after the program name. Throws UsageError.
Command parse_command_line(const std::vector<std::string>& args);

std::string help_text();

}  // namespace course_grader
