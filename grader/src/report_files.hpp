// Machine-readable reports: Gradescope results.json, JUnit XML, gradebook CSV. Each is a pure
// function of the grade run, written to a file by the grade command.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "results.hpp"

namespace course_grader {

/// Gradescope's results.json for one submission: one Gradescope "test" per lab (a lab is worth
/// run.points_per_lab when it passes, nothing otherwise; a skipped GPU lab is worth 0 of 0 and says
/// why), per-test output, visibility, and leaderboard entries from the labs' speed metrics.
nlohmann::json gradescope_results(const SubmissionResult& submission, const GradeRun& run);

/// JUnit XML: one <testsuite> per submission and lab, one <testcase> per test case, plus one for
/// the lab program itself when it failed as a whole (did not build, crashed, timed out, ...).
std::string junit_xml(const GradeRun& run);

/// Gradebook: a header row, then one row per submission: name, points per lab ("skipped" for a
/// skipped GPU lab), total, maximum.
std::string gradebook_csv(const GradeRun& run);

/// Writes `text` to `path`, creating its folder; throws std::runtime_error on failure.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace course_grader
