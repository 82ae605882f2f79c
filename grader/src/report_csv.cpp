#include <algorithm>
#include <vector>

#include "report_files.hpp"
#include "text_util.hpp"

namespace course_grader {

std::string gradebook_csv(const GradeRun& run) {
  // Columns: the union of the labs graded, in the order they were first seen.
  std::vector<std::string> labs;
  for (const auto& sub : run.submissions)
    for (const auto& lab : sub.labs)
      if (std::find(labs.begin(), labs.end(), lab.lab) == labs.end()) labs.push_back(lab.lab);

  // GPU labs with a speed gate: one more column each, the speed-up over the reference with its
  // 95% confidence interval ("1.02 [0.98-1.05]").
  std::vector<std::string> timed;
  for (const auto& sub : run.submissions)
    for (const auto& lab : sub.labs)
      if (lab_speedup(lab).has_value() && std::find(timed.begin(), timed.end(), lab.lab) == timed.end())
        timed.push_back(lab.lab);

  std::string csv = "submission";
  for (const auto& lab : labs) csv += "," + csv_field(lab);
  for (const auto& lab : timed) csv += "," + csv_field(lab + " speedup");
  // A speed-up is a ratio against the reference timed on the same GPU in the same run: fair on
  // any GPU, but the GPU is part of the record (a Slurm partition may mix models).
  if (!timed.empty()) csv += ",gpu";
  csv += ",total,max_total";
  // A degraded run says so in every row of the gradebook (a column only such runs have).
  csv += run.sandbox_degraded ? ",sandbox\n" : "\n";
  for (const auto& sub : run.submissions) {
    csv += csv_field(sub.name);
    if (!sub.not_graded.empty()) {
      // No results (a Slurm task that never finished): never a 0 that looks like a grade.
      for (std::size_t i = 0; i < labs.size(); ++i) csv += ",NOT GRADED";
      for (std::size_t i = 0; i < timed.size(); ++i) csv += ",";
      csv += timed.empty() ? ",," : ",,,";
      csv += run.sandbox_degraded ? ",\n" : "\n";
      continue;
    }
    int total = 0, max_total = 0;
    for (const auto& name : labs) {
      const LabResult* found = nullptr;
      for (const auto& lab : sub.labs)
        if (lab.lab == name) found = &lab;
      std::string cell;
      if (found == nullptr) {
        cell = "";
      } else if (found->status == LabStatus::skipped) {
        cell = "skipped";
      } else {
        const int points = found->status == LabStatus::passed ? run.points_per_lab : 0;
        total += points;
        max_total += run.points_per_lab;
        cell = std::to_string(points);
      }
      csv += "," + csv_field(cell);
    }
    for (const auto& name : timed) {
      std::string cell;
      for (const auto& lab : sub.labs)
        if (lab.lab == name && lab_speedup(lab)) cell = format_speedup(*lab_speedup(lab), false);
      csv += "," + csv_field(cell);
    }
    if (!timed.empty()) csv += "," + csv_field(sub.gpu);
    csv += "," + std::to_string(total) + "," + std::to_string(max_total);
    csv += run.sandbox_degraded ? "," + csv_field("DEGRADED (sandbox " + run.sandbox_mode + ")") + "\n" : "\n";
  }
  return csv;
}

}  // namespace course_grader
