#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "course/compare.hpp"

using namespace course;

TEST_CASE("compare: equal within tolerance passes, outside fails with the index") {
  Tensor e(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor a = e;
  a[4] += 1e-6f;
  CHECK(compare(a, e).ok());
  a[4] = 5.5f;
  Comparison c = compare(a, e);
  CHECK_FALSE(c.ok());
  CHECK(c.mismatches == 1);
  REQUIRE(c.first.size() == 1);
  CHECK(c.first[0].flat_index == 4);
  CHECK(c.max_abs_error == doctest::Approx(0.5));
  CHECK(c.report(e.shape()).find("at [1, 1]: got 5.5, expected 5") != std::string::npos);
}

TEST_CASE("compare: NaN and Inf never pass, whatever the tolerance") {
  Tensor e(Shape{3}, {0, 1, 2});
  Tensor a = e;
  a[1] = std::numeric_limits<float>::quiet_NaN();
  a[2] = std::numeric_limits<float>::infinity();
  Comparison c = compare(a, e, Tolerance{1e30, 1e30});
  CHECK_FALSE(c.ok());
  CHECK(c.nonfinite == 2);
  CHECK(c.mismatches == 2);
  CHECK(c.report().find("NaN/Inf") != std::string::npos);
}

TEST_CASE("compare: a poisoned output that is never written fails") {
  Tensor e(Shape{4}, {1, 2, 3, 4});
  Tensor out(Shape{4});
  poison(out);
  out[0] = 1;  // a "kernel" that wrote only the first element
  Comparison c = compare(out, e);
  CHECK(c.mismatches == 3);
  CHECK(count_nonfinite(out.data(), out.numel()) == 3);
}

TEST_CASE("compare: shape differences are reported as such") {
  Comparison c = compare(Tensor(Shape{2, 2}), Tensor(Shape{4}));
  CHECK_FALSE(c.ok());
  CHECK(c.report() == "shape mismatch: got [2, 2], expected [4]");
}

TEST_CASE("compare: at most max_reported mismatches are kept, in index order") {
  Tensor e(Shape{100}, 0.0f), a(Shape{100}, 1.0f);
  Comparison c = compare(a, e, {}, 5);
  CHECK(c.mismatches == 100);
  REQUIRE(c.first.size() == 5);
  CHECK(c.first[4].flat_index == 4);
}

TEST_CASE("compare: relative L2 error and index unravelling") {
  const float e[2] = {3, 4}, a[2] = {3, 4.5f};
  CHECK(relative_l2_error(a, e, 2) == doctest::Approx(0.1));
  CHECK(unravel_index(0, {2, 3, 4, 5}) == "[0, 0, 0, 0]");
  CHECK(unravel_index(119, {2, 3, 4, 5}) == "[1, 2, 3, 4]");
  CHECK(unravel_index(26, {2, 3, 4, 5}) == "[0, 1, 1, 1]");
}
