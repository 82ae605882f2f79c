#include <cctype>
#include <sstream>

#include "report_files.hpp"
#include "text_util.hpp"

namespace course_grader {

namespace {

std::string lab_output(const LabResult& lab, bool hidden_cases) {
  std::ostringstream out;
  if (lab.status == LabStatus::passed) out << "Passed: " << lab.cases_passed() << " of " << lab.cases.size() << " test cases.\n";
  else out << (lab.status == LabStatus::skipped ? "Skipped: " : "Failed: ") << lab.reason << "\n";
  if (!lab.hint.empty()) out << "Hint: " << lab.hint << "\n";
  if (!lab.details.empty()) out << "\n" << lab.details << "\n";
  if (!lab.cases.empty()) {
    out << "\nTest cases:\n";
    for (const auto& c : lab.cases) {
      out << (c.passed ? "  [pass] " : "  [FAIL] ") << c.name << "\n";
      if (!c.exception.empty()) out << "         " << c.exception << "\n";
      for (const auto& m : c.messages) out << "         " << m << "\n";
    }
  }
  for (const auto& m : lab.metrics) out << "Metric " << m.name << " = " << m.value << "\n";
  for (const std::string& note : lab.notes) out << "Note: " << note << "\n";
  if (lab.sandbox_degraded) out << "\nNote: " << lab.sandbox << "\n";
  // With hidden cases the program's output could print them: it is not shown.
  if (lab.status == LabStatus::failed && !lab.output.empty() && !hidden_cases)
    out << "\nOutput of the lab program (last part):\n" << last_part(lab.output, 6000);
  return clean_text(out.str());
}

// A gate's context (its minimum "..._required", the baseline's time "baseline_...") is not the
// student's achievement.
bool on_leaderboard(const std::string& metric) {
  const std::string suffix = "_required";
  const bool required = metric.size() >= suffix.size() && metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0;
  return !required && metric.rfind("baseline_", 0) != 0;
}

// Speed ratios: higher is better; times (names ending in _ms, _us, _s, seconds, time): lower is.
std::string leaderboard_order(const std::string& metric) {
  auto ends_with = [&](const std::string& suffix) {
    return metric.size() >= suffix.size() && metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (const char* suffix : {"_ms", "_us", "_s", "seconds", "time"})
    if (ends_with(suffix)) return "asc";
  return "desc";
}

}  // namespace

nlohmann::json gradescope_results(const SubmissionResult& submission, const GradeRun& run) {
  nlohmann::json tests = nlohmann::json::array();
  nlohmann::json leaderboard = nlohmann::json::array();
  int score = 0, max_score = 0, passed = 0, failed = 0, skipped = 0;
  std::string skip_reasons;  // "no CUDA driver ...", "no CUDA toolkit": each once
  for (std::size_t i = 0; i < submission.labs.size(); ++i) {
    const LabResult& lab = submission.labs[i];
    nlohmann::json test = {{"name", lab.lab},
                           {"number", std::to_string(i + 1)},
                           {"output", lab_output(lab, run.hidden_cases)},
                           {"visibility", "visible"}};
    if (lab.status == LabStatus::skipped) {
      ++skipped;
      test["name"] = lab.lab + " (skipped: " + lab.skipped_because + ")";
      const std::string why = lab.skipped_because == "no GPU" && !run.gpu_reason.empty() ? run.gpu_reason : lab.skipped_because;
      if (skip_reasons.find(why) == std::string::npos) skip_reasons += (skip_reasons.empty() ? "" : "; ") + why;
      test["score"] = 0;
      test["max_score"] = 0;
    } else {
      const int points = lab.status == LabStatus::passed ? run.points_per_lab : 0;
      test["score"] = points;
      test["max_score"] = run.points_per_lab;
      test["status"] = lab.status == LabStatus::passed ? "passed" : "failed";
      score += points;
      max_score += run.points_per_lab;
      (lab.status == LabStatus::passed ? passed : failed)++;
    }
    tests.push_back(test);
    if (lab.status == LabStatus::passed)
      for (const auto& m : lab.metrics)
        if (on_leaderboard(m.name))
          leaderboard.push_back({{"name", lab.lab.substr(0, lab.lab.find('_')) + " " + m.name},
                                 {"value", m.value},
                                 {"order", leaderboard_order(m.name)}});
  }
  std::ostringstream summary;
  if (run.sandbox_degraded) summary << degraded_notice(run) << "\n";
  if (!submission.not_graded.empty()) summary << "NOT GRADED: " << submission.not_graded << "\n";
  summary << passed << " of " << (passed + failed) << " labs passed";
  if (skipped > 0) summary << "; " << skipped << " GPU lab(s) skipped: " << skip_reasons;
  if (run.batch)
    summary << ". Seed " << submission.seed << " (this submission's own seed, derived from the run seed " << run.seed
            << " and its name; replay it alone with COURSE_SEED=" << submission.seed << " and --submission, or the whole "
            << "batch with COURSE_SEED=" << run.seed << ").";
  else
    summary << ". Seed " << run.seed << " (replay with COURSE_SEED=" << run.seed << ").";
  nlohmann::json results = {{"score", score},
                            {"max_score", max_score},
                            {"execution_time", static_cast<int>(run.seconds + 0.5)},
                            {"output", summary.str()},
                            {"visibility", "visible"},
                            {"stdout_visibility", "visible"},
                            {"tests", tests}};
  if (!leaderboard.empty()) results["leaderboard"] = leaderboard;
  return results;
}

}  // namespace course_grader
