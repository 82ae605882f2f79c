// Speed scoring: is the candidate fast enough compared with the reference, measured in the same
// run on the same GPU?
//
// The method, in four lines:
//  * Alternate. Reference (A) and candidate (B) are timed interleaved, A B B A in one round and
//    B A A B in the next (or in a seeded random order), so clock boost, throttling and other
//    processes hit both alike; a linear drift cancels exactly inside an A B B A round.
//  * Medians. Each implementation's time is the median of its rounds, and the speed-up is the
//    median of the per-round ratios reference/candidate: a few slow outliers move neither.
//  * Confidence intervals. "3.00x (95% CI 2.91-3.08x)" means: were the whole measurement repeated
//    many times, intervals built this way would contain the true median speed-up at least 95% of
//    the time (distribution-free, from order statistics; see statistics.hpp).
//  * Decide on the interval. PASS when all of it clears the threshold, FAIL when all of it
//    misses, INCONCLUSIVE otherwise -- then more rounds, up to max_rounds or the time budget.
//    Still inconclusive at the end: judged on the point estimate, and flagged as such.
//
// Checking the interval after every round (rather than once at a fixed n) makes the error rate a
// little higher than the nominal 5% for an implementation right at the threshold; min_rounds
// keeps the first look from coming too early. Far from the threshold the answer is stable.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "course/speed/statistics.hpp"

namespace course::speed {

/// Runs the work once and returns how long it took, in milliseconds.
using Sampler = std::function<double()>;

/// What the candidate must achieve. speedup = reference time / candidate time.
struct Requirement {
  double min_speedup = 0;   ///< pass when speedup >= min_speedup; 0 = measure only, always passes
  std::string description;  ///< "at least 2.00x faster than the reference"

  /// Candidate must be at least `factor` times faster than the reference (factor > 0; 1 = as fast).
  static Requirement at_least_faster(double factor);
  /// Candidate may be at most `fraction` slower than the reference: time <= (1 + fraction) x
  /// reference, i.e. speedup >= 1 / (1 + fraction). within(0.10) = "within 10% of the reference".
  static Requirement within(double fraction);
  /// No threshold: measure and report only (stops at min_rounds, always passes).
  static Requirement measure_only();
};

enum class Verdict { pass, fail, inconclusive };
const char* to_string(Verdict verdict);  ///< "PASS", "FAIL", "INCONCLUSIVE"

struct Decision {
  Verdict verdict = Verdict::inconclusive;  ///< what the confidence interval alone says
  bool passed = false;                      ///< the final answer (see by_point_estimate)
  bool by_point_estimate = false;           ///< the interval straddled the threshold, so `passed`
                                            ///< was judged on the median speed-up: report it
  std::string explanation;                  ///< one sentence saying which case applied
};

/// PASS if the whole interval is >= the threshold, FAIL if the whole interval is below it,
/// otherwise INCONCLUSIVE with `passed` taken from the point estimate and by_point_estimate set.
Decision decide(const Interval& speedup, const Requirement& requirement);

enum class Order {
  abba,    ///< round r: A B B A when r is even, B A A B when odd (4 runs per round)
  random,  ///< one A and one B per round, which goes first decided by a seeded coin (2 runs)
};

struct ScheduleOptions {
  int warmup_rounds = 3;       ///< rounds run first and thrown away (module load, clocks ramping up)
  int min_rounds = 15;         ///< always measured; the first look at the interval comes after these
  int max_rounds = 201;        ///< hard stop for an inconclusive comparison
  double time_budget_s = 5;    ///< no new round starts once this much wall time has passed
                               ///< (warm-up included); min_rounds are run regardless
  Order order = Order::abba;
  std::uint64_t seed = 0x5eed; ///< for Order::random only: same seed, same order
  double confidence = 0.95;    ///< level of every interval
  /// Milliseconds from any fixed origin; empty means std::chrono::steady_clock. Tests inject a
  /// fake clock to exercise the time budget without waiting for it.
  std::function<double()> clock_ms;
};

/// Why the scheduler stopped adding rounds.
enum class StopReason {
  decided,      ///< the interval cleared or missed the threshold (or measure-only reached min_rounds)
  max_rounds,   ///< still inconclusive at max_rounds
  time_budget,  ///< still inconclusive when the time budget ran out
};
const char* to_string(StopReason reason);  ///< "decided", "max_rounds reached", "time budget used up"

/// Everything one comparison measured and decided.
struct SpeedResult {
  std::vector<double> reference_ms;  ///< one time per round (A B B A: mean of the round's two runs)
  std::vector<double> candidate_ms;  ///< same for the candidate, same rounds
  Interval reference;                ///< median reference time (ms) and its interval
  Interval candidate;                ///< median candidate time (ms) and its interval
  Interval speedup;                  ///< median per-round ratio reference/candidate and its interval
  double confidence = 0.95;          ///< the level that was asked for
  int warmup_rounds = 0;
  int rounds = 0;                    ///< measured rounds (warm-up not counted)
  StopReason stopped_because = StopReason::decided;
  Requirement requirement;
  Decision decision;

  /// "candidate 0.412 ms vs reference 1.236 ms: 3.00x faster (95% CI 2.91-3.08x), n=31 rounds"
  std::string summary() const;
};

/// Times `reference` and `candidate` alternately as `options` says and decides `requirement`.
/// Throws course::Error for invalid options or for any sample that is not a finite positive time
/// (the message names which implementation and which round).
SpeedResult compare(const Sampler& reference, const Sampler& candidate, const Requirement& requirement,
                    const ScheduleOptions& options = {});

/// Hooks that keep a timed implementation honest (used by the GPU adapter; CPU-testable here).
struct RunHooks {
  int input_sets = 1;  ///< how many input sets to rotate through
  /// Called before every run, untimed, with the set to use (0 .. input_sets-1). Reference and
  /// candidate each cycle through the sets in the same order, so every round compares the two on
  /// the same inputs, and no implementation can win by reusing the result of its previous run.
  std::function<void(int)> select_input;
  /// Called once after all timing with the set used last; throws course::Error if the outputs
  /// are not (or no longer) right. Catches code that is only correct the first time it runs.
  std::function<void(int)> recheck;
};

/// Times one run of the work (whatever the input selection did before); returns milliseconds.
using TimedRun = std::function<double()>;

/// compare() with input rotation before each run and the re-check after timing. A failing
/// re-check is rethrown as course::Error("re-check after timing failed: ...").
SpeedResult compare_with_hooks(const TimedRun& reference, const TimedRun& candidate,
                               const Requirement& requirement, const ScheduleOptions& options,
                               const RunHooks& hooks);

/// How summary() prints a time: "1.236 ms" (3 decimals) from 0.1 ms up, "0.0123 ms" (three
/// significant digits) below, so that microsecond kernels do not print as "0.000 ms".
std::string format_ms(double ms);

}  // namespace course::speed
