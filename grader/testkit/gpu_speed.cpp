#include "gpu_speed.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "course/device.hpp"
#include "course/error.hpp"
#include "course/speed/statistics.hpp"
#include "rpc/client.hpp"

namespace grader {
namespace {

using Clock = std::chrono::steady_clock;

struct Timed {
  std::vector<double> gpu_ms;
  std::vector<double> wall_ms;
};

// One timed run through the call channel: the harness's GPU time, and this side's wall clock
// around the whole call.
double timed_call(const PipelineTimer& timer, int set, Timed& log) {
  const auto start = Clock::now();
  const double gpu = timer.run(set);
  const double wall = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  log.gpu_ms.push_back(gpu);
  log.wall_ms.push_back(wall);
  return gpu;
}

// Per call, the wall-clock time the GPU time does not explain (the call channel, the
// synchronisation, and anything the timed region missed).
double unexplained_ms(const Timed& log) {
  std::vector<double> gaps;
  for (std::size_t i = 0; i < log.gpu_ms.size(); ++i) gaps.push_back(log.wall_ms[i] - log.gpu_ms[i]);
  return course::speed::median(gaps);
}

}  // namespace

void check_speed(const SpeedGate& gate, const PipelineTimer& timer) {
  std::string why;
  const bool have_reference = rpc::reference_worker_available(&why);
  if (!have_reference) {
    // Official grading (the instructor's hidden cases are in use) never lets a speed requirement
    // go unjudged: a student handout without the reference would otherwise pass any pipeline.
    const char* hidden = std::getenv("COURSE_HIDDEN_DIR");
    const bool official = hidden != nullptr && *hidden != '\0';
    if (official && gate.requirement.min_speedup > 0)
      FAIL_CHECK(gate.what << ": speed cannot be judged: " << why
                           << " (official grading needs the reference solution's worker: grade in a build "
                              "with the solutions, or set COURSE_REFERENCE_WORKER_DIR)");
    else
      WARN_MESSAGE(false, "speed not judged: " << why << " (grade in a build with the solutions)");
    return;
  }
  {
    rpc::ReferenceWorkerScope reference;
    if (timer.reference_prepare)
      timer.reference_prepare();
    else
      timer.prepare();
  }
  timer.prepare();

  int current = 0;
  Timed reference_log, candidate_log;
  const course::speed::TimedRun reference_run = [&] {
    rpc::ReferenceWorkerScope reference;
    return timed_call(timer, current, reference_log);
  };
  const course::speed::TimedRun candidate_run = [&] { return timed_call(timer, current, candidate_log); };
  course::speed::RunHooks hooks;
  hooks.input_sets = gate.input_sets;
  hooks.select_input = [&](int set) { current = set; };
  hooks.recheck = [&](int set) { timer.recheck(set); };

  const course::speed::SpeedResult result =
      course::speed::compare_with_hooks(reference_run, candidate_run, gate.requirement, gate.schedule, hooks);
  MESSAGE(gate.what << ": " << result.summary());

  // The reference's calls show what the channel and the synchronisation cost for calls of this
  // size; a candidate whose calls take far longer than its reported GPU time did work the
  // timer did not see.
  const double reference_gap = unexplained_ms(reference_log);
  const double candidate_gap = unexplained_ms(candidate_log);
  const double allowed_gap = 3 * reference_gap + 0.5;
  CHECK_MESSAGE(candidate_gap <= allowed_gap,
                gate.what << ": each timed call took " << course::speed::format_ms(candidate_gap)
                          << " longer than the GPU time the harness measured (the reference's calls: "
                          << course::speed::format_ms(reference_gap)
                          << "): work launched on a stream the timer cannot see, or done after the timed region?");

  if (gate.work.flops > 0 || gate.work.min_bytes > 0) {
    const course::speed::MachinePeak peak = course::speed::peak_from_device(course::query_device(0));
    const course::speed::Plausibility p = course::speed::check_plausible(result.candidate.point, gate.work, peak);
    CHECK_MESSAGE(p.plausible, gate.what << ": " << p.message);
  }

  MESSAGE("course-metric " << gate.metrics.speedup << " " << result.speedup.point);
  MESSAGE("course-metric " << gate.metrics.ci_low << " " << result.speedup.lower);
  MESSAGE("course-metric " << gate.metrics.ci_high << " " << result.speedup.upper);
  MESSAGE("course-metric " << gate.metrics.time_ms << " " << result.candidate.point);
  CHECK_MESSAGE(result.decision.passed, gate.what << ": " << result.summary() << " -- required: "
                                                  << gate.requirement.description << ". "
                                                  << result.decision.explanation);
}

}  // namespace grader
