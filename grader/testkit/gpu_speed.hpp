// The speed gate of the GPU labs, on the trusted side: the student's pipeline against the
// reference solution's, in the same run, on the same GPU.
//
// Each side runs in its own worker: the student's, and the reference solution's of the same lab
// (grader/rpc/client.hpp, ReferenceWorkerScope). The lab's harness does the timing inside each
// worker -- CUDA events around the pipeline's call on the harness's stream, the L2 cache flushed
// and the next input set selected before it, the whole device synchronised after it -- and
// returns the GPU time. This side
//   * alternates reference and candidate (course::speed::compare: A B B A rounds, medians, a 95%
//     confidence interval of the speed-up, a decision on the interval);
//   * measures its own wall clock around every call, and fails a candidate whose calls take much
//     longer than the GPU time it reports, compared with the reference's calls of the same size
//     (work on a stream the events cannot see, or work after the stop event, shows up here);
//   * re-checks the candidate's outputs after timing against the golden reference;
//   * flags a time faster than the GPU can do the work (course::speed::check_plausible);
//   * reports course-metric lines (speed-up, its interval, the time) for the leaderboard, under
//     the gate's MetricNames (the standard names unless the lab names them otherwise).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "course/tensor.hpp"

#include "course/speed/compare.hpp"
#include "course/speed/plausibility.hpp"

namespace grader {

struct PipelineTimer {
  std::function<void()> prepare;    ///< once per worker, untimed: build the pipeline, upload the inputs
  /// Optional: what to prepare in the REFERENCE worker instead of `prepare`, when the reference
  /// side is another pipeline than the candidate's (lab 07 times the student's pipeline against
  /// the lab 06 naive one, which exists only in the reference worker). Empty: `prepare` there too.
  std::function<void()> reference_prepare;
  std::function<double(int)> run;   ///< one timed run on input set i: the harness's GPU time in ms
  /// After timing, on the candidate only: throws course::Error (or fails CHECKs) unless the outputs
  /// of the last run, on input set i, are right.
  std::function<void(int)> recheck;
};

/// The names of a gate's `course-metric` lines. The defaults are the leaderboard's; a lab with a
/// second gate gives that one other names so that the two do not collide.
struct MetricNames {
  std::string speedup = "speedup_vs_reference";
  std::string ci_low = "speedup_ci_low";
  std::string ci_high = "speedup_ci_high";
  std::string time_ms = "pipeline_ms";  ///< the candidate's median time; "_ms": lower ranks higher

  /// Names for a gate against `baseline` instead of the reference solution, e.g. "naive":
  /// speedup_vs_naive, speedup_vs_naive_ci_low, speedup_vs_naive_ci_high, pipeline_vs_naive_ms.
  static MetricNames versus(const std::string& baseline) {
    const std::string speedup = "speedup_vs_" + baseline;
    return {speedup, speedup + "_ci_low", speedup + "_ci_high", "pipeline_vs_" + baseline + "_ms"};
  }
};

struct SpeedGate {
  std::string what;                     ///< "LeNet, 10,000 images"
  course::speed::Requirement requirement;
  int input_sets = 3;
  course::speed::Work work;             ///< for the plausibility bound
  course::speed::ScheduleOptions schedule;
  MetricNames metrics;                  ///< the names of its course-metric lines
};

/// The speed gates' input sets: a test split rotated by `by` images (every set holds real images,
/// and its golden labels are the split's golden labels rotated the same way).
inline course::Tensor rotated_images(const course::Tensor& images, std::int64_t by) {
  course::Tensor out(images.shape());
  const std::size_t per_image = images.numel() / static_cast<std::size_t>(images.dim(0));
  const auto shift = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(by) * per_image);
  std::rotate_copy(images.values().begin(), images.values().begin() + shift, images.values().end(),
                   out.values().begin());
  return out;
}
inline std::vector<int> rotated_labels(const std::vector<int>& labels, std::int64_t by) {
  std::vector<int> out(labels.size());
  std::rotate_copy(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(by), labels.end(), out.begin());
  return out;
}

/// Runs the comparison and CHECKs its outcome. Without a reference worker (a handout without
/// solutions/) the speed is measured and reported, not judged, and a warning says so.
void check_speed(const SpeedGate& gate, const PipelineTimer& timer);

}  // namespace grader
