// The A/B scheduler: the order of runs, drift cancellation, warm-up, the time budget, input
// rotation and the re-check after timing.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "course/error.hpp"
#include "course/speed/compare.hpp"
#include "synthetic.hpp"

using namespace course::speed;
using speed_test::FakeMachine;

namespace {

ScheduleOptions quick(int min_rounds, int max_rounds) {
  ScheduleOptions o;
  o.warmup_rounds = 0;
  o.min_rounds = min_rounds;
  o.max_rounds = max_rounds;
  return o;
}

}  // namespace

TEST_CASE("A B B A alternation: rounds mirror each other, warm-up included") {
  FakeMachine m(1);
  ScheduleOptions o = quick(6, 6);
  o.warmup_rounds = 1;
  const SpeedResult r = compare(m.implementation('A', 1.0, 0.0), m.implementation('B', 0.5, 0.0),
                                Requirement::measure_only(), o);
  // warm-up ABBA, then rounds BAAB ABBA BAAB ABBA BAAB ABBA
  CHECK(m.calls == "ABBA" "BAAB" "ABBA" "BAAB" "ABBA" "BAAB" "ABBA");
  CHECK(r.rounds == 6);
  CHECK(r.warmup_rounds == 1);
  CHECK(r.reference_ms.size() == 6);
  CHECK(r.speedup.point == doctest::Approx(2.0));
  CHECK(r.stopped_because == StopReason::decided);  // measure-only decides at min_rounds
}

TEST_CASE("random alternation: one A and one B per round, both orders, reproducible by seed") {
  auto calls_for = [](std::uint64_t seed) {
    FakeMachine m(1);
    ScheduleOptions o = quick(40, 40);
    o.order = Order::random;
    o.seed = seed;
    compare(m.implementation('A', 1.0, 0.0), m.implementation('B', 1.0, 0.0), Requirement::measure_only(), o);
    return m.calls;
  };
  const std::string calls = calls_for(7);
  REQUIRE(calls.size() == 80);
  int ab = 0, ba = 0;
  for (std::size_t i = 0; i < calls.size(); i += 2) {
    const std::string pair = calls.substr(i, 2);
    REQUIRE((pair == "AB" || pair == "BA"));
    (pair == "AB" ? ab : ba)++;
  }
  CHECK(ab >= 8);  // a fair coin over 40 rounds: both orders well represented
  CHECK(ba >= 8);
  CHECK(calls_for(7) == calls);
  CHECK(calls_for(8) != calls);
}

TEST_CASE("drift: the machine slows down during the run, the alternated ratio stays right") {
  // Every run takes longer the later it happens (e.g. clocks throttling as the GPU heats up):
  // +1% per millisecond of machine time, 4x slower by the end.
  auto drifting = [](FakeMachine& m) { m.slowdown = [](double now_ms) { return 1.0 + 0.01 * now_ms; }; };

  SUBCASE("A B B A cancels a linear drift exactly") {
    FakeMachine m(3);
    drifting(m);
    const SpeedResult r = compare(m.implementation('A', 1.0, 0.0), m.implementation('B', 0.5, 0.0),
                                  Requirement::measure_only(), quick(31, 31));
    CHECK(r.speedup.point == doctest::Approx(2.0).epsilon(0.005));
    CHECK(r.speedup.lower > 1.98);
    CHECK(r.speedup.upper < 2.02);
  }
  SUBCASE("random order: the drift averages out") {
    FakeMachine m(3);
    drifting(m);
    ScheduleOptions o = quick(61, 61);
    o.order = Order::random;
    const SpeedResult r = compare(m.implementation('A', 1.0, 0.01), m.implementation('B', 0.5, 0.01),
                                  Requirement::measure_only(), o);
    CHECK(r.speedup.point == doctest::Approx(2.0).epsilon(0.02));
  }
  SUBCASE("without alternation the same drift gives a wrong answer (why we alternate)") {
    FakeMachine m(3);
    drifting(m);
    Sampler a = m.implementation('A', 1.0, 0.0), b = m.implementation('B', 0.5, 0.0);
    std::vector<double> ref, cand;
    for (int i = 0; i < 31; ++i) ref.push_back(a());  // all of A, then all of B
    for (int i = 0; i < 31; ++i) cand.push_back(b());
    const double naive = median(ref) / median(cand);
    MESSAGE("sequential A...A B...B under drift: " << naive << "x instead of 2x");
    CHECK(naive < 1.8);
  }
  SUBCASE("a sudden step (throttling mid-run) moves the median ratio only a little") {
    FakeMachine m(3);
    m.slowdown = [](double now_ms) { return now_ms < 40.0 ? 1.0 : 1.7; };
    const SpeedResult r = compare(m.implementation('A', 1.0, 0.01), m.implementation('B', 0.5, 0.01),
                                  Requirement::measure_only(), quick(31, 31));
    CHECK(r.speedup.point == doctest::Approx(2.0).epsilon(0.02));
    CHECK(r.reference.point > 1.3);  // the absolute times did move: only the ratio is immune
  }
}

TEST_CASE("time budget: stops adding rounds once the budget is spent, never before min_rounds") {
  // An exactly borderline candidate (same speed as required) never becomes conclusive.
  FakeMachine m(5);
  ScheduleOptions o = quick(10, 1000);
  o.warmup_rounds = 2;
  o.time_budget_s = 0.1;  // 100 ms of fake machine time; each round takes ~3 ms
  o.clock_ms = m.clock();
  const SpeedResult r = compare(m.implementation('A', 1.0, 0.05), m.implementation('B', 0.5, 0.05),
                                Requirement::at_least_faster(2.0), o);
  CHECK(r.stopped_because == StopReason::time_budget);
  CHECK(r.rounds >= 10);
  CHECK(r.rounds < 40);  // 100 ms / 3 ms per round, warm-up included
  CHECK(m.now_ms >= 100.0);

  FakeMachine slow(5);
  o.clock_ms = slow.clock();
  o.time_budget_s = 0.001;  // spent during warm-up already: min_rounds still run
  const SpeedResult minimal = compare(slow.implementation('A', 1.0, 0.05), slow.implementation('B', 0.5, 0.05),
                                      Requirement::at_least_faster(2.0), o);
  CHECK(minimal.rounds == 10);
}

TEST_CASE("bad samples stop the comparison with a message naming the side and the round") {
  FakeMachine m(1);
  int calls = 0;
  Sampler broken = [&] { return ++calls == 9 ? 0.0 : 1.0; };
  const std::string msg = speed_test::error_of([&] {
    compare(m.implementation('A', 1.0, 0.0), broken, Requirement::measure_only(), quick(10, 10));
  });
  // Candidate runs 1-2 are round 0, 3-4 round 1, ...: the 9th is in round 4.
  CHECK(msg.find("candidate, round 4") != std::string::npos);
  CHECK(msg.find("zero") != std::string::npos);

  Sampler nan_in_warmup = [] { return std::nan(""); };
  ScheduleOptions o = quick(10, 10);
  o.warmup_rounds = 1;
  CHECK(speed_test::error_of([&] { compare(nan_in_warmup, m.implementation('B', 1.0, 0.0), Requirement::measure_only(), o); })
            .find("reference, warm-up round 0") != std::string::npos);
  Sampler negative = [] { return -0.25; };
  CHECK(speed_test::error_of([&] { compare(negative, negative, Requirement::measure_only(), quick(10, 10)); }).find("negative") !=
        std::string::npos);
}

TEST_CASE("options are validated") {
  FakeMachine m(1);
  Sampler a = m.implementation('A', 1.0, 0.0);
  auto with = [&](ScheduleOptions o) { return speed_test::error_of([&] { compare(a, a, Requirement::measure_only(), o); }); };
  ScheduleOptions o = quick(5, 10);
  CHECK(with(o).find("min_rounds must be at least 6") != std::string::npos);  // 5 cannot reach 95%
  o = quick(10, 9);
  CHECK(with(o).find("max_rounds") != std::string::npos);
  o = quick(10, 10);
  o.warmup_rounds = -1;
  CHECK(with(o).find("warmup_rounds") != std::string::npos);
  o = quick(10, 10);
  o.time_budget_s = 0;
  CHECK(with(o).find("time_budget_s") != std::string::npos);
  o = quick(10, 10);
  o.confidence = 1.5;
  CHECK(with(o).find("confidence") != std::string::npos);
  CHECK_THROWS_AS(compare(a, Sampler{}, Requirement::measure_only(), quick(10, 10)), course::Error);
}

TEST_CASE("input rotation: every run selects the next set first, both sides see the same sets") {
  std::string log;
  int current = -1;
  auto run_logging = [&](char name) -> TimedRun {
    return [&log, &current, name] {
      log += name;
      log += std::to_string(current);
      log += ' ';
      return name == 'A' ? 2.0 : 1.0;
    };
  };
  int rechecked_with = -1;
  RunHooks hooks;
  hooks.input_sets = 3;
  hooks.select_input = [&](int set) { current = set; };
  hooks.recheck = [&](int last) { rechecked_with = last; };
  ScheduleOptions o = quick(6, 6);
  o.warmup_rounds = 1;
  const SpeedResult r =
      compare_with_hooks(run_logging('A'), run_logging('B'), Requirement::measure_only(), o, hooks);
  CHECK(r.speedup.point == 2.0);
  // Warm-up A0 B0 B1 A1, then B2 A2 A0 B0, ...: within a round the two sides use the same sets.
  CHECK(log.substr(0, 33) == "A0 B0 B1 A1 B2 A2 A0 B0 A1 B1 B2 ");
  CHECK(rechecked_with == (7 * 2 - 1) % 3);  // 7 rounds x 2 runs per side; the last used set
}

TEST_CASE("re-check after timing: a failure is reported, not swallowed") {
  RunHooks hooks;
  hooks.recheck = [](int) { throw course::Error("output[3] is 7, expected 5"); };
  TimedRun run = [] { return 1.0; };
  const std::string msg =
      speed_test::error_of([&] { compare_with_hooks(run, run, Requirement::measure_only(), quick(6, 6), hooks); });
  CHECK(msg.find("re-check after timing failed: output[3] is 7, expected 5") != std::string::npos);
  hooks = {};
  hooks.input_sets = 0;
  CHECK(speed_test::error_of([&] { compare_with_hooks(run, run, Requirement::measure_only(), quick(6, 6), hooks); })
            .find("input_sets") != std::string::npos);
}
