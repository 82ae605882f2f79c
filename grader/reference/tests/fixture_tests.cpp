// Self-checks of the golden references of labs 01-04 against the PyTorch fixtures
// (grader/fixtures/, written by data/tools/fixtures_lab0*.py): numbers from an implementation the
// course did not write. They run once in the course's test suite (CTest reference.fixtures), not
// in the lab programs, so that a lab's passed test cases count only what the student wrote.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "lab01_reference.hpp"
#include "lab02_reference.hpp"
#include "lab03_reference.hpp"
#include "lab04_reference.hpp"
#include "conv_algorithms_reference.hpp"
#include "testkit.hpp"

namespace {

using course::Tensor;

int as_int(float value) { return static_cast<int>(std::lround(value)); }

golden::Pool2d pool(int kh, int kw, int sh, int sw, int ph, int pw, bool include_pad) {
  golden::Pool2d p;
  p.kernel_h = kh, p.kernel_w = kw, p.stride_h = sh, p.stride_w = sw, p.pad_h = ph, p.pad_w = pw;
  p.count_include_pad = include_pad;
  return p;
}

}  // namespace

TEST_CASE("golden lab01 conv2d matches F.conv2d") {
  const auto fx = [](const std::string& name) { return grader::fixture_tensor("lab01_conv2d.safetensors", name); };
  for (const char* name : {"lecture_single", "lecture_two_channel", "batch_nonsquare", "lenet_conv2", "pointwise", "full_kernel"}) {
    const std::string key = name;
    grader::check_tensor("golden vs PyTorch, case " + key,
                         golden::lab01_conv2d(fx(key + ".input"), fx(key + ".weight"), fx(key + ".bias")),
                         fx(key + ".output"), course::Tolerance{1e-5, 1e-5});
  }
}

TEST_CASE("golden lab02 conv2d, TF SAME rule and NHWC match PyTorch / TensorFlow") {
  constexpr const char* kFile = "lab02_padding_stride.safetensors";
  const auto fx = [](const std::string& name) { return grader::fixture_tensor(kFile, name); };
  const auto has = [](const std::string& name) { return grader::fixture_file(kFile).tensors.count(name) != 0; };
  const course::Tolerance torch{2e-5, 1e-4};

  int conv_cases = 0;
  for (int i = 0; has("conv" + std::to_string(i) + "_input"); ++i, ++conv_cases) {
    const std::string key = "conv" + std::to_string(i);
    const Tensor q = fx(key + "_params");
    REQUIRE(q.numel() == 8);
    lab02::Conv2dParams p;
    p.pad_top = as_int(q[0]), p.pad_bottom = as_int(q[1]), p.pad_left = as_int(q[2]), p.pad_right = as_int(q[3]);
    p.stride_h = as_int(q[4]), p.stride_w = as_int(q[5]), p.dilation_h = as_int(q[6]), p.dilation_w = as_int(q[7]);
    grader::check_tensor("golden vs PyTorch, " + key,
                         golden::lab02_conv2d(fx(key + "_input"), fx(key + "_weight"), fx(key + "_bias"), p),
                         fx(key + "_output"), torch);
  }
  CHECK(conv_cases >= 6);

  int same_cases = 0;
  for (int i = 0; has("same" + std::to_string(i) + "_input"); ++i, ++same_cases) {
    const std::string key = "same" + std::to_string(i);
    const Tensor x = fx(key + "_input"), w = fx(key + "_weight");
    const int dh = as_int(fx(key + "_params")[0]), dw = as_int(fx(key + "_params")[1]);
    const lab02::Padding1d ph = golden::lab02_tf_same(static_cast<int>(x.dim(2)), static_cast<int>(w.dim(2)), 1, dh);
    const lab02::Padding1d pw = golden::lab02_tf_same(static_cast<int>(x.dim(3)), static_cast<int>(w.dim(3)), 1, dw);
    lab02::Conv2dParams p;
    p.pad_top = ph.before, p.pad_bottom = ph.after, p.pad_left = pw.before, p.pad_right = pw.after;
    p.dilation_h = dh, p.dilation_w = dw;
    grader::check_tensor("golden SAME vs PyTorch padding=\"same\", " + key, golden::lab02_conv2d(x, w, fx(key + "_bias"), p),
                         fx(key + "_output"), torch);
  }
  CHECK(same_cases >= 3);

  const Tensor table = fx("tf_same_table");
  REQUIRE(table.rank() == 2);
  REQUIRE(table.dim(1) == 6);
  CHECK(table.dim(0) >= 100);
  int wrong = 0;
  for (std::int64_t row = 0; row < table.dim(0); ++row) {
    const auto v = [&](int col) { return as_int(table[static_cast<std::size_t>(row * 6 + col)]); };
    const lab02::Padding1d g = golden::lab02_tf_same(v(0), v(1), v(2), v(3));
    if ((g.before != v(4) || g.after != v(5)) && ++wrong <= 5)
      FAIL_CHECK("golden SAME(input=" << v(0) << ", kernel=" << v(1) << ", stride=" << v(2) << ", dilation=" << v(3)
                                      << ") = {" << g.before << ", " << g.after << "}, TensorFlow pads {" << v(4) << ", "
                                      << v(5) << "}");
  }
  CHECK(wrong == 0);

  grader::check_tensor("golden NHWC vs PyTorch permute", golden::lab02_to_nhwc(fx("layout_nchw")), fx("layout_nhwc"), {0, 0});
}

TEST_CASE("golden lab03 pooling, activations and softmax match PyTorch") {
  const auto fx = [](const std::string& name) { return grader::fixture_tensor("lab03_pytorch.safetensors", name); };
  const course::Tolerance torch{1e-5, 1e-5};
  // The geometries of data/tools/fixtures_lab03.py: A = 3x3 / 2 / pad 1, B = 2x3 / (1, 2) / pad 1.
  const Tensor x = fx("pool.input");
  grader::check_tensor("golden max.a", golden::max_pool2d(x, pool(3, 3, 2, 2, 1, 1, true)), fx("max.a"), torch);
  grader::check_tensor("golden avg.a.include_pad", golden::avg_pool2d(x, pool(3, 3, 2, 2, 1, 1, true)),
                       fx("avg.a.include_pad"), torch);
  grader::check_tensor("golden avg.a.exclude_pad", golden::avg_pool2d(x, pool(3, 3, 2, 2, 1, 1, false)),
                       fx("avg.a.exclude_pad"), torch);
  grader::check_tensor("golden max.b", golden::max_pool2d(x, pool(2, 3, 1, 2, 1, 1, true)), fx("max.b"), torch);
  grader::check_tensor("golden avg.b.include_pad", golden::avg_pool2d(x, pool(2, 3, 1, 2, 1, 1, true)),
                       fx("avg.b.include_pad"), torch);
  grader::check_tensor("golden avg.b.exclude_pad", golden::avg_pool2d(x, pool(2, 3, 1, 2, 1, 1, false)),
                       fx("avg.b.exclude_pad"), torch);
  grader::check_tensor("golden neg.max", golden::max_pool2d(fx("neg.input"), pool(3, 3, 2, 2, 1, 1, true)), fx("neg.max"),
                       torch);
  grader::check_tensor("golden global average", golden::global_avg_pool2d(x), fx("global_avg"), torch);

  const Tensor a = fx("act.input");
  grader::check_tensor("golden relu", golden::relu(a), fx("act.relu"), torch);
  grader::check_tensor("golden leaky_relu(0.1)", golden::leaky_relu(a, 0.1f), fx("act.leaky_relu_0.1"), torch);
  grader::check_tensor("golden sigmoid", golden::sigmoid(a), fx("act.sigmoid"), torch);
  grader::check_tensor("golden tanh", golden::tanh(a), fx("act.tanh"), torch);
  grader::check_tensor("golden softmax", golden::softmax(fx("softmax.logits")), fx("softmax.probabilities"), torch);
}

TEST_CASE("golden lab04 batch-norm, folding and linear match PyTorch") {
  constexpr const char* kFile = "lab04_layers.safetensors";
  const auto fx = [](const std::string& name) { return grader::fixture_tensor(kFile, name); };
  const course::Tolerance layer{1e-5, 1e-5};
  // The fixture uses Keras' eps 1e-3, not PyTorch's default, so a hard-coded eps would show.
  const double eps = std::strtod(grader::fixture_file(kFile).metadata.at("bn_eps").c_str(), nullptr);
  CHECK(eps == doctest::Approx(1e-3));

  grader::check_tensor("golden batch-norm vs nn.BatchNorm2d (eval)",
                       golden::lab04_batchnorm(fx("bn_input"), fx("bn_gamma"), fx("bn_beta"), fx("bn_mean"), fx("bn_var"), eps),
                       fx("bn_output"), layer);

  const Tensor w = fx("conv_weight"), b = fx("conv_bias");
  const golden::Lab04FoldedConv folded =
      golden::lab04_fold_batchnorm(w, b, fx("fold_gamma"), fx("fold_beta"), fx("fold_mean"), fx("fold_var"), eps);
  grader::check_tensor("golden folded weight vs fuse_conv_bn_weights", folded.weight, fx("fold_weight"), layer);
  grader::check_tensor("golden folded bias vs fuse_conv_bn_weights", folded.bias, fx("fold_bias"), layer);
  // PyTorch's unfolded conv (padding 1) -> batch-norm against golden conv -> golden batch-norm.
  const Tensor unfolded = golden::lab04_batchnorm(golden::lab04_conv2d(fx("conv_input"), w, b, 1, 1), fx("fold_gamma"),
                                                  fx("fold_beta"), fx("fold_mean"), fx("fold_var"), eps);
  grader::check_tensor("golden conv -> batch-norm vs PyTorch", unfolded, fx("conv_bn_output"), {1e-4, 1e-4});

  grader::check_tensor("golden linear vs F.linear",
                       golden::lab04_linear(fx("linear_input"), fx("linear_weight"), fx("linear_bias")),
                       fx("linear_output"), {1e-4, 1e-4});
}

TEST_CASE("golden lab08 im2col x GEMM and the depthwise convolution agree with the direct convolution") {
  // No PyTorch fixture for lab 08 yet: the three references are checked against lab 04's direct
  // convolution (itself checked against F.conv2d above), which shares no code with them.
  course::Rng rng(808);
  for (int i = 0; i < 12; ++i) {
    const int n = rng.integer(1, 3), c = rng.integer(1, 4), k = rng.integer(1, 5), r = rng.integer(1, 4),
              s = rng.integer(1, 4), pad = rng.integer(0, 2), stride = rng.integer(1, 3);
    const int h = std::max(rng.integer(1, 9), r - 2 * pad), w = std::max(rng.integer(1, 9), s - 2 * pad);
    const Tensor x = rng.tensor({n, c, h, w}), weight = rng.tensor({k, c, r, s}), bias = rng.tensor({k});
    const Tensor direct = golden::lab04_conv2d(x, weight, bias, pad, stride);
    const std::int64_t P = direct.dim(2), Q = direct.dim(3);
    // [K, C*R*S] x [C*R*S, N*P*Q] = [K, N*P*Q]: output (n, k, p, q) is at row k, column (n*P + p)*Q + q.
    const Tensor product = golden::lab08_gemm(weight.reshaped({k, static_cast<std::int64_t>(c) * r * s}),
                                              golden::lab08_im2col(x, r, s, pad, stride), bias);
    Tensor nchw(direct.shape());
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t f = 0; f < k; ++f)
        for (std::int64_t pq = 0; pq < P * Q; ++pq)
          nchw.data()[(b * k + f) * P * Q + pq] = product.data()[f * n * P * Q + b * P * Q + pq];
    const course::Comparison cmp = course::compare(nchw, direct, {1e-5, 1e-5});
    CHECK_MESSAGE(cmp.ok(), "im2col x GEMM vs direct, case " << i << ": " << cmp.report(direct.shape()));
  }
  for (int stride : {1, 2}) {
    // Depthwise = a direct convolution of each channel alone with its own filter.
    const int n = 2, c = 3, h = 7, w = 6;
    const Tensor x = rng.tensor({n, c, h, w}), weight = rng.tensor({c, 1, 3, 3}), bias = rng.tensor({c});
    const Tensor dw = golden::lab08_depthwise3x3(x, weight, bias, stride, false);
    for (int ch = 0; ch < c; ++ch) {
      Tensor xc(course::Shape{n, 1, h, w}), wc(course::Shape{1, 1, 3, 3}), bc(course::Shape{1}, {bias[static_cast<std::size_t>(ch)]});
      for (int b = 0; b < n; ++b)
        for (int i = 0; i < h * w; ++i) xc.data()[b * h * w + i] = x.data()[(b * c + ch) * h * w + i];
      for (int i = 0; i < 9; ++i) wc.data()[i] = weight.data()[ch * 9 + i];
      const Tensor direct = golden::lab04_conv2d(xc, wc, bc, 1, stride);
      for (int b = 0; b < n; ++b)
        for (std::int64_t i = 0; i < direct.dim(2) * direct.dim(3); ++i)
          CHECK(std::abs(direct.data()[b * direct.dim(2) * direct.dim(3) + i] -
                         dw.data()[(b * c + ch) * direct.dim(2) * direct.dim(3) + i]) <= 1e-5f);
    }
  }
}
