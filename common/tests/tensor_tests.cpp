#include <doctest/doctest.h>

#include "course/tensor.hpp"
#include "expect_error.hpp"

using course::Shape;
using course::Tensor;
using course::testing::expect_error;

namespace {
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif
}  // namespace

TEST_CASE("tensor: shape, row-major strides and NCHW indexing") {
  Tensor t = Tensor::nchw(2, 3, 4, 5, 1.5f);
  CHECK(t.numel() == 120);
  CHECK(t.bytes() == 480);
  CHECK(t.strides() == std::vector<std::int64_t>{60, 20, 5, 1});
  CHECK(t.at(1, 2, 3, 4) == 1.5f);
  t.at(1, 2, 3, 4) = 7.0f;
  CHECK(t[119] == 7.0f);  // the last element in memory is the last NCHW index
  t.at(0, 1, 0, 0) = 3.0f;
  CHECK(t[20] == 3.0f);   // one channel step = H*W elements
}

TEST_CASE("tensor: value constructor checks the count; reshape keeps the data") {
  expect_error([] { Tensor(Shape{2, 2}, std::vector<float>{1, 2, 3}); }, {"[2, 2]", "needs 4 values, got 3"});
  Tensor t(Shape{2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor flat = t.reshaped({6});
  CHECK(flat.shape() == Shape{6});
  CHECK(flat[5] == 5.0f);
  expect_error([&] { (void)t.reshaped({4}); }, {"cannot view [2, 3] as [4]"});
}

TEST_CASE("tensor: expect_shape names the tensor and both shapes") {
  Tensor t = Tensor::nchw(1, 6, 28, 28);
  t.expect_shape({1, 6, 28, 28}, "conv1 output");
  expect_error([&] { t.expect_shape({1, 6, 14, 14}, "pool1 output"); },
               {"pool1 output", "[1, 6, 14, 14]", "[1, 6, 28, 28]"});
  expect_error([] { (void)course::shape_numel({2, -1}); }, {"negative extent"});
}

TEST_CASE("tensor: shapes that are negative, overflow or cannot be allocated are course::Errors") {
  // Negative extents, in both constructors.
  expect_error([] { Tensor(Shape{2, -3}); }, {"negative extent", "[2, -3]"});
  expect_error([] { Tensor(Shape{-1}, std::vector<float>{}); }, {"negative extent", "[-1]"});
  expect_error([] { (void)Tensor::nchw(1, 1, -28, 28); }, {"negative extent"});
  // 2^32 * 2^32 wraps to 0 in 64 bits: it must not pass for an empty tensor.
  const std::int64_t two32 = std::int64_t{1} << 32;
  expect_error([&] { (void)course::shape_numel({two32, two32}); }, {"too many elements", "[4294967296, 4294967296]"});
  expect_error([&] { Tensor(Shape{two32, two32}, std::vector<float>{}); }, {"too many elements"});
  // A zero extent does not excuse the others: the strides would still overflow.
  expect_error([&] { (void)course::shape_numel({0, two32, two32}); }, {"too many elements"});
  CHECK(course::shape_numel({0, two32}) == 0);
  // The limit is the byte size fitting in an int64: 2^61 floats are 2^63 bytes (too many), 2^60 fit.
  // A count within the limit may still be impossible to allocate: 2^47 floats (512 TiB) exceed
  // the address space whatever the kernel's overcommit policy, and must fail as a course::Error.
  expect_error([] { (void)course::shape_numel({std::int64_t{1} << 61}); }, {"too many elements"});
  CHECK(course::shape_numel({std::int64_t{1} << 60}) == (std::size_t{1} << 60));
  // AddressSanitizer's operator new aborts on a failed allocation instead of throwing
  // std::bad_alloc (allocator_may_return_null covers only malloc), so a sanitizer build skips it.
  if (!kAddressSanitizer)
    expect_error([] { Tensor(Shape{std::int64_t{1} << 47}); }, {"cannot allocate", "[140737488355328]"});
}

TEST_CASE("tensor: zero-element tensors are valid and empty") {
  Tensor t(Shape{0, 3});
  CHECK(t.numel() == 0);
  CHECK(t.bytes() == 0);
  CHECK(t.strides() == std::vector<std::int64_t>{3, 1});
  Tensor v(Shape{3, 0}, std::vector<float>{});
  CHECK(v.numel() == 0);
}
