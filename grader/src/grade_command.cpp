#include "grade_command.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <stdexcept>

#include "build_driver.hpp"
#include "gpu_probe.hpp"
#include "lab_runner.hpp"
#include "manifest.hpp"
#include "report_files.hpp"
#include "report_terminal.hpp"
#include "text_util.hpp"
#include "rpc/client.hpp"

namespace fs = std::filesystem;

namespace course_grader {

namespace {

// What this run grades and where it builds.
struct Plan {
  std::vector<Submission> submissions;
  std::string build_dir;
  std::vector<std::pair<std::string, std::string>> definitions;  // -D for the build folder
  std::string title;
  std::string regrade_command;
};

std::string absolute(const std::string& path) { return fs::absolute(path).lexically_normal().string(); }

std::string folder_name(const std::string& path) {
  fs::path p = fs::path(absolute(path));
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// CMake lists cannot hold ';' and its variant entries are split at '=': a submission folder whose
// path has either (or any control character) is copied to a plainly named folder of the build
// tree first, symbolic links kept as links so that the guarded build still refuses them.
void stage_awkward_folders(Plan& plan) {
  for (auto& sub : plan.submissions) {
    const bool awkward = std::any_of(sub.folder.begin(), sub.folder.end(), [](char c) {
      return c == ';' || c == '=' || static_cast<unsigned char>(c) < 0x20;
    });
    if (!awkward) continue;
    const fs::path staged = fs::path(plan.build_dir) / "staged" / sub.name;
    std::error_code ec;
    fs::remove_all(staged, ec);
    fs::create_directories(staged.parent_path());
    fs::copy(sub.folder, staged, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    if (ec) throw UsageError("cannot copy '" + sub.folder + "' to " + staged.string() + ": " + ec.message());
    sub.folder = staged.string();
  }
}

Plan make_plan(const GradeOptions& o) {
  Plan plan;
  const std::string source = absolute(o.source_dir);
  const std::string build = absolute(o.build_dir);
  switch (o.mode) {
    case Mode::exercises:
    case Mode::solutions: {
      const std::string variant = o.mode == Mode::exercises ? "exercises" : "solutions";
      if (!o.no_build && !fs::is_directory(source + "/" + variant))
        throw UsageError(source + " has no " + variant + "/ folder" +
                         (variant == "solutions" ? " (this is a student handout: it has no solutions)" : ""));
      plan.submissions.push_back({variant, source + "/" + variant});
      plan.build_dir = build;
      // A build configured before solutions/ existed (or by hand) may lack the variant: add it.
      const std::string current = cache_value(build, "COURSE_VARIANTS");
      if (!current.empty() && (";" + current).find(";" + variant + "=") == std::string::npos)
        plan.definitions.emplace_back("COURSE_VARIANTS", current + ";" + variant + "=" + source + "/" + variant);
      plan.title = "Grading " + variant + "/";
      plan.regrade_command = o.mode == Mode::exercises ? "./course grade" : "./course grade --solutions";
      break;
    }
    case Mode::submission: {
      if (!fs::is_directory(o.submission_path)) throw UsageError("--submission: no folder " + o.submission_path);
      const std::string name = sanitize_name(folder_name(o.submission_path));
      plan.submissions.push_back({name, submission_root(o.submission_path)});
      plan.build_dir = build + "/submissions/" + name;
      plan.title = "Grading submission " + display_path(absolute(o.submission_path));
      plan.regrade_command = "./course grade --submission " + display_path(absolute(o.submission_path));
      break;
    }
    case Mode::submissions: {
      if (!fs::is_directory(o.submission_path)) throw UsageError("--submissions: no folder " + o.submission_path);
      plan.submissions = find_submissions(o.submission_path);
      if (plan.submissions.empty()) throw UsageError("--submissions: " + o.submission_path + " has no sub-folders");
      plan.build_dir = build + "/submissions/batch_" + sanitize_name(folder_name(o.submission_path));
      plan.title = "Grading " + std::to_string(plan.submissions.size()) + " submissions in " +
                   display_path(absolute(o.submission_path));
      break;
    }
  }
  if (o.mode == Mode::submission || o.mode == Mode::submissions) {
    stage_awkward_folders(plan);
    try {
      plan.definitions.emplace_back("COURSE_VARIANTS", variants_value(plan.submissions));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  return plan;
}

std::uint64_t choose_seed() {
  if (const char* env = std::getenv("COURSE_SEED"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const unsigned long long value = std::strtoull(env, &end, 10);
    if (*end == '\0') return value;
    throw UsageError(std::string("COURSE_SEED='") + env + "' is not a non-negative integer");
  }
  std::random_device device;
  return ((std::uint64_t{device()} << 32) ^ device()) % 1000000000ull;  // short enough to retype
}

// Configures the build folder (if needed) and refreshes the manifest. Throws when CMake fails:
// that is a problem of the course or the machine, not of a submission.
void prepare_build(const GradeOptions& o, const Plan& plan) {
  const std::string source = absolute(o.source_dir);
  const CommandResult configured = ensure_configured(source, plan.build_dir, plan.definitions, absolute(o.build_dir));
  if (!configured.ok())
    throw std::runtime_error("configuring " + plan.build_dir + " failed:\n" + first_errors(configured.output, 30));
  const CommandResult refreshed = build_target(plan.build_dir, "course_lab_manifest", o.jobs);
  if (!refreshed.ok())
    throw std::runtime_error("updating the build in " + plan.build_dir + " failed:\n" + first_errors(refreshed.output, 30));
}

// ": conv2d.cpp:12:5: error: ..." from the first line of a compiler excerpt, for a one-line reason.
std::string short_error(const std::string& excerpt) {
  // The guard's own verdict when there is one (a refused symbol, file or #include), else the first
  // line that states an error (the excerpt may start with "In function ...").
  std::size_t at = excerpt.find("course-guard:");
  if (at == std::string::npos) at = excerpt.find("error");
  if (at == std::string::npos) {
    at = 0;
  } else {
    const std::size_t line_start = excerpt.rfind('\n', at);
    at = line_start == std::string::npos ? 0 : line_start + 1;  // the error may be on the first line
  }
  std::string line = excerpt.substr(at, excerpt.find('\n', at) - at);
  if (line.empty()) return "";
  const std::size_t colon = line.find(':');
  if (line[0] == '/' && colon != std::string::npos) line = display_path(line.substr(0, colon)) + line.substr(colon);
  if (line.size() > 160) line = line.substr(0, 157) + "...";
  return ": " + line;
}

LabResult grade_one(const GradeOptions& o, const Plan& plan, const ManifestLab& lab, const Submission& sub,
                    const LabRunSettings& settings, TerminalReport& terminal) {
  LabResult result;
  result.lab = lab.name;
  result.device = lab.device;
  for (const auto& file : lab.student_sources) result.student_files.push_back(sub.folder + "/" + lab.name + "/" + file);

  // A GPU lab in a build without the CUDA toolkit: skipped like a GPU lab without a GPU, never
  // passed and never the student's failure.
  if (!lab.not_built_reason.empty()) {
    result.status = LabStatus::skipped;
    result.reason = lab.not_built_reason;
    result.skipped_because = "no CUDA toolkit";
    result.hint = "install the CUDA toolkit (README.md, 'What you need'), re-run cmake, then grade it on a machine "
                  "with an NVIDIA GPU";
    return result;
  }
  const auto program = lab.programs.find(sub.name);
  if (program == lab.programs.end()) {
    result.reason = "this build has no program for " + sub.name + " (re-configure the build folder)";
    return result;
  }
  if (!program->second.missing.empty()) {
    std::string files;
    for (const auto& f : program->second.missing) files += (files.empty() ? "" : ", ") + f;
    result.reason = "not built: " + files + " missing";
    result.hint = "every file the lab's README names must be in " + display_path(sub.folder) +
                  " (start from the skeleton in exercises/)";
    return result;
  }
  if (!o.no_build) {
    terminal.activity(lab.name, "building");
    const CommandResult built = build_target(plan.build_dir, program->second.target, o.jobs);
    result.build_seconds = built.seconds;
    if (!built.ok()) {
      // What a failed build prints is the student's to see, and only about their own files
      // (own_files_only): a hostile #include of a hidden case or a golden reference must not
      // have the compiler quote it into a report. In official grading (--hidden) no compiler
      // output is written at all: the location of the first error and the guard's own messages.
      const std::vector<std::string> own = {sub.folder, absolute(o.source_dir) + "/common/include", "/usr/include",
                                            "/usr/lib/gcc", "/usr/local/cuda", "/opt/nvidia"};
      const std::string visible = own_files_only(built.output, own);
      if (o.hidden_dir.empty()) {
        result.details = first_errors(visible);
        result.reason = "does not compile" + short_error(result.details);
      } else {
        std::istringstream lines(visible);
        for (std::string line; std::getline(lines, line);)
          if (line.rfind("course-guard:", 0) == 0) result.details += line + "\n";
        const std::string where = first_error_location(built.output, own);
        result.reason = "does not compile" + (where.empty() ? short_error(result.details) : ": " + where) +
                        " (compiler messages are not shown in official grading: build the lab on your own "
                        "machine to read them)";
      }
      result.hint = "fix the first compiler error (the ones after it often follow from it)";
      return result;
    }
  }
  // A GPU lab's speed gate needs the reference solution's worker of the main build (a failure
  // here is reported by the gate itself: "speed not judged").
  if (!o.no_build && lab.device == "gpu" && fs::path(plan.build_dir) != fs::path(absolute(o.build_dir)) &&
      fs::exists(absolute(o.source_dir) + "/solutions/" + lab.name))
    build_target(absolute(o.build_dir), lab.name + "__solutions_worker", o.jobs);
  if (o.build_only) {
    result.status = LabStatus::passed;
    result.built_only = true;
    return result;
  }
  if (program->second.path.empty() || !fs::exists(program->second.path)) {
    result.reason = "the test program " + program->second.path + " does not exist (build it first)";
    return result;
  }
  terminal.activity(lab.name, "running");
  LabResult ran = run_lab(lab, program->second.path, settings);
  ran.student_files = result.student_files;
  ran.build_seconds = result.build_seconds;
  return ran;
}

void write_reports(const GradeOptions& o, const GradeRun& run) {
  if (!o.json_path.empty()) {
    nlohmann::json doc;
    if (run.submissions.size() == 1) {
      doc = gradescope_results(run.submissions.front(), run);
    } else {
      doc["submissions"] = nlohmann::json::object();
      for (const auto& sub : run.submissions) doc["submissions"][sub.name] = gradescope_results(sub, run);
    }
    write_text_file(o.json_path, doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  if (!o.junit_path.empty()) write_text_file(o.junit_path, junit_xml(run));
  if (!o.csv_path.empty()) write_text_file(o.csv_path, gradebook_csv(run));
}

}  // namespace

std::uint64_t student_seed(std::uint64_t run_seed, const std::string& name) {
  const std::string text = std::to_string(run_seed) + ":" + name;
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a offset basis
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;  // FNV prime
  }
  return hash % 1000000000ull;
}

int run_grade(const GradeOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const Plan plan = make_plan(o);
  if (!o.hidden_dir.empty() && !fs::is_directory(o.hidden_dir)) throw UsageError("--hidden: no folder " + o.hidden_dir);
  // The sandbox this machine gives the workers (the test programs inherit this environment, so
  // they choose the same). Decided before anything of the student's is built or run.
  const grader::rpc::SandboxInfo sandbox = grader::rpc::worker_sandbox();
  if (!o.hidden_dir.empty() && sandbox.degraded && !o.allow_degraded)
    throw UsageError(
        "--hidden refused: the worker sandbox here is '" + sandbox.mode + "' (" + sandbox.description +
        "). Student code would run as your own user, unisolated, and could read the hidden cases in " + o.hidden_dir +
        " (and change the reports). Do one of: run the grader as root (student code then runs as a dedicated "
        "unprivileged user), enable user namespaces (install bubblewrap, or sysctl kernel.unprivileged_userns_clone=1 "
        "/ user.max_user_namespaces > 0; in Docker, run with a seccomp profile that allows unshare), or pass "
        "--allow-degraded if you accept that students can read the hidden cases (every report then says DEGRADED).");
  if (!o.no_build) prepare_build(o, plan);
  const Manifest manifest = load_manifest(o.manifest_path.empty() ? plan.build_dir + "/labs/manifest.json" : o.manifest_path);
  std::vector<std::string> labs;
  try {
    labs = resolve_labs(manifest, o.labs);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (labs.empty()) throw UsageError("this build has no labs yet");

  GradeRun run;
  run.seed = choose_seed();
  run.batch = o.mode == Mode::submissions;
  run.sandbox_mode = sandbox.mode;
  run.sandbox_degraded = sandbox.degraded;
  run.sandbox_description = sandbox.description;
  run.points_per_lab = o.points;
  run.hidden_cases = !o.hidden_dir.empty();
  run.regrade_command = plan.regrade_command;
  const GpuProbe gpu = probe_gpu();
  run.has_gpu = gpu.available;
  run.gpu_reason = gpu.reason;
  LabRunSettings settings;
  settings.timeout_s = o.timeout_s;
  settings.memory_mb = o.memory_mb;
  settings.hidden_dir = o.hidden_dir.empty() ? "" : absolute(o.hidden_dir);
  settings.allow_degraded = o.allow_degraded;
  settings.seed = run.seed;
  settings.has_gpu = gpu.available;
  settings.gpu_reason = gpu.reason;
  settings.hide_from_worker = {absolute(o.source_dir), absolute(o.build_dir), plan.build_dir};
  // GPU labs compare the student's speed with the reference solution's worker, which lives in the
  // main build tree (a submission's own build folder has only the submission).
  settings.reference_worker_dir = absolute(o.build_dir) + "/labs/solutions";
  if (!settings.hidden_dir.empty()) settings.hide_from_worker.push_back(settings.hidden_dir);
  for (const auto& sub : plan.submissions) {
    settings.hide_from_worker.push_back(absolute(sub.folder));
    settings.hide_from_worker.push_back(fs::path(absolute(sub.folder)).parent_path().string());
  }

  TerminalReport terminal(stdout, TerminalReport::wants_colour(stdout), TerminalReport::is_terminal(stdout));
  bool gpu_labs = false;
  for (const auto& name : labs) gpu_labs = gpu_labs || find_lab(manifest, name).device == "gpu";
  terminal.begin(plan.title + " (" + std::to_string(labs.size()) + (labs.size() == 1 ? " lab)" : " labs)"), run, gpu_labs);
  bool any_failed = false;
  for (const auto& sub : plan.submissions) {
    SubmissionResult result{sub.name, sub.folder, {}};
    // In a batch each student gets a seed of their own (student_seed): one student's worker
    // cannot leave answers behind for the next one's random cases.
    result.seed = run.batch ? student_seed(run.seed, sub.name) : run.seed;
    settings.seed = result.seed;
    terminal.submission_started(result, run.batch || plan.submissions.size() > 1);
    for (const auto& name : labs) {
      LabResult lab = grade_one(o, plan, find_lab(manifest, name), sub, settings, terminal);
      make_inert(lab);  // before any report (terminal, results.json, JUnit, CSV) sees it
      terminal.lab_finished(lab);
      any_failed = any_failed || lab.status == LabStatus::failed;
      result.labs.push_back(std::move(lab));
    }
    run.submissions.push_back(std::move(result));
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.build_only) {
    terminal.finish(run);
    write_reports(o, run);
  }
  return any_failed ? 1 : 0;
}

}  // namespace course_grader
