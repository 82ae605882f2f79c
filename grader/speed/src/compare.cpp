#include "course/speed/compare.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "course/error.hpp"

namespace course::speed {
namespace {

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string percent(double confidence) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", confidence * 100.0);
  return buf;
}

std::string interval_text(const Interval& ci) { return fixed(ci.lower, 2) + "-" + fixed(ci.upper, 2) + "x"; }

void check_requirement(const Requirement& requirement) {
  if (!(std::isfinite(requirement.min_speedup) && requirement.min_speedup >= 0.0))
    throw Error("requirement: min_speedup must be a finite number >= 0, got " +
                std::to_string(requirement.min_speedup));
}

void check_options(const ScheduleOptions& options) {
  if (options.warmup_rounds < 0)
    throw Error("ScheduleOptions: warmup_rounds must be >= 0, got " + std::to_string(options.warmup_rounds));
  const std::size_t needed = min_samples_for(options.confidence);  // also validates confidence
  if (options.min_rounds < 0 || static_cast<std::size_t>(options.min_rounds) < needed)
    throw Error("ScheduleOptions: min_rounds must be at least " + std::to_string(needed) + " for a " +
                percent(options.confidence) + " interval (fewer rounds cannot reach that confidence), got " +
                std::to_string(options.min_rounds));
  if (options.max_rounds < options.min_rounds)
    throw Error("ScheduleOptions: max_rounds (" + std::to_string(options.max_rounds) +
                ") must be >= min_rounds (" + std::to_string(options.min_rounds) + ")");
  if (!(std::isfinite(options.time_budget_s) && options.time_budget_s > 0.0))
    throw Error("ScheduleOptions: time_budget_s must be a finite number of seconds > 0, got " +
                std::to_string(options.time_budget_s));
}

double steady_clock_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// Runs one sampler and validates its time, naming the implementation and the round on failure.
double take(const Sampler& sampler, const char* who, bool warmup, int round) {
  const double ms = sampler();
  check_time(ms, std::string(who) + (warmup ? ", warm-up round " : ", round ") + std::to_string(round));
  return ms;
}

}  // namespace

Requirement Requirement::at_least_faster(double factor) {
  if (!(std::isfinite(factor) && factor > 0.0))
    throw Error("Requirement::at_least_faster: factor must be a finite number > 0, got " + std::to_string(factor));
  return {factor, "at least " + fixed(factor, 2) + "x faster than the reference"};
}

Requirement Requirement::within(double fraction) {
  if (!(std::isfinite(fraction) && fraction >= 0.0))
    throw Error("Requirement::within: fraction must be a finite number >= 0 (0.10 = 10% slower at most), got " +
                std::to_string(fraction));
  return {1.0 / (1.0 + fraction), "within " + fixed(fraction * 100.0, 0) + "% of the reference time"};
}

Requirement Requirement::measure_only() { return {0.0, "measured only (no threshold)"}; }

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::pass: return "PASS";
    case Verdict::fail: return "FAIL";
    case Verdict::inconclusive: return "INCONCLUSIVE";
  }
  return "?";
}

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::decided: return "decided";
    case StopReason::max_rounds: return "max_rounds reached";
    case StopReason::time_budget: return "time budget used up";
  }
  return "?";
}

Decision decide(const Interval& speedup, const Requirement& requirement) {
  check_requirement(requirement);
  const double threshold = requirement.min_speedup;
  const std::string needed = "the required " + fixed(threshold, 2) + "x";
  Decision d;
  if (threshold == 0.0) {
    d.verdict = Verdict::pass;
    d.passed = true;
    d.explanation = "measured only: no speed threshold to meet";
  } else if (speedup.lower >= threshold) {
    d.verdict = Verdict::pass;
    d.passed = true;
    d.explanation = "the whole interval " + interval_text(speedup) + " is at or above " + needed;
  } else if (speedup.upper < threshold) {
    d.verdict = Verdict::fail;
    d.passed = false;
    d.explanation = "the whole interval " + interval_text(speedup) + " is below " + needed;
  } else {
    // Too close to call with the rounds we have. The median is still the best single estimate,
    // so it decides -- but the flag lets the report say the margin was within the noise.
    d.verdict = Verdict::inconclusive;
    d.passed = speedup.point >= threshold;
    d.by_point_estimate = true;
    d.explanation = "the interval " + interval_text(speedup) + " straddles " + needed +
                    "; judged on the median speed-up " + fixed(speedup.point, 2) + "x: " +
                    (d.passed ? "passes" : "fails") + " (too close to call, flagged)";
  }
  return d;
}

std::string format_ms(double ms) {
  char buf[64];
  if (std::fabs(ms) >= 0.1)
    std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  else
    std::snprintf(buf, sizeof buf, "%.3g ms", ms);
  return buf;
}

std::string SpeedResult::summary() const {
  std::ostringstream out;
  out << "candidate " << format_ms(candidate.point) << " vs reference " << format_ms(reference.point) << ": ";
  const std::string level = percent(confidence) + " CI ";
  if (speedup.point >= 1.0) {
    out << fixed(speedup.point, 2) << "x faster (" << level << interval_text(speedup) << ")";
  } else {
    // Below 1 a speed-up reads badly ("0.80x faster"); say how many times slower instead. The
    // interval's ends swap because 1/x reverses the order.
    out << fixed(1.0 / speedup.point, 2) << "x slower (" << level << fixed(1.0 / speedup.upper, 2) << "-"
        << fixed(1.0 / speedup.lower, 2) << "x)";
  }
  out << ", n=" << rounds << " rounds";
  return out.str();
}

SpeedResult compare(const Sampler& reference, const Sampler& candidate, const Requirement& requirement,
                    const ScheduleOptions& options) {
  check_requirement(requirement);
  check_options(options);
  if (!reference || !candidate) throw Error("compare: both the reference and the candidate sampler must be set");
  const std::function<double()> now = options.clock_ms ? options.clock_ms : steady_clock_ms;
  std::mt19937_64 coin(options.seed);

  // One round: the reference's and the candidate's time for it. The pattern index keeps counting
  // through warm-up, so A B B A and B A A B alternate without a break.
  int pattern = 0;
  auto run_round = [&](bool warmup, int round, double& ref_ms, double& cand_ms) {
    auto a = [&] { return take(reference, "reference", warmup, round); };
    auto b = [&] { return take(candidate, "candidate", warmup, round); };
    if (options.order == Order::abba) {
      // The mean of the outer pair and of the inner pair sit at the same point in time, so a
      // drift linear in time adds the same amount to both and the ratio is unaffected.
      double a1, a2, b1, b2;
      if (pattern % 2 == 0) {
        a1 = a(); b1 = b(); b2 = b(); a2 = a();
      } else {
        b1 = b(); a1 = a(); a2 = a(); b2 = b();
      }
      ref_ms = 0.5 * (a1 + a2);
      cand_ms = 0.5 * (b1 + b2);
    } else {
      // Random order: whatever favours "first" or "second" in a round favours each side equally
      // often, and a periodic disturbance cannot line up with a fixed pattern.
      if (coin() & 1u) {
        ref_ms = a(); cand_ms = b();
      } else {
        cand_ms = b(); ref_ms = a();
      }
    }
    ++pattern;
  };

  const double start_ms = now();
  SpeedResult result;
  result.requirement = requirement;
  result.confidence = options.confidence;
  result.warmup_rounds = options.warmup_rounds;
  for (int w = 0; w < options.warmup_rounds; ++w) {
    double ignored_ref = 0, ignored_cand = 0;
    run_round(true, w, ignored_ref, ignored_cand);
  }

  for (;;) {
    double ref_ms = 0, cand_ms = 0;
    run_round(false, result.rounds, ref_ms, cand_ms);
    result.reference_ms.push_back(ref_ms);
    result.candidate_ms.push_back(cand_ms);
    ++result.rounds;
    if (result.rounds < options.min_rounds) continue;

    result.speedup = speedup_ci(result.reference_ms, result.candidate_ms, options.confidence);
    result.decision = decide(result.speedup, requirement);
    if (result.decision.verdict != Verdict::inconclusive) {
      result.stopped_because = StopReason::decided;
      break;
    }
    if (result.rounds >= options.max_rounds) {
      result.stopped_because = StopReason::max_rounds;
      break;
    }
    if (now() - start_ms >= options.time_budget_s * 1000.0) {
      result.stopped_because = StopReason::time_budget;
      break;
    }
  }
  result.reference = median_ci(result.reference_ms, options.confidence);
  result.candidate = median_ci(result.candidate_ms, options.confidence);
  return result;
}

SpeedResult compare_with_hooks(const TimedRun& reference, const TimedRun& candidate,
                               const Requirement& requirement, const ScheduleOptions& options,
                               const RunHooks& hooks) {
  if (hooks.input_sets < 1)
    throw Error("RunHooks: input_sets must be at least 1, got " + std::to_string(hooks.input_sets));
  if (!reference || !candidate)
    throw Error("compare_with_hooks: both the reference and the candidate run must be set");

  // Each side keeps its own position in the rotation; both advance once per run and run equally
  // often per round, so in every round they see the same input sets.
  int next_reference_set = 0, next_candidate_set = 0, last_set = 0;
  auto rotating = [&](const TimedRun& run, int& next_set) -> Sampler {
    return [&run, &next_set, &last_set, &hooks] {
      const int set = next_set;
      next_set = (next_set + 1) % hooks.input_sets;
      if (hooks.select_input) hooks.select_input(set);  // before the run, so never timed
      last_set = set;
      return run();
    };
  };
  SpeedResult result = compare(rotating(reference, next_reference_set), rotating(candidate, next_candidate_set),
                               requirement, options);
  if (hooks.recheck) {
    try {
      hooks.recheck(last_set);
    } catch (const std::exception& e) {
      throw Error(std::string("re-check after timing failed: ") + e.what());
    }
  }
  return result;
}

}  // namespace course::speed
