// The complete record of a grade run ("course-results/1"), the one file everything after grading
// reads: `course_grader merge` (a Slurm batch's tasks into one gradebook), the instructor's HTML
// report (grader/report/), and a re-grade's comparison. Unlike results.json (Gradescope's format,
// made for students), it keeps every field of GradeRun, so it can be read back.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results.hpp"

namespace course_grader {

inline constexpr const char* kResultsSchema = "course-results/1";

/// Serialises the run. With run.hidden_cases, no program output is kept (it could print them).
nlohmann::json results_record(const GradeRun& run);

/// Reads a record back; throws std::runtime_error naming `source` and the field when the document
/// is not a course-results/1 record.
GradeRun read_results_record(const nlohmann::json& record, const std::string& source);

/// The infrastructure problem a lab's grading hit, or "": a time-out, a degraded sandbox, a GPU
/// that was not ours alone during the speed gate, a worker killed by a signal outside its code.
std::string infrastructure_problem(const LabResult& lab);

/// FNV-1a-64 over the files' names and bytes, as 16 hex digits ("missing" for an unreadable file
/// counts too): which version of the student's code a result belongs to.
std::string files_hash(const std::vector<std::string>& files);

/// Writes `text` next to `path` and renames it into place, so a reader never sees half a file
/// (a Slurm task killed while writing leaves no results file rather than a broken one).
void write_file_atomically(const std::string& path, const std::string& text);

/// Now, UTC, "2026-11-25T03:10:00Z".
std::string utc_now();

}  // namespace course_grader
