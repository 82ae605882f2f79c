#include "merge_command.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

#include "report_files.hpp"
#include "results_record.hpp"
#include "text_util.hpp"

namespace course_grader {

namespace {

GradeRun read_record_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  const nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
  if (record.is_discarded()) throw std::runtime_error(path + " is not valid JSON (a task killed while writing? re-grade it)");
  return read_results_record(record, path);
}

std::vector<std::string> read_names(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("--expect: cannot read " + path);
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (!line.empty() && line[0] != '#') names.push_back(line);
  }
  return names;
}

}  // namespace

GradeRun merge_runs(const std::vector<GradeRun>& runs, const std::vector<std::string>& sources,
                    const std::vector<std::string>& expected) {
  GradeRun merged;
  std::map<std::string, std::string> graded_in;  // student -> the record that graded them
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const GradeRun& run = runs[i];
    if (i == 0) {
      merged = run;
      merged.submissions.clear();
      merged.seconds = 0;
    } else if (run.seed != merged.seed) {
      throw std::runtime_error("run seeds differ: " + std::to_string(merged.seed) + " in " + sources[0] + ", " +
                               std::to_string(run.seed) + " in " + sources[i] + " (merge only the tasks of one batch)");
    } else if (run.points_per_lab != merged.points_per_lab) {
      throw std::runtime_error("points per lab differ between " + sources[0] + " and " + sources[i]);
    }
    merged.batch = merged.batch || run.batch;
    merged.has_gpu = merged.has_gpu || run.has_gpu;
    merged.hidden_cases = merged.hidden_cases || run.hidden_cases;
    if (run.sandbox_degraded && !merged.sandbox_degraded) {
      merged.sandbox_degraded = true;
      merged.sandbox_mode = run.sandbox_mode;
      merged.sandbox_description = run.sandbox_description;
    }
    if (!run.started_at.empty() && (merged.started_at.empty() || run.started_at < merged.started_at))
      merged.started_at = run.started_at;
    merged.seconds += run.seconds;  // machine time, summed over the tasks
    for (const auto& sub : run.submissions) {
      const auto [it, fresh] = graded_in.emplace(sub.name, sources[i]);
      if (!fresh)
        throw std::runtime_error("submission " + sub.name + " is in both " + it->second + " and " + sources[i] +
                                 " (keep one: re-submitted tasks overwrite their own results file)");
      merged.submissions.push_back(sub);
    }
  }
  for (const auto& name : expected)
    if (!graded_in.count(name)) {
      SubmissionResult missing;
      missing.name = name;
      missing.seed = merged.batch || runs.empty() ? 0 : merged.seed;
      missing.not_graded = "no results: the task that grades this submission did not finish (node failure, time "
                           "limit, preemption or cancelled); re-submit it";
      merged.submissions.push_back(missing);
    }
  std::sort(merged.submissions.begin(), merged.submissions.end(),
            [](const SubmissionResult& a, const SubmissionResult& b) { return a.name < b.name; });
  return merged;
}

int run_merge(const MergeOptions& o) {
  std::vector<GradeRun> runs;
  for (const auto& path : o.inputs) runs.push_back(read_record_file(path));
  const std::vector<std::string> expected = o.expect_path.empty() ? std::vector<std::string>{} : read_names(o.expect_path);
  const GradeRun merged = merge_runs(runs, o.inputs, expected);

  const auto dump = [](const nlohmann::json& doc) {
    return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  };
  if (!o.results_path.empty()) write_file_atomically(o.results_path, dump(results_record(merged)));
  if (!o.csv_path.empty()) write_text_file(o.csv_path, gradebook_csv(merged));
  if (!o.junit_path.empty()) write_text_file(o.junit_path, junit_xml(merged));
  if (!o.json_path.empty()) {
    nlohmann::json doc = {{"submissions", nlohmann::json::object()}};
    for (const auto& sub : merged.submissions) doc["submissions"][sub.name] = gradescope_results(sub, merged);
    write_text_file(o.json_path, dump(doc));
  }
  int not_graded = 0;
  for (const auto& sub : merged.submissions) not_graded += sub.not_graded.empty() ? 0 : 1;
  std::printf("merged %zu results file(s): %zu submission(s)", runs.size(), merged.submissions.size());
  if (not_graded > 0) std::printf(", %d NOT GRADED (no results: re-submit their tasks)", not_graded);
  std::printf("\n");
  return 0;
}

}  // namespace course_grader
