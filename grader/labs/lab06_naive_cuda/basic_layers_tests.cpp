// Lab 06 tests, part 1: the one-thread-per-output kernels that are not convolutions -- ReLU, max
// pooling, the fully connected layer and argmax -- against the golden CPU references, on sizes
// that are deliberately NOT multiples of the block size (the bounds check), on N = 1, and on the
// lecture's examples. Simplest first: the first failure a student sees is the simplest one.
#include <string>
#include <vector>

#include "lab03_reference.hpp"
#include "lab06_test_support.hpp"

using course::Shape;
using course::Tensor;

namespace {

golden::Pool2d pool_params(int window, int stride) { return {window, window, stride, stride, 0, 0, true}; }

void check_pool_case(const std::string& what, const Tensor& x, int window, int stride) {
  const Tensor expected = golden::max_pool2d(x, pool_params(window, stride));
  Tensor out = grader::poisoned(expected.shape());
  lab06_harness::max_pool2d(x, window, stride, out);
  grader::check_tensor(what + " (x " + course::shape_to_string(x.shape()) + ", window " + std::to_string(window) +
                           ", stride " + std::to_string(stride) + ")",
                       out, expected, lab06_tests::kExact);
}

void check_linear_case(const std::string& what, int n, int in, int out_features, course::Rng& rng) {
  const Tensor x = rng.tensor({n, in}), w = rng.tensor({out_features, in}), b = rng.tensor({out_features});
  Tensor out = grader::poisoned({n, out_features});
  lab06_harness::linear_forward(x, w, b, out);
  grader::check_tensor(what + " (N " + std::to_string(n) + ", in " + std::to_string(in) + ", out " +
                           std::to_string(out_features) + ")",
                       out, golden::lab04_linear(x, w, b), lab06_tests::kSumTolerance);
}

}  // namespace

TEST_CASE("relu_inplace: the lecture's five values") {
  Tensor data(Shape{5}, {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f});
  lab06_harness::relu_inplace(data);
  grader::check_tensor("relu of the lecture's example", data, Tensor(Shape{5}, {0.0f, 0.0f, 0.0f, 0.5f, 3.0f}),
                       lab06_tests::kExact);
}

TEST_CASE("relu_inplace: counts around the block size (1, 31, 255, 256, 257, 1000, 70001)") {
  course::Rng rng = grader::case_rng("relu_inplace: counts");
  for (int count : {1, 31, 255, 256, 257, 1000, 70001}) {
    Tensor data = rng.tensor({count}, -2.0f, 2.0f);
    const Tensor expected = golden::relu(data);
    lab06_harness::relu_inplace(data);
    grader::check_tensor("relu of " + std::to_string(count) + " values", data, expected, lab06_tests::kExact);
  }
}

TEST_CASE("max_pool2d: the lecture's 4x4 example (window 2, stride 2)") {
  const Tensor x(Shape{1, 1, 4, 4}, {1, 3, -1, -4,  //
                                     2, 0, -2, -3,  //
                                     5, 1, 0, 7,    //
                                     4, 6, 8, -1});
  Tensor out = grader::poisoned({1, 1, 2, 2});
  lab06_harness::max_pool2d(x, 2, 2, out);
  grader::check_tensor("max pooling of the lecture's example", out, Tensor(Shape{1, 1, 2, 2}, {3, -1, 6, 8}),
                       lab06_tests::kExact);
}

TEST_CASE("max_pool2d: LeNet's two pooling layers, N = 1 and N = 3") {
  course::Rng rng = grader::case_rng("max_pool2d: LeNet");
  for (int n : {1, 3}) {
    check_pool_case("pool1", rng.tensor({n, 6, 28, 28}), 2, 2);
    check_pool_case("pool2", rng.tensor({n, 16, 10, 10}), 2, 2);
  }
}

TEST_CASE("max_pool2d: random shapes, windows and strides; all-negative inputs; odd sizes") {
  course::Rng rng = grader::case_rng("max_pool2d: random");
  for (int i = 0; i < 20; ++i) {
    const int window = rng.integer(1, 3), stride = rng.integer(1, 3);
    const int h = rng.integer(window, 19), w = rng.integer(window, 19);
    check_pool_case("random pooling case " + std::to_string(i), rng.tensor({rng.integer(1, 3), rng.integer(1, 7), h, w}),
                    window, stride);
  }
  // Every value negative: a maximum that starts from 0 returns 0 instead of the largest value.
  check_pool_case("all-negative input", rng.tensor({2, 3, 6, 6}, -5.0f, -1.0f), 2, 2);
  // Odd extents: the last row and column do not fill a window and are dropped.
  check_pool_case("odd extents", rng.tensor({1, 2, 7, 9}), 2, 2);
}

TEST_CASE("linear_forward: the lecture's worked example (batch of 2, 3 inputs, 2 outputs)") {
  const Tensor w(Shape{2, 3}, {1.0f, 0.0f, -1.0f, 2.0f, 1.0f, 0.5f});
  const Tensor b(Shape{2}, {0.5f, -1.0f});
  const Tensor x(Shape{2, 3}, {3.0f, 2.0f, 1.0f, 0.0f, -1.0f, 4.0f});
  Tensor out = grader::poisoned({2, 2});
  lab06_harness::linear_forward(x, w, b, out);
  grader::check_tensor("linear of the lecture's example", out, Tensor(Shape{2, 2}, {2.5f, 7.5f, -3.5f, 0.0f}),
                       {1e-6, 1e-6});
}

TEST_CASE("linear_forward: LeNet's three layers, N = 1, and random non-square shapes") {
  course::Rng rng = grader::case_rng("linear_forward: shapes");
  check_linear_case("fc1 400 -> 120", 1, 400, 120, rng);
  check_linear_case("fc2 120 -> 84", 3, 120, 84, rng);
  check_linear_case("fc3 84 -> 10", 3, 84, 10, rng);
  // 3 x 257 = 771 outputs: three blocks of 256 threads and three threads in a fourth.
  check_linear_case("outputs past a block boundary", 3, 9, 257, rng);
  for (int i = 0; i < 15; ++i) {
    const int in = rng.integer(1, 70);
    int out = rng.integer(1, 70);
    if (out == in) ++out;  // square weights hide a transposed index
    check_linear_case("random linear case " + std::to_string(i), rng.integer(1, 40), in, out, rng);
  }
}

TEST_CASE("argmax_rows: ties go to the lowest index; negative rows; one class") {
  const Tensor logits(Shape{4, 4}, {0.5f, 2.0f, 2.0f, -1.0f,   // tie between 1 and 2 -> 1
                                    -3.0f, -1.0f, -2.0f, -5.0f,  // all negative -> 1
                                    7.0f, 7.0f, 7.0f, 7.0f,      // all equal -> 0
                                    0.0f, 0.0f, 0.0f, 1e-7f});   // the last one, barely
  CHECK(lab06_harness::argmax_rows(logits) == std::vector<int>{1, 1, 0, 3});
  CHECK(lab06_harness::argmax_rows(Tensor(Shape{3, 1}, {4.0f, -4.0f, 0.0f})) == std::vector<int>{0, 0, 0});
}

TEST_CASE("argmax_rows: random rows, N = 1 to 1,000 (past a block boundary)") {
  course::Rng rng = grader::case_rng("argmax_rows: random");
  for (int n : {1, 255, 257, 1000}) {
    const Tensor logits = rng.tensor({n, rng.integer(2, 12)}, -10.0f, 10.0f);
    lab06_tests::check_labels("argmax of " + std::to_string(n) + " rows", lab06_harness::argmax_rows(logits),
                              lab06_tests::row_argmax(logits));
  }
}
