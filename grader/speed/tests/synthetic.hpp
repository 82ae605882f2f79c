// Synthetic "implementations" for the CPU tests: times drawn from a known distribution, on a
// fake machine whose clock advances by each run's time and whose speed can drift.
#pragma once

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "course/error.hpp"
#include "course/speed/compare.hpp"

namespace speed_test {

/// A shared fake machine: `now_ms` advances by every run's time; `slowdown(now_ms)` multiplies
/// every run's time (1 = no drift), the way clock throttling would.
struct FakeMachine {
  explicit FakeMachine(unsigned long long seed) : rng(seed) {}
  std::mt19937_64 rng;
  double now_ms = 0;
  std::function<double(double)> slowdown = [](double) { return 1.0; };
  std::string calls;  ///< "A" / "B" per run, in order

  /// An implementation whose undisturbed time is base_ms x lognormal noise (sigma in log space).
  course::speed::Sampler implementation(char name, double base_ms, double sigma) {
    return [this, name, base_ms, sigma] {
      std::normal_distribution<double> noise(0.0, sigma);
      const double t = base_ms * slowdown(now_ms) * std::exp(noise(rng));
      now_ms += t;
      calls += name;
      return t;
    };
  }
  std::function<double()> clock() {
    return [this] { return now_ms; };
  }
};

/// The message of the course::Error that `call` throws, or "" if it returns normally.
inline std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const course::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace speed_test
