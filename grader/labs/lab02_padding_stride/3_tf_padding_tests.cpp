// Lab 02: TensorFlow's SAME/VALID padding (tf_padding) and the way back from explicit padding
// to a TF mode (tf_mode_for): the lecture's table, rules checked over many (in, k, s, d), and
// SAME convolutions end to end.
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "lab02_test_support.hpp"

namespace {

using lab02::Padding1d;
using lab02::TfPadding;

std::string show(const std::optional<TfPadding>& mode) {
  if (!mode) return "none";
  return *mode == TfPadding::Same ? "SAME" : "VALID";
}

struct Row {
  int in, k, s, d, before, after;
};

}  // namespace

TEST_CASE("tf_padding: the lecture's SAME table") {
  const Row table[] = {
      {28, 5, 1, 1, 2, 2},     // odd kernel, stride 1: symmetric, like PyTorch padding=2
      {28, 4, 1, 1, 1, 2},     // even kernel: odd total, the extra pixel goes after
      {7, 3, 2, 1, 1, 1},      //
      {8, 3, 2, 1, 0, 1},      // even input, stride 2: asymmetric
      {4, 3, 2, 1, 0, 1},      // the 1-D example of the lecture
      {5, 3, 1, 2, 2, 2},      // dilation 2: effective kernel 5
      {10, 1, 3, 1, 0, 0},     // SAME that needs no padding at all
      {6, 2, 2, 1, 0, 0},      //
      {3, 5, 1, 1, 2, 2},      // kernel larger than the input
      {10, 3, 4, 1, 0, 1},     //
      {224, 7, 2, 1, 2, 3},    // the ResNet stem: PyTorch uses padding=3 on both sides instead
  };
  for (const Row& r : table) {
    const Padding1d p = lab02::tf_padding(TfPadding::Same, r.in, r.k, r.s, r.d);
    CHECK_MESSAGE((p.before == r.before && p.after == r.after),
                  "tf_padding(SAME, input=" << r.in << ", kernel=" << r.k << ", stride=" << r.s << ", dilation=" << r.d
                                            << ") = {" << p.before << ", " << p.after << "}, expected {" << r.before
                                            << ", " << r.after << "}");
  }
}

TEST_CASE("tf_padding: VALID never pads") {
  for (int in = 1; in <= 12; ++in)
    for (int k = 1; k <= 5; ++k)
      for (int s = 1; s <= 3; ++s) {
        const Padding1d p = lab02::tf_padding(TfPadding::Valid, in, k, s, 2);
        CHECK_MESSAGE((p.before == 0 && p.after == 0), "VALID padding for input " << in << ", kernel " << k);
      }
}

TEST_CASE("tf_padding: SAME follows TensorFlow's rule for many (in, k, s, d)") {
  int mismatches = 0;
  for (int in = 1; in <= 24; ++in)
    for (int k = 1; k <= 7; ++k)
      for (int s = 1; s <= 4; ++s)
        for (int d = 1; d <= 3; ++d) {
          const Padding1d got = lab02::tf_padding(TfPadding::Same, in, k, s, d);
          const Padding1d want = golden::lab02_tf_same(in, k, s, d);
          const std::string where = "(input=" + std::to_string(in) + ", kernel=" + std::to_string(k) +
                                    ", stride=" + std::to_string(s) + ", dilation=" + std::to_string(d) + ")";
          if (got.before != want.before || got.after != want.after) {
            if (++mismatches <= 5)
              FAIL_CHECK("tf_padding(SAME" << where << ") = {" << got.before << ", " << got.after << "}, expected {"
                                           << want.before << ", " << want.after << "}");
            continue;
          }
          // What SAME promises: ceil(in / stride) outputs, and the extra pixel (if any) at the end.
          const long long out = golden::lab02_output_size(in, k, got.before, got.after, s, d);
          if (out != (in + s - 1) / s && ++mismatches <= 5)
            FAIL_CHECK("SAME" << where << " gives " << out << " outputs instead of ceil(in/stride)");
        }
  CHECK(mismatches == 0);
}

TEST_CASE("tf_mode_for: the lecture's examples") {
  CHECK(show(lab02::tf_mode_for({1, 1}, 7, 3, 2)) == "SAME");
  CHECK(show(lab02::tf_mode_for({0, 1}, 8, 3, 2)) == "SAME");
  CHECK(show(lab02::tf_mode_for({1, 1}, 8, 3, 2)) == "none");   // PyTorch padding=1: no TF mode
  CHECK(show(lab02::tf_mode_for({1, 0}, 8, 3, 2)) == "none");   // extra pixel on the wrong side
  CHECK(show(lab02::tf_mode_for({0, 0}, 8, 3, 2)) == "VALID");
  CHECK(show(lab02::tf_mode_for({0, 0}, 10, 1, 3)) == "VALID");  // SAME is {0,0} too: VALID first
  CHECK(show(lab02::tf_mode_for({2, 2}, 28, 5, 1)) == "SAME");   // PyTorch padding=2 on 5x5 kernels
  CHECK(show(lab02::tf_mode_for({2, 3}, 224, 7, 2)) == "SAME");
  CHECK(show(lab02::tf_mode_for({3, 3}, 224, 7, 2)) == "none");  // PyTorch's ResNet stem
  CHECK(show(lab02::tf_mode_for({2, 2}, 5, 3, 1, 2)) == "SAME");
}

TEST_CASE("tf_mode_for: round trip from tf_padding for many (in, k, s, d)") {
  int mismatches = 0;
  const auto expect = [&](const std::optional<TfPadding>& got, const std::optional<TfPadding>& want,
                          const std::string& what) {
    if (got != want && ++mismatches <= 5) FAIL_CHECK(what << ": got " << show(got) << ", expected " << show(want));
  };
  for (int in = 1; in <= 16; ++in)
    for (int k = 1; k <= 6; ++k)
      for (int s = 1; s <= 3; ++s)
        for (int d = 1; d <= 2; ++d) {
          const Padding1d same = golden::lab02_tf_same(in, k, s, d);
          std::ostringstream where;
          where << "(input=" << in << ", kernel=" << k << ", stride=" << s << ", dilation=" << d << ")";
          const bool same_is_zero = same.before == 0 && same.after == 0;
          expect(lab02::tf_mode_for(same, in, k, s, d), same_is_zero ? TfPadding::Valid : TfPadding::Same,
                 "tf_mode_for(SAME padding {" + std::to_string(same.before) + "," + std::to_string(same.after) + "}" +
                     where.str() + ")");
          expect(lab02::tf_mode_for({0, 0}, in, k, s, d), TfPadding::Valid, "tf_mode_for({0,0}" + where.str() + ")");
          expect(lab02::tf_mode_for({same.before + 1, same.after + 1}, in, k, s, d), std::nullopt,
                 "tf_mode_for(one more than SAME on each side" + where.str() + ")");
          if (same.before != same.after)
            expect(lab02::tf_mode_for({same.after, same.before}, in, k, s, d), std::nullopt,
                   "tf_mode_for(SAME mirrored, extra pixel first" + where.str() + ")");
        }
  CHECK(mismatches == 0);
}

TEST_CASE("tf_padding and tf_mode_for: reject invalid parameters") {
  using grader::check_rejects;
  for (TfPadding mode : {TfPadding::Same, TfPadding::Valid}) {
    check_rejects("input 0", [&] { lab02::tf_padding(mode, 0, 3, 1); }, "input");
    check_rejects("kernel 0", [&] { lab02::tf_padding(mode, 8, 0, 1); }, "kernel");
    check_rejects("stride 0", [&] { lab02::tf_padding(mode, 8, 3, 0); }, "stride");
    check_rejects("dilation 0", [&] { lab02::tf_padding(mode, 8, 3, 1, 0); }, "dilation");
  }
  check_rejects("tf_mode_for, stride 0", [] { lab02::tf_mode_for({0, 0}, 8, 3, 0); }, "stride");
  check_rejects("tf_mode_for, dilation -1", [] { lab02::tf_mode_for({1, 1}, 8, 3, 1, -1); }, "dilation");
  check_rejects("tf_mode_for, negative padding before", [] { lab02::tf_mode_for({-1, 2}, 8, 3, 1); }, "padding");
  check_rejects("tf_mode_for, negative padding after", [] { lab02::tf_mode_for({0, -1}, 8, 3, 2); }, "padding");
  // SAME padding of dilation * (kernel - 1) ~ 4.3e9 pixels does not fit in an int.
  check_rejects("SAME padding beyond int", [] { lab02::tf_padding(TfPadding::Same, 10, 1 << 30, 1, 4); });
}

TEST_CASE("tf_padding: large values are computed without int overflow") {
  constexpr int kMax = std::numeric_limits<int>::max();
  // input + stride - 1 overflows an int here; ceil((2^31-1)/2) = 2^30 outputs need 2 pixels of padding.
  const Padding1d big = lab02::tf_padding(TfPadding::Same, kMax, 3, 2);
  CHECK_MESSAGE((big.before == 1 && big.after == 1), "tf_padding(SAME, 2^31-1, 3, 2) = {" << big.before << ", "
                                                                                      << big.after << "}, expected {1, 1}");
  // dilation * (kernel - 1) = 2^31 + 4 overflows an int; the total padding (one window, stride
  // 16 > input 10) is 2^31 + 5 - 10 = 2^31 - 5, which fits.
  const Padding1d wide = lab02::tf_padding(TfPadding::Same, 10, 3, 16, (1 << 30) + 2);
  CHECK_MESSAGE((wide.before == 1073741821 && wide.after == 1073741822),
                "tf_padding(SAME, 10, 3, 16, 2^30 + 2) = {" << wide.before << ", " << wide.after
                                                           << "}, expected {1073741821, 1073741822}");
}

TEST_CASE("SAME convolution for every small input, kernel, stride and dilation") {
  // Every (input <= 6, kernel <= 3, stride <= 3, dilation <= 2) appears once as the height and
  // once as the width; the padding comes from your tf_padding and the convolution must give
  // ceil(in / stride) outputs per axis that match the golden reference.
  struct Axis {
    int in, k, s, d;
  };
  std::vector<Axis> axes;
  for (int in = 1; in <= 6; ++in)
    for (int k = 1; k <= 3; ++k)
      for (int st = 1; st <= 3; ++st)
        for (int d = 1; d <= 2; ++d) axes.push_back({in, k, st, d});
  course::Rng rng = grader::case_rng("tf SAME convolution sweep");
  grader::Sweep sweep("tf_padding(SAME) + conv2d_forward over every small axis");
  for (std::size_t i = 0; i < axes.size() && sweep.running(); ++i) {
    const Axis a = axes[i], b = axes[(i * 25 + 7) % axes.size()];  // 25 is coprime to 108: each once
    std::ostringstream what;
    what << "SAME, input " << a.in << "x" << b.in << ", kernel " << a.k << "x" << b.k << ", stride " << a.s << "x" << b.s
         << ", dilation " << a.d << "x" << b.d;
    sweep.run(what.str(), [&]() -> std::string {
      const Padding1d ph = lab02::tf_padding(TfPadding::Same, a.in, a.k, a.s, a.d);
      const Padding1d pw = lab02::tf_padding(TfPadding::Same, b.in, b.k, b.s, b.d);
      const lab02::Conv2dParams p = lab02_tests::params(ph.before, ph.after, pw.before, pw.after, a.s, b.s, a.d, b.d);
      const course::Shape xs{1, 2, a.in, b.in}, ws{2, 2, a.k, b.k};
      if (!golden::lab02_valid(xs, ws, p)) return "tf_padding gave padding with no output pixel";
      const course::Tensor x = rng.tensor(xs), w = rng.tensor(ws), bias = rng.tensor({2});
      const course::Tensor expected = golden::lab02_conv2d(x, w, bias, p);
      const course::Shape want{1, 2, (a.in + a.s - 1) / a.s, (b.in + b.s - 1) / b.s};
      if (expected.shape() != want)
        return "tf_padding gave {" + std::to_string(ph.before) + ", " + std::to_string(ph.after) + "} x {" +
               std::to_string(pw.before) + ", " + std::to_string(pw.after) + "}: output " +
               course::shape_to_string(expected.shape()) + " instead of ceil(in / stride) = " + course::shape_to_string(want);
      course::Tensor out = grader::poisoned(expected.shape());
      lab02::conv2d_forward(x, w, bias, p, out);
      return grader::mismatch(out, expected, lab02_tests::kConvTolerance);
    });
  }
  sweep.finish(108);
}

TEST_CASE("SAME convolution end to end: tf_padding feeds conv2d_forward") {
  // The output of a SAME convolution is ceil(H/stride) x ceil(W/stride), whatever the kernel.
  course::Rng rng = grader::case_rng("tf SAME convolution");
  for (int i = 0; i < 12; ++i) {
    const int h = rng.integer(1, 12), w = rng.integer(1, 12), r = rng.integer(1, 5), s = rng.integer(1, 5);
    const int sh = rng.integer(1, 3), sw = rng.integer(1, 3), dh = rng.integer(1, 2), dw = rng.integer(1, 2);
    const Padding1d ph = lab02::tf_padding(TfPadding::Same, h, r, sh, dh);
    const Padding1d pw = lab02::tf_padding(TfPadding::Same, w, s, sw, dw);
    const lab02::Conv2dParams p = lab02_tests::params(ph.before, ph.after, pw.before, pw.after, sh, sw, dh, dw);
    const course::Shape xs{1, 2, h, w}, ws{3, 2, r, s};
    CHECK(lab02::conv2d_output_shape(xs, ws, p) == course::Shape{1, 3, (h + sh - 1) / sh, (w + sw - 1) / sw});
    lab02_tests::check_random_conv(rng, xs, ws, p);
  }
}
