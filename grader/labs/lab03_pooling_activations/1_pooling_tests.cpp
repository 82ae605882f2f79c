// Lab 03 tests: max, average and global-average pooling, and the output-shape rule.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "lab03_test_support.hpp"

using course::Shape;
using course::Tensor;
using lab03::Pool2dParams;
using lab03_tests::kExact;
using lab03_tests::kFloat;
using lab03_tests::make_params;
using lab03_tests::plane;
using lab03_tests::to_golden;

namespace {

// Runs max and average pooling (both divisor modes) for one geometry and compares with golden.
void check_all_pools(const std::string& what, const Tensor& x, Pool2dParams p) {
  const Shape out_shape = golden::pool_shape(x.shape(), to_golden(p));
  CHECK_MESSAGE(lab03::pool2d_output_shape(x.shape(), p) == out_shape,
                what << ": pool2d_output_shape(" << lab03_tests::describe(p, x.shape()) << ") should be "
                     << course::shape_to_string(out_shape));
  Tensor out = grader::poisoned(out_shape);
  lab03::max_pool2d(x, p, out);
  grader::check_tensor(what + " max_pool2d " + lab03_tests::describe(p, x.shape()), out,
                       golden::max_pool2d(x, to_golden(p)), kExact);
  for (bool include_pad : {true, false}) {
    p.count_include_pad = include_pad;
    // The same (already written) buffer again: a stale value from the previous call must not survive.
    lab03::avg_pool2d(x, p, out);
    grader::check_tensor(what + " avg_pool2d " + lab03_tests::describe(p, x.shape()), out,
                         golden::avg_pool2d(x, to_golden(p)), kFloat);
  }
}

}  // namespace

TEST_CASE("pool2d_output_shape: floor((in + 2*pad - kernel) / stride) + 1 on fixed examples") {
  CHECK(lab03::pool2d_output_shape({1, 6, 28, 28}, Pool2dParams::square(2, 2)) == Shape{1, 6, 14, 14});  // LeNet pool 1
  CHECK(lab03::pool2d_output_shape({1, 16, 10, 10}, Pool2dParams::square(2, 2)) == Shape{1, 16, 5, 5});  // LeNet pool 2
  CHECK(lab03::pool2d_output_shape({1, 1, 4, 4}, Pool2dParams::square(3, 2, 1)) == Shape{1, 1, 2, 2});   // lecture
  CHECK(lab03::pool2d_output_shape({2, 3, 28, 28}, Pool2dParams::square(3, 2)) == Shape{2, 3, 13, 13});  // lecture
  CHECK(lab03::pool2d_output_shape({1, 1, 5, 5}, Pool2dParams::square(2, 2)) == Shape{1, 1, 2, 2});  // last row dropped
  CHECK(lab03::pool2d_output_shape({2, 3, 7, 7}, Pool2dParams::square(3, 2, 1)) == Shape{2, 3, 4, 4});
  CHECK(lab03::pool2d_output_shape({3, 4, 1, 1}, Pool2dParams::square(1, 1)) == Shape{3, 4, 1, 1});
  CHECK(lab03::pool2d_output_shape({8, 64, 56, 56}, Pool2dParams::square(3, 2, 1)) == Shape{8, 64, 28, 28});  // check yourself 1
  // Each axis uses its own kernel, stride and padding: H (9+2-2)/1+1 = 10, W (11+2-3)/2+1 = 6.
  CHECK(lab03::pool2d_output_shape({1, 2, 9, 11}, make_params(2, 3, 1, 2, 1, 1)) == Shape{1, 2, 10, 6});
  CHECK(lab03::pool2d_output_shape({1, 2, 9, 11}, make_params(3, 2, 2, 1, 0, 1)) == Shape{1, 2, 4, 12});
  // Pool2dParams::square fills all six numbers.
  const Pool2dParams sq = Pool2dParams::square(3, 2, 1);
  CHECK((sq.kernel_h == 3 && sq.kernel_w == 3 && sq.stride_h == 2 && sq.stride_w == 2 && sq.pad_h == 1 && sq.pad_w == 1));
}

TEST_CASE("max_pool2d and avg_pool2d: lecture example, 2x2 windows, stride 2") {
  const Tensor x = plane({{3, 1, 0, 2}, {-1, 5, 4, -2}, {6, 0, 1, 1}, {2, 2, -3, 7}});
  Tensor out = grader::poisoned({1, 1, 2, 2});
  lab03::max_pool2d(x, Pool2dParams::square(2, 2), out);
  grader::check_tensor("lecture max pool 2x2/2", out, plane({{5, 4}, {6, 7}}), kExact);
  lab03::avg_pool2d(x, Pool2dParams::square(2, 2), out);
  grader::check_tensor("lecture avg pool 2x2/2", out, plane({{2, 1}, {2.5f, 1.5f}}), kFloat);
}

TEST_CASE("avg_pool2d: count_include_pad true and false at the borders (lecture example)") {
  const Tensor x = plane({{3, 1, 0, 2}, {-1, 5, 4, -2}, {6, 0, 1, 1}, {2, 2, -3, 7}});
  Pool2dParams p = Pool2dParams::square(3, 2, 1);
  Tensor out = grader::poisoned({1, 1, 2, 2});

  // Corner window: taps 3, 1, -1, 5 are in the image (sum 8), five taps are padding.
  p.count_include_pad = true;
  lab03::avg_pool2d(x, p, out);
  grader::check_tensor("lecture avg pool 3x3/2 pad 1, padding counted (8/9, 10/9, 14/9, 15/9)", out,
                       plane({{8.0f / 9, 10.0f / 9}, {14.0f / 9, 15.0f / 9}}), kFloat);
  CHECK(out[0] == doctest::Approx(0.8889).epsilon(1e-4));

  // Same buffer, other mode: divide by the in-image taps only (4, 6, 6, 9).
  p.count_include_pad = false;
  lab03::avg_pool2d(x, p, out);
  grader::check_tensor("lecture avg pool 3x3/2 pad 1, padding not counted (8/4, 10/6, 14/6, 15/9)", out,
                       plane({{2.0f, 10.0f / 6}, {14.0f / 6, 15.0f / 9}}), kFloat);
  CHECK(out[0] == doctest::Approx(2.0).epsilon(1e-6));

  lab03::max_pool2d(x, p, out);
  grader::check_tensor("lecture max pool 3x3/2 pad 1", out, plane({{5, 5}, {6, 7}}), kExact);
}

TEST_CASE("max_pool2d: all-negative input with padding -- padding is -infinity and never wins") {
  // Lecture example: every 2x2 window (stride 2, pad 1) holds exactly one real pixel.
  const Tensor x = plane({{-3, -1}, {-4, -2}});
  Tensor out = grader::poisoned({1, 1, 2, 2});
  lab03::max_pool2d(x, Pool2dParams::square(2, 2, 1), out);
  grader::check_tensor("lecture: all-negative 2x2, kernel 2 stride 2 pad 1 (zero padding would give 0s)", out, x, kExact);

  course::Rng rng = grader::case_rng("max pool all negative");
  for (int i = 0; i < 10; ++i) {
    const int k = rng.integer(2, 5);
    const Pool2dParams p = make_params(k, k, rng.integer(1, 3), rng.integer(1, 3), k / 2, k / 2);
    const Tensor neg = rng.tensor({rng.integer(1, 2), rng.integer(1, 3), rng.integer(2, 9), rng.integer(2, 9)}, -9.0f, -0.5f);
    const Tensor expected = golden::max_pool2d(neg, to_golden(p));
    Tensor y = grader::poisoned(expected.shape());
    lab03::max_pool2d(neg, p, y);
    grader::check_tensor("all-negative max pool " + lab03_tests::describe(p, neg.shape()), y, expected, kExact);
    bool all_negative = true;
    for (float v : y.values()) all_negative = all_negative && v < 0.0f;
    CHECK_MESSAGE(all_negative, "max_pool2d returned a value >= 0 for an all-negative input: padding was treated as 0");
  }
}

TEST_CASE("avg_pool2d: check-yourself question 3 (a 3x3 plane of 9s, kernel 3, stride 1, pad 1)") {
  const Tensor nines = Tensor::nchw(1, 1, 3, 3, 9.0f);
  Pool2dParams p = Pool2dParams::square(3, 1, 1);
  Tensor out = grader::poisoned({1, 1, 3, 3});
  p.count_include_pad = true;
  lab03::avg_pool2d(nines, p, out);
  grader::check_tensor("padding counted: corners 36/9, edges 54/9, centre 81/9", out, plane({{4, 6, 4}, {6, 9, 6}, {4, 6, 4}}),
                       kFloat);
  p.count_include_pad = false;
  lab03::avg_pool2d(nines, p, out);
  grader::check_tensor("padding not counted: every window averages only 9s", out, Tensor::nchw(1, 1, 3, 3, 9.0f), kFloat);
}

TEST_CASE("pooling: fixed geometries (non-square, kernel != stride, overlapping windows)") {
  course::Rng rng = grader::case_rng("pool fixed geometries");
  struct Geometry {
    int kh, kw, sh, sw, ph, pw;
    Shape input;
  };
  const std::vector<Geometry> cases = {
      {2, 2, 2, 2, 0, 0, {2, 6, 28, 28}},  // LeNet's pooling
      {3, 3, 1, 1, 1, 1, {1, 3, 7, 9}},    // overlapping, output as large as the input
      {3, 3, 2, 2, 1, 1, {2, 2, 9, 11}},   // ResNet-style stem pooling
      {2, 3, 1, 2, 1, 1, {1, 2, 9, 11}},   // non-square window, different strides per axis
      {4, 2, 3, 1, 2, 0, {1, 2, 10, 5}},   // tall window, padding on one axis only
      {1, 1, 2, 2, 0, 0, {1, 2, 7, 6}},    // kernel < stride: plain subsampling
      {2, 2, 3, 3, 1, 0, {1, 1, 8, 8}},    // gaps between windows
      {5, 5, 1, 1, 2, 2, {1, 1, 6, 6}},    // wide overlap, every border window padded
      {1, 4, 1, 4, 0, 2, {2, 1, 3, 10}},   // 1-row window
  };
  for (const Geometry& g : cases)
    check_all_pools("fixed geometry", rng.tensor(g.input, -5.0f, 5.0f), make_params(g.kh, g.kw, g.sh, g.sw, g.ph, g.pw));
}

TEST_CASE("pooling: edge cases (1x1 window = identity, window = whole plane, 1x1 input)") {
  course::Rng rng = grader::case_rng("pool edge cases");
  const Tensor x = rng.tensor({2, 3, 5, 7});
  Tensor same = grader::poisoned(x.shape());
  lab03::max_pool2d(x, Pool2dParams::square(1, 1), same);
  grader::check_tensor("max_pool2d with a 1x1 window and stride 1 is the identity", same, x, kExact);
  lab03::avg_pool2d(x, Pool2dParams::square(1, 1), same);
  grader::check_tensor("avg_pool2d with a 1x1 window and stride 1 is the identity", same, x, kFloat);

  // A window covering the whole plane: max pooling = global max, average pooling = global average.
  const Pool2dParams whole = make_params(5, 7, 1, 1, 0, 0);
  Tensor one = grader::poisoned({2, 3, 1, 1});
  lab03::avg_pool2d(x, whole, one);
  grader::check_tensor("avg_pool2d over the whole plane = global average", one, golden::global_avg_pool2d(x), kFloat);
  lab03::max_pool2d(x, whole, one);
  Tensor global_max({2, 3, 1, 1});
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t c = 0; c < 3; ++c) {
      float m = x.at(n, c, 0, 0);
      for (std::int64_t h = 0; h < 5; ++h)
        for (std::int64_t w = 0; w < 7; ++w) m = std::fmax(m, x.at(n, c, h, w));
      global_max.at(n, c, 0, 0) = m;
    }
  grader::check_tensor("max_pool2d over the whole plane = global max", one, global_max, kExact);

  check_all_pools("1x1 input, 1x1 window", rng.tensor({3, 2, 1, 1}), Pool2dParams::square(1, 1));
  check_all_pools("1x1 input, 2x2 window, pad 1", rng.tensor({1, 2, 1, 1}), Pool2dParams::square(2, 2, 1));
}

TEST_CASE("pool2d_output_shape and the pooling functions reject invalid parameters") {
  const Shape in{1, 2, 8, 8};
  grader::check_rejects("kernel_h = 0", [&] { lab03::pool2d_output_shape(in, make_params(0, 2, 2, 2, 0, 0)); }, "kernel_h");
  grader::check_rejects("kernel_w = -1", [&] { lab03::pool2d_output_shape(in, make_params(2, -1, 2, 2, 0, 0)); }, "kernel_w");
  grader::check_rejects("stride_h = 0", [&] { lab03::pool2d_output_shape(in, make_params(2, 2, 0, 2, 0, 0)); }, "stride_h");
  grader::check_rejects("stride_w = -2", [&] { lab03::pool2d_output_shape(in, make_params(2, 2, 2, -2, 0, 0)); }, "stride_w");
  grader::check_rejects("pad_h = -1", [&] { lab03::pool2d_output_shape(in, make_params(2, 2, 2, 2, -1, 0)); }, "pad_h");
  // PyTorch's rule: pad <= kernel / 2 (integer division), so pad 2 with kernel 3 is too much.
  grader::check_rejects("pad_w = 2 > kernel_w / 2", [&] { lab03::pool2d_output_shape(in, make_params(3, 3, 1, 1, 1, 2)); }, "pad_w");
  grader::check_rejects("pad_h = 2 > kernel_h / 2", [&] { lab03::pool2d_output_shape(in, make_params(3, 3, 1, 1, 2, 1)); }, "pad_h");
  // A window larger than the padded input: (2 - 3) / 2 truncates to 0 in C++, which would
  // wrongly give one output row; the true floor is -1, i.e. no output at all.
  grader::check_rejects("3x3 window on a 2x2 input", [&] { lab03::pool2d_output_shape({1, 1, 2, 2}, Pool2dParams::square(3, 2)); });
  grader::check_rejects("2-row window on a 1-row input", [&] { lab03::pool2d_output_shape({1, 1, 1, 5}, make_params(2, 1, 2, 1, 0, 0)); });
  grader::check_rejects("3-D input", [&] { lab03::pool2d_output_shape({2, 8, 8}, Pool2dParams::square(2, 2)); });

  const Tensor x = grader::case_rng("pool reject").tensor(in);
  grader::check_rejects("max_pool2d: wrong output shape", [&] {
    Tensor out = grader::poisoned({1, 2, 5, 4});
    lab03::max_pool2d(x, Pool2dParams::square(2, 2), out);
  }, "output");
  grader::check_rejects("avg_pool2d: wrong output shape", [&] {
    Tensor out = grader::poisoned({1, 2, 4, 5});
    lab03::avg_pool2d(x, Pool2dParams::square(2, 2), out);
  }, "output");
  grader::check_rejects("max_pool2d: invalid stride", [&] {
    Tensor out = grader::poisoned({1, 2, 4, 4});
    lab03::max_pool2d(x, make_params(2, 2, 0, 2, 0, 0), out);
  }, "stride_h");
  grader::check_rejects("avg_pool2d: invalid padding", [&] {
    Tensor out = grader::poisoned({1, 2, 4, 4});
    lab03::avg_pool2d(x, make_params(2, 2, 2, 2, 0, 3), out);
  }, "pad_w");
  grader::check_rejects("global_avg_pool2d: wrong output shape", [&] {
    Tensor out = grader::poisoned({1, 2, 1, 2});
    lab03::global_avg_pool2d(x, out);
  }, "output");
  grader::check_rejects("global_avg_pool2d: 2-D input", [&] {
    Tensor out = grader::poisoned({1, 1, 1, 1});
    lab03::global_avg_pool2d(x.reshaped({2, 64}), out);
  });

  // Every extent at least 1: a padded empty plane would still fit a window, but one made only of
  // padding (max -infinity, average 0/0).
  grader::check_rejects("pool2d_output_shape: zero input height",
                        [&] { lab03::pool2d_output_shape({1, 1, 0, 4}, Pool2dParams::square(2, 2, 1)); }, "input");
  grader::check_rejects("pool2d_output_shape: negative batch",
                        [&] { lab03::pool2d_output_shape({-1, 1, 4, 4}, Pool2dParams::square(2, 2)); }, "input");
  grader::check_rejects("pool2d_output_shape: no channels",
                        [&] { lab03::pool2d_output_shape({1, 0, 4, 4}, Pool2dParams::square(2, 2)); }, "input");
  grader::check_rejects("max_pool2d: zero input height", [&] {
    Tensor out = grader::poisoned({1, 1, 1, 3});
    lab03::max_pool2d(Tensor(Shape{1, 1, 0, 4}), Pool2dParams::square(2, 2, 1), out);
  }, "input");
  grader::check_rejects("avg_pool2d: zero input width", [&] {
    Tensor out = grader::poisoned({1, 1, 3, 1});
    Pool2dParams p = Pool2dParams::square(2, 2, 1);
    p.count_include_pad = false;
    lab03::avg_pool2d(Tensor(Shape{1, 1, 4, 0}), p, out);
  }, "input");
  grader::check_rejects("global_avg_pool2d: empty batch", [&] {
    Tensor out = grader::poisoned({0, 2, 1, 1});
    lab03::global_avg_pool2d(Tensor(Shape{0, 2, 3, 3}), out);
  }, "input");
  grader::check_rejects("global_avg_pool2d: zero-width plane", [&] {
    Tensor out = grader::poisoned({1, 2, 1, 1});
    lab03::global_avg_pool2d(Tensor(Shape{1, 2, 3, 0}), out);
  }, "input");
}



TEST_CASE("pool2d_output_shape: every small axis (input <= 6, kernel <= 4, stride <= 3, pad <= 2), valid or not") {
  // Each small axis setting appears three times as the height and three times as the width
  // (three fixed pairings); a pair with an invalid axis must be rejected.
  const std::vector<lab03_tests::PoolAxis> axes = lab03_tests::small_pool_axes(6, 4);  // 216
  grader::Sweep sweep("pool2d_output_shape over every small axis");
  for (std::size_t pairing : {1u, 7u, 25u})  // coprime to 216, so each pairing is a permutation
    for (std::size_t i = 0; i < axes.size() && sweep.running(); ++i) {
      const lab03_tests::PoolAxis a = axes[i], b = axes[(i * pairing + 5) % axes.size()];
      const Pool2dParams p = make_params(a.kernel, b.kernel, a.stride, b.stride, a.pad, b.pad);
      const Shape in{1 + static_cast<std::int64_t>(i % 2), 2, a.in, b.in};
      sweep.run(lab03_tests::describe(p, in), [&]() -> std::string {
        if (!a.valid() || !b.valid()) return grader::rejection([&] { lab03::pool2d_output_shape(in, p); });
        const Shape expected = golden::pool_shape(in, to_golden(p));
        const Shape got = lab03::pool2d_output_shape(in, p);
        return got == expected ? "" : "got " + course::shape_to_string(got) + ", expected " + course::shape_to_string(expected);
      });
    }
  sweep.finish(648);
}

TEST_CASE("max_pool2d and avg_pool2d: every small window that fits (input <= 6, kernel <= 4, stride <= 3)") {
  // Every valid axis (123 of them: each kernel, stride and padding up to kernel/2 on inputs up
  // to 6) appears three times as the height and three times as the width, with (N, C) cycling
  // through 1..3; max pooling and average pooling both ways. 1,107 calls.
  std::vector<lab03_tests::PoolAxis> axes;
  for (const lab03_tests::PoolAxis& a : lab03_tests::small_pool_axes(6, 4))
    if (a.valid()) axes.push_back(a);
  course::Rng rng = grader::case_rng("pool sweep");
  grader::Sweep sweep("max_pool2d / avg_pool2d over every small window");
  int index = 0;
  for (std::size_t pairing : {1u, 5u, 31u})  // coprime to 123
    for (std::size_t i = 0; i < axes.size() && sweep.running(); ++i, ++index) {
      const lab03_tests::PoolAxis a = axes[i], b = axes[(i * pairing + 3) % axes.size()];
      Pool2dParams p = make_params(a.kernel, b.kernel, a.stride, b.stride, a.pad, b.pad);
      const Tensor x = rng.tensor({1 + index % 3, 1 + (index / 3) % 3, a.in, b.in}, -4.0f, 4.0f);
      const Shape out_shape = golden::pool_shape(x.shape(), to_golden(p));
      sweep.run("max_pool2d " + lab03_tests::describe(p, x.shape()), [&] {
        Tensor out = grader::poisoned(out_shape);
        lab03::max_pool2d(x, p, out);
        return grader::mismatch(out, golden::max_pool2d(x, to_golden(p)), kExact);
      });
      for (bool include_pad : {true, false}) {
        p.count_include_pad = include_pad;
        sweep.run("avg_pool2d " + lab03_tests::describe(p, x.shape()), [&] {
          Tensor out = grader::poisoned(out_shape);
          lab03::avg_pool2d(x, p, out);
          return grader::mismatch(out, golden::avg_pool2d(x, to_golden(p)), kFloat);
        });
      }
    }
  sweep.finish(1107);
}

TEST_CASE("global_avg_pool2d: every small shape (N <= 2, C <= 3, H, W <= 6)") {
  course::Rng rng = grader::case_rng("global avg sweep");
  grader::Sweep sweep("global_avg_pool2d over every small shape");
  for (std::int64_t n = 1; n <= 2 && sweep.running(); ++n)
    for (std::int64_t c = 1; c <= 3 && sweep.running(); ++c)
      for (std::int64_t h = 1; h <= 6 && sweep.running(); ++h)
        for (std::int64_t w = 1; w <= 6 && sweep.running(); ++w) {
          const Tensor x = rng.tensor({n, c, h, w}, -2.0f, 3.0f);
          sweep.run("input " + course::shape_to_string(x.shape()), [&] {
            Tensor out = grader::poisoned({n, c, 1, 1});
            lab03::global_avg_pool2d(x, out);
            return grader::mismatch(out, golden::global_avg_pool2d(x), kFloat);
          });
        }
  sweep.finish(216);
}

TEST_CASE("max_pool2d and avg_pool2d: random shapes and parameters vs golden") {
  course::Rng rng = grader::case_rng("pool random");
  for (int i = 0; i < 40; ++i) {
    const lab03_tests::PoolCase pc = lab03_tests::random_pool_case(rng);
    const Tensor x = rng.tensor(pc.input, -4.0f, 4.0f);
    check_all_pools("random case " + std::to_string(i), x, pc.params);

    // A second input of the same shape into the same output buffer: an implementation that
    // remembers its previous result (or its previous input) fails here.
    const Tensor x2 = rng.tensor(pc.input, -4.0f, 4.0f);
    Tensor out = grader::poisoned(golden::pool_shape(pc.input, to_golden(pc.params)));
    lab03::max_pool2d(x, pc.params, out);
    lab03::max_pool2d(x2, pc.params, out);
    grader::check_tensor("max_pool2d second input, same buffer " + lab03_tests::describe(pc.params, pc.input), out,
                         golden::max_pool2d(x2, to_golden(pc.params)), kExact);
    lab03::avg_pool2d(x, pc.params, out);
    lab03::avg_pool2d(x2, pc.params, out);
    grader::check_tensor("avg_pool2d second input, same buffer " + lab03_tests::describe(pc.params, pc.input), out,
                         golden::avg_pool2d(x2, to_golden(pc.params)), kFloat);
  }
}

TEST_CASE("global_avg_pool2d: lecture example, constant planes, random shapes") {
  Tensor one = grader::poisoned({1, 1, 1, 1});
  lab03::global_avg_pool2d(plane({{1, 2, 3}, {4, 5, 6}}), one);
  grader::check_tensor("lecture: mean of [[1,2,3],[4,5,6]] = 3.5", one, plane({{3.5f}}), kFloat);

  Tensor constant = Tensor::nchw(2, 3, 6, 5, 7.25f);
  Tensor out = grader::poisoned({2, 3, 1, 1});
  lab03::global_avg_pool2d(constant, out);
  grader::check_tensor("constant planes of 7.25", out, Tensor::nchw(2, 3, 1, 1, 7.25f), kFloat);

  course::Rng rng = grader::case_rng("global avg random");
  for (int i = 0; i < 10; ++i) {
    const Shape s{rng.integer(1, 3), rng.integer(1, 8), rng.integer(1, 32), rng.integer(1, 32)};
    const Tensor x = rng.tensor(s, -2.0f, 3.0f);
    Tensor y = grader::poisoned({s[0], s[1], 1, 1});
    lab03::global_avg_pool2d(x, y);
    grader::check_tensor("global_avg_pool2d " + course::shape_to_string(s), y, golden::global_avg_pool2d(x), kFloat);
    // Same buffer, new values.
    const Tensor x2 = rng.tensor(s, 0.0f, 1.0f);
    lab03::global_avg_pool2d(x2, y);
    grader::check_tensor("global_avg_pool2d second call " + course::shape_to_string(s), y, golden::global_avg_pool2d(x2),
                         kFloat);
  }
}
