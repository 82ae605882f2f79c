// Lab 04 tests: batchnorm_inference (lecture section "Batch-norm at inference").
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "lab04_test_support.hpp"

using course::Shape;
using course::Tensor;

namespace {

// The lecture's two-channel worked example: channel 0 has scale 1.5 and shift -2 (eps = 0.001
// makes var + eps exactly 4), channel 1 has scale 1 and shift 1.
struct LectureBatchNorm {
  Tensor gamma{Shape{2}, {3.0f, 0.5f}};
  Tensor beta{Shape{2}, {0.25f, -1.0f}};
  Tensor mean{Shape{2}, {1.5f, -2.0f}};
  Tensor var{Shape{2}, {3.999f, 0.249f}};
  double eps = 0.001;
};

}  // namespace

TEST_CASE("batchnorm: the lecture's worked example") {
  const LectureBatchNorm bn;
  const Tensor x(Shape{1, 2, 2, 2}, {-0.5f, 1.5f, 3.5f, 0.0f,   // channel 0
                                     0.0f, -2.0f, 1.0f, 4.0f});  // channel 1
  const Tensor expected(Shape{1, 2, 2, 2}, {-2.75f, 0.25f, 3.25f, -2.0f, 1.0f, -1.0f, 2.0f, 5.0f});
  Tensor y = grader::poisoned(x.shape());
  lab04::batchnorm_inference(x, bn.gamma, bn.beta, bn.mean, bn.var, bn.eps, y);
  grader::check_tensor("batch-norm of the lecture's example", y, expected, {1e-5, 1e-6});
}

TEST_CASE("batchnorm: the lecture's training-mode example, replayed with its batch statistics") {
  // Batch values 1, 1, 3, 3: mean 2, biased variance 1, normalised to -1, -1, 1, 1 (gamma 1, beta 0).
  const Tensor x(Shape{2, 1, 1, 2}, {1.0f, 1.0f, 3.0f, 3.0f});
  const double eps = 1e-5;
  Tensor y = grader::poisoned(x.shape());
  lab04::batchnorm_inference(x, Tensor(Shape{1}, 1.0f), Tensor(Shape{1}, 0.0f), Tensor(Shape{1}, 2.0f),
                             Tensor(Shape{1}, 1.0f), eps, y);
  const float unit = static_cast<float>(1.0 / std::sqrt(1.0 + eps));
  grader::check_tensor("normalised batch", y, Tensor(Shape{2, 1, 1, 2}, {-unit, -unit, unit, unit}), {1e-6, 1e-6});
}

TEST_CASE("batchnorm: edge shapes (one element, one channel, 1x1 planes, LeNet's bn1)") {
  course::Rng rng = grader::case_rng("batchnorm: edge shapes");
  lab04_tests::check_batchnorm_case("1x1x1x1", 1, 1, 1, 1, 1e-5, rng);
  lab04_tests::check_batchnorm_case("channels only", 5, 7, 1, 1, 1e-5, rng);
  lab04_tests::check_batchnorm_case("one wide row", 1, 2, 1, 33, 1e-5, rng);
  lab04_tests::check_batchnorm_case("LeNet bn1", 2, 6, 28, 28, 1e-5, rng);
  lab04_tests::check_batchnorm_case("large eps", 2, 3, 4, 4, 0.5, rng);
}

TEST_CASE("batchnorm: eps is the caller's, not a constant") {
  // With var = 0 the result is (x - mean) * gamma / sqrt(eps): a hard-coded 1e-5 is off by a
  // factor of 10 when the caller passes 1e-3.
  const Tensor x(Shape{1, 1, 1, 3}, {1.0f, 2.0f, -1.0f});
  const Tensor one(Shape{1}, 1.0f), zero(Shape{1}, 0.0f);
  for (double eps : {1e-3, 1e-5, 0.01}) {
    Tensor y = grader::poisoned(x.shape());
    lab04::batchnorm_inference(x, one, zero, zero, zero, eps, y);
    const auto inv = static_cast<float>(1.0 / std::sqrt(eps));
    grader::check_tensor("batch-norm with var 0, eps " + std::to_string(eps), y,
                         Tensor(Shape{1, 1, 1, 3}, {inv, 2.0f * inv, -inv}), {1e-6, 1e-5});
  }
}

TEST_CASE("batchnorm: in place, and the same output buffer reused for a different input") {
  course::Rng rng = grader::case_rng("batchnorm: in place");
  const lab04_tests::BatchNormParams bn = lab04_tests::random_batchnorm(rng, 3);
  const Tensor a = rng.tensor({2, 3, 5, 4}, -2.0f, 2.0f);
  const Tensor b = rng.tensor({2, 3, 5, 4}, -2.0f, 2.0f);

  Tensor in_place = a;
  lab04::batchnorm_inference(in_place, bn.gamma, bn.beta, bn.mean, bn.var, 1e-5, in_place);
  grader::check_tensor("in-place batch-norm", in_place, golden::lab04_batchnorm(a, bn.gamma, bn.beta, bn.mean, bn.var, 1e-5),
                       lab04_tests::kLayerTolerance);

  Tensor out = grader::poisoned(a.shape());
  lab04::batchnorm_inference(a, bn.gamma, bn.beta, bn.mean, bn.var, 1e-5, out);
  lab04::batchnorm_inference(b, bn.gamma, bn.beta, bn.mean, bn.var, 1e-3, out);
  grader::check_tensor("second call on the same output", out,
                       golden::lab04_batchnorm(b, bn.gamma, bn.beta, bn.mean, bn.var, 1e-3), lab04_tests::kLayerTolerance);
}

TEST_CASE("batchnorm: wrong shapes and parameters are rejected") {
  const Tensor x(Shape{2, 3, 4, 4}, 1.0f);
  const Tensor c3(Shape{3}, 1.0f), c4(Shape{4}, 1.0f);
  Tensor y(x.shape());
  grader::check_rejects("3-D input", [&] {
    Tensor y3(Shape{3, 4, 4});
    lab04::batchnorm_inference(Tensor(Shape{3, 4, 4}, 1.0f), c3, c3, c3, c3, 1e-5, y3);
  }, "input");
  grader::check_rejects("gamma of the wrong length", [&] { lab04::batchnorm_inference(x, c4, c3, c3, c3, 1e-5, y); }, "gamma");
  grader::check_rejects("beta of the wrong length", [&] { lab04::batchnorm_inference(x, c3, c4, c3, c3, 1e-5, y); }, "beta");
  grader::check_rejects("running_mean of the wrong length",
                        [&] { lab04::batchnorm_inference(x, c3, c3, c4, c3, 1e-5, y); }, "running_mean");
  grader::check_rejects("running_var of the wrong length",
                        [&] { lab04::batchnorm_inference(x, c3, c3, c3, c4, 1e-5, y); }, "running_var");
  grader::check_rejects("negative variance", [&] {
    lab04::batchnorm_inference(x, c3, c3, c3, Tensor(Shape{3}, {1.0f, -0.5f, 1.0f}), 1e-5, y);
  }, "running_var");
  grader::check_rejects("eps = 0", [&] { lab04::batchnorm_inference(x, c3, c3, c3, c3, 0.0, y); }, "eps");
  grader::check_rejects("negative eps", [&] { lab04::batchnorm_inference(x, c3, c3, c3, c3, -1e-5, y); }, "eps");
  grader::check_rejects("NaN eps", [&] {
    lab04::batchnorm_inference(x, c3, c3, c3, c3, std::numeric_limits<double>::quiet_NaN(), y);
  }, "eps");
  grader::check_rejects("output of the wrong shape", [&] {
    Tensor small(Shape{2, 3, 4, 3});
    lab04::batchnorm_inference(x, c3, c3, c3, c3, 1e-5, small);
  }, "output");
  // Every extent at least 1, as in the earlier labs.
  const Tensor none(Shape{0});
  grader::check_rejects("no channels", [&] {
    Tensor out(Shape{2, 0, 4, 4});
    lab04::batchnorm_inference(Tensor(Shape{2, 0, 4, 4}), none, none, none, none, 1e-5, out);
  }, "input");
  grader::check_rejects("empty batch", [&] {
    Tensor out(Shape{0, 3, 4, 4});
    lab04::batchnorm_inference(Tensor(Shape{0, 3, 4, 4}), c3, c3, c3, c3, 1e-5, out);
  }, "input");
  grader::check_rejects("zero-height planes", [&] {
    Tensor out(Shape{2, 3, 0, 4});
    lab04::batchnorm_inference(Tensor(Shape{2, 3, 0, 4}), c3, c3, c3, c3, 1e-5, out);
  }, "input");
}

TEST_CASE("batchnorm: every small shape (N <= 2, C <= 3, H, W <= 4)") {
  course::Rng rng = grader::case_rng("batchnorm sweep");
  grader::Sweep sweep("batchnorm_inference over every small shape");
  int index = 0;
  for (std::int64_t n = 1; n <= 2 && sweep.running(); ++n)
    for (std::int64_t c = 1; c <= 3 && sweep.running(); ++c)
      for (std::int64_t h = 1; h <= 4 && sweep.running(); ++h)
        for (std::int64_t w = 1; w <= 4 && sweep.running(); ++w, ++index) {
          const double eps = index % 2 == 0 ? 1e-5 : 1e-3;
          const Tensor x = rng.tensor({n, c, h, w}, -3.0f, 3.0f);
          const lab04_tests::BatchNormParams bn = lab04_tests::random_batchnorm(rng, c);
          sweep.run("input " + course::shape_to_string(x.shape()) + ", eps " + std::to_string(eps), [&] {
            Tensor y = grader::poisoned(x.shape());
            lab04::batchnorm_inference(x, bn.gamma, bn.beta, bn.mean, bn.var, eps, y);
            return grader::mismatch(y, golden::lab04_batchnorm(x, bn.gamma, bn.beta, bn.mean, bn.var, eps),
                                    lab04_tests::kLayerTolerance);
          });
        }
  sweep.finish(96);
}

TEST_CASE("batchnorm: random shapes match the golden reference") {
  course::Rng rng = grader::case_rng("batchnorm: random shapes");
  for (int i = 0; i < 25; ++i) {
    const double eps = i % 2 == 0 ? 1e-5 : 1e-3;
    lab04_tests::check_batchnorm_case("batch-norm random case " + std::to_string(i), rng.integer(1, 4),
                                      rng.integer(1, 8), rng.integer(1, 12), rng.integer(1, 12), eps, rng);
  }
}
