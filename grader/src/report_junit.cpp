#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "report_files.hpp"
#include "text_util.hpp"

namespace course_grader {

namespace {

std::string attr(const std::string& name, const std::string& value) { return " " + name + "=\"" + xml_escape(value) + "\""; }

std::string seconds(double s) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(3);
  out << s;
  return out.str();
}

void write_suite(std::ostringstream& xml, const SubmissionResult& sub, const LabResult& lab, bool hidden_cases,
                 const std::string& degraded) {
  const std::string classname = sub.name + "." + lab.lab;
  // A lab that failed as a whole (no build, crash, time-out, ...) gets a test case of its own, so
  // that CI shows the reason even when no individual case failed.
  const bool lab_error = lab.status == LabStatus::failed && !lab.failed_by_cases;
  const bool skipped = lab.status == LabStatus::skipped;
  int failures = 0;
  for (const auto& c : lab.cases) failures += c.passed ? 0 : 1;
  xml << "  <testsuite" << attr("name", classname) << attr("tests", std::to_string(lab.cases.size() + (lab_error || skipped)))
      << attr("failures", std::to_string(failures)) << attr("errors", lab_error ? "1" : "0")
      << attr("skipped", skipped ? "1" : "0") << attr("time", seconds(lab.seconds)) << ">\n";
  // A degraded sandbox is said in every suite, as a property and in its output.
  if (!degraded.empty())
    xml << "    <properties><property" << attr("name", "sandbox") << attr("value", degraded) << "/></properties>\n";
  for (const auto& c : lab.cases) {
    xml << "    <testcase" << attr("classname", classname) << attr("name", c.name) << attr("time", seconds(c.seconds));
    if (c.passed) {
      xml << "/>\n";
      continue;
    }
    std::string text = c.exception;
    for (const auto& m : c.messages) text += (text.empty() ? "" : "\n") + m;
    const std::string first_line = text.substr(0, text.find('\n'));
    xml << ">\n      <failure" << attr("message", first_line) << ">" << xml_escape(text) << "</failure>\n    </testcase>\n";
  }
  if (lab_error || skipped) {
    xml << "    <testcase" << attr("classname", classname) << attr("name", "(lab program)") << attr("time", "0") << ">\n";
    if (skipped) xml << "      <skipped" << attr("message", lab.reason) << "/>\n";
    else xml << "      <error" << attr("message", lab.reason) << ">" << xml_escape(lab.hint + "\n" + lab.details) << "</error>\n";
    xml << "    </testcase>\n";
  }
  // With hidden cases the program's output could print them: it is left out.
  if (!lab.output.empty() && !hidden_cases) xml << "    <system-out>" << xml_escape(lab.output) << "</system-out>\n";
  xml << "  </testsuite>\n";
}

}  // namespace

std::string junit_xml(const GradeRun& run) {
  std::ostringstream xml;
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites" << attr("name", "course_grader")
      << attr("time", seconds(run.seconds)) << ">\n";
  for (const auto& sub : run.submissions) {
    for (const auto& lab : sub.labs) write_suite(xml, sub, lab, run.hidden_cases, degraded_notice(run));
    if (!sub.not_graded.empty())  // a merged batch's student without results: an error, never a pass
      xml << "  <testsuite" << attr("name", sub.name) << attr("tests", "1") << attr("failures", "0")
          << attr("errors", "1") << attr("skipped", "0") << attr("time", "0") << ">\n    <testcase"
          << attr("classname", sub.name) << attr("name", "(not graded)") << attr("time", "0") << ">\n      <error"
          << attr("message", sub.not_graded) << "/>\n    </testcase>\n  </testsuite>\n";
  }
  xml << "</testsuites>\n";
  return xml.str();
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  std::error_code ignored;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ignored);
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace course_grader
