#include "course/rng.hpp"

#include <chrono>
#include <cstdlib>
#include <string>

#include "course/error.hpp"

namespace course {

std::uint64_t test_seed() {
  if (const char* env = std::getenv("COURSE_SEED"); env && *env) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (*end != '\0') throw Error(std::string("COURSE_SEED='") + env + "' is not a non-negative integer");
    return v;
  }
  std::random_device device;
  const auto now = static_cast<std::uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  // Keep seeds short enough to retype: 9 decimal digits.
  return ((std::uint64_t{device()} << 32) ^ device() ^ now) % 1000000000ull;
}

float Rng::uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(engine_); }

int Rng::integer(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(engine_); }

void Rng::fill_uniform(Tensor& t, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  for (auto& v : t.values()) v = dist(engine_);
}

Tensor Rng::tensor(const Shape& shape, float lo, float hi) {
  Tensor t(shape);
  fill_uniform(t, lo, hi);
  return t;
}

}  // namespace course
