#include "course/speed/gpu_compare.hpp"

#include "course/error.hpp"
#include "course/gpu_timer.hpp"

namespace course::speed {

SpeedResult compare_on_gpu(const GpuWork& reference, const GpuWork& candidate, const Requirement& requirement,
                           const ScheduleOptions& options, const RunHooks& hooks, const GpuTiming& timing) {
  if (!reference || !candidate) throw Error("compare_on_gpu: both the reference and the candidate work must be set");
  GpuTimer timer(timing.stream);
  // One timed run per sample: GpuTimer's own warm-up is off because the schedule's warm-up
  // rounds already ran both implementations, alternated like the measured rounds.
  const TimerOptions one_run{/*warmup=*/0, /*repetitions=*/1, timing.flush_l2};
  auto timed = [&timer, &one_run](const GpuWork& work) -> TimedRun {
    return [&timer, &one_run, &work] { return timer.time(work, one_run).samples_ms.front(); };
  };
  return compare_with_hooks(timed(reference), timed(candidate), requirement, options, hooks);
}

}  // namespace course::speed
