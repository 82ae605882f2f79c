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

namespace {

// The sanitizer gate: the lab's named subset of tests again, its worker under compute-sanitizer
// (COURSE_SANITIZER). compute-sanitizer's exit code, read by the test program when the worker
// ends, decides; the first report (kernel, source line) goes into the details.
void sanitizer_gate(const ManifestLab& lab, const std::string& program, SandboxRequest request,
                    const JudgeContext& context, const std::string& tool, LabResult& result) {
  request.set_env.emplace_back("COURSE_SANITIZER", tool);
  request.limits.timeout_s = context.limits.timeout_s > 0 ? context.limits.timeout_s * 10 : 0;
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
  const std::string name = "compute-sanitizer " + tool;
  if (pass.status == LabStatus::passed && pass.sanitizer_tool.empty()) {
    result.status = LabStatus::failed;
    result.reason = name + ": the sanitizer pass ended without the sanitizer's verdict";
  } else if (!pass.sanitizer_tool.empty() && !pass.sanitizer_available) {
    result.notes.push_back(name + " is not installed: the sanitizer gate was skipped");
  } else if (!pass.sanitizer_tool.empty() && !pass.sanitizer_clean) {
    result.status = LabStatus::failed;
    result.failed_by_cases = false;
    result.reason = name + " found errors in the student's GPU code";
    result.hint = "run the lab's test program under compute-sanitizer --tool " + tool +
                  " (see the lecture) and fix the first error it names";
    result.details = pass.sanitizer_report.empty() ? "(no report text captured)" : pass.sanitizer_report;
  } else if (pass.status != LabStatus::passed) {
    result.status = LabStatus::failed;
    result.failed_by_cases = false;
    result.reason = name + ": " + pass.reason;
    result.details = pass.details;
  } else {
    result.notes.push_back(name + ": no errors in " + std::to_string(pass.cases.size()) + " test cases");
  }
}

}  // namespace

LabResult run_lab(const ManifestLab& lab, const std::string& program, const LabRunSettings& settings) {
  LabResult result;
  result.lab = lab.name;
  result.device = lab.device;

  const JudgeContext context{lab.name, lab.device, settings.has_gpu, settings.gpu_reason, limits_for(lab.device, settings)};
  SandboxRequest request;
  request.limits = context.limits;
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
