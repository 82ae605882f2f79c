#include <doctest/doctest.h>

#include <cstdlib>

#include "course/rng.hpp"
#include "expect_error.hpp"

using namespace course;

TEST_CASE("rng: the same seed replays the same inputs, another seed does not") {
  Rng a(42), b(42), c(43);
  Tensor ta = a.tensor({64}), tb = b.tensor({64}), tc = c.tensor({64});
  CHECK(ta.values() == tb.values());
  CHECK(ta.values() != tc.values());
  for (float v : ta.values()) CHECK((v >= -1.0f && v < 1.0f));
  for (int i = 0; i < 100; ++i) {
    const int k = a.integer(1, 3);
    CHECK((k >= 1 && k <= 3));
  }
}

TEST_CASE("rng: COURSE_SEED replays a seed; garbage is rejected") {
  setenv("COURSE_SEED", "12345", 1);
  CHECK(test_seed() == 12345);
  setenv("COURSE_SEED", "12x", 1);
  course::testing::expect_error([] { (void)test_seed(); }, {"COURSE_SEED", "12x"});
  unsetenv("COURSE_SEED");
  CHECK(test_seed() < 1000000000ull);
}
