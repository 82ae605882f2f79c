// course_grader: entry point. Parses the command line and runs `grade`, `handout` or `merge`
// (course_grader --help explains both). Exit codes: 0 all graded labs passed, 1 a lab failed,
// 2 usage error or the grader could not run.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli.hpp"
#include "grade_command.hpp"
#include "handout.hpp"
#include "merge_command.hpp"

int main(int argc, char** argv) {
  using namespace course_grader;
  try {
    const Command command = parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
    switch (command.kind) {
      case Command::Kind::help:
        std::fputs(help_text().c_str(), stdout);
        return 0;
      case Command::Kind::grade: return run_grade(command.grade);
      case Command::Kind::handout: return run_handout(command.handout);
      case Command::Kind::merge: return run_merge(command.merge);
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "course_grader: %s\n(course_grader --help explains the options)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "course_grader: error: %s\n", e.what());
    return 2;
  }
  return 2;
}
