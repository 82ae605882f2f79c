// Seeded random inputs for tests. Tests draw a fresh seed each run and print it, so a failure
// can be replayed exactly with COURSE_SEED=<seed>.
#pragma once

#include <cstdint>
#include <random>

#include "course/tensor.hpp"

namespace course {

/// COURSE_SEED from the environment if set (to replay a failure), else a fresh random seed.
std::uint64_t test_seed();

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed), seed_(seed) {}
  std::uint64_t seed() const { return seed_; }

  /// Uniform in [lo, hi).
  float uniform(float lo = -1.0f, float hi = 1.0f);
  /// Uniform integer in [lo, hi] (both ends included).
  int integer(int lo, int hi);
  void fill_uniform(Tensor& t, float lo = -1.0f, float hi = 1.0f);
  /// A new tensor of this shape filled uniformly in [lo, hi).
  Tensor tensor(const Shape& shape, float lo = -1.0f, float hi = 1.0f);

 private:
  std::mt19937_64 engine_;
  std::uint64_t seed_;
};

}  // namespace course
