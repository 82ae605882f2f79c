// Medians, the order-statistic interval for the median, and the round-by-round speed-up.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "course/error.hpp"
#include "course/speed/statistics.hpp"
#include "synthetic.hpp"

using namespace course::speed;

namespace {

// Fraction of `trials` simulated experiments in which the interval between the l-th and
// (n+1-l)-th order statistics of n draws contains the distribution's true median.
template <typename Draw>
double simulated_coverage(Draw draw, double true_median, std::size_t n, std::size_t l, int trials,
                          std::mt19937_64& rng) {
  int covered = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> x(n);
    for (double& v : x) v = draw(rng);
    std::sort(x.begin(), x.end());
    if (x[l - 1] <= true_median && true_median <= x[n - l]) ++covered;
  }
  return covered / static_cast<double>(trials);
}

}  // namespace

TEST_CASE("median: odd and even counts, any input order") {
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);  // mean of the two middle values
  CHECK(median({7.5}) == 7.5);
  CHECK(median({1.0, 1.0, 100.0}) == 1.0);    // an outlier does not move it
}

TEST_CASE("samples that are not positive finite times are rejected with a reason") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(speed_test::error_of([] { median({}); }).find("no samples") != std::string::npos);
  CHECK(speed_test::error_of([] { median({1.0, 0.0}); }).find("zero") != std::string::npos);
  CHECK(speed_test::error_of([] { median({1.0, -0.5}); }).find("negative") != std::string::npos);
  CHECK(speed_test::error_of([&] { median({nan, 1.0}); }).find("NaN") != std::string::npos);
  CHECK(speed_test::error_of([&] { median({1.0, inf}); }).find("infinite") != std::string::npos);
  CHECK(speed_test::error_of([&] { check_samples({1.0, 2.0, nan}, "candidate times"); }).find("candidate times, sample 2") !=
        std::string::npos);
  CHECK_THROWS_AS(median_ci({1, 2, 3, 4, 5, 6, 0}), course::Error);
  CHECK_NOTHROW(check_samples({1e-6, 3.0}, "tiny but positive"));
}

TEST_CASE("binomial(n, 1/2) CDF matches exact values and its symmetry") {
  CHECK(binomial_half_cdf(0, 1) == doctest::Approx(0.5));
  CHECK(binomial_half_cdf(1, 10) == doctest::Approx(11.0 / 1024.0));
  CHECK(binomial_half_cdf(2, 10) == doctest::Approx(56.0 / 1024.0));
  CHECK(binomial_half_cdf(10, 10) == 1.0);
  CHECK(binomial_half_cdf(50, 101) == doctest::Approx(0.5));  // odd n: exactly half below the middle
  // Large n must neither underflow nor overflow: P(B <= 2000) for n = 4000 is just over 1/2.
  const double big = binomial_half_cdf(2000, 4000);
  CHECK(big > 0.5);
  CHECK(big < 0.51);
}

TEST_CASE("interval ranks: the narrowest symmetric pair that reaches the level") {
  // Textbook values for a 95% interval of the median.
  CHECK(median_ci_ranks(6, 0.95) == std::pair<std::size_t, std::size_t>{1, 6});
  CHECK(median_ci_ranks(10, 0.95) == std::pair<std::size_t, std::size_t>{2, 9});
  CHECK(median_ci_ranks(20, 0.95) == std::pair<std::size_t, std::size_t>{6, 15});
  CHECK(median_ci_ranks(31, 0.95) == std::pair<std::size_t, std::size_t>{10, 22});
  CHECK(median_ci_ranks(100, 0.95) == std::pair<std::size_t, std::size_t>{40, 61});
  CHECK(median_ci_coverage(2, 10) == doctest::Approx(1.0 - 22.0 / 1024.0));
  for (std::size_t n : {6u, 15u, 31u, 77u, 200u}) {
    const auto [l, u] = median_ci_ranks(n, 0.95);
    CHECK(u == n + 1 - l);
    CHECK(median_ci_coverage(l, n) >= 0.95);
    if (2 * (l + 1) <= n + 1) CHECK(median_ci_coverage(l + 1, n) < 0.95);  // one narrower falls short
  }
  CHECK(min_samples_for(0.95) == 6);
  CHECK(min_samples_for(0.99) == 8);
  // Too few samples: min..max, with the (lower) coverage it really has.
  const Interval tiny = median_ci({1.0, 2.0, 3.0}, 0.95);
  CHECK(tiny.lower == 1.0);
  CHECK(tiny.upper == 3.0);
  CHECK(tiny.coverage == doctest::Approx(0.75));
  CHECK_THROWS_AS(median_ci({1.0, 2.0}, 1.0), course::Error);
  CHECK_THROWS_AS(median_ci({1.0, 2.0}, 0.0), course::Error);
  CHECK_THROWS_AS(median_ci({1.0, 2.0}, std::nan("")), course::Error);
}

TEST_CASE("the median interval covers the true median ~95% of the time, whatever the distribution") {
  std::mt19937_64 rng(20240611);
  const int trials = 2000;
  // Standard error of a coverage estimate from 2000 trials is about 0.004; 0.015 is ~4 of them.
  const double tolerance = 0.015;

  SUBCASE("skewed: log-normal timings, n = 31") {
    auto draw = [](std::mt19937_64& r) { return std::exp(std::normal_distribution<double>(0.0, 0.5)(r)); };
    const auto [l, u] = median_ci_ranks(31, 0.95);
    const double exact = median_ci_coverage(l, 31);
    const double seen = simulated_coverage(draw, 1.0, 31, l, trials, rng);
    MESSAGE("log-normal n=31: exact coverage " << exact << ", simulated " << seen);
    CHECK(exact >= 0.95);
    CHECK(std::fabs(seen - exact) < tolerance);
    // The same check has teeth: an interval one rank narrower misses 95% clearly.
    const double narrower = simulated_coverage(draw, 1.0, 31, l + 1, trials, rng);
    CHECK(narrower < 0.945);
  }
  SUBCASE("long tail: exponential timings, n = 10") {
    auto draw = [](std::mt19937_64& r) { return std::exponential_distribution<double>(1.0)(r); };
    const auto [l, u] = median_ci_ranks(10, 0.95);
    const double exact = median_ci_coverage(l, 10);
    const double seen = simulated_coverage(draw, std::log(2.0), 10, l, trials, rng);
    MESSAGE("exponential n=10: exact coverage " << exact << ", simulated " << seen);
    CHECK(std::fabs(seen - exact) < tolerance);
  }
  SUBCASE("median_ci itself, uniform timings, n = 50") {
    std::uniform_real_distribution<double> uniform(1.0, 3.0);  // true median 2
    int covered = 0;
    double width = 0;
    for (int t = 0; t < trials; ++t) {
      std::vector<double> x(50);
      for (double& v : x) v = uniform(rng);
      const Interval ci = median_ci(x);
      CHECK(ci.lower <= ci.point);
      CHECK(ci.point <= ci.upper);
      covered += ci.lower <= 2.0 && 2.0 <= ci.upper;
      width += ci.upper - ci.lower;
    }
    const double exact = median_ci_coverage(median_ci_ranks(50, 0.95).first, 50);
    CHECK(std::fabs(covered / double(trials) - exact) < tolerance);
    CHECK(width / trials < 0.6);  // informative, not just min..max (which would be ~1.9 wide)
  }
}

TEST_CASE("speed-up is the median of round-by-round ratios reference/candidate") {
  const Interval exact = speedup_ci({2, 4, 6, 8, 10, 12}, {1, 2, 3, 4, 5, 6});
  CHECK(exact.point == 2.0);  // every round says 2x, whatever the overall level of that round
  CHECK(exact.lower == 2.0);
  CHECK(exact.upper == 2.0);
  CHECK(exact.n == 6);

  const Interval slower = speedup_ci({1, 1, 1, 1, 1, 1, 1}, {2, 2, 2, 2, 2, 2, 2});
  CHECK(slower.point == 0.5);

  CHECK_THROWS_AS(speedup_ci({1, 2, 3}, {1, 2}), course::Error);
  CHECK(speed_test::error_of([] { speedup_ci({1, 2, 3}, {1, 0, 3}); }).find("candidate times, sample 1") != std::string::npos);
  CHECK(speed_test::error_of([] { speedup_ci({1, -2, 3}, {1, 1, 3}); }).find("reference times") != std::string::npos);
}
