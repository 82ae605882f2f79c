#include "lab_runner.hpp"

#include <algorithm>
#include <vector>

#include "verdict.hpp"

namespace course_grader {

SandboxLimits limits_for(const std::string& device, const LabRunSettings& settings) {
  SandboxLimits limits;
  limits.timeout_s = settings.timeout_s;
  limits.memory_mb = settings.memory_mb;
  // CUDA reserves huge virtual ranges at start-up: a GPU lab is watched by resident memory only.
  limits.limit_address_space = device != "gpu";
  return limits;
}

JudgeContext lab_context(const ManifestLab& lab, const LabRunSettings& settings) {
  return JudgeContext{lab.name, lab.device, settings.has_gpu, settings.gpu_reason, limits_for(lab.device, settings)};
}

SandboxRequest lab_request(const ManifestLab& lab, const LabRunSettings& settings) {
  SandboxRequest request;
  request.limits = limits_for(lab.device, settings);
  request.set_env.emplace_back("COURSE_SEED", std::to_string(settings.seed));
  // One call of student code may take half the lab's time: a hang fails its test case with a
  // message naming the function, well before the whole lab times out.
  const double call_timeout = settings.timeout_s > 0 ? std::max(1.0, settings.timeout_s / 2) : 0;
  if (call_timeout > 0) request.set_env.emplace_back("COURSE_CALL_TIMEOUT_S", std::to_string(call_timeout));
  request.set_env.emplace_back("COURSE_WORKER_MEMORY_MB", std::to_string(settings.memory_mb));
  std::string hide;
  for (const std::string& path : settings.hide_from_worker) hide += (hide.empty() ? "" : ":") + path;
  request.set_env.emplace_back("COURSE_SANDBOX_HIDE", hide);
  if (!settings.reference_worker_dir.empty())
    request.set_env.emplace_back("COURSE_REFERENCE_WORKER_DIR", settings.reference_worker_dir);
  if (settings.allow_degraded) request.set_env.emplace_back("COURSE_ALLOW_DEGRADED", "1");
  else request.unset_env.push_back("COURSE_ALLOW_DEGRADED");
  if (settings.hidden_dir.empty())
    request.unset_env.push_back("COURSE_HIDDEN_DIR");  // never pick up a stray one from the caller
  else
    request.set_env.emplace_back("COURSE_HIDDEN_DIR", settings.hidden_dir);
  // Set only by the grader, for the programs it runs while the GPU is shared: a speed gate that
  // finds it fails instead of timing (grader::check_speed). Never inherited from the caller.
  request.unset_env.push_back("COURSE_GPU_SHARED");
  return request;
}

SandboxRequest sanitizer_request(SandboxRequest request, const std::string& tool) {
  request.set_env.emplace_back("COURSE_SANITIZER", tool);
  request.limits.timeout_s = request.limits.timeout_s > 0 ? request.limits.timeout_s * 10 : 0;
  return request;
}

std::vector<std::pair<std::size_t, std::size_t>> shard_ranges(std::size_t cases, std::size_t shards) {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  shards = std::max<std::size_t>(1, std::min(shards, cases));
  std::size_t first = 0;
  for (std::size_t k = 0; k < shards && first < cases; ++k) {
    const std::size_t size = (cases - first) / (shards - k) + ((cases - first) % (shards - k) != 0 ? 1 : 0);
    ranges.emplace_back(first, first + size);
    first += size;
  }
  return ranges;
}

std::vector<std::string> range_arguments(std::pair<std::size_t, std::size_t> range) {
  // doctest counts the cases that pass its filters from 1 and runs --first..--last of them.
  return {"--first=" + std::to_string(range.first + 1), "--last=" + std::to_string(range.second)};
}

void apply_sanitizer(const std::string& tool, const std::vector<LabResult>& passes, LabResult& result) {
  const std::string name = "compute-sanitizer " + tool;
  std::size_t cases = 0;
  // A part whose cases never started the student's worker ran no student code: nothing for the
  // sanitizer to object to. At least one part must have started it (as the one pass always did).
  const bool any_started = std::any_of(passes.begin(), passes.end(), [](const LabResult& p) {
    return !p.sanitizer_tool.empty() && p.sanitizer_worker_started;
  });
  // The first pass (in the listing's order) that did not come out clean decides, as the one pass
  // over all the cases would have.
  for (const LabResult& pass : passes) {
    if (pass.status == LabStatus::passed && pass.sanitizer_tool.empty()) {
      result.status = LabStatus::failed;
      result.reason = name + ": the sanitizer pass ended without the sanitizer's verdict";
      return;
    }
    if (!pass.sanitizer_tool.empty() && !pass.sanitizer_available) {
      result.notes.push_back(name + " is not installed: the sanitizer gate was skipped");
      return;
    }
    const bool nothing_ran = !pass.sanitizer_worker_started && any_started && pass.status == LabStatus::passed;
    if (!pass.sanitizer_tool.empty() && !pass.sanitizer_clean && !nothing_ran) {
      result.status = LabStatus::failed;
      result.failed_by_cases = false;
      result.reason = name + " found errors in the student's GPU code";
      result.hint = "run the lab's test program under compute-sanitizer --tool " + tool +
                    " (see the lecture) and fix the first error it names";
      result.details = pass.sanitizer_report.empty() ? "(no report text captured)" : pass.sanitizer_report;
      return;
    }
    if (pass.status != LabStatus::passed) {
      result.status = LabStatus::failed;
      result.failed_by_cases = false;
      result.reason = name + ": " + pass.reason;
      result.details = pass.details;
      return;
    }
    cases += pass.cases.size();
  }
  result.notes.push_back(name + ": no errors in " + std::to_string(cases) + " test cases");
}

namespace {

// The sanitizer gate: the lab's named subset of tests again, its worker under compute-sanitizer
// (COURSE_SANITIZER). compute-sanitizer's exit code, read by the test program when the worker
// ends, decides; the first report (kernel, source line) goes into the details. (The lab scheduler,
// lab_schedule.cpp, runs the same passes split into parts, in parallel.)
void sanitizer_gate(const ManifestLab& lab, const std::string& program, const SandboxRequest& base,
                    const JudgeContext& context, const std::string& tool, LabResult& result) {
  SandboxRequest request = sanitizer_request(base, tool);
  JudgeContext slow = context;
  slow.limits = request.limits;
  LabResult pass;
  pass.lab = lab.name;
  pass.device = lab.device;
  request.argv = {program, "--list-test-cases"};
  std::vector<std::string> listed;
  if (judge_listing(slow, run_sandboxed(request), pass, listed)) {
    request.argv = {program};
    judge_run(slow, listed, run_sandboxed(request), pass);
  }
  apply_sanitizer(tool, {pass}, result);
}

}  // namespace

LabResult run_lab(const ManifestLab& lab, const std::string& program, const LabRunSettings& settings) {
  LabResult result;
  result.lab = lab.name;
  result.device = lab.device;

  const JudgeContext context = lab_context(lab, settings);
  SandboxRequest request = lab_request(lab, settings);
  request.argv = {program, "--list-test-cases"};
  const SandboxResult listing = run_sandboxed(request);
  std::vector<std::string> listed;
  if (!judge_listing(context, listing, result, listed)) {
    result.seconds = listing.seconds;
    return result;
  }
  request.argv = {program};
  const SandboxResult run = run_sandboxed(request);
  judge_run(context, listed, run, result);
  if (result.status == LabStatus::passed && lab.device == "gpu" && settings.has_gpu)
    for (const std::string& tool : lab.sanitize_tools) sanitizer_gate(lab, program, request, context, tool, result);
  return result;
}

}  // namespace course_grader
