// Lab 02: NCHW and NHWC -- the offset formulas, conversions both ways, round trips.
#include <cstdint>
#include <string>
#include <vector>

#include "lab02_test_support.hpp"

namespace {

using course::Shape;
using course::Tensor;

}  // namespace

TEST_CASE("layout: the lecture's offset examples") {
  const Shape shape{2, 3, 4, 5};  // N, C, H, W
  CHECK(lab02::nchw_offset(shape, 0, 1, 2, 3) == 33);   // ((0*3 + 1)*4 + 2)*5 + 3
  CHECK(lab02::nhwc_offset(shape, 0, 1, 2, 3) == 40);   // ((0*4 + 2)*5 + 3)*3 + 1
  CHECK(lab02::nchw_offset(shape, 1, 0, 2, 3) == 73);
  CHECK(lab02::nhwc_offset(shape, 1, 0, 2, 3) == 99);
  CHECK(lab02::nchw_offset(shape, 0, 0, 0, 1) == 1);    // next pixel: next float in NCHW ...
  CHECK(lab02::nhwc_offset(shape, 0, 0, 0, 1) == 3);    // ... C floats further in NHWC
  CHECK(lab02::nchw_offset(shape, 0, 1, 0, 0) == 20);   // next channel: H*W floats further in NCHW ...
  CHECK(lab02::nhwc_offset(shape, 0, 1, 0, 0) == 1);    // ... the next float in NHWC
  CHECK(lab02::nchw_offset(shape, 1, 2, 3, 4) == 119);  // the last element is last in both
  CHECK(lab02::nhwc_offset(shape, 1, 2, 3, 4) == 119);
}

TEST_CASE("layout: the lecture's 1x2x2x2 conversion") {
  const Tensor nchw(Shape{1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor nhwc = grader::poisoned({1, 2, 2, 2});
  lab02::nchw_to_nhwc(nchw, nhwc);
  grader::check_tensor("NHWC order of 0..7", nhwc, Tensor(Shape{1, 2, 2, 2}, {0, 4, 1, 5, 2, 6, 3, 7}));
  Tensor back = grader::poisoned({1, 2, 2, 2});
  lab02::nhwc_to_nchw(nhwc, back);
  grader::check_tensor("back to NCHW", back, nchw);
}

TEST_CASE("layout: with C = 1, or H = W = 1, both layouts have the same memory order") {
  course::Rng rng = grader::case_rng("layout degenerate");
  for (const Shape& s : {Shape{2, 1, 3, 4}, Shape{3, 5, 1, 1}}) {
    const Tensor x = rng.tensor(s);
    Tensor nhwc = grader::poisoned({s[0], s[2], s[3], s[1]});
    lab02::nchw_to_nhwc(x, nhwc);
    CHECK_MESSAGE(nhwc.values() == x.values(), "the values should not move for shape " << course::shape_to_string(s));
  }
}

TEST_CASE("layout: conversions overwrite a reused output buffer") {
  course::Rng rng = grader::case_rng("layout reused buffer");
  const Shape s{2, 3, 4, 5};
  Tensor nhwc = grader::poisoned({2, 4, 5, 3});
  Tensor nchw = grader::poisoned(s);
  for (int call = 0; call < 2; ++call) {
    const Tensor x = rng.tensor(s);
    lab02::nchw_to_nhwc(x, nhwc);
    grader::check_tensor("nchw_to_nhwc, call " + std::to_string(call + 1), nhwc, golden::lab02_to_nhwc(x), {0, 0});
    const Tensor y = rng.tensor({2, 4, 5, 3});
    lab02::nhwc_to_nchw(y, nchw);
    // Check through the golden forward conversion: to_nhwc(nchw) must give y back.
    grader::check_tensor("nhwc_to_nchw, call " + std::to_string(call + 1), golden::lab02_to_nhwc(nchw), y, {0, 0});
  }
}

TEST_CASE("layout: rejects bad shapes and indices") {
  // Messages are checked for the argument they name and, for shapes, the shape in the course's
  // "[2, 3, 4, 5]" format, so the student sees what was expected.
  using grader::check_rejects;
  const Shape s{2, 3, 4, 5};
  check_rejects("nchw_offset, index h = H", [&] { lab02::nchw_offset(s, 0, 0, 4, 0); });
  check_rejects("nhwc_offset, negative c", [&] { lab02::nhwc_offset(s, 0, -1, 0, 0); });
  check_rejects("nchw_offset, n = N", [&] { lab02::nchw_offset(s, 2, 0, 0, 0); });
  check_rejects("nhwc_offset, w = W", [&] { lab02::nhwc_offset(s, 0, 0, 0, 5); });
  check_rejects("nchw_offset, 3-D shape", [&] { lab02::nchw_offset({3, 4, 5}, 0, 0, 0, 0); }, "[3, 4, 5]");
  const Tensor x(s, 1.0f);
  Tensor same_shape(s);  // forgetting to permute the shape
  check_rejects("nchw_to_nhwc into an [N,C,H,W] tensor", [&] { lab02::nchw_to_nhwc(x, same_shape); }, "[2, 4, 5, 3]");
  Tensor wrong(Shape{2, 5, 4, 3});  // [N, W, H, C]: H and W swapped
  check_rejects("nchw_to_nhwc into [N,W,H,C]", [&] { lab02::nchw_to_nhwc(x, wrong); }, "[2, 4, 5, 3]");
  Tensor flat(Shape{120});
  check_rejects("nchw_to_nhwc from 1-D", [&] { lab02::nchw_to_nhwc(flat, same_shape); }, "[120]");
  const Tensor y(Shape{2, 4, 5, 3}, 1.0f);
  Tensor bad(Shape{2, 3, 5, 4});
  check_rejects("nhwc_to_nchw into [N,C,W,H]", [&] { lab02::nhwc_to_nchw(y, bad); }, "[2, 3, 4, 5]");
  // Every extent at least 1, as for the convolution.
  Tensor empty_out(Shape{0, 4, 5, 3});
  check_rejects("nchw_to_nhwc of an empty batch", [&] { lab02::nchw_to_nhwc(Tensor(Shape{0, 3, 4, 5}), empty_out); });
  Tensor no_channels(Shape{2, 4, 5, 0});
  check_rejects("nchw_to_nhwc with no channels", [&] { lab02::nchw_to_nhwc(Tensor(Shape{2, 0, 4, 5}), no_channels); });
  Tensor empty_nchw(Shape{2, 3, 0, 5});
  check_rejects("nhwc_to_nchw with no rows", [&] { lab02::nhwc_to_nchw(Tensor(Shape{2, 0, 5, 3}), empty_nchw); });
}

TEST_CASE("layout: both offsets for every element of every small shape (N <= 2, C, H, W <= 3)") {
  // Walking n, c, h, w (NCHW) or n, h, w, c (NHWC) with the innermost index fastest must visit
  // offsets 0, 1, 2, ...: that proves each formula is exactly its layout. 1,296 calls.
  grader::Sweep sweep("nchw_offset / nhwc_offset over every small shape");
  for (std::int64_t N = 1; N <= 2 && sweep.running(); ++N)
    for (std::int64_t C = 1; C <= 3 && sweep.running(); ++C)
      for (std::int64_t H = 1; H <= 3 && sweep.running(); ++H)
        for (std::int64_t W = 1; W <= 3 && sweep.running(); ++W) {
          const Shape s{N, C, H, W};
          const auto check = [&](const char* name, std::size_t expected, std::size_t got, std::int64_t n, std::int64_t c,
                                 std::int64_t h, std::int64_t w) -> std::string {
            if (got == expected) return "";
            return std::string(name) + "(" + course::shape_to_string(s) + ", n=" + std::to_string(n) + ", c=" +
                   std::to_string(c) + ", h=" + std::to_string(h) + ", w=" + std::to_string(w) + ") = " +
                   std::to_string(got) + ", expected " + std::to_string(expected);
          };
          sweep.run("shape " + course::shape_to_string(s), [&]() -> std::string {
            std::size_t expected = 0;
            for (std::int64_t n = 0; n < N; ++n)
              for (std::int64_t c = 0; c < C; ++c)
                for (std::int64_t h = 0; h < H; ++h)
                  for (std::int64_t w = 0; w < W; ++w, ++expected) {
                    const std::string problem = check("nchw_offset", expected, lab02::nchw_offset(s, n, c, h, w), n, c, h, w);
                    if (!problem.empty()) return problem;
                  }
            expected = 0;
            for (std::int64_t n = 0; n < N; ++n)
              for (std::int64_t h = 0; h < H; ++h)
                for (std::int64_t w = 0; w < W; ++w)
                  for (std::int64_t c = 0; c < C; ++c, ++expected) {
                    const std::string problem = check("nhwc_offset", expected, lab02::nhwc_offset(s, n, c, h, w), n, c, h, w);
                    if (!problem.empty()) return problem;
                  }
            return "";
          });
        }
  sweep.finish(54);
}

TEST_CASE("layout: conversions both ways for every small shape (N <= 2, C <= 3, H, W <= 4)") {
  course::Rng rng = grader::case_rng("layout sweep");
  grader::Sweep sweep("nchw_to_nhwc / nhwc_to_nchw over every small shape");
  for (std::int64_t N = 1; N <= 2 && sweep.running(); ++N)
    for (std::int64_t C = 1; C <= 3 && sweep.running(); ++C)
      for (std::int64_t H = 1; H <= 4 && sweep.running(); ++H)
        for (std::int64_t W = 1; W <= 4 && sweep.running(); ++W) {
          const Shape s{N, C, H, W};
          sweep.run("shape " + course::shape_to_string(s), [&]() -> std::string {
            const Tensor x = rng.tensor(s);
            const Tensor expected = golden::lab02_to_nhwc(x);
            Tensor nhwc = grader::poisoned(expected.shape());
            lab02::nchw_to_nhwc(x, nhwc);
            const std::string forward = grader::mismatch(nhwc, expected, {0, 0});
            if (!forward.empty()) return "nchw_to_nhwc: " + forward;
            Tensor back = grader::poisoned(s);
            lab02::nhwc_to_nchw(expected, back);
            const std::string backward = grader::mismatch(back, x, {0, 0});
            return backward.empty() ? "" : "nhwc_to_nchw: " + backward;
          });
        }
  sweep.finish(96);
}

TEST_CASE("layout: each offset formula numbers the elements in its own loop order") {
  // Walking n, c, h, w (NCHW) or n, h, w, c (NHWC) with the innermost index fastest must visit
  // offsets 0, 1, 2, ... -- which proves the formula is exactly that layout, a bijection.
  course::Rng rng = grader::case_rng("layout offsets");
  for (int i = 0; i < 5; ++i) {
    const Shape s{rng.integer(1, 3), rng.integer(1, 5), rng.integer(1, 6), rng.integer(1, 6)};
    INFO("shape " << course::shape_to_string(s));
    std::size_t expected = 0;
    bool ok = true;
    for (std::int64_t n = 0; n < s[0]; ++n)
      for (std::int64_t c = 0; c < s[1]; ++c)
        for (std::int64_t h = 0; h < s[2]; ++h)
          for (std::int64_t w = 0; w < s[3]; ++w)
            if (ok && lab02::nchw_offset(s, n, c, h, w) != expected++) {
              FAIL_CHECK("nchw_offset(" << n << ", " << c << ", " << h << ", " << w << ") should be " << expected - 1);
              ok = false;
            }
    expected = 0;
    for (std::int64_t n = 0; n < s[0]; ++n)
      for (std::int64_t h = 0; h < s[2]; ++h)
        for (std::int64_t w = 0; w < s[3]; ++w)
          for (std::int64_t c = 0; c < s[1]; ++c)
            if (ok && lab02::nhwc_offset(s, n, c, h, w) != expected++) {
              FAIL_CHECK("nhwc_offset(" << n << ", " << c << ", " << h << ", " << w << ") should be " << expected - 1);
              ok = false;
            }
    CHECK(ok);
  }
}

TEST_CASE("layout: random shapes, conversion against the golden reference and round trip") {
  course::Rng rng = grader::case_rng("layout round trip");
  for (int i = 0; i < 10; ++i) {
    const Shape s{rng.integer(1, 3), rng.integer(1, 6), rng.integer(1, 7), rng.integer(1, 7)};
    const Tensor x = rng.tensor(s);
    Tensor nhwc = grader::poisoned({s[0], s[2], s[3], s[1]});
    lab02::nchw_to_nhwc(x, nhwc);
    grader::check_tensor("nchw_to_nhwc " + course::shape_to_string(s), nhwc, golden::lab02_to_nhwc(x), {0, 0});
    // Element by element through the offset formulas: the same value sits at both offsets.
    const Tensor reference = golden::lab02_to_nhwc(x);
    bool ok = true;
    for (std::int64_t n = 0; n < s[0] && ok; ++n)
      for (std::int64_t c = 0; c < s[1] && ok; ++c)
        for (std::int64_t h = 0; h < s[2] && ok; ++h)
          for (std::int64_t w = 0; w < s[3] && ok; ++w)
            ok = reference[lab02::nhwc_offset(s, n, c, h, w)] == x[lab02::nchw_offset(s, n, c, h, w)];
    CHECK_MESSAGE(ok, "x[nchw_offset(...)] must equal nhwc[nhwc_offset(...)] for shape " << course::shape_to_string(s));
    Tensor back = grader::poisoned(s);
    lab02::nhwc_to_nchw(nhwc, back);
    grader::check_tensor("nhwc_to_nchw(nchw_to_nhwc(x)) " + course::shape_to_string(s), back, x, {0, 0});
  }
}
