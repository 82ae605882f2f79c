// The decision rule (PASS / FAIL / INCONCLUSIVE and what happens at the end) and the summary line.
#include <doctest/doctest.h>

#include <string>

#include "course/error.hpp"
#include "course/speed/compare.hpp"
#include "synthetic.hpp"

using namespace course::speed;
using speed_test::FakeMachine;

namespace {

Interval ci(double lower, double point, double upper) {
  Interval i;
  i.lower = lower;
  i.point = point;
  i.upper = upper;
  i.coverage = 0.95;
  i.n = 31;
  return i;
}

ScheduleOptions rounds(int min_rounds, int max_rounds) {
  ScheduleOptions o;
  o.warmup_rounds = 2;
  o.min_rounds = min_rounds;
  o.max_rounds = max_rounds;
  return o;
}

}  // namespace

TEST_CASE("decide: the interval against the threshold") {
  const Requirement twice = Requirement::at_least_faster(2.0);
  CHECK(twice.min_speedup == 2.0);

  Decision d = decide(ci(2.1, 2.3, 2.5), twice);
  CHECK(d.verdict == Verdict::pass);
  CHECK(d.passed);
  CHECK_FALSE(d.by_point_estimate);

  d = decide(ci(2.0, 2.1, 2.2), twice);  // touching the threshold from above still clears it
  CHECK(d.verdict == Verdict::pass);

  d = decide(ci(1.5, 1.7, 1.99), twice);
  CHECK(d.verdict == Verdict::fail);
  CHECK_FALSE(d.passed);
  CHECK(d.explanation.find("below the required 2.00x") != std::string::npos);

  d = decide(ci(1.9, 2.05, 2.2), twice);
  CHECK(d.verdict == Verdict::inconclusive);
  CHECK(d.passed);  // judged on the point estimate ...
  CHECK(d.by_point_estimate);  // ... and flagged
  CHECK(d.explanation.find("too close to call") != std::string::npos);

  d = decide(ci(1.8, 1.95, 2.1), twice);
  CHECK(d.verdict == Verdict::inconclusive);
  CHECK_FALSE(d.passed);

  d = decide(ci(0.1, 0.2, 0.3), Requirement::measure_only());
  CHECK(d.verdict == Verdict::pass);

  CHECK(std::string(to_string(Verdict::inconclusive)) == "INCONCLUSIVE");
}

TEST_CASE("requirements: 'at least X times faster' and 'within Y of the reference'") {
  const Requirement within10 = Requirement::within(0.10);
  CHECK(within10.min_speedup == doctest::Approx(1.0 / 1.1));
  CHECK(within10.description == "within 10% of the reference time");
  // 5% slower is within 10%; 20% slower is not.
  CHECK(decide(ci(1 / 1.06, 1 / 1.05, 1 / 1.04), within10).verdict == Verdict::pass);
  CHECK(decide(ci(1 / 1.22, 1 / 1.2, 1 / 1.18), within10).verdict == Verdict::fail);
  CHECK(Requirement::at_least_faster(1.5).description == "at least 1.50x faster than the reference");
  CHECK_THROWS_AS(Requirement::at_least_faster(0.0), course::Error);
  CHECK_THROWS_AS(Requirement::at_least_faster(-2.0), course::Error);
  CHECK_THROWS_AS(Requirement::at_least_faster(std::nan("")), course::Error);
  CHECK_THROWS_AS(Requirement::within(-0.1), course::Error);
  CHECK_THROWS_AS(decide(ci(1, 2, 3), Requirement{-1.0, "bad"}), course::Error);
}

TEST_CASE("scheduler: a clear pass and a clear fail are decided at min_rounds") {
  // Candidate 3x faster than the reference, 3% noise per run.
  FakeMachine m(11);
  SpeedResult r = compare(m.implementation('A', 1.2, 0.03), m.implementation('B', 0.4, 0.03),
                          Requirement::at_least_faster(2.0), rounds(15, 200));
  CHECK(r.decision.verdict == Verdict::pass);
  CHECK(r.rounds == 15);
  CHECK(r.stopped_because == StopReason::decided);
  CHECK(r.speedup.point == doctest::Approx(3.0).epsilon(0.02));
  CHECK(r.speedup.lower <= r.speedup.point);
  CHECK(r.speedup.point <= r.speedup.upper);

  FakeMachine m2(12);
  r = compare(m2.implementation('A', 1.2, 0.03), m2.implementation('B', 0.4, 0.03),
              Requirement::at_least_faster(4.0), rounds(15, 200));
  CHECK(r.decision.verdict == Verdict::fail);
  CHECK_FALSE(r.decision.passed);
  CHECK(r.rounds == 15);

  // A slower candidate fails "within 10%".
  FakeMachine m3(13);
  r = compare(m3.implementation('A', 1.0, 0.03), m3.implementation('B', 1.3, 0.03), Requirement::within(0.10),
              rounds(15, 200));
  CHECK(r.decision.verdict == Verdict::fail);
}

TEST_CASE("scheduler: borderline -> inconclusive -> more rounds -> decided") {
  // True speed-up 3.00 against a 2.94 threshold (2% apart) with 8% noise per run: 15 rounds
  // usually cannot tell (the interval is about +-5% wide), around a hundred can. Ten independent
  // comparisons: nearly all need more rounds, and all of them end in the right answer.
  int extended = 0;
  for (unsigned long long seed = 1; seed <= 10; ++seed) {
    FakeMachine m(seed);
    const SpeedResult r = compare(m.implementation('A', 1.2, 0.08), m.implementation('B', 0.4, 0.08),
                                  Requirement::at_least_faster(2.94), rounds(15, 400));
    if (seed == 1) MESSAGE(r.summary() << " -- " << r.decision.explanation);
    CHECK(r.stopped_because == StopReason::decided);
    CHECK(r.decision.verdict == Verdict::pass);
    CHECK(r.reference_ms.size() == static_cast<std::size_t>(r.rounds));
    extended += r.rounds > 15;
  }
  CHECK(extended >= 8);
}

TEST_CASE("scheduler: still inconclusive at max_rounds -> judged on the point estimate, flagged") {
  // The candidate is exactly at the threshold: no number of rounds settles it.
  FakeMachine m(31);
  const SpeedResult r = compare(m.implementation('A', 1.0, 0.05), m.implementation('B', 0.5, 0.05),
                                Requirement::at_least_faster(2.0), rounds(15, 40));
  CHECK(r.rounds == 40);
  CHECK(r.stopped_because == StopReason::max_rounds);
  CHECK(r.decision.verdict == Verdict::inconclusive);
  CHECK(r.decision.by_point_estimate);
  CHECK(r.decision.passed == (r.speedup.point >= 2.0));
}

TEST_CASE("summary line") {
  SpeedResult r;
  r.reference = ci(1.2, 1.236, 1.25);
  r.candidate = ci(0.41, 0.412, 0.415);
  r.speedup = ci(2.91, 3.0, 3.08);
  r.rounds = 31;
  CHECK(r.summary() == "candidate 0.412 ms vs reference 1.236 ms: 3.00x faster (95% CI 2.91-3.08x), n=31 rounds");

  // Slower than the reference: said as "x slower", the interval inverted accordingly.
  r.candidate = ci(1.5, 1.545, 1.6);
  r.speedup = ci(0.75, 0.8, 0.8333);
  r.rounds = 15;
  r.confidence = 0.99;
  CHECK(r.summary() == "candidate 1.545 ms vs reference 1.236 ms: 1.25x slower (99% CI 1.20-1.33x), n=15 rounds");

  CHECK(format_ms(0.0123) == "0.0123 ms");  // microsecond kernels keep their digits
  CHECK(format_ms(12.5) == "12.500 ms");
}
