#include <doctest/doctest.h>

#include "course/tensor.hpp"
#include "expect_error.hpp"

using course::Shape;
using course::Tensor;
using course::testing::expect_error;

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
