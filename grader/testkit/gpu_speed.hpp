// The speed gate of the GPU labs, on the trusted side: the student's pipeline against the
// reference solution's, in the same run, on the same GPU, timed on THIS process's clock.
//
// Nothing the worker reports decides. The protocol (grader/README.md, "Speed"):
//   * Rounds on inputs nobody can predict. Every timed round sends a fresh random nonce; the
//     harness makes that round's R input batches from it on the GPU (real images chosen by the
//     nonce, plus nonce-seeded noise), calls forward() R times, synchronises the whole device and
//     leaves every output in a memory region shared with this process (grader/labs/
//     gpu_timing_session.hpp). This side times the round from the request sent until it has the
//     reply and its own copy of every output: work hidden on another stream, work left for later,
//     a patched clock, a cache keyed on pointers or pixels -- none of it can make a round shorter
//     than the work whose outputs it returns.
//   * Every output checked. The student's rounds use the same nonces as the reference's first
//     block, and every logit of every call is compared with the reference's (and every label,
//     where the pipeline returns labels).
//   * The GPU to one side at a time. Each side is timed in a block of its own, in a fresh worker,
//     with every other worker stopped first (their PID namespaces torn down: no student process
//     holds a CUDA context while the reference is timed, and the reverse): reference, student,
//     reference. The two reference blocks must agree within 15% (the calibration): otherwise the
//     GPU was not ours alone, the gate says so and times again, and never passes on such a run.
//   * The fixed cost of a round (making inputs, poisoning, copying and sending outputs) is
//     measured by "null" rounds of the reference worker, which do all of it but the calls, and
//     subtracted from both sides' rounds; the per-call time is what is left, divided by R.
//   * The speed-up is the median of per-round ratios (the student's round i against the mean of
//     the two reference blocks' round i, which cancels a linear drift) with its 95% interval,
//     decided as course::speed::decide says; a time faster than the GPU allows is flagged.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "course/tensor.hpp"

#include "course/speed/compare.hpp"
#include "course/speed/plausibility.hpp"

namespace grader {

/// What one round produced: every call's outputs in call order (this process's copy), and the
/// harness's CUDA-event time of each call (information only).
struct RoundOutputs {
  course::Tensor logits;        ///< [R*N, classes]
  std::vector<int> labels;      ///< [R*N]; -1 where the pipeline returns no labels
  std::vector<double> event_ms; ///< [R]
};

struct PipelineTimer {
  /// Once per fresh worker, untimed: build the pipeline, upload the pool of real images.
  std::function<void()> prepare;
  /// Optional: what to prepare in the REFERENCE worker instead of `prepare`, when the reference
  /// side is another pipeline than the candidate's (lab 07 times the student's pipeline against
  /// the lab 06 naive one, which exists only in the reference worker). Empty: `prepare` there too.
  std::function<void()> reference_prepare;
  /// One round in the current worker (`run` false: the null round, no pipeline calls); returns the
  /// harness's event times. The outputs are left in the region shared with the worker.
  std::function<std::vector<double>(std::uint64_t nonce, bool run)> round;
  int forwards_per_round = 4;   ///< R, as prepared
  std::int64_t images_per_call = 10000;  ///< N, the pool's size as prepared
  int classes = 10;
  bool returns_labels = true;   ///< false: only the logits are compared (lab 05)
  double logit_tolerance = 1e-3;  ///< |student - reference| allowed per logit (absolute)
};

/// PipelineTimer::round for a lab harness's
/// `void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms)`:
/// `timer.round = grader::round_through<lab06_harness::timing_round>;`
template <void (*TimingRound)(std::uint64_t, bool, std::vector<double>&)>
std::vector<double> round_through(std::uint64_t nonce, bool run) {
  std::vector<double> event_ms;
  TimingRound(nonce, run, event_ms);
  return event_ms;
}

/// The names of a gate's `course-metric` lines. The defaults are the leaderboard's; a lab with a
/// second gate gives that one other names so that the two do not collide.
struct MetricNames {
  std::string speedup = "speedup_vs_reference";
  std::string ci_low = "speedup_ci_low";
  std::string ci_high = "speedup_ci_high";
  std::string time_ms = "pipeline_ms";  ///< the candidate's median time; "_ms": lower ranks higher
  // Context for the reports (the instructor's histogram draws the gate, a student's progress chart
  // both): not the student's achievement, so never on the leaderboard ("_required", "baseline_").
  std::string required = "speedup_vs_reference_required";  ///< the gate's minimum speed-up
  std::string baseline_ms = "baseline_reference_ms";       ///< the reference's median time

  /// Names for a gate against `baseline` instead of the reference solution, e.g. "naive":
  /// speedup_vs_naive, speedup_vs_naive_ci_low, speedup_vs_naive_ci_high, pipeline_vs_naive_ms,
  /// speedup_vs_naive_required, baseline_naive_ms.
  static MetricNames versus(const std::string& baseline) {
    const std::string speedup = "speedup_vs_" + baseline;
    return {speedup, speedup + "_ci_low", speedup + "_ci_high", "pipeline_vs_" + baseline + "_ms",
            speedup + "_required", "baseline_" + baseline + "_ms"};
  }
};

struct SpeedGate {
  std::string what;                     ///< "LeNet, 10,000 images"
  course::speed::Requirement requirement;
  course::speed::Work work;             ///< of ONE pipeline call, for the plausibility bound
  int rounds = 9;                       ///< timed rounds per block
  int warmup_rounds = 2;                ///< per block, untimed
  double max_calibration_drift = 0.15;  ///< the two reference blocks may differ this much
  int attempts = 2;                     ///< timings tried before a drifting GPU fails the gate
  MetricNames metrics;                  ///< the names of its course-metric lines
};

/// Runs the comparison and CHECKs its outcome. Without a reference worker (a handout without
/// solutions/) the speed is reported as not judged, with a warning -- except in official grading
/// (COURSE_HIDDEN_DIR set), where a requirement that cannot be judged fails.
void check_speed(const SpeedGate& gate, const PipelineTimer& timer);

/// The first difference between a student's round and the reference's for the same nonce, or ""
/// when every logit is within `tolerance` and (with `labels`) every label agrees wherever the
/// reference's two highest logits are more than 2 x tolerance apart. NaN and Inf never match.
std::string compare_round(const RoundOutputs& student, const RoundOutputs& reference, int images_per_call,
                          double tolerance, bool labels);

}  // namespace grader
