// The report a person reads: one line per lab as it finishes (with a live "building..." /
// "running..." note on a terminal), the reason and first details under each failed lab, and at
// the end a summary that says what to do next -- which lab, which file, the first failure, and
// the command to grade it again. Colour only on a terminal, and never when NO_COLOR is set.
#pragma once

#include <cstdio>
#include <string>

#include "results.hpp"

namespace course_grader {

class TerminalReport {
 public:
  TerminalReport(std::FILE* out, bool colour, bool live);

  /// isatty(out) and NO_COLOR unset or empty (https://no-color.org).
  static bool wants_colour(std::FILE* out);
  static bool is_terminal(std::FILE* out);

  void begin(const std::string& title, const GradeRun& run, bool gpu_labs);
  void submission_started(const SubmissionResult& submission, bool many);
  /// On a terminal: a transient status line ("lab01_conv2d  building..."); otherwise nothing.
  void activity(const std::string& lab, const std::string& what);
  void lab_finished(const LabResult& lab);
  void finish(const GradeRun& run);

 private:
  std::string paint(const std::string& text, const char* code) const;
  std::string status_word(LabStatus status) const;
  void clear_activity();
  void next_step(const GradeRun& run, const SubmissionResult& submission);
  void gradebook_table(const GradeRun& run);

  std::FILE* out_;
  bool colour_, live_;
  bool activity_shown_ = false;
};

/// `path` relative to the current folder when it lies inside it (shorter to read), else as is.
std::string display_path(const std::string& path);

}  // namespace course_grader
