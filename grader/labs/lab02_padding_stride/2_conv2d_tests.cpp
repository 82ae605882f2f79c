// Lab 02: conv2d_forward with padding, stride and dilation -- the lecture's numeric examples,
// fixed edge cases, random combinations against the golden reference, and invalid arguments.
#include <vector>

#include "lab02_test_support.hpp"

namespace {

using course::Shape;
using course::Tensor;
using lab02_tests::check_random_conv;
using lab02_tests::params;

// The 5x5 input and 3x3 kernel of the lecture's worked example.
Tensor lecture_input() {
  return Tensor(Shape{1, 1, 5, 5}, {1, 2, 0, 1, 3,  //
                                    0, 1, 2, 3, 1,  //
                                    2, 1, 0, 1, 0,  //
                                    3, 0, 1, 2, 1,  //
                                    1, 2, 1, 0, 2});
}
Tensor lecture_kernel() { return Tensor(Shape{1, 1, 3, 3}, {1, 0, -1, 2, 1, 0, 0, 1, 1}); }
Tensor zero_bias(std::int64_t k) { return Tensor(Shape{k}, 0.0f); }

// Runs conv2d_forward into a poisoned output of the expected shape and returns it.
Tensor run(const Tensor& x, const Tensor& w, const Tensor& b, const lab02::Conv2dParams& p, const Shape& out_shape) {
  Tensor out = grader::poisoned(out_shape);
  lab02::conv2d_forward(x, w, b, p, out);
  return out;
}

}  // namespace

TEST_CASE("conv2d: lecture example, 5x5 input, 3x3 kernel, padding 1, stride 2") {
  const Tensor expected(Shape{1, 1, 3, 3}, {2, 9, 6, 4, 3, 6, 1, 3, 4});
  const Tensor got = run(lecture_input(), lecture_kernel(), zero_bias(1), lab02::Conv2dParams::symmetric(1, 2), {1, 1, 3, 3});
  grader::check_tensor("lecture example (pad 1, stride 2)", got, expected);
}

TEST_CASE("conv2d: lecture example with stride 1 keeps 5x5") {
  const Tensor expected(Shape{1, 1, 5, 5}, {2, 7, 9, 5, 6,  //
                                            1, 3, 6, 5, 8,  //
                                            4, 4, 3, 5, 6,  //
                                            5, 11, 2, 6, 8,  //
                                            1, 6, 3, 2, 4});
  const Tensor got = run(lecture_input(), lecture_kernel(), zero_bias(1), lab02::Conv2dParams::symmetric(1), {1, 1, 5, 5});
  grader::check_tensor("lecture example (pad 1, stride 1)", got, expected);
}

TEST_CASE("conv2d: lecture example with top/left padding only") {
  // Same window starts as the symmetric case; without bottom/right padding the third row and
  // column of windows no longer fit, so the result is the top-left 2x2 of the stride-2 output.
  const Tensor expected(Shape{1, 1, 2, 2}, {2, 9, 4, 3});
  const Tensor got = run(lecture_input(), lecture_kernel(), zero_bias(1), params(1, 0, 1, 0, 2, 2), {1, 1, 2, 2});
  grader::check_tensor("lecture example (top/left padding only)", got, expected);
}

TEST_CASE("conv2d: lecture example with dilation 2 and padding 2") {
  const Tensor expected(Shape{1, 1, 5, 5}, {3, 4, 2, 6, 3,  //
                                            4, 3, 4, 7, 6,  //
                                            4, 2, 5, 5, 2,  //
                                            1, -3, 6, 3, 5,  //
                                            1, 1, 5, 5, 4});
  const Tensor got = run(lecture_input(), lecture_kernel(), zero_bias(1), lab02::Conv2dParams::symmetric(2, 1, 2), {1, 1, 5, 5});
  grader::check_tensor("lecture example (dilation 2, padding 2)", got, expected);
}

TEST_CASE("conv2d: lecture 1-D examples (a single row, H = R = 1)") {
  const Tensor x(Shape{1, 1, 1, 4}, {1, 2, 3, 4});
  const Tensor ones(Shape{1, 1, 1, 3}, {1, 1, 1});
  // TensorFlow SAME, stride 2: one zero on the right only.
  grader::check_tensor("TF SAME (pad 0 left, 1 right)", run(x, ones, zero_bias(1), params(0, 0, 0, 1, 1, 2), {1, 1, 1, 2}),
                       Tensor(Shape{1, 1, 1, 2}, {6, 7}));
  // PyTorch padding=1, stride 2: same output size, different numbers.
  grader::check_tensor("PyTorch padding 1", run(x, ones, zero_bias(1), params(0, 0, 1, 1, 1, 2), {1, 1, 1, 2}),
                       Tensor(Shape{1, 1, 1, 2}, {3, 9}));
  // Dilation 2: taps at x, x+2, x+4.
  const Tensor seven(Shape{1, 1, 1, 7}, {1, 2, 3, 4, 5, 6, 7});
  const Tensor k123(Shape{1, 1, 1, 3}, {1, 2, 3});
  grader::check_tensor("dilation 2", run(seven, k123, zero_bias(1), params(0, 0, 0, 0, 1, 1, 1, 2), {1, 1, 1, 3}),
                       Tensor(Shape{1, 1, 1, 3}, {22, 28, 34}));
}

TEST_CASE("conv2d: bias is added once per output pixel, also on pure-padding windows") {
  // 1x1 kernel with padding 1: the border ring of outputs sees only padding, so it equals the bias.
  const Tensor x(Shape{1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor w(Shape{2, 1, 1, 1}, {10, -1});
  const Tensor b(Shape{2}, {0.5f, 100});
  const Tensor expected(Shape{1, 2, 4, 4}, {0.5f, 0.5f, 0.5f, 0.5f,  //
                                            0.5f, 10.5f, 20.5f, 0.5f,  //
                                            0.5f, 30.5f, 40.5f, 0.5f,  //
                                            0.5f, 0.5f, 0.5f, 0.5f,  //
                                            100, 100, 100, 100,  //
                                            100, 99, 98, 100,  //
                                            100, 97, 96, 100,  //
                                            100, 100, 100, 100});
  grader::check_tensor("1x1 kernel, padding 1", run(x, w, b, lab02::Conv2dParams::symmetric(1), {1, 2, 4, 4}), expected);
}

TEST_CASE("conv2d: 1x1 kernels with stride, padding and (irrelevant) dilation") {
  course::Rng rng = grader::case_rng("conv2d: 1x1 kernels");
  check_random_conv(rng, {2, 3, 7, 6}, {4, 3, 1, 1}, lab02::Conv2dParams::symmetric(0));
  check_random_conv(rng, {1, 5, 9, 8}, {2, 5, 1, 1}, params(0, 0, 0, 0, 2, 3));
  check_random_conv(rng, {1, 2, 4, 5}, {3, 2, 1, 1}, params(2, 1, 0, 3, 1, 2, 3, 4));
}

TEST_CASE("conv2d: kernel as large as the padded input gives one output pixel") {
  course::Rng rng = grader::case_rng("conv2d: kernel as large as the padded input");
  // 4x3 input padded to 7x4 by (1, 2, 0, 1): a 7x4 kernel fits exactly once.
  const lab02::Conv2dParams p = params(1, 2, 0, 1, 2, 3);
  CHECK(lab02::conv2d_output_shape({2, 3, 4, 3}, {2, 3, 7, 4}, p) == Shape{2, 2, 1, 1});
  check_random_conv(rng, {2, 3, 4, 3}, {2, 3, 7, 4}, p);
  // Without padding: the full-size kernel is a dot product with the whole image.
  const Tensor x = rng.tensor({1, 2, 3, 5});
  const Tensor w = rng.tensor({1, 2, 3, 5});
  double dot = 0;
  for (std::size_t i = 0; i < x.numel(); ++i) dot += static_cast<double>(x[i]) * w[i];
  const Tensor got = run(x, w, Tensor(Shape{1}, 0.25f), {}, {1, 1, 1, 1});
  grader::check_tensor("full-size kernel = dot product + bias", got, Tensor(Shape{1, 1, 1, 1}, {static_cast<float>(dot + 0.25)}));
}

TEST_CASE("conv2d: stride larger than the kernel skips pixels") {
  course::Rng rng = grader::case_rng("conv2d: stride larger than the kernel");
  check_random_conv(rng, {1, 2, 11, 13}, {3, 2, 2, 3}, params(1, 0, 0, 2, 4, 5));
  check_random_conv(rng, {2, 1, 9, 9}, {1, 1, 1, 2}, params(0, 0, 0, 0, 3, 3));
  // A 1-wide kernel with stride 4 on 9 columns reads columns 0, 4, 8 only: changing any other
  // column must not change the output.
  const Tensor w(Shape{1, 1, 1, 1}, {2});
  Tensor x = rng.tensor({1, 1, 1, 9});
  const Tensor first = run(x, w, zero_bias(1), params(0, 0, 0, 0, 1, 4), {1, 1, 1, 3});
  for (std::size_t col : {1u, 2u, 3u, 5u, 6u, 7u}) x[col] = 1000.0f;
  const Tensor second = run(x, w, zero_bias(1), params(0, 0, 0, 0, 1, 4), {1, 1, 1, 3});
  grader::check_tensor("skipped columns do not matter", second, first);
  grader::check_tensor("columns 0, 4, 8 times 2", second, Tensor(Shape{1, 1, 1, 3}, {2 * x[0], 2 * x[4], 2 * x[8]}));
  // The lecture's question: a 2-wide kernel, stride 3, 10 columns reads 0-1, 3-4, 6-7 only.
  Tensor ten = rng.tensor({1, 1, 1, 10});
  for (std::size_t col : {2u, 5u, 8u, 9u}) ten[col] = 1000.0f;
  const Tensor pair(Shape{1, 1, 1, 2}, {1, 1});
  grader::check_tensor("kernel 2, stride 3 on 10 columns", run(ten, pair, zero_bias(1), params(0, 0, 0, 0, 1, 3), {1, 1, 1, 3}),
                       Tensor(Shape{1, 1, 1, 3}, {ten[0] + ten[1], ten[3] + ten[4], ten[6] + ten[7]}),
                       lab02_tests::kConvTolerance);
}

TEST_CASE("conv2d: dilation whose effective kernel spans the whole input") {
  course::Rng rng = grader::case_rng("conv2d: dilation spanning the input");
  // Width 7, kernel 3, dilation 3: taps at columns 0, 3, 6 -> exactly one output column.
  check_random_conv(rng, {1, 2, 5, 7}, {2, 2, 2, 3}, params(0, 0, 0, 0, 1, 1, 4, 3));
  // Height 9 with padding (1, 1) = 11 rows, kernel 3, dilation 5 spans 11 rows.
  check_random_conv(rng, {2, 1, 9, 4}, {3, 1, 3, 2}, params(1, 1, 0, 1, 2, 1, 5, 2));
  // Only the taps matter: columns between them can change freely.
  Tensor x = rng.tensor({1, 1, 1, 7});
  const Tensor w(Shape{1, 1, 1, 3}, {1, 10, 100});
  const lab02::Conv2dParams p = params(0, 0, 0, 0, 1, 1, 1, 3);
  const float expected = x[0] + 10 * x[3] + 100 * x[6];
  x[1] = x[2] = x[4] = x[5] = -1000.0f;
  grader::check_tensor("taps 0, 3, 6", run(x, w, zero_bias(1), p, {1, 1, 1, 1}), Tensor(Shape{1, 1, 1, 1}, {expected}),
                       lab02_tests::kConvTolerance);
}

TEST_CASE("conv2d: non-square input, kernel, padding, stride and dilation") {
  course::Rng rng = grader::case_rng("conv2d: non-square everything");
  check_random_conv(rng, {2, 3, 6, 13}, {4, 3, 2, 5}, params(0, 1, 2, 3, 1, 2, 2, 1));
  check_random_conv(rng, {1, 2, 15, 4}, {3, 2, 4, 1}, params(3, 0, 1, 0, 2, 1, 1, 3));
}

TEST_CASE("conv2d: C = 1 and K = 1") {
  course::Rng rng = grader::case_rng("conv2d: C=1 and K=1");
  check_random_conv(rng, {3, 1, 8, 7}, {1, 1, 3, 2}, params(1, 1, 0, 1, 2, 1, 1, 2));
  check_random_conv(rng, {1, 1, 5, 5}, {4, 1, 3, 3}, lab02::Conv2dParams::symmetric(1));
  check_random_conv(rng, {2, 4, 6, 6}, {1, 4, 2, 2}, lab02::Conv2dParams::symmetric(0, 2));
}

TEST_CASE("conv2d: asymmetric padding, top/left only and bottom/right only") {
  course::Rng rng = grader::case_rng("conv2d: asymmetric padding");
  check_random_conv(rng, {1, 2, 8, 8}, {2, 2, 3, 3}, params(1, 0, 1, 0));
  check_random_conv(rng, {1, 2, 8, 8}, {2, 2, 3, 3}, params(0, 1, 0, 1, 2, 2));
  check_random_conv(rng, {2, 3, 7, 9}, {2, 3, 4, 2}, params(3, 0, 0, 1, 1, 2));
  check_random_conv(rng, {1, 1, 6, 6}, {1, 1, 3, 3}, params(2, 0, 0, 0, 1, 1, 2, 1));
}

TEST_CASE("conv2d: the output buffer is overwritten on every call") {
  // Two different inputs into the SAME buffer, not re-poisoned: leftovers from the first call
  // (accumulating with += or returning a cached result) show up in the second.
  course::Rng rng = grader::case_rng("conv2d: reused output buffer");
  const Shape xs{2, 3, 9, 8}, ws{4, 3, 3, 2};
  const lab02::Conv2dParams p = params(1, 2, 0, 1, 2, 1, 1, 2);
  Tensor out = grader::poisoned(lab02::conv2d_output_shape(xs, ws, p));
  for (int call = 0; call < 2; ++call) {
    const Tensor x = rng.tensor(xs), w = rng.tensor(ws), b = rng.tensor({ws[0]});
    lab02::conv2d_forward(x, w, b, p, out);
    grader::check_tensor("call " + std::to_string(call + 1) + " on the same output", out, golden::lab02_conv2d(x, w, b, p),
                         lab02_tests::kConvTolerance);
  }
  // Same weights, different parameters, then the first parameters again.
  const Tensor x = rng.tensor({1, 2, 6, 6}), w = rng.tensor({2, 2, 3, 3}), b = rng.tensor({2});
  const lab02::Conv2dParams same_size = lab02::Conv2dParams::symmetric(1), shifted = params(2, 0, 0, 2);
  Tensor reused = grader::poisoned({1, 2, 6, 6});
  for (const auto* q : {&same_size, &shifted, &same_size}) {
    lab02::conv2d_forward(x, w, b, *q, reused);
    grader::check_tensor("reused output, " + lab02_tests::describe(x.shape(), w.shape(), *q), reused,
                         golden::lab02_conv2d(x, w, b, *q), lab02_tests::kConvTolerance);
  }
}

TEST_CASE("conv2d: rejects invalid arguments with a clear error") {
  using grader::check_rejects;
  const Tensor x(Shape{1, 2, 6, 6}, 1.0f), w(Shape{3, 2, 3, 3}, 1.0f), b(Shape{3}, 0.0f);
  Tensor out(Shape{1, 3, 4, 4});
  check_rejects("stride 0", [&] { lab02::conv2d_forward(x, w, b, params(0, 0, 0, 0, 0, 1), out); }, "stride");
  check_rejects("dilation 0", [&] { lab02::conv2d_forward(x, w, b, params(0, 0, 0, 0, 1, 1, 1, 0), out); }, "dilation");
  check_rejects("negative padding", [&] { lab02::conv2d_forward(x, w, b, params(0, -1, 0, 0), out); }, "pad");
  check_rejects("output size 0", [&] { lab02::conv2d_forward(x, w, b, params(0, 0, 0, 0, 1, 1, 3, 1), out); },
                "output size");
  check_rejects("channel mismatch", [&] { lab02::conv2d_forward(x, Tensor(Shape{3, 1, 3, 3}), b, {}, out); }, "channels");
  check_rejects("bias of the wrong length", [&] { lab02::conv2d_forward(x, w, Tensor(Shape{2}), {}, out); }, "bias");
  check_rejects("output of the wrong shape (padding ignored)",
                [&] { lab02::conv2d_forward(x, w, b, lab02::Conv2dParams::symmetric(1), out); }, "output");
  Tensor transposed(Shape{1, 3, 5, 4});  // the right shape is [1, 3, 4, 5]
  check_rejects("output with H and W swapped",
                [&] { lab02::conv2d_forward(x, w, b, params(0, 0, 0, 1), transposed); }, "output");
}

TEST_CASE("conv2d: every small axis (input <= 5, kernel <= 3, pads <= 2, stride <= 3, dilation <= 3)") {
  // Each of the 1,215 small axis settings, valid or not, appears once as the height and once as
  // the width (paired by a fixed permutation), with (N, C, K) cycling through 1..3. Valid pairs
  // must match the golden reference; a pair with no output pixel must be rejected.
  course::Rng rng = grader::case_rng("conv2d sweep");
  const std::vector<lab02_tests::AxisCase> axes = lab02_tests::small_axis_cases(5);
  const std::size_t count = axes.size();
  grader::Sweep sweep("conv2d_output_shape + conv2d_forward over every small axis");
  for (std::size_t i = 0; i < count && sweep.running(); ++i) {
    const lab02_tests::AxisCase& a = axes[i];
    const lab02_tests::AxisCase& b = axes[(i * 37 + 11) % count];  // 37 is coprime to 1,215: each once
    const int index = static_cast<int>(i);
    const Shape xs{1 + index % 3, 1 + (index / 3) % 3, a.input, b.input};
    const Shape ws{1 + (index / 9) % 3, xs[1], a.kernel, b.kernel};
    const lab02::Conv2dParams p =
        params(a.pad_before, a.pad_after, b.pad_before, b.pad_after, a.stride, b.stride, a.dilation, b.dilation);
    sweep.run(lab02_tests::describe(xs, ws, p), [&]() -> std::string {
      if (!golden::lab02_valid(xs, ws, p))
        return grader::rejection([&] { lab02::conv2d_output_shape(xs, ws, p); });
      const Tensor x = rng.tensor(xs), w = rng.tensor(ws), bias = rng.tensor({ws[0]});
      const Tensor expected = golden::lab02_conv2d(x, w, bias, p);
      const Shape got = lab02::conv2d_output_shape(xs, ws, p);
      if (got != expected.shape())
        return "conv2d_output_shape returned " + course::shape_to_string(got) + ", expected " +
               course::shape_to_string(expected.shape());
      return grader::mismatch(run(x, w, bias, p, expected.shape()), expected, lab02_tests::kConvTolerance);
    });
  }
  sweep.finish(1215);
}

TEST_CASE("conv2d: LeNet's first layer, 28x28 with padding 2 stays 28x28") {
  course::Rng rng = grader::case_rng("conv2d: LeNet conv1");
  check_random_conv(rng, {2, 1, 28, 28}, {6, 1, 5, 5}, lab02::Conv2dParams::symmetric(2));
}

TEST_CASE("conv2d: random combinations against the golden reference") {
  course::Rng rng = grader::case_rng("conv2d: random combinations");
  for (int i = 0; i < 60; ++i) {
    const lab02_tests::RandomConvCase c = lab02_tests::random_conv_case(rng);
    check_random_conv(rng, c.x, c.w, c.p);
  }
}
