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
  return result;
}

}  // namespace course_grader
