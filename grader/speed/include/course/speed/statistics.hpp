// Distribution-free statistics for timing samples: the median, a confidence interval for the
// median built from order statistics, and the same interval for a speed-up measured round by
// round.
//
// Why no normal approximation: GPU timings are skewed (a floor set by the hardware, a long tail
// from interrupts, clock changes and other processes), so a mean +- t*sd interval is wrong in
// exactly the runs that matter. The order-statistic interval only assumes the samples are
// independent draws from one continuous distribution: for sorted samples x(1) <= ... <= x(n),
// the true median lies below x(l) only if fewer than l samples fall below it, which happens with
// probability P(B <= l-1) for B ~ Binomial(n, 1/2). Picking l (and u = n+1-l by symmetry) so
// that 1 - 2 P(B <= l-1) >= 95% gives an interval [x(l), x(u)] that covers the true median in at
// least 95% of runs, whatever the shape of the distribution.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace course::speed {

/// A point estimate (the median) with a confidence interval around it.
struct Interval {
  double point = 0;       ///< the sample median
  double lower = 0;       ///< lower end of the interval (an actual sample value)
  double upper = 0;       ///< upper end of the interval (an actual sample value)
  double coverage = 0;    ///< probability that [lower, upper] covers the true median (exact,
                          ///< >= the requested level once there are enough samples, see below)
  std::size_t n = 0;      ///< samples it was computed from
};

/// Throws course::Error unless `ms` is finite and > 0; the message starts with `what` ("candidate,
/// round 3") and says what such a value usually means.
void check_time(double ms, const std::string& what);

/// Throws course::Error unless `samples` is non-empty and every value is finite and > 0: a time
/// of zero, a negative time or a NaN means the timer measured nothing or something broke, and
/// must never turn into a speed-up. `what` names the series in the message ("candidate times").
void check_samples(const std::vector<double>& samples, const std::string& what);

/// Median (the mean of the two middle values for an even count). Validates like check_samples.
double median(std::vector<double> samples);

/// P(B <= k) for B ~ Binomial(n, 1/2), computed in log space so that large n does not underflow.
double binomial_half_cdf(std::size_t k, std::size_t n);

/// 1-based ranks (l, u = n + 1 - l) of the order statistics that bound the median's interval at
/// `confidence`: the narrowest symmetric pair whose coverage 1 - 2 P(B <= l-1) is still at least
/// `confidence`. With too few samples for that level it returns (1, n), whose coverage is less.
std::pair<std::size_t, std::size_t> median_ci_ranks(std::size_t n, double confidence);

/// Exact coverage of [x(l), x(n+1-l)] for the median of n samples.
double median_ci_coverage(std::size_t l, std::size_t n);

/// Fewest samples for which [min, max] already reaches `confidence` (6 for 95%, 8 for 99%).
std::size_t min_samples_for(double confidence);

/// Median of `samples` with its order-statistic confidence interval at `confidence` (0..1).
Interval median_ci(std::vector<double> samples, double confidence = 0.95);

/// Speed-up of the candidate over the reference, round by round: ratio_i = reference_i /
/// candidate_i (> 1 means the candidate is faster), then the median of the ratios and its
/// order-statistic interval. Pairing the two times measured in the same round cancels whatever
/// the machine did during that round (clock boost, throttling) -- the reason for alternating.
Interval speedup_ci(const std::vector<double>& reference_ms, const std::vector<double>& candidate_ms,
                    double confidence = 0.95);

}  // namespace course::speed
