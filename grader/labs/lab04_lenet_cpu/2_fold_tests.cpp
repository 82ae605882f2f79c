// Lab 04 tests: fold_batchnorm (lecture section "Folding batch-norm into the convolution").
#include <cmath>
#include <limits>

#include "lab04_test_support.hpp"

using course::Shape;
using course::Tensor;

TEST_CASE("fold: the lecture's worked example (one filter, eps 0.001)") {
  // w = [[1, -2], [0.5, 3]], b = 0.5; gamma 3, beta 0.25, mean 1.5, var 3.999, eps 0.001:
  // scale = 3 / sqrt(4) = 1.5, so w' = [[1.5, -3], [0.75, 4.5]] and b' = (0.5 - 1.5)*1.5 + 0.25 = -1.25.
  const Tensor w(Shape{1, 1, 2, 2}, {1.0f, -2.0f, 0.5f, 3.0f});
  const Tensor b(Shape{1}, 0.5f);
  Tensor folded_w = grader::poisoned(w.shape()), folded_b = grader::poisoned({1});
  lab04::fold_batchnorm(w, b, Tensor(Shape{1}, 3.0f), Tensor(Shape{1}, 0.25f), Tensor(Shape{1}, 1.5f),
                        Tensor(Shape{1}, 3.999f), 0.001, folded_w, folded_b);
  grader::check_tensor("folded weight", folded_w, Tensor(Shape{1, 1, 2, 2}, {1.5f, -3.0f, 0.75f, 4.5f}), {1e-6, 1e-6});
  grader::check_tensor("folded bias", folded_b, Tensor(Shape{1}, -1.25f), {1e-6, 1e-6});

  // The lecture's patch [[2, 1], [4, -1]]: conv gives -0.5, batch-norm -2.75, the folded conv -2.75.
  const Tensor patch(Shape{1, 1, 2, 2}, {2.0f, 1.0f, 4.0f, -1.0f});
  const Tensor conv = golden::lab04_conv2d(patch, w, b, 0, 1);
  CHECK(conv[0] == doctest::Approx(-0.5).epsilon(1e-6));
  const Tensor folded = golden::lab04_conv2d(patch, folded_w, folded_b, 0, 1);
  CHECK(folded[0] == doctest::Approx(-2.75).epsilon(1e-6));

  // The lecture's warning: folding with PyTorch's default 1e-5 instead gives -2.750371.
  lab04::fold_batchnorm(w, b, Tensor(Shape{1}, 3.0f), Tensor(Shape{1}, 0.25f), Tensor(Shape{1}, 1.5f),
                        Tensor(Shape{1}, 3.999f), 1e-5, folded_w, folded_b);
  CHECK(golden::lab04_conv2d(patch, folded_w, folded_b, 0, 1)[0] == doctest::Approx(-2.750371).epsilon(1e-6));
}

TEST_CASE("fold: the lecture's check-yourself question (two input channels, 1x1 kernel)") {
  // gamma 2, beta 1, mean 0.5, var 0.24, eps 0.01: scale 4, so [0.25, -0.5] -> [1, -2] and
  // bias 1 -> (1 - 0.5)*4 + 1 = 3.
  const Tensor w(Shape{1, 2, 1, 1}, {0.25f, -0.5f});
  Tensor folded_w = grader::poisoned(w.shape()), folded_b = grader::poisoned({1});
  lab04::fold_batchnorm(w, Tensor(Shape{1}, 1.0f), Tensor(Shape{1}, 2.0f), Tensor(Shape{1}, 1.0f),
                        Tensor(Shape{1}, 0.5f), Tensor(Shape{1}, 0.24f), 0.01, folded_w, folded_b);
  grader::check_tensor("folded weight", folded_w, Tensor(Shape{1, 2, 1, 1}, {1.0f, -2.0f}), {1e-6, 1e-6});
  grader::check_tensor("folded bias", folded_b, Tensor(Shape{1}, 3.0f), {1e-6, 1e-6});
}

TEST_CASE("fold: a non-default eps (1e-3, as in Keras) must be used, not PyTorch's 1e-5") {
  // Small variances make the two epsilons give clearly different scales: with var = 1e-3 the
  // scale is gamma/sqrt(2e-3) with eps 1e-3 but gamma/sqrt(1.01e-3) with eps 1e-5.
  course::Rng rng = grader::case_rng("fold: eps 1e-3");
  const Tensor w = rng.tensor({4, 3, 3, 3});
  const Tensor b = rng.tensor({4});
  const lab04_tests::BatchNormParams bn{rng.tensor({4}, 0.5f, 2.0f), rng.tensor({4}), rng.tensor({4}),
                                        Tensor(Shape{4}, {1e-3f, 2e-3f, 0.01f, 0.5f})};
  Tensor folded_w = grader::poisoned(w.shape()), folded_b = grader::poisoned({4});
  lab04::fold_batchnorm(w, b, bn.gamma, bn.beta, bn.mean, bn.var, 1e-3, folded_w, folded_b);
  const golden::Lab04FoldedConv expected = golden::lab04_fold_batchnorm(w, b, bn.gamma, bn.beta, bn.mean, bn.var, 1e-3);
  grader::check_tensor("folded weight with eps 1e-3", folded_w, expected.weight, lab04_tests::kLayerTolerance);
  grader::check_tensor("folded bias with eps 1e-3", folded_b, expected.bias, lab04_tests::kLayerTolerance);

  // The lecture's question: var 1e-3 trained with eps 1e-3 gives scale 1/sqrt(0.002) = 22.36;
  // folding with 1e-5 would give 1/sqrt(0.00101) = 31.47, 1.41 times too large.
  const Tensor unit_w(Shape{1, 1, 1, 1}, 1.0f), one(Shape{1}, 1.0f), zero(Shape{1}, 0.0f), var(Shape{1}, 1e-3f);
  Tensor unit_folded = grader::poisoned({1, 1, 1, 1}), unit_bias = grader::poisoned({1});
  lab04::fold_batchnorm(unit_w, zero, one, zero, zero, var, 1e-3, unit_folded, unit_bias);
  CHECK(unit_folded[0] == doctest::Approx(22.36068).epsilon(1e-6));
  lab04::fold_batchnorm(unit_w, zero, one, zero, zero, var, 1e-5, unit_folded, unit_bias);
  CHECK(unit_folded[0] == doctest::Approx(31.46584).epsilon(1e-6));

  lab04_tests::FoldCase fc;
  fc.n = 2, fc.c = 3, fc.h = 9, fc.w = 7, fc.out = 5, fc.kernel = 3, fc.pad = 1, fc.eps = 1e-3;
  lab04_tests::check_fold_case("conv+BN vs folded conv with eps 1e-3", fc, rng);
}

TEST_CASE("fold: a convolution without bias (empty tensor) and LeNet's two layer shapes") {
  course::Rng rng = grader::case_rng("fold: no bias");
  lab04_tests::FoldCase no_bias;
  no_bias.n = 1, no_bias.c = 2, no_bias.h = 6, no_bias.w = 6, no_bias.out = 3, no_bias.kernel = 3, no_bias.bias = false;
  lab04_tests::check_fold_case("conv without bias", no_bias, rng);

  lab04_tests::FoldCase conv1;
  conv1.n = 1, conv1.c = 1, conv1.h = 28, conv1.w = 28, conv1.out = 6, conv1.kernel = 5, conv1.pad = 2;
  lab04_tests::check_fold_case("LeNet conv1 + bn1", conv1, rng);
  lab04_tests::FoldCase conv2;
  conv2.n = 1, conv2.c = 6, conv2.h = 14, conv2.w = 14, conv2.out = 16, conv2.kernel = 5;
  lab04_tests::check_fold_case("LeNet conv2 + bn2", conv2, rng);
}

TEST_CASE("fold: the same output buffers reused for a second, different layer") {
  course::Rng rng = grader::case_rng("fold: reuse");
  const Tensor w1 = rng.tensor({3, 2, 3, 3}), b1 = rng.tensor({3});
  const Tensor w2 = rng.tensor({3, 2, 3, 3}), b2 = rng.tensor({3});
  const lab04_tests::BatchNormParams bn1 = lab04_tests::random_batchnorm(rng, 3);
  const lab04_tests::BatchNormParams bn2 = lab04_tests::random_batchnorm(rng, 3);
  Tensor folded_w = grader::poisoned(w1.shape()), folded_b = grader::poisoned({3});
  lab04::fold_batchnorm(w1, b1, bn1.gamma, bn1.beta, bn1.mean, bn1.var, 1e-5, folded_w, folded_b);
  lab04::fold_batchnorm(w2, b2, bn2.gamma, bn2.beta, bn2.mean, bn2.var, 1e-5, folded_w, folded_b);
  const golden::Lab04FoldedConv expected = golden::lab04_fold_batchnorm(w2, b2, bn2.gamma, bn2.beta, bn2.mean, bn2.var, 1e-5);
  grader::check_tensor("second fold's weight", folded_w, expected.weight, lab04_tests::kLayerTolerance);
  grader::check_tensor("second fold's bias", folded_b, expected.bias, lab04_tests::kLayerTolerance);
}

TEST_CASE("fold: wrong shapes and parameters are rejected") {
  const Tensor w(Shape{4, 3, 3, 3}, 0.5f), b(Shape{4}, 0.0f), k4(Shape{4}, 1.0f), k3(Shape{3}, 1.0f);
  Tensor fw(w.shape()), fb(Shape{4});
  grader::check_rejects("2-D conv_weight", [&] {
    Tensor fw2(Shape{4, 27});
    lab04::fold_batchnorm(Tensor(Shape{4, 27}, 1.0f), b, k4, k4, k4, k4, 1e-5, fw2, fb);
  }, "conv_weight");
  grader::check_rejects("conv_bias of the wrong length", [&] { lab04::fold_batchnorm(w, k3, k4, k4, k4, k4, 1e-5, fw, fb); },
                        "conv_bias");
  grader::check_rejects("gamma with C instead of K values",
                        [&] { lab04::fold_batchnorm(w, b, k3, k4, k4, k4, 1e-5, fw, fb); }, "gamma");
  grader::check_rejects("beta of the wrong length", [&] { lab04::fold_batchnorm(w, b, k4, k3, k4, k4, 1e-5, fw, fb); },
                        "beta");
  grader::check_rejects("running_mean of the wrong length",
                        [&] { lab04::fold_batchnorm(w, b, k4, k4, k3, k4, 1e-5, fw, fb); }, "running_mean");
  grader::check_rejects("running_var of the wrong length",
                        [&] { lab04::fold_batchnorm(w, b, k4, k4, k4, k3, 1e-5, fw, fb); }, "running_var");
  grader::check_rejects("NaN variance", [&] {
    lab04::fold_batchnorm(w, b, k4, k4, k4, Tensor(Shape{4}, std::numeric_limits<float>::quiet_NaN()), 1e-5, fw, fb);
  }, "running_var");
  grader::check_rejects("eps = 0", [&] { lab04::fold_batchnorm(w, b, k4, k4, k4, k4, 0.0, fw, fb); }, "eps");
  grader::check_rejects("infinite eps", [&] {
    lab04::fold_batchnorm(w, b, k4, k4, k4, k4, std::numeric_limits<double>::infinity(), fw, fb);
  }, "eps");
  grader::check_rejects("folded_weight of the wrong shape", [&] {
    Tensor wrong(Shape{4, 3, 3, 2});
    lab04::fold_batchnorm(w, b, k4, k4, k4, k4, 1e-5, wrong, fb);
  }, "folded_weight");
  grader::check_rejects("folded_bias of the wrong shape", [&] {
    Tensor wrong(Shape{3});
    lab04::fold_batchnorm(w, b, k4, k4, k4, k4, 1e-5, fw, wrong);
  }, "folded_bias");
  // Every extent at least 1: with no filters (K = 0) there is nothing to fold, and a per-filter
  // size of numel / K would divide by zero.
  const Tensor none(Shape{0});
  grader::check_rejects("no filters (K = 0)", [&] {
    Tensor fw0(Shape{0, 3, 3, 3}), fb0(Shape{0});
    lab04::fold_batchnorm(Tensor(Shape{0, 3, 3, 3}), Tensor(), none, none, none, none, 1e-5, fw0, fb0);
  }, "conv_weight");
  grader::check_rejects("no input channels (C = 0)", [&] {
    Tensor fw0(Shape{4, 0, 3, 3});
    lab04::fold_batchnorm(Tensor(Shape{4, 0, 3, 3}), b, k4, k4, k4, k4, 1e-5, fw0, fb);
  }, "conv_weight");
}

TEST_CASE("fold: every small filter shape (K, C, R, S <= 3), with and without bias") {
  course::Rng rng = grader::case_rng("fold sweep");
  grader::Sweep sweep("fold_batchnorm over every small filter shape");
  for (std::int64_t k = 1; k <= 3 && sweep.running(); ++k)
    for (std::int64_t c = 1; c <= 3 && sweep.running(); ++c)
      for (std::int64_t r = 1; r <= 3 && sweep.running(); ++r)
        for (std::int64_t s = 1; s <= 3 && sweep.running(); ++s)
          for (bool with_bias : {true, false}) {
            const double eps = with_bias ? 1e-5 : 1e-3;
            const Tensor w = rng.tensor({k, c, r, s});
            const Tensor b = with_bias ? rng.tensor({k}) : Tensor();
            const lab04_tests::BatchNormParams bn = lab04_tests::random_batchnorm(rng, k);
            const std::string what = "conv_weight " + course::shape_to_string(w.shape()) +
                                     (with_bias ? ", with bias" : ", without bias") + ", eps " + std::to_string(eps);
            sweep.run(what, [&]() -> std::string {
              Tensor fw = grader::poisoned(w.shape()), fb = grader::poisoned({k});
              lab04::fold_batchnorm(w, b, bn.gamma, bn.beta, bn.mean, bn.var, eps, fw, fb);
              const golden::Lab04FoldedConv expected =
                  golden::lab04_fold_batchnorm(w, b, bn.gamma, bn.beta, bn.mean, bn.var, eps);
              const std::string weight = grader::mismatch(fw, expected.weight, lab04_tests::kLayerTolerance);
              if (!weight.empty()) return "folded_weight: " + weight;
              const std::string bias = grader::mismatch(fb, expected.bias, lab04_tests::kLayerTolerance);
              return bias.empty() ? "" : "folded_bias: " + bias;
            });
          }
  sweep.finish(162);
}

TEST_CASE("fold: conv -> batch-norm equals the folded conv on random shapes") {
  course::Rng rng = grader::case_rng("fold: random shapes");
  for (int i = 0; i < 20; ++i) {
    lab04_tests::FoldCase fc;
    fc.n = rng.integer(1, 2);
    fc.c = rng.integer(1, 4);
    fc.out = rng.integer(1, 6);
    fc.kernel = rng.integer(1, 5);
    fc.pad = rng.integer(0, 2);
    fc.stride = rng.integer(1, 2);
    fc.h = rng.integer(static_cast<int>(fc.kernel), 10);
    fc.w = rng.integer(static_cast<int>(fc.kernel), 10);
    fc.eps = i % 3 == 0 ? 1e-3 : 1e-5;
    fc.bias = i % 4 != 3;
    lab04_tests::check_fold_case("fold random case " + std::to_string(i), fc, rng);
  }
}
