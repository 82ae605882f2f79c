#include "results_record.hpp"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace fs = std::filesystem;

namespace course_grader {

namespace {

LabStatus status_from(const std::string& text, const std::string& where) {
  if (text == "passed") return LabStatus::passed;
  if (text == "failed") return LabStatus::failed;
  if (text == "skipped") return LabStatus::skipped;
  throw std::runtime_error(where + ": status '" + text + "' is not passed, failed or skipped");
}

nlohmann::json lab_record(const LabResult& lab, bool hidden_cases) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : lab.cases)
    cases.push_back({{"name", c.name}, {"passed", c.passed}, {"seconds", c.seconds}, {"messages", c.messages},
                     {"exception", c.exception}});
  nlohmann::json metrics = nlohmann::json::array();
  for (const auto& m : lab.metrics) metrics.push_back({{"name", m.name}, {"value", m.value}, {"test_case", m.test_case}});
  nlohmann::json out = {{"lab", lab.lab},
                        {"device", lab.device},
                        {"status", to_string(lab.status)},
                        {"reason", lab.reason},
                        {"skipped_because", lab.status == LabStatus::skipped ? lab.skipped_because : ""},
                        {"hint", lab.hint},
                        {"details", lab.details},
                        {"failed_by_cases", lab.failed_by_cases},
                        {"built_only", lab.built_only},
                        {"infrastructure", lab.infrastructure},
                        {"cases", cases},
                        {"cases_listed", lab.cases_listed},
                        {"metrics", metrics},
                        {"sandbox", lab.sandbox},
                        {"sandbox_degraded", lab.sandbox_degraded},
                        {"sanitizer", {{"tool", lab.sanitizer_tool},
                                       {"available", lab.sanitizer_available},
                                       {"clean", lab.sanitizer_clean},
                                       {"report", lab.sanitizer_report}}},
                        {"notes", lab.notes},
                        {"student_files", lab.student_files},
                        {"files_hash", lab.files_hash},
                        {"seconds", lab.seconds},
                        {"build_seconds", lab.build_seconds}};
  // The program's output may print the hidden cases: official grading keeps it out.
  out["output"] = hidden_cases ? "" : lab.output;
  if (const auto s = lab_speedup(lab))
    out["speedup"] = {{"point", s->point}, {"low", s->low}, {"high", s->high}, {"required", s->required}};
  return out;
}

template <typename T>
T field(const nlohmann::json& object, const char* key, const T& fallback, const std::string& where) {
  if (!object.is_object()) throw std::runtime_error(where + " is not a JSON object");
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(where + ": field '" + key + "' has the wrong type");
  }
}

const nlohmann::json& array_field(const nlohmann::json& object, const char* key, const std::string& where) {
  static const nlohmann::json empty = nlohmann::json::array();
  const auto it = object.find(key);
  if (it == object.end()) return empty;
  if (!it->is_array()) throw std::runtime_error(where + ": field '" + key + "' is not a list");
  return *it;
}

LabResult read_lab(const nlohmann::json& j, const std::string& where) {
  LabResult lab;
  lab.lab = field<std::string>(j, "lab", "", where);
  if (lab.lab.empty()) throw std::runtime_error(where + ": a lab without a name");
  const std::string at = where + " lab " + lab.lab;
  lab.device = field<std::string>(j, "device", "cpu", at);
  lab.status = status_from(field<std::string>(j, "status", "", at), at);
  lab.reason = field<std::string>(j, "reason", "", at);
  lab.skipped_because = field<std::string>(j, "skipped_because", lab.skipped_because, at);
  lab.hint = field<std::string>(j, "hint", "", at);
  lab.details = field<std::string>(j, "details", "", at);
  lab.failed_by_cases = field<bool>(j, "failed_by_cases", false, at);
  lab.built_only = field<bool>(j, "built_only", false, at);
  lab.infrastructure = field<std::string>(j, "infrastructure", "", at);
  for (const auto& c : array_field(j, "cases", at)) {
    CaseResult r;
    r.name = field<std::string>(c, "name", "", at);
    r.passed = field<bool>(c, "passed", false, at);
    r.seconds = field<double>(c, "seconds", 0, at);
    r.messages = field<std::vector<std::string>>(c, "messages", {}, at);
    r.exception = field<std::string>(c, "exception", "", at);
    lab.cases.push_back(std::move(r));
  }
  lab.cases_listed = field<int>(j, "cases_listed", 0, at);
  for (const auto& m : array_field(j, "metrics", at))
    lab.metrics.push_back({field<std::string>(m, "name", "", at), field<double>(m, "value", 0, at),
                           field<std::string>(m, "test_case", "", at)});
  lab.sandbox = field<std::string>(j, "sandbox", "", at);
  lab.sandbox_degraded = field<bool>(j, "sandbox_degraded", false, at);
  if (const auto s = j.find("sanitizer"); s != j.end() && s->is_object()) {
    lab.sanitizer_tool = field<std::string>(*s, "tool", "", at);
    lab.sanitizer_available = field<bool>(*s, "available", false, at);
    lab.sanitizer_clean = field<bool>(*s, "clean", false, at);
    lab.sanitizer_report = field<std::string>(*s, "report", "", at);
  }
  lab.notes = field<std::vector<std::string>>(j, "notes", {}, at);
  lab.output = field<std::string>(j, "output", "", at);
  lab.student_files = field<std::vector<std::string>>(j, "student_files", {}, at);
  lab.files_hash = field<std::string>(j, "files_hash", "", at);
  lab.seconds = field<double>(j, "seconds", 0, at);
  lab.build_seconds = field<double>(j, "build_seconds", 0, at);
  return lab;
}

}  // namespace

nlohmann::json results_record(const GradeRun& run) {
  nlohmann::json submissions = nlohmann::json::array();
  for (const auto& sub : run.submissions) {
    nlohmann::json labs = nlohmann::json::array();
    for (const auto& lab : sub.labs) labs.push_back(lab_record(lab, run.hidden_cases));
    submissions.push_back({{"name", sub.name},
                           {"folder", sub.folder},
                           {"seed", sub.seed},
                           {"host", sub.host},
                           {"gpu", sub.gpu},
                           {"gpu_reason", sub.gpu_reason},
                           {"slurm_job", sub.slurm_job},
                           {"not_graded", sub.not_graded},
                           {"labs", labs}});
  }
  return {{"schema", kResultsSchema},
          {"seed", run.seed},
          {"batch", run.batch},
          {"points_per_lab", run.points_per_lab},
          {"hidden_cases", run.hidden_cases},
          {"sandbox", {{"mode", run.sandbox_mode}, {"degraded", run.sandbox_degraded},
                       {"description", run.sandbox_description}}},
          {"has_gpu", run.has_gpu},
          {"gpu_reason", run.gpu_reason},
          {"started_at", run.started_at},
          {"seconds", run.seconds},
          {"submissions", submissions}};
}

GradeRun read_results_record(const nlohmann::json& record, const std::string& source) {
  if (!record.is_object() || record.value("schema", "") != kResultsSchema)
    throw std::runtime_error(source + " is not a grader results record (no \"schema\": \"" + kResultsSchema +
                             "\"; write one with course_grader grade --results FILE)");
  GradeRun run;
  run.seed = field<std::uint64_t>(record, "seed", 0, source);
  run.batch = field<bool>(record, "batch", false, source);
  run.points_per_lab = field<int>(record, "points_per_lab", 10, source);
  run.hidden_cases = field<bool>(record, "hidden_cases", false, source);
  if (const auto s = record.find("sandbox"); s != record.end()) {
    run.sandbox_mode = field<std::string>(*s, "mode", "", source);
    run.sandbox_degraded = field<bool>(*s, "degraded", false, source);
    run.sandbox_description = field<std::string>(*s, "description", "", source);
  }
  run.has_gpu = field<bool>(record, "has_gpu", false, source);
  run.gpu_reason = field<std::string>(record, "gpu_reason", "", source);
  run.started_at = field<std::string>(record, "started_at", "", source);
  run.seconds = field<double>(record, "seconds", 0, source);
  for (const auto& s : array_field(record, "submissions", source)) {
    SubmissionResult sub;
    sub.name = field<std::string>(s, "name", "", source);
    if (sub.name.empty()) throw std::runtime_error(source + ": a submission without a name");
    const std::string where = source + ": submission " + sub.name;
    sub.folder = field<std::string>(s, "folder", "", where);
    sub.seed = field<std::uint64_t>(s, "seed", 0, where);
    sub.host = field<std::string>(s, "host", "", where);
    sub.gpu = field<std::string>(s, "gpu", "", where);
    sub.gpu_reason = field<std::string>(s, "gpu_reason", "", where);
    sub.slurm_job = field<std::string>(s, "slurm_job", "", where);
    sub.not_graded = field<std::string>(s, "not_graded", "", where);
    for (const auto& lab : array_field(s, "labs", where)) sub.labs.push_back(read_lab(lab, where));
    run.submissions.push_back(std::move(sub));
  }
  return run;
}

std::string infrastructure_problem(const LabResult& lab) {
  if (lab.sandbox_degraded) return "degraded sandbox";
  if (lab.reason.rfind("timed out after", 0) == 0) return "timeout";
  if (lab.reason.rfind("was killed (SIGKILL)", 0) == 0) return "killed";
  if (lab.reason.rfind("the lab program could not be started", 0) == 0) return "could not start";
  // The speed gate's calibration: the reference ran slower after the student's block than before.
  for (const auto& c : lab.cases)
    for (const auto& m : c.messages)
      if (m.find("the GPU was not ours") != std::string::npos) return "GPU interference";
  return "";
}

std::string files_hash(const std::vector<std::string>& files) {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a-64
  auto add = [&](const std::string& bytes) {
    for (const char c : bytes) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ull;
    }
  };
  for (const auto& file : files) {
    add(fs::path(file).filename().string());
    add(std::string(1, '\0'));
    std::ifstream in(file, std::ios::binary);
    add(in ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string("missing"));
    add(std::string(1, '\0'));
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const fs::path target(path);
  std::error_code ignored;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ignored);
  const std::string temporary = path + ".partial." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary);
    out << text;
    out.flush();
    if (!out) {
      fs::remove(temporary, ignored);
      throw std::runtime_error("cannot write " + temporary);
    }
  }
  fs::rename(temporary, target);  // throws filesystem_error naming both paths
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace course_grader
