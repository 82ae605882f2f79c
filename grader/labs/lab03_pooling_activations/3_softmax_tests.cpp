// Lab 03 tests: row-wise softmax that must survive huge logits.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "lab03_test_support.hpp"

using course::Shape;
using course::Tensor;
using lab03_tests::kFloat;

namespace {

Tensor rows(std::int64_t n, std::int64_t k, std::vector<float> values) { return Tensor({n, k}, std::move(values)); }

// Every row of a softmax must be a probability distribution: entries in [0, 1], sum 1.
void check_rows_are_distributions(const std::string& what, const Tensor& p) {
  const std::int64_t N = p.dim(0), K = p.dim(1);
  for (std::int64_t n = 0; n < N; ++n) {
    double sum = 0.0;
    bool in_range = true;
    for (std::int64_t k = 0; k < K; ++k) {
      const float v = p[static_cast<std::size_t>(n * K + k)];
      in_range = in_range && v >= 0.0f && v <= 1.0f;
      sum += v;
    }
    CHECK_MESSAGE(in_range, what << ": row " << n << " has an entry outside [0, 1]");
    CHECK_MESSAGE(std::abs(sum - 1.0) <= 1e-5, what << ": row " << n << " sums to " << sum << ", not 1");
  }
}

}  // namespace

TEST_CASE("softmax: lecture example [1, 2, 3], shifted by +999 and mirrored at -1000") {
  const Tensor logits = rows(3, 3, {1, 2, 3, 1000, 1001, 1002, -1000, -1001, -1002});
  Tensor p = grader::poisoned(logits.shape());
  lab03::softmax(logits, p);
  // The naive formula gives inf/inf = NaN on the second row and 0/0 = NaN on the third.
  grader::check_tensor("softmax of the lecture's rows", p,
                       rows(3, 3,
                            {0.09003057f, 0.24472847f, 0.66524096f, 0.09003057f, 0.24472847f, 0.66524096f, 0.66524096f,
                             0.24472847f, 0.09003057f}),
                       kFloat);
  // Log-sum-exp of [1000, 1001, 1002] is 1002.40761, so log p = [-2.40761, -1.40761, -0.40761].
  CHECK(std::log(p[3]) == doctest::Approx(-2.40761).epsilon(1e-5));
  CHECK(std::log(p[4]) == doctest::Approx(-1.40761).epsilon(1e-5));
  CHECK(std::log(p[5]) == doctest::Approx(-0.40761).epsilon(1e-4));
}

TEST_CASE("softmax: check-yourself question 5 ([0, 0, 0, 0] and [5, 5 + ln 3])") {
  const Tensor zeros({1, 4}, 0.0f);
  Tensor p = grader::poisoned({1, 4});
  lab03::softmax(zeros, p);
  grader::check_tensor("softmax([0, 0, 0, 0])", p, Tensor({1, 4}, 0.25f), kFloat);
  const Tensor two = rows(1, 2, {5.0f, 5.0f + std::log(3.0f)});
  Tensor q = grader::poisoned({1, 2});
  lab03::softmax(two, q);
  grader::check_tensor("softmax([5, 5 + ln 3])", q, rows(1, 2, {0.25f, 0.75f}), kFloat);
}

TEST_CASE("softmax: large logits do not overflow (finite, correct)") {
  const Tensor logits = rows(6, 4,
                             {
                                 1000, 1000, 1000, 1000,          // equal huge values: uniform
                                 88.5f, 89, 89.5f, 90,            // just past exp's float limit (88.72)
                                 -1000, -1000, -1000, -1000,      // every exp underflows without the shift
                                 -1000, 0, 1000, 999,             // mixed signs
                                 3.0e38f, -3.0e38f, 0, 3.0e38f,   // near FLT_MAX both ways
                                 500, 500.5f, 499.5f, 501,        // large and close together
                             });
  Tensor p = grader::poisoned(logits.shape());
  lab03::softmax(logits, p);
  grader::check_tensor("softmax of huge logits", p, golden::softmax(logits), kFloat);
  check_rows_are_distributions("softmax of huge logits", p);
  CHECK(p[0] == doctest::Approx(0.25).epsilon(1e-6));
  CHECK(p[8] == doctest::Approx(0.25).epsilon(1e-6));
  CHECK(p[16] == doctest::Approx(0.5).epsilon(1e-6));
}

TEST_CASE("softmax: adding a constant to a row does not change it") {
  course::Rng rng = grader::case_rng("softmax shift");
  const Tensor base = rng.tensor({3, 12}, -4.0f, 4.0f);
  Tensor shifted = base;
  for (std::size_t i = 0; i < shifted.numel(); ++i) shifted[i] += 700.0f;
  Tensor p = grader::poisoned(base.shape()), q = grader::poisoned(base.shape());
  lab03::softmax(base, p);
  lab03::softmax(shifted, q);
  // +700 rounds the logits to float spacing ~6e-5, hence the looser tolerance.
  grader::check_tensor("softmax(x + 700) vs softmax(x)", q, p, {1e-4, 1e-3});
}

TEST_CASE("softmax: one-hot at huge gaps") {
  const Tensor logits = rows(3, 5, {0, 200, 0, 0, 0, -50, -50, 150, -50, -50, 1e6f, 0, 0, 0, 0});
  Tensor p = grader::poisoned(logits.shape());
  lab03::softmax(logits, p);
  grader::check_tensor("one-hot softmax", p, rows(3, 5, {0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0}), kFloat);
  CHECK(p[1] == doctest::Approx(1.0).epsilon(1e-7));
  CHECK(p[0] < 1e-30f);
}

TEST_CASE("softmax: single-class rows, and invalid shapes rejected") {
  const Tensor one = rows(4, 1, {-5, 0, 1e4f, -1e4f});
  Tensor p = grader::poisoned(one.shape());
  lab03::softmax(one, p);
  grader::check_tensor("softmax of one logit per row is 1", p, Tensor({4, 1}, 1.0f), kFloat);

  const Tensor logits({2, 5}, 0.5f);
  grader::check_rejects("probabilities of another shape", [&] {
    Tensor out = grader::poisoned({5, 2});
    lab03::softmax(logits, out);
  }, "probabilities");
  grader::check_rejects("1-D logits", [&] {
    Tensor out = grader::poisoned({10});
    lab03::softmax(logits.reshaped({10}), out);
  }, "logits");
  grader::check_rejects("4-D logits", [&] {
    Tensor out = grader::poisoned({2, 5, 1, 1});
    lab03::softmax(logits.reshaped({2, 5, 1, 1}), out);
  }, "logits");
  grader::check_rejects("rows of length 0", [&] {
    const Tensor empty({3, 0});
    Tensor out({3, 0});
    lab03::softmax(empty, out);
  });
  grader::check_rejects("no rows (N = 0)", [&] {
    const Tensor empty({0, 4});
    Tensor out({0, 4});
    lab03::softmax(empty, out);
  }, "logits");
}

TEST_CASE("softmax: every small shape (N <= 3, K <= 10)") {
  course::Rng rng = grader::case_rng("softmax sweep");
  grader::Sweep sweep("softmax over every small shape");
  for (std::int64_t n = 1; n <= 3 && sweep.running(); ++n)
    for (std::int64_t k = 1; k <= 10 && sweep.running(); ++k) {
      const Tensor logits = rng.tensor({n, k}, -20.0f, 20.0f);
      sweep.run("logits " + course::shape_to_string(logits.shape()), [&] {
        Tensor p = grader::poisoned(logits.shape());
        lab03::softmax(logits, p);
        return grader::mismatch(p, golden::softmax(logits), kFloat);
      });
    }
  sweep.finish(30);
}

TEST_CASE("softmax: random logits vs golden, rows sum to 1, same buffer reused") {
  course::Rng rng = grader::case_rng("softmax random");
  for (int i = 0; i < 20; ++i) {
    const Shape s{rng.integer(1, 8), rng.integer(1, 40)};
    const float scale = i % 3 == 0 ? 1.0f : (i % 3 == 1 ? 10.0f : 60.0f);
    const Tensor logits = rng.tensor(s, -scale, scale);
    Tensor p = grader::poisoned(s);
    lab03::softmax(logits, p);
    const std::string what = "softmax " + course::shape_to_string(s) + " logits in +-" + std::to_string(scale);
    grader::check_tensor(what, p, golden::softmax(logits), kFloat);
    check_rows_are_distributions(what, p);
    // New logits into the same buffer.
    const Tensor logits2 = rng.tensor(s, -2.0f, 2.0f);
    lab03::softmax(logits2, p);
    grader::check_tensor(what + ", second call on the same buffer", p, golden::softmax(logits2), kFloat);
  }
}
