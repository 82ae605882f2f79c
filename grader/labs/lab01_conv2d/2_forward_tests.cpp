// Lab 01: conv2d_forward -- the lecture's worked examples, random shapes against the golden
// reference, edge cases, and the ways a convolution most often goes wrong.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lab01_test_support.hpp"

namespace {

using course::Shape;
using course::Tensor;
using lab01_tests::ConvCase;

// Both the golden reference and the student must reproduce the numbers printed in the lecture
// (all small integers or halves, so float arithmetic is exact and we compare exactly).
void check_exact(const std::string& what, const Tensor& actual, const Tensor& expected) {
  grader::check_tensor(what, actual, expected, course::Tolerance{0.0, 0.0});
}

// lectures/01-convolution.md, "A worked example: one channel".
Tensor lecture_single_input() {
  return Tensor({1, 1, 4, 4}, {1, 2, 0, 1,  //
                               0, 1, 3, 2,  //
                               2, 1, 0, 1,  //
                               1, 0, 2, 3});
}
Tensor lecture_single_weight() {
  return Tensor({1, 1, 3, 3}, {1, 0, -1,  //
                               2, 1, 0,   //
                               0, -1, 1});
}

// lectures/01-convolution.md, "A worked example: two channels and a bias".
Tensor lecture_two_channel_input() {
  return Tensor({1, 2, 3, 3}, {1, 0, 2, 3, 1, 0, 0, 2, 1,    // channel 0
                               2, 1, 0, 0, 1, 2, 1, 0, 1});  // channel 1
}
Tensor lecture_two_channel_weight() {
  return Tensor({1, 2, 2, 2}, {1, 2, 0, -1,   // channel 0
                               0, 1, -1, 1});  // channel 1
}

// Channel c of a [1, C, H, W] tensor as a [1, 1, H, W] tensor.
Tensor channel_of(const Tensor& t, std::int64_t c) {
  const Shape& sh = t.shape();
  Tensor out({1, 1, sh[2], sh[3]});
  for (std::int64_t h = 0; h < sh[2]; ++h)
    for (std::int64_t w = 0; w < sh[3]; ++w) out.at(0, 0, h, w) = t.at(0, c, h, w);
  return out;
}

}  // namespace

TEST_CASE("lab01 lecture example: one channel, 4x4 image, 3x3 kernel") {
  const Tensor x = lecture_single_input(), w = lecture_single_weight(), b({1}, 0.0f);
  const Tensor expected({1, 1, 2, 2}, {1, 7, 4, 2});
  check_exact("golden reference on the lecture example", golden::lab01_conv2d(x, w, b), expected);
  check_exact("conv2d_forward on the lecture example", lab01_tests::student_conv2d(x, w, b), expected);

  // The lecture also shows what a flipped kernel (the textbook "true" convolution) would give,
  // to make the point that frameworks do not flip: make sure those numbers are different.
  Tensor flipped(w.shape());
  for (std::int64_t r = 0; r < 3; ++r)
    for (std::int64_t s = 0; s < 3; ++s) flipped.at(0, 0, r, s) = w.at(0, 0, 2 - r, 2 - s);
  check_exact("golden reference with the flipped kernel", golden::lab01_conv2d(x, flipped, b),
              Tensor({1, 1, 2, 2}, {4, 9, 1, 3}));
}

TEST_CASE("lab01 lecture example: two channels are summed, then the bias is added") {
  const Tensor x = lecture_two_channel_input(), w = lecture_two_channel_weight();
  const Tensor zero_bias({1}, 0.0f);

  // The per-channel partial sums the lecture lists.
  const Tensor expected_partial[2] = {Tensor({1, 1, 2, 2}, {0, 4, 3, 0}), Tensor({1, 1, 2, 2}, {2, 1, 0, 3})};
  for (std::int64_t c = 0; c < 2; ++c) {
    const Tensor xc = channel_of(x, c), wc = channel_of(w, c);
    const std::string name = "channel " + std::to_string(c) + " alone";
    check_exact("golden reference, " + name, golden::lab01_conv2d(xc, wc, zero_bias), expected_partial[c]);
    check_exact("conv2d_forward, " + name, lab01_tests::student_conv2d(xc, wc, zero_bias), expected_partial[c]);
  }

  const Tensor bias({1}, 0.5f);
  const Tensor expected({1, 1, 2, 2}, {2.5f, 5.5f, 3.5f, 3.5f});
  check_exact("golden reference, both channels + bias", golden::lab01_conv2d(x, w, bias), expected);
  check_exact("conv2d_forward, both channels + bias", lab01_tests::student_conv2d(x, w, bias), expected);
}

TEST_CASE("lab01 lecture \"check yourself\" 4: all ones, bias -1") {
  const Tensor x({1, 1, 3, 3}, 1.0f), w({1, 1, 2, 2}, 1.0f), b({1}, -1.0f);
  check_exact("conv2d_forward, all ones", lab01_tests::student_conv2d(x, w, b), Tensor({1, 1, 2, 2}, 3.0f));
}

TEST_CASE("lab01 1x1 kernel: every pixel is a weighted sum of its own channels") {
  course::Rng rng = grader::case_rng("lab01 pointwise");
  const ConvCase cc{2, 5, 4, 7, 3, 1, 1};
  const Tensor x = rng.tensor(cc.input_shape()), w = rng.tensor(cc.weight_shape()), b = rng.tensor(cc.bias_shape());

  // Written out directly: no neighbours are involved, only the C values at the same (h, w).
  Tensor expected(cc.output_shape());
  for (std::int64_t n = 0; n < cc.n; ++n)
    for (std::int64_t k = 0; k < cc.k; ++k)
      for (std::int64_t h = 0; h < cc.h; ++h)
        for (std::int64_t wi = 0; wi < cc.w; ++wi) {
          double sum = b[static_cast<std::size_t>(k)];
          for (std::int64_t c = 0; c < cc.c; ++c) sum += double(w.at(k, c, 0, 0)) * double(x.at(n, c, h, wi));
          expected.at(n, k, h, wi) = static_cast<float>(sum);
        }
  grader::check_tensor("golden reference, 1x1 kernel", golden::lab01_conv2d(x, w, b), expected,
                       lab01_tests::kTolerance);
  grader::check_tensor("conv2d_forward, 1x1 kernel", lab01_tests::student_conv2d(x, w, b), expected,
                       lab01_tests::kTolerance);
}

TEST_CASE("lab01 kernel as large as the input: one dot product per image and filter") {
  course::Rng rng = grader::case_rng("lab01 full kernel");
  const ConvCase cc{3, 2, 6, 4, 4, 6, 4};
  const Tensor x = rng.tensor(cc.input_shape()), w = rng.tensor(cc.weight_shape()), b = rng.tensor(cc.bias_shape());

  // Output [N, K, 1, 1]: the whole image and the whole filter are two vectors of C*H*W numbers.
  const std::size_t len = static_cast<std::size_t>(cc.c * cc.h * cc.w);
  Tensor expected(cc.output_shape());
  for (std::int64_t n = 0; n < cc.n; ++n)
    for (std::int64_t k = 0; k < cc.k; ++k) {
      double dot = b[static_cast<std::size_t>(k)];
      for (std::size_t i = 0; i < len; ++i)
        dot += double(x[static_cast<std::size_t>(n) * len + i]) * double(w[static_cast<std::size_t>(k) * len + i]);
      expected.at(n, k, 0, 0) = static_cast<float>(dot);
    }
  grader::check_tensor("conv2d_forward, kernel == input size", lab01_tests::student_conv2d(x, w, b), expected,
                       lab01_tests::kTolerance);
}

TEST_CASE("lab01 zero weights: the output is the bias of each filter, everywhere") {
  course::Rng rng = grader::case_rng("lab01 bias only");
  const ConvCase cc{2, 3, 6, 5, 4, 2, 3};
  const Tensor x = rng.tensor(cc.input_shape(), -10.0f, 10.0f);
  const Tensor w(cc.weight_shape(), 0.0f);
  const Tensor b({4}, {0.25f, -1.5f, 3.0f, 7.75f});
  Tensor expected(cc.output_shape());
  for (std::int64_t n = 0; n < cc.n; ++n)
    for (std::int64_t k = 0; k < cc.k; ++k)
      for (std::int64_t p = 0; p < cc.h - cc.r + 1; ++p)
        for (std::int64_t q = 0; q < cc.w - cc.s + 1; ++q) expected.at(n, k, p, q) = b[static_cast<std::size_t>(k)];
  check_exact("conv2d_forward with zero weights", lab01_tests::student_conv2d(x, w, b), expected);
}

TEST_CASE("lab01 the kernel is used as stored: not flipped, not transposed") {
  // A 2x3 kernel with six different values, so any flip or transpose changes the result.
  const Tensor w({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b({1}, 0.0f);

  SUBCASE("a single 1 in the middle of the image reproduces the kernel rotated by 180 degrees") {
    // Output (p, q) covers the 1 at (1, 2) with kernel tap (1 - p, 2 - q).
    Tensor x({1, 1, 3, 5}, 0.0f);
    x.at(0, 0, 1, 2) = 1.0f;
    check_exact("conv2d_forward of a centred impulse", lab01_tests::student_conv2d(x, w, b),
                Tensor({1, 1, 2, 3}, {6, 5, 4, 3, 2, 1}));
  }
  SUBCASE("a kernel with a single 1 at (r, s) reads the input shifted by r rows and s columns") {
    Tensor x({1, 1, 4, 5});
    for (std::int64_t h = 0; h < 4; ++h)
      for (std::int64_t wi = 0; wi < 5; ++wi) x.at(0, 0, h, wi) = static_cast<float>(10 * h + wi);
    Tensor tap({1, 1, 2, 3}, 0.0f);
    tap.at(0, 0, 1, 2) = 1.0f;  // output (p, q) must equal input (p + 1, q + 2)
    check_exact("conv2d_forward with a one-tap kernel", lab01_tests::student_conv2d(x, tap, b),
                Tensor({1, 1, 3, 3}, {12, 13, 14, 22, 23, 24, 32, 33, 34}));
  }
  SUBCASE("the plain kernel on a ramp image") {
    Tensor x({1, 1, 3, 4});
    for (std::int64_t h = 0; h < 3; ++h)
      for (std::int64_t wi = 0; wi < 4; ++wi) x.at(0, 0, h, wi) = static_cast<float>(4 * h + wi);
    // e.g. output (0, 0) = 1*0 + 2*1 + 3*2 + 4*4 + 5*5 + 6*6 = 85
    check_exact("conv2d_forward on a ramp", lab01_tests::student_conv2d(x, w, b),
                Tensor({1, 1, 2, 2}, {85, 106, 169, 190}));
  }
}

TEST_CASE("lab01 conv2d_forward rejects a wrong bias or output shape") {
  course::Rng rng = grader::case_rng("lab01 rejects");
  const ConvCase cc{2, 3, 6, 5, 4, 3, 2};
  const Tensor x = rng.tensor(cc.input_shape()), w = rng.tensor(cc.weight_shape()), b = rng.tensor(cc.bias_shape());
  const std::string right_out = course::shape_to_string(cc.output_shape());  // [2, 4, 4, 4]

  const auto rejects = [&](const std::string& what, const Tensor& bias, const Shape& out_shape,
                           const std::vector<std::string>& parts) {
    Tensor out = grader::poisoned(out_shape);
    lab01_tests::check_rejects_with(what, [&] { lab01::conv2d_forward(x, w, bias, out); }, parts);
  };
  rejects("bias with K+1 elements", Tensor({5}), cc.output_shape(), {"bias", "[4]", "[5]"});
  rejects("bias as a [1, K] matrix", Tensor({1, 4}), cc.output_shape(), {"bias", "[4]", "[1, 4]"});
  rejects("output one column short", b, {2, 4, 4, 3}, {"output", right_out, "[2, 4, 4, 3]"});
  rejects("output computed with R and S swapped", b, {2, 4, 5, 3}, {"output", right_out, "[2, 4, 5, 3]"});
  rejects("output with C instead of K channels", b, {2, 3, 4, 4}, {"output", right_out, "[2, 3, 4, 4]"});
  rejects("output without the batch dimension", b, {4, 4, 4}, {"output", right_out});
  rejects("output of the input's size (as if padded)", b, {2, 4, 6, 5}, {"output", right_out});

  // Problems with input and weight surface through conv2d_forward too.
  Tensor out = grader::poisoned(cc.output_shape());
  grader::check_rejects("weight with the wrong channel count",
                        [&] { lab01::conv2d_forward(x, Tensor({4, 2, 3, 2}), b, out); }, "channels");
  grader::check_rejects("3-D input", [&] { lab01::conv2d_forward(Tensor({3, 6, 5}), w, b, out); }, "input");
}

TEST_CASE("lab01 every output element is written (NaN-poisoned output)") {
  course::Rng rng = grader::case_rng("lab01 poisoned");
  const ConvCase cc{3, 4, 12, 11, 5, 3, 4};
  const Tensor x = rng.tensor(cc.input_shape()), w = rng.tensor(cc.weight_shape()), b = rng.tensor(cc.bias_shape());
  const Tensor out = lab01_tests::student_conv2d(x, w, b);  // starts all NaN
  CHECK_MESSAGE(course::count_nonfinite(out.data(), out.numel()) == 0,
                "some output elements were left unwritten (still NaN) or are not finite");
  grader::check_tensor("conv2d_forward into a NaN-filled output", out, golden::lab01_conv2d(x, w, b),
                       lab01_tests::kTolerance);
}

TEST_CASE("lab01 the same output buffer, called again with different data") {
  course::Rng rng = grader::case_rng("lab01 reuse");
  const ConvCase cc{2, 3, 9, 8, 4, 3, 2};
  const Tensor x1 = rng.tensor(cc.input_shape()), x2 = rng.tensor(cc.input_shape());
  const Tensor w1 = rng.tensor(cc.weight_shape()), w2 = rng.tensor(cc.weight_shape());
  const Tensor b1 = rng.tensor(cc.bias_shape()), b2 = rng.tensor(cc.bias_shape());

  // One buffer for all calls: an implementation that caches, accumulates into the output
  // (forgetting to start from the bias), or ignores a changed argument fails here.
  Tensor out = grader::poisoned(cc.output_shape());
  lab01::conv2d_forward(x1, w1, b1, out);
  grader::check_tensor("first call", out, golden::lab01_conv2d(x1, w1, b1), lab01_tests::kTolerance);
  lab01::conv2d_forward(x2, w1, b1, out);
  grader::check_tensor("second call, new input", out, golden::lab01_conv2d(x2, w1, b1), lab01_tests::kTolerance);
  lab01::conv2d_forward(x2, w2, b1, out);
  grader::check_tensor("third call, new weights", out, golden::lab01_conv2d(x2, w2, b1), lab01_tests::kTolerance);
  lab01::conv2d_forward(x2, w2, b2, out);
  grader::check_tensor("fourth call, new bias", out, golden::lab01_conv2d(x2, w2, b2), lab01_tests::kTolerance);

  // A different problem size right after, then the first one again.
  const ConvCase small{1, 2, 5, 7, 3, 2, 4};
  const Tensor xs = rng.tensor(small.input_shape()), ws = rng.tensor(small.weight_shape()),
               bs = rng.tensor(small.bias_shape());
  grader::check_tensor("a smaller problem in between", lab01_tests::student_conv2d(xs, ws, bs),
                       golden::lab01_conv2d(xs, ws, bs), lab01_tests::kTolerance);
  lab01::conv2d_forward(x1, w1, b1, out);
  grader::check_tensor("the first problem again", out, golden::lab01_conv2d(x1, w1, b1), lab01_tests::kTolerance);
}

TEST_CASE("lab01 conv2d_forward: every small shape (H, W <= 6, R, S <= 3, N, C, K <= 3)") {
  // Every kernel that fits on every image up to 6x6; (N, C, K) cycles through all 27
  // combinations of 1..3 across the cases. 225 small convolutions, the same on every run.
  course::Rng rng = grader::case_rng("lab01 sweep");
  grader::Sweep sweep("conv2d_forward over every small shape");
  int index = 0;
  for (std::int64_t h = 1; h <= 6 && sweep.running(); ++h)
    for (std::int64_t w = 1; w <= 6 && sweep.running(); ++w)
      for (std::int64_t r = 1; r <= std::min<std::int64_t>(h, 3) && sweep.running(); ++r)
        for (std::int64_t s = 1; s <= std::min<std::int64_t>(w, 3) && sweep.running(); ++s) {
          ConvCase cc;
          lab01_tests::cycle_batch_and_channels(index++, cc);
          cc.h = h, cc.w = w, cc.r = r, cc.s = s;
          const Tensor x = rng.tensor(cc.input_shape()), wt = rng.tensor(cc.weight_shape()), b = rng.tensor(cc.bias_shape());
          sweep.run(cc.describe(), [&] {
            return grader::mismatch(lab01_tests::student_conv2d(x, wt, b), golden::lab01_conv2d(x, wt, b),
                                    lab01_tests::kTolerance);
          });
        }
  sweep.finish(225);
}

TEST_CASE("lab01 random shapes against the golden reference") {
  course::Rng rng = grader::case_rng("lab01 forward random");
  for (int i = 0; i < 60; ++i) {
    const ConvCase cc = lab01_tests::random_case(rng);
    if (!lab01_tests::check_random_case("random case " + std::to_string(i), cc, rng)) break;
  }
}

TEST_CASE("lab01 one input channel and/or one filter") {
  course::Rng rng = grader::case_rng("lab01 single channel");
  for (int i = 0; i < 12; ++i) {
    ConvCase cc = lab01_tests::random_case(rng);
    // Cycle through C = 1 and K = 1, C = 1 only, K = 1 only.
    if (i % 3 != 2) cc.c = 1;
    if (i % 3 != 1) cc.k = 1;
    if (!lab01_tests::check_random_case("C=" + std::to_string(cc.c) + ", K=" + std::to_string(cc.k), cc, rng)) break;
  }
}
