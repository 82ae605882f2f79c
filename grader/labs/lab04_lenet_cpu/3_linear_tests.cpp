// Lab 04 tests: linear_forward (lecture section "Fully connected layers").
#include "lab04_test_support.hpp"

using course::Shape;
using course::Tensor;

TEST_CASE("linear: the lecture's worked example (batch of 2, 3 inputs, 2 outputs)") {
  const Tensor w(Shape{2, 3}, {1.0f, 0.0f, -1.0f, 2.0f, 1.0f, 0.5f});
  const Tensor b(Shape{2}, {0.5f, -1.0f});
  const Tensor x(Shape{2, 3}, {3.0f, 2.0f, 1.0f, 0.0f, -1.0f, 4.0f});
  Tensor y = grader::poisoned({2, 2});
  lab04::linear_forward(x, w, b, y);
  grader::check_tensor("linear of the lecture's example", y, Tensor(Shape{2, 2}, {2.5f, 7.5f, -3.5f, 0.0f}), {1e-6, 1e-6});
}

TEST_CASE("linear: the lecture's flatten example picks element (c=3, h=2, w=4) as feature 89") {
  // A [1,16,5,5] activation whose only non-zero value sits at (3, 2, 4); after flattening, a
  // weight row that is one-hot at column 89 must read it, one that is one-hot at the NHWC
  // position 227 must not.
  Tensor features(Shape{1, 16, 5, 5}, 0.0f);
  features.at(0, 3, 2, 4) = 7.0f;
  Tensor w(Shape{2, 400}, 0.0f);
  w[89] = 1.0f;
  w[400 + 227] = 1.0f;
  Tensor y = grader::poisoned({1, 2});
  lab04::linear_forward(features.reshaped({1, 400}), w, Tensor(Shape{2}, 0.0f), y);
  grader::check_tensor("one-hot rows", y, Tensor(Shape{1, 2}, {7.0f, 0.0f}), {0.0, 0.0});

  // The check-yourself question: the last element (15, 4, 4) is the last feature, 399.
  features.at(0, 15, 4, 4) = -2.0f;
  w[400 + 399] = 1.0f;
  lab04::linear_forward(features.reshaped({1, 400}), w, Tensor(Shape{2}, 0.0f), y);
  grader::check_tensor("one-hot rows, second input", y, Tensor(Shape{1, 2}, {7.0f, -2.0f}), {0.0, 0.0});
}

TEST_CASE("linear: LeNet's three layers and degenerate sizes") {
  course::Rng rng = grader::case_rng("linear: LeNet shapes");
  lab04_tests::check_linear_case("fc1 400 -> 120", 3, 400, 120, rng);
  lab04_tests::check_linear_case("fc2 120 -> 84", 3, 120, 84, rng);
  lab04_tests::check_linear_case("fc3 84 -> 10", 3, 84, 10, rng);
  lab04_tests::check_linear_case("1 -> 1", 1, 1, 1, rng);
  lab04_tests::check_linear_case("one output", 4, 17, 1, rng);
  lab04_tests::check_linear_case("one input", 4, 1, 9, rng);
}

TEST_CASE("linear: the same output buffer reused for a second input") {
  course::Rng rng = grader::case_rng("linear: reuse");
  const Tensor w = rng.tensor({5, 7}), b = rng.tensor({5});
  const Tensor x1 = rng.tensor({3, 7}), x2 = rng.tensor({3, 7});
  Tensor y = grader::poisoned({3, 5});
  lab04::linear_forward(x1, w, b, y);
  grader::check_tensor("first call", y, golden::lab04_linear(x1, w, b), lab04_tests::kLinearTolerance);
  lab04::linear_forward(x2, w, b, y);
  grader::check_tensor("second call, same output", y, golden::lab04_linear(x2, w, b), lab04_tests::kLinearTolerance);
}

TEST_CASE("linear: wrong shapes are rejected") {
  const Tensor x(Shape{2, 6}, 1.0f), w(Shape{4, 6}, 1.0f), b(Shape{4}, 0.0f);
  Tensor y(Shape{2, 4});
  grader::check_rejects("4-D input (not flattened)", [&] {
    lab04::linear_forward(Tensor(Shape{2, 6, 1, 1}, 1.0f), w, b, y);
  }, "input");
  grader::check_rejects("1-D weight", [&] { lab04::linear_forward(x, Tensor(Shape{24}, 1.0f), b, y); }, "weight");
  grader::check_rejects("transposed weight [IN, OUT]", [&] { lab04::linear_forward(x, Tensor(Shape{6, 4}, 1.0f), b, y); },
                        "input features");
  grader::check_rejects("bias of the wrong length", [&] { lab04::linear_forward(x, w, Tensor(Shape{6}, 0.0f), y); },
                        "bias");
  grader::check_rejects("output of the wrong shape", [&] {
    Tensor wrong(Shape{4, 2});
    lab04::linear_forward(x, w, b, wrong);
  }, "output");
  // Every extent at least 1, as in the earlier labs.
  grader::check_rejects("no input features", [&] {
    Tensor out(Shape{2, 4});
    lab04::linear_forward(Tensor(Shape{2, 0}), Tensor(Shape{4, 0}), b, out);
  }, "input");
  grader::check_rejects("empty batch", [&] {
    Tensor out(Shape{0, 4});
    lab04::linear_forward(Tensor(Shape{0, 6}), w, b, out);
  }, "input");
  grader::check_rejects("no outputs", [&] {
    Tensor out(Shape{2, 0});
    lab04::linear_forward(x, Tensor(Shape{0, 6}), Tensor(Shape{0}), out);
  }, "weight");
}

TEST_CASE("linear: every small shape (N <= 3, IN, OUT <= 6)") {
  course::Rng rng = grader::case_rng("linear sweep");
  grader::Sweep sweep("linear_forward over every small shape");
  for (std::int64_t n = 1; n <= 3 && sweep.running(); ++n)
    for (std::int64_t in = 1; in <= 6 && sweep.running(); ++in)
      for (std::int64_t out = 1; out <= 6 && sweep.running(); ++out) {
        const Tensor x = rng.tensor({n, in}), w = rng.tensor({out, in}), b = rng.tensor({out});
        sweep.run("input " + course::shape_to_string(x.shape()) + ", weight " + course::shape_to_string(w.shape()), [&] {
          Tensor y = grader::poisoned({n, out});
          lab04::linear_forward(x, w, b, y);
          return grader::mismatch(y, golden::lab04_linear(x, w, b), lab04_tests::kLinearTolerance);
        });
      }
  sweep.finish(108);
}

TEST_CASE("linear: random non-square shapes match the golden reference") {
  course::Rng rng = grader::case_rng("linear: random shapes");
  for (int i = 0; i < 25; ++i) {
    int in = rng.integer(1, 64), out = rng.integer(1, 64);
    if (in == out) ++out;  // square weights hide a transposed index
    lab04_tests::check_linear_case("linear random case " + std::to_string(i), rng.integer(1, 6), in, out, rng);
  }
}
