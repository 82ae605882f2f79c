#include "report_terminal.hpp"
#include "text_util.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

namespace course_grader {

namespace {
const char* kGreen = "32";
const char* kRed = "31";
const char* kYellow = "33";
const char* kBold = "1";
const char* kDim = "2";

std::string fixed(double value, int digits = 1) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << value;
  return out.str();
}

std::string padded(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

std::string indent(const std::string& text, const std::string& prefix, std::size_t max_lines) {
  std::istringstream in(text);
  std::string out, line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    if (n++ == max_lines) {
      out += prefix + "...\n";
      break;
    }
    out += prefix + line + "\n";
  }
  return out;
}

std::string short_lab(const std::string& lab) { return lab.substr(0, lab.find('_')); }
}  // namespace

std::string display_path(const std::string& path) {
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  if (ec) return path;
  const auto relative = std::filesystem::path(path).lexically_relative(cwd);
  if (relative.empty() || relative.begin()->string() == "..") return path;
  return relative.string();
}

TerminalReport::TerminalReport(std::FILE* out, bool colour, bool live) : out_(out), colour_(colour), live_(live) {}

bool TerminalReport::is_terminal(std::FILE* out) { return ::isatty(::fileno(out)) == 1; }

bool TerminalReport::wants_colour(std::FILE* out) {
  const char* no_colour = std::getenv("NO_COLOR");
  return is_terminal(out) && (no_colour == nullptr || *no_colour == '\0');
}

std::string TerminalReport::paint(const std::string& text, const char* code) const {
  return colour_ ? "\033[" + std::string(code) + "m" + text + "\033[0m" : text;
}

std::string TerminalReport::status_word(LabStatus status) const {
  switch (status) {
    case LabStatus::passed: return paint("PASSED ", kGreen);
    case LabStatus::failed: return paint("FAILED ", kRed);
    case LabStatus::skipped: return paint("SKIPPED", kYellow);
  }
  return "?";
}

void TerminalReport::begin(const std::string& title, const GradeRun& run, bool gpu_labs) {
  std::fprintf(out_, "%s\n", paint(title, kBold).c_str());
  const std::string seed =
      run.batch ? "  run seed " + std::to_string(run.seed) + " (replay the batch with COURSE_SEED=" + std::to_string(run.seed) +
                      "; each submission has its own seed, shown with it)"
                : "  seed " + std::to_string(run.seed) + " (replay with COURSE_SEED=" + std::to_string(run.seed) + ")";
  std::fprintf(out_, "%s\n", paint(seed +
                                       (run.has_gpu || !gpu_labs ? "" : "; no GPU here: GPU labs will be skipped"),
                                   kDim)
                                 .c_str());
  if (run.sandbox_degraded) std::fprintf(out_, "%s\n", paint("  " + degraded_notice(run), kYellow).c_str());
  std::fflush(out_);
}

void TerminalReport::submission_started(const SubmissionResult& submission, bool many) {
  if (many)
    std::fprintf(out_, "%s  %s\n", paint(submission.name, kBold).c_str(),
                 paint(clean_text(submission.folder) + "  seed " + std::to_string(submission.seed) + " (alone: COURSE_SEED=" +
                           std::to_string(submission.seed) + " with --submission)",
                       kDim)
                     .c_str());
  std::fflush(out_);
}

void TerminalReport::clear_activity() {
  if (!activity_shown_) return;
  std::fprintf(out_, "\r\033[K");
  activity_shown_ = false;
}

void TerminalReport::activity(const std::string& lab, const std::string& what) {
  if (!live_) return;
  clear_activity();
  std::fprintf(out_, "  %s %s", padded(lab, 27).c_str(), paint(what + "...", kDim).c_str());
  activity_shown_ = true;
  std::fflush(out_);
}

void TerminalReport::lab_finished(const LabResult& lab) {
  clear_activity();
  std::string counts;
  if (!lab.cases.empty() || lab.cases_listed > 0)
    counts = std::to_string(lab.cases_passed()) + "/" + std::to_string(std::max<std::size_t>(lab.cases.size(),
                                                                                            static_cast<std::size_t>(lab.cases_listed))) + " tests";
  if (lab.built_only) {
    std::fprintf(out_, "  %s%s  %s\n", padded(lab.lab, 27).c_str(), paint("BUILT  ", kGreen).c_str(),
                 paint(fixed(lab.build_seconds) + " s", kDim).c_str());
    std::fflush(out_);
    return;
  }
  std::string line = "  " + padded(lab.lab, 27) + status_word(lab.status) + "  " + padded(counts, 14);
  if (lab.status == LabStatus::passed) line += paint(fixed(lab.seconds, 2) + " s", kDim);
  else line += lab.reason;
  if (const auto speed = lab_speedup(lab)) line += "   speed " + format_speedup(*speed) + " vs reference";
  std::fprintf(out_, "%s\n", line.c_str());
  if (lab.status == LabStatus::failed && !lab.failed_by_cases && !lab.details.empty())
    std::fprintf(out_, "%s", paint(indent(lab.details, "      ", 8), kDim).c_str());
  for (const std::string& note : lab.notes) std::fprintf(out_, "      %s\n", paint(note, kDim).c_str());
  // Never degrade silently: a lab whose student code ran without isolation says so.
  if (lab.sandbox_degraded && !lab.sandbox.empty())
    std::fprintf(out_, "      %s\n", paint("sandbox " + lab.sandbox, kYellow).c_str());
  std::fflush(out_);
}

void TerminalReport::next_step(const GradeRun& run, const SubmissionResult& submission) {
  const LabResult* next = nullptr;
  int passed = 0, failed = 0, skipped = 0;
  std::string skip_reasons;  // "no GPU", "no CUDA toolkit": each once
  for (const auto& lab : submission.labs) {
    if (lab.status == LabStatus::passed) ++passed;
    if (lab.status == LabStatus::skipped) {
      ++skipped;
      if (skip_reasons.find(lab.skipped_because) == std::string::npos)
        skip_reasons += (skip_reasons.empty() ? "" : ", ") + lab.skipped_because;
    }
    if (lab.status == LabStatus::failed) {
      ++failed;
      if (next == nullptr) next = &lab;
    }
  }
  std::string summary = std::to_string(passed) + " of " + std::to_string(passed + failed) + " labs passed";
  if (skipped > 0) summary += ", " + std::to_string(skipped) + " skipped (" + skip_reasons + ")";
  std::fprintf(out_, "\n%s  (%s s)\n", paint(summary, kBold).c_str(), fixed(run.seconds).c_str());
  if (next == nullptr) {
    if (failed == 0 && passed > 0) std::fprintf(out_, "%s\n", paint("Every graded lab passes.", kGreen).c_str());
    if (skip_reasons.find("no CUDA toolkit") != std::string::npos)
      std::fprintf(out_, "GPU labs need the CUDA toolkit (README.md, 'What you need') and a machine with an NVIDIA GPU.\n");
    else if (skipped > 0)
      std::fprintf(out_, "GPU labs need a machine with an NVIDIA GPU: run the same command there.\n");
    return;
  }
  std::fprintf(out_, "\n%s %s: %s\n", paint("Next:", kBold).c_str(), next->lab.c_str(), next->reason.c_str());
  for (const auto& file : next->student_files) std::fprintf(out_, "  edit   %s\n", clean_text(display_path(file)).c_str());
  if (!next->hint.empty()) std::fprintf(out_, "  hint   %s\n", next->hint.c_str());
  if (next->failed_by_cases && !next->details.empty())
    std::fprintf(out_, "  first failure:\n%s", indent(next->details, "    ", 10).c_str());
  if (!run.regrade_command.empty())
    std::fprintf(out_, "  then   %s %s\n", run.regrade_command.c_str(), short_lab(next->lab).c_str());
}

void TerminalReport::gradebook_table(const GradeRun& run) {
  std::vector<std::string> labs;
  for (const auto& sub : run.submissions)
    for (const auto& lab : sub.labs)
      if (std::find(labs.begin(), labs.end(), lab.lab) == labs.end()) labs.push_back(lab.lab);
  std::size_t width = 12;
  for (const auto& sub : run.submissions) width = std::max(width, sub.name.size() + 2);
  std::string header = padded("submission", width);
  for (const auto& lab : labs) header += padded(short_lab(lab), 8);
  std::fprintf(out_, "\n%s%s\n", paint(header, kBold).c_str(), paint("total", kBold).c_str());
  for (const auto& sub : run.submissions) {
    std::string row = padded(sub.name, width);
    int points = 0, max_points = 0;
    for (const auto& name : labs) {
      std::string cell = "-";
      for (const auto& lab : sub.labs) {
        if (lab.lab != name) continue;
        cell = lab.status == LabStatus::passed ? paint("pass    ", kGreen)
               : lab.status == LabStatus::failed ? paint("FAIL    ", kRed)
                                                 : paint("skip    ", kYellow);
        if (lab.status != LabStatus::skipped) max_points += run.points_per_lab;
        if (lab.status == LabStatus::passed) points += run.points_per_lab;
      }
      row += cell == "-" ? padded(cell, 8) : cell;
    }
    std::fprintf(out_, "%s%d/%d\n", row.c_str(), points, max_points);
  }
  std::fprintf(out_, "(%s s)\n", fixed(run.seconds).c_str());
}

void TerminalReport::finish(const GradeRun& run) {
  clear_activity();
  if (run.submissions.size() == 1) next_step(run, run.submissions.front());
  else gradebook_table(run);
  // Said again at the end, where a reader of a long report looks first.
  if (run.sandbox_degraded) std::fprintf(out_, "%s\n", paint(degraded_notice(run), kYellow).c_str());
  std::fflush(out_);
}

}  // namespace course_grader
