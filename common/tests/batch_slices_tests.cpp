#include <doctest/doctest.h>

#include <mutex>
#include <set>
#include <thread>

#include "course/batch_slices.hpp"
#include "expect_error.hpp"

using course::Shape;
using course::Tensor;
using course::testing::expect_error;

namespace {

/// A stand-in network: [n, 1, 2, 3] -> [n, 2] (each entry's sum and its first element), so an
/// output row names the input it came from.
Tensor sums(const Tensor& x) {
  const std::int64_t n = x.dim(0);
  Tensor out(Shape{n, 2});
  for (std::int64_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int j = 0; j < 6; ++j) s += x[static_cast<std::size_t>(i * 6 + j)];
    out[static_cast<std::size_t>(i * 2)] = s;
    out[static_cast<std::size_t>(i * 2 + 1)] = x[static_cast<std::size_t>(i * 6)];
  }
  return out;
}

Tensor numbered_batch(std::int64_t n) {
  Tensor x(Shape{n, 1, 2, 3});
  for (std::size_t i = 0; i < x.numel(); ++i) x[i] = static_cast<float>(i);
  return x;
}

}  // namespace

TEST_CASE("forward_in_slices: same rows, in order, whatever the number of threads") {
  const Tensor batch = numbered_batch(37);
  for (const std::int64_t count : {1, 5, 36, 37}) {
    for (const unsigned threads : {1u, 2u, 3u, 8u, 64u}) {
      CAPTURE(count);
      CAPTURE(threads);
      const Tensor split = course::forward_in_slices(batch, count, threads, sums);
      REQUIRE(split.shape() == Shape{count, 2});
      for (std::int64_t i = 0; i < count; ++i) {  // entry i holds 6i .. 6i + 5
        CHECK(split[static_cast<std::size_t>(2 * i)] == static_cast<float>(36 * i + 15));
        CHECK(split[static_cast<std::size_t>(2 * i + 1)] == static_cast<float>(6 * i));
      }
    }
  }
}

TEST_CASE("forward_in_slices: the slices really run on threads of their own") {
  const Tensor batch = numbered_batch(8);
  std::mutex m;
  std::set<std::thread::id> ids;
  course::forward_in_slices(batch, 8, 4, [&](const Tensor& t) {
    const std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
    return sums(t);
  });
  CHECK(ids.size() == 4);
  CHECK(ids.count(std::this_thread::get_id()) == 0);
}

TEST_CASE("forward_in_slices: a slice's error reaches the caller; bad counts are refused") {
  const Tensor batch = numbered_batch(10);
  expect_error([&] {
    course::forward_in_slices(batch, 10, 3, [](const Tensor& t) -> Tensor {
      if (t[0] > 0.0f) throw course::Error("slice failed");
      return sums(t);
    });
  }, {"slice failed"});
  expect_error([&] { course::forward_in_slices(batch, 0, 2, sums); }, {"0 entries", "[10, 1, 2, 3]"});
  expect_error([&] { course::forward_in_slices(batch, 11, 2, sums); }, {"11 entries"});
}
