// The device query must be safe on a machine without a GPU or driver (CI): no crash, no throw
// from has_gpu(), and a reason that a person can read.
#include <doctest/doctest.h>

#include "course/device.hpp"
#include "course/timing_stats.hpp"
#include "expect_error.hpp"

using namespace course;

TEST_CASE("device query: has_gpu() and the reason agree, on any machine") {
  const bool gpu = has_gpu();
  const std::string reason = gpu_unavailable_reason();
  CHECK(gpu == reason.empty());
  if (!gpu) course::testing::expect_error([] { (void)query_device(0); }, {"query_device(0)"});
  course::testing::expect_error([] { (void)query_device(999); }, {"query_device(999)"});
}

TEST_CASE("timer statistics: median, min, max, mean") {
  TimingStats s = summarize_samples({5, 1, 3, 2, 4});
  CHECK(s.median_ms == 3);
  CHECK(s.min_ms == 1);
  CHECK(s.max_ms == 5);
  CHECK(s.mean_ms == 3);
  CHECK(summarize_samples({4, 1, 3, 2}).median_ms == 2.5);
  CHECK(summarize_samples({}).samples_ms.empty());
  CHECK(s.summary().find("median 3.0000 ms") == 0);
}
