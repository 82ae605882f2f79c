#include "course/speed/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "course/error.hpp"

namespace course::speed {
namespace {

void check_confidence(double confidence) {
  if (!(confidence > 0.0 && confidence < 1.0))  // written this way so that NaN is rejected too
    throw Error("confidence must be strictly between 0 and 1 (e.g. 0.95), got " + std::to_string(confidence));
}

// Median of an already sorted, non-empty vector.
double sorted_median(const std::vector<double>& sorted) {
  const std::size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

}  // namespace

void check_time(double ms, const std::string& what) {
  if (std::isfinite(ms) && ms > 0.0) return;
  std::ostringstream msg;
  msg << what << ": a time of " << ms << " ms; every time must be finite and positive ("
      << (std::isnan(ms) ? "NaN: the timer or the timed work failed"
          : ms == 0.0    ? "zero: the timer measured nothing -- was the work enqueued on the timed stream?"
          : ms < 0.0     ? "negative: start and stop swapped, or taken on different streams"
                         : "infinite")
      << ")";
  throw Error(msg.str());
}

void check_samples(const std::vector<double>& samples, const std::string& what) {
  if (samples.empty()) throw Error(what + ": no samples");
  for (std::size_t i = 0; i < samples.size(); ++i) check_time(samples[i], what + ", sample " + std::to_string(i));
}

double median(std::vector<double> samples) {
  check_samples(samples, "median");
  std::sort(samples.begin(), samples.end());
  return sorted_median(samples);
}

double binomial_half_cdf(std::size_t k, std::size_t n) {
  if (k >= n) return 1.0;
  // log C(n, j) - n log 2, summed in increasing j; lgamma keeps this exact enough for any n the
  // scheduler produces and cannot overflow the way factorials would.
  const double nd = static_cast<double>(n);
  const double log_norm = std::lgamma(nd + 1.0) - nd * std::log(2.0);
  double sum = 0.0;
  for (std::size_t j = 0; j <= k; ++j) {
    const double jd = static_cast<double>(j);
    sum += std::exp(log_norm - std::lgamma(jd + 1.0) - std::lgamma(nd - jd + 1.0));
  }
  return std::min(sum, 1.0);
}

double median_ci_coverage(std::size_t l, std::size_t n) {
  if (n == 0 || l == 0 || 2 * l > n + 1) throw Error("median_ci_coverage: need 1 <= l <= (n+1)/2");
  // The interval misses when fewer than l samples lie below the median (P(B <= l-1)) or, by
  // symmetry, when fewer than l lie above it.
  return std::max(0.0, 1.0 - 2.0 * binomial_half_cdf(l - 1, n));
}

std::pair<std::size_t, std::size_t> median_ci_ranks(std::size_t n, double confidence) {
  check_confidence(confidence);
  if (n == 0) throw Error("median_ci_ranks: no samples");
  // Coverage falls as l grows (the interval narrows): take the largest l that still reaches the
  // requested level, or l = 1 (min..max) when not even that does.
  std::size_t l = 1;
  while (2 * (l + 1) <= n + 1 && median_ci_coverage(l + 1, n) >= confidence) ++l;
  return {l, n + 1 - l};
}

std::size_t min_samples_for(double confidence) {
  check_confidence(confidence);
  std::size_t n = 1;
  while (median_ci_coverage(1, n) < confidence) ++n;  // coverage of [min, max] is 1 - 2^(1-n)
  return n;
}

Interval median_ci(std::vector<double> samples, double confidence) {
  check_confidence(confidence);
  check_samples(samples, "median_ci");
  std::sort(samples.begin(), samples.end());
  const auto [l, u] = median_ci_ranks(samples.size(), confidence);
  Interval ci;
  ci.point = sorted_median(samples);
  ci.lower = samples[l - 1];
  ci.upper = samples[u - 1];
  ci.coverage = median_ci_coverage(l, samples.size());
  ci.n = samples.size();
  return ci;
}

Interval speedup_ci(const std::vector<double>& reference_ms, const std::vector<double>& candidate_ms,
                    double confidence) {
  check_samples(reference_ms, "reference times");
  check_samples(candidate_ms, "candidate times");
  if (reference_ms.size() != candidate_ms.size())
    throw Error("speedup_ci: the reference has " + std::to_string(reference_ms.size()) +
                " rounds but the candidate has " + std::to_string(candidate_ms.size()) +
                "; the ratio is taken round by round, so they must match");
  std::vector<double> ratios(reference_ms.size());
  for (std::size_t i = 0; i < ratios.size(); ++i) ratios[i] = reference_ms[i] / candidate_ms[i];
  return median_ci(std::move(ratios), confidence);
}

}  // namespace course::speed
