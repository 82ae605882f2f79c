#include "grade_command.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>
#include <random>
#include <sstream>
#include <stdexcept>

#include "build_driver.hpp"
#include "gpu_probe.hpp"
#include "lab_runner.hpp"
#include "lab_schedule.hpp"
#include "manifest.hpp"
#include "report_files.hpp"
#include "report_terminal.hpp"
#include "results_record.hpp"
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
  // --only: grade some students of the batch. The build folder's variants stay the whole batch's
  // (set above), so every Slurm task of a class shares one build that nobody reconfigures.
  if (!o.only.empty()) {
    std::vector<Submission> chosen;
    std::string unknown;
    for (const auto& name : o.only) {
      const auto it = std::find_if(plan.submissions.begin(), plan.submissions.end(),
                                   [&](const Submission& s) { return s.name == name; });
      if (it == plan.submissions.end()) unknown += (unknown.empty() ? "" : ", ") + name;
      else if (std::none_of(chosen.begin(), chosen.end(), [&](const Submission& s) { return s.name == name; }))
        chosen.push_back(*it);
    }
    if (!unknown.empty())
      throw UsageError("--only: no submission named " + unknown + " in " + o.submission_path +
                       " (names are the folder names with every character but A-Z a-z 0-9 _ made _)");
    plan.submissions = chosen;
    plan.title = "Grading " + std::to_string(chosen.size()) + " of the submissions in " +
                 display_path(absolute(o.submission_path));
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

// A lab that did not compile, remembered in the build folder (next to where its test program
// would be): `--build-only` writes it, `--no-build` reports it.
std::string build_record_path(const Plan& plan, const Submission& sub, const ManifestLab& lab) {
  return plan.build_dir + "/labs/" + sub.name + "/" + lab.name + ".build.json";
}

void write_build_record(const std::string& path, const LabResult& failed) {
  const nlohmann::json record = {{"reason", failed.reason}, {"hint", failed.hint}, {"details", failed.details},
                                 {"build_seconds", failed.build_seconds}};
  write_file_atomically(path, record.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

bool read_build_record(const std::string& path, LabResult& result) {
  std::ifstream in(path);
  if (!in) return false;
  const nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
  if (!record.is_object()) {
    result.reason = "the record of this lab's build (" + path + ") is unreadable: build the batch again (--build-only)";
    return true;
  }
  result.reason = record.value("reason", "does not compile");
  result.hint = record.value("hint", "");
  result.details = record.value("details", "");
  result.build_seconds = record.value("build_seconds", 0.0);
  return true;
}

// A batch's --build-only: every student's labs in one parallel build first, carrying on past
// failures (make -k / ninja -k 0), so that a class of hundreds is not built one lab at a time;
// the per-lab builds after it then only record each lab's outcome (and its compiler messages).
void build_batch_at_once(const GradeOptions& o, const Plan& plan, const Manifest& manifest,
                         const std::vector<std::string>& labs) {
  std::vector<std::string> argv = {"cmake", "--build", plan.build_dir, "--parallel",
                                   std::to_string(o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency()))};
  std::size_t targets = 0;
  for (const auto& sub : plan.submissions)
    for (const auto& name : labs) {
      const ManifestLab& lab = find_lab(manifest, name);
      const auto program = lab.programs.find(sub.name);
      if (!lab.not_built_reason.empty() || program == lab.programs.end() || !program->second.missing.empty()) continue;
      if (lab.device == "gpu" && !o.gpu_elsewhere.empty()) continue;
      argv.insert(argv.end(), {"--target", program->second.target});
      ++targets;
    }
  if (targets < 2) return;
  const bool ninja = cache_value(plan.build_dir, "CMAKE_GENERATOR").find("Ninja") != std::string::npos;
  argv.push_back("--");
  argv.push_back("-k");
  if (ninja) argv.push_back("0");
  std::printf("building %zu lab programs at once (-j%s)...\n", targets, argv[4].c_str());
  std::fflush(stdout);
  run_command(argv);  // its failures are found, and reported, lab by lab below
}

// Everything of one lab up to running it: the verdict when there is nothing to run (skipped, does
// not compile, built only), else what is known so far, with `run_program` set to the test program
// that the lab schedule (lab_schedule.hpp) then runs.
LabResult grade_one(const GradeOptions& o, const Plan& plan, const ManifestLab& lab, const Submission& sub,
                    const LabRunSettings& settings, TerminalReport& terminal, std::string& run_program) {
  run_program.clear();
  LabResult result;
  result.lab = lab.name;
  result.device = lab.device;
  for (const auto& file : lab.student_sources) result.student_files.push_back(sub.folder + "/" + lab.name + "/" + file);

  // Graded elsewhere comes first: whether this build has the CUDA toolkit does not matter then
  // (Gradescope's image without one must still say where the GPU labs are graded).
  if (lab.device == "gpu" && !o.gpu_elsewhere.empty()) {
    result.status = LabStatus::skipped;
    result.reason = "this lab needs an NVIDIA GPU, which this grader does not have: it is " + o.gpu_elsewhere;
    result.skipped_because = o.gpu_elsewhere;
    return result;
  }
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
  // A GPU lab on a machine without a GPU is skipped whatever happens; compiling it first would only
  // cost minutes of nvcc before that verdict (most of a student's first `./course grade` on a
  // laptop). So it is not compiled unless asked (--compile-gpu-labs: "does my CUDA compile?"), or
  // unless this run only builds (--build-only: the programs are run later, maybe on a GPU node).
  // Skipped, never passed, exactly as when its test program finds no GPU.
  if (lab.device == "gpu" && !settings.has_gpu && !o.no_build && !o.build_only && !o.compile_gpu_labs) {
    result.status = LabStatus::skipped;
    result.reason = "needs a CUDA GPU (" + settings.gpu_reason + "); not compiled here (--compile-gpu-labs compiles it)";
    result.hint = "run it on a machine with an NVIDIA GPU; add --compile-gpu-labs to check here that it compiles";
    return result;
  }
  const std::string record = build_record_path(plan, sub, lab);
  if (o.no_build) {
    // A build that failed earlier (`--build-only`, e.g. a Slurm class's build job) is reported as it
    // was, never by running a test program an older, successful build left behind.
    if (read_build_record(record, result)) return result;
  } else {
    terminal.activity(lab.name, "building");
    const CommandResult built = build_target(plan.build_dir, program->second.target, o.jobs);
    result.build_seconds = built.seconds;
    std::error_code ignored;
    fs::remove(record, ignored);
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
      write_build_record(record, result);
      return result;
    }
  }
  // A GPU lab's speed gate needs the reference solution's worker of the main build (a failure
  // here is reported by the gate itself: "speed not judged"). Also when grading exercises/ in the
  // main build: `./course grade lab07` on a fresh clone builds only what it grades.
  if (!o.no_build && lab.device == "gpu" && sub.name != "solutions" &&
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
  run_program = program->second.path;
  return result;
}

// Test programs at once: --test-jobs, else the cores, at most 16 (the GPU programs among them are
// limited apart, gpu_jobs_for; the rest are CPU labs and listings).
std::size_t test_jobs(const GradeOptions& o) {
  if (o.test_jobs > 0) return static_cast<std::size_t>(o.test_jobs);
  return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
}

// A whole number from 1 to 64 from the variable `name`, else `otherwise`.
std::size_t parts_from_env(const char* name, std::size_t otherwise) {
  if (const char* env = std::getenv(name); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const unsigned long value = std::strtoul(env, &end, 10);
    if (*end == '\0' && value >= 1 && value <= 64) return value;
    throw UsageError(std::string(name) + "='" + env + "' is not a whole number from 1 to 64");
  }
  return otherwise;
}

// The order in which a submission's labs are built and started: with a GPU, the GPU labs first,
// the last (the longest: lab 08's cases and racecheck are the shared phase's longest chain) first,
// then the CPU labs, so that the longest chains start while the short labs fill the other cores.
// Without a GPU, the course order. Indices into `labs`; reports keep the course order.
std::vector<std::size_t> start_order(const Manifest& manifest, const std::vector<std::string>& labs, bool has_gpu) {
  std::vector<std::size_t> order, cpu;
  for (std::size_t i = labs.size(); i-- > 0;)
    (has_gpu && find_lab(manifest, labs[i]).device == "gpu" ? order : cpu).push_back(i);
  order.insert(order.end(), cpu.rbegin(), cpu.rend());
  return order;
}

void write_reports(const GradeOptions& o, const GradeRun& run) {
  if (!o.results_path.empty())
    write_file_atomically(o.results_path,
                          results_record(run).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
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

// `./course grade` keeps the student's own optimization log: one line per GPU lab that measured
// its speed, read by `./course progress` (grader/progress/progress.py).
void append_progress(const GradeOptions& o, const GradeRun& run) {
  const char* env = std::getenv("COURSE_PROGRESS_FILE");
  const std::string path = env != nullptr && *env != '\0' ? env : absolute(o.build_dir) + "/progress/history.jsonl";
  std::string lines;
  for (const auto& sub : run.submissions)
    for (const auto& lab : sub.labs) {
      const auto speed = lab_speedup(lab);
      if (!speed) continue;
      nlohmann::json line = {{"time", run.started_at}, {"lab", lab.lab}, {"status", to_string(lab.status)},
                             {"speedup", speed->point}, {"ci_low", speed->low}, {"ci_high", speed->high},
                             {"required", speed->required}, {"gpu", sub.gpu}, {"files_hash", lab.files_hash},
                             {"seed", sub.seed}};
      for (const auto& m : lab.metrics) {
        if (m.name == "pipeline_ms") line["pipeline_ms"] = m.value;
        if (m.name == "baseline_reference_ms") line["reference_ms"] = m.value;
        if (m.name == "speedup_vs_naive") line["speedup_vs_naive"] = m.value;
        if (m.name == "speedup_vs_naive_required") line["speedup_vs_naive_required"] = m.value;
      }
      lines += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
  if (lines.empty()) return;
  std::error_code ignored;
  fs::create_directories(fs::path(path).parent_path(), ignored);
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << lines;
  if (!out) std::fprintf(stderr, "course_grader: note: could not add this run to %s\n", path.c_str());
}

// Where this process grades: the Slurm merge puts students graded on many nodes into one report.
void describe_machine(SubmissionResult& result, const GradeRun& run, const std::string& gpu_name) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) result.host = host;
  result.gpu = run.has_gpu ? gpu_name : "";
  result.gpu_reason = run.has_gpu ? "" : run.gpu_reason;
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value == nullptr ? "" : value;
  };
  if (!env("SLURM_ARRAY_JOB_ID").empty()) result.slurm_job = env("SLURM_ARRAY_JOB_ID") + "_" + env("SLURM_ARRAY_TASK_ID");
  else result.slurm_job = env("SLURM_JOB_ID");
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
  run.started_at = utc_now();
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
  if (o.build_only && !o.no_build && plan.submissions.size() > 1) build_batch_at_once(o, plan, manifest, labs);
  bool any_failed = false;
  // Programs a lab's untimed cases are cut into, and each of its sanitizer passes. Sanitizer passes
  // in 4, not 8: every part pays 1-2.5 s to start a program, a worker, compute-sanitizer and a
  // context, and the shared phase is bound by its GPU programs' total time (grader/README.md,
  // "The order of the runs": 47.0 against 51.7 and 52.3 s on one H100, side by side).
  const std::size_t parts = parts_from_env("COURSE_GRADE_PARTS", 4);
  const std::size_t sanitizer_parts = parts_from_env("COURSE_GRADE_SANITIZER_PARTS", 4);
  const char* timing_env = std::getenv("COURSE_GRADE_TIMING");
  const bool timing = timing_env != nullptr && std::string(timing_env) == "1";
  for (const auto& sub : plan.submissions) {
    SubmissionResult result;
    result.name = sub.name;
    result.folder = sub.folder;
    describe_machine(result, run, gpu.name);
    // In a batch each student gets a seed of their own (student_seed): one student's worker
    // cannot leave answers behind for the next one's random cases.
    result.seed = run.batch ? student_seed(run.seed, sub.name) : run.seed;
    settings.seed = result.seed;
    terminal.submission_started(result, run.batch || plan.submissions.size() > 1);
    // One submission at a time: whatever runs at once below is this student's own labs.
    const std::size_t jobs = test_jobs(o);
    LabSchedule schedule(settings, jobs, gpu_jobs_for(gpu.memory_gib, jobs), parts, sanitizer_parts);
    std::vector<LabSchedule::Span> builds;
    auto report = [&](std::vector<LabResult> finished) {  // in lab order, as soon as known
      for (LabResult& lab : finished) {
        make_inert(lab);  // before any report (terminal, results.json, JUnit, CSV) sees it
        lab.infrastructure = infrastructure_problem(lab);
        lab.files_hash = files_hash(lab.student_files);
        terminal.lab_finished(lab);
        any_failed = any_failed || lab.status == LabStatus::failed;
        result.labs.push_back(std::move(lab));
      }
    };
    for (const std::size_t position : start_order(manifest, labs, settings.has_gpu)) {
      const ManifestLab& manifest_lab = find_lab(manifest, labs[position]);
      std::string program;
      const double built_from = schedule.now();
      LabResult lab = grade_one(o, plan, manifest_lab, sub, settings, terminal, program);
      builds.push_back({manifest_lab.name, "build", built_from, schedule.now()});
      if (program.empty()) schedule.add_result(position, std::move(lab));
      else schedule.add_run(position, manifest_lab, program, std::move(lab));
      report(schedule.take_finished());
    }
    schedule.finish([&](const std::string& lab, const std::string& what) { terminal.activity(lab, what); });
    report(schedule.take_finished());
    // COURSE_GRADE_TIMING=1: where the time went, on stderr (the reports stay as they are): every
    // build step and program, by start, then the phases.
    if (timing) {
      std::vector<LabSchedule::Span> spans = schedule.spans();
      spans.insert(spans.end(), builds.begin(), builds.end());
      std::stable_sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
      for (const auto& span : spans)
        std::fprintf(stderr, "course_grader: timing: %6.2f-%6.2f s %6.2f s  %s %s\n", span.start, span.end,
                     span.end - span.start, span.lab.c_str(), span.what.c_str());
      std::fprintf(stderr,
                   "course_grader: %s: builds + shared phase %.1f s, timed phase %.1f s (%zu test jobs, %zu of them "
                   "on the GPU; %zu parts, %zu per sanitizer pass)\n",
                   sub.name.c_str(), schedule.shared_seconds(), schedule.timed_seconds(), jobs,
                   gpu_jobs_for(gpu.memory_gib, jobs), parts, sanitizer_parts);
    }
    run.submissions.push_back(std::move(result));
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.build_only) {
    terminal.finish(run);
    write_reports(o, run);
    if (o.mode == Mode::exercises) append_progress(o, run);
  }
  return any_failed ? 1 : 0;
}

}  // namespace course_grader
