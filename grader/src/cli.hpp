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
  std::string results_path;      ///< --results FILE: the complete record (results_record.hpp)
  std::vector<std::string> only; ///< --only NAME,...: grade these submissions of a --submissions batch
  std::string gpu_elsewhere;     ///< --gpu-elsewhere TEXT: GPU labs are not run here, they are TEXT
  double timeout_s = 60;
  std::size_t memory_mb = 2048;
  std::string source_dir, build_dir;
  std::string manifest_path;     ///< --manifest FILE (default <build>/labs/manifest.json)
  int jobs = 0;                  ///< build parallelism, 0 = number of cores
  int test_jobs = 0;             ///< --test-jobs: test programs at once, 0 = the cores, at most 8
  int points = 10;               ///< points per lab in results.json and the gradebook
  bool no_build = false;         ///< use the lab programs as they are
  bool build_only = false;       ///< build, do not run
  /// --compile-gpu-labs: on a machine without a GPU, compile the GPU labs anyway (they are still
  /// reported skipped). Without it such a run does not compile them: minutes of nvcc for a lab
  /// that cannot run here (--build-only always compiles them: it builds for a later run elsewhere).
  bool compile_gpu_labs = false;
  bool allow_degraded = false;   ///< --allow-degraded: grade --hidden even without worker isolation
  std::vector<std::string> labs; ///< as typed (lab01, 1, lab01_conv2d); empty = all
};

struct HandoutOptions {
  std::string destination;
  std::string source_dir;
};

/// `merge`: several --results records (a Slurm batch's tasks) into one set of reports.
struct MergeOptions {
  std::vector<std::string> inputs;  ///< the records to merge
  std::string results_path, json_path, junit_path, csv_path;
  std::string expect_path;          ///< --expect FILE: every student that must be there, one per line
};

struct Command {
  enum class Kind { help, grade, handout, merge } kind = Kind::help;
  GradeOptions grade;
  HandoutOptions handout;
  MergeOptions merge;
};

/// Parses the arguments after the program name. Throws UsageError.
Command parse_command_line(const std::vector<std::string>& args);

std::string help_text();

}  // namespace course_grader
