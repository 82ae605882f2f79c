// Lab 02: cross-check against PyTorch. The fixture file is written by
// data/tools/fixtures_lab02.py (F.pad + F.conv2d for asymmetric padding, stride and dilation;
// F.conv2d(padding="same"); TensorFlow's SAME rule; permute(0, 2, 3, 1)). The student's functions
// must reproduce it; the golden reference's own check against it is in grader/reference/tests/.
#include <cmath>
#include <string>

#include "course/safetensors.hpp"
#include "lab02_test_support.hpp"

namespace {

using course::Tensor;

constexpr const char* kFixtureFile = "lab02_padding_stride.safetensors";

const Tensor& fixture(const std::string& name) { return grader::fixture_tensor(kFixtureFile, name); }

bool has_fixture(const std::string& name) { return grader::fixture_file(kFixtureFile).tensors.count(name) != 0; }

int as_int(float value) { return static_cast<int>(std::lround(value)); }

// PyTorch computes in float with its own summation order: allow float rounding differences.
const course::Tolerance kTorchTolerance{2e-5, 1e-4};

}  // namespace

TEST_CASE("fixtures: conv2d with asymmetric padding, stride and dilation matches PyTorch") {
  int cases = 0;
  for (int i = 0; has_fixture("conv" + std::to_string(i) + "_input"); ++i, ++cases) {
    const std::string key = "conv" + std::to_string(i);
    const Tensor x = fixture(key + "_input"), w = fixture(key + "_weight"), b = fixture(key + "_bias");
    const Tensor expected = fixture(key + "_output");
    const Tensor q = fixture(key + "_params");
    REQUIRE(q.numel() == 8);
    const lab02::Conv2dParams p = lab02_tests::params(as_int(q[0]), as_int(q[1]), as_int(q[2]), as_int(q[3]), as_int(q[4]),
                                                      as_int(q[5]), as_int(q[6]), as_int(q[7]));
    const std::string what = key + " (" + lab02_tests::describe(x.shape(), w.shape(), p) + ")";
    CHECK(lab02::conv2d_output_shape(x.shape(), w.shape(), p) == expected.shape());
    Tensor out = grader::poisoned(expected.shape());
    lab02::conv2d_forward(x, w, b, p, out);
    grader::check_tensor("conv2d_forward vs PyTorch, " + what, out, expected, kTorchTolerance);
  }
  CHECK(cases >= 6);
}

TEST_CASE("fixtures: PyTorch padding=\"same\" equals tf_padding(SAME) + conv2d_forward") {
  int cases = 0;
  for (int i = 0; has_fixture("same" + std::to_string(i) + "_input"); ++i, ++cases) {
    const std::string key = "same" + std::to_string(i);
    const Tensor x = fixture(key + "_input"), w = fixture(key + "_weight"), b = fixture(key + "_bias");
    const Tensor expected = fixture(key + "_output");
    const int dh = as_int(fixture(key + "_params")[0]), dw = as_int(fixture(key + "_params")[1]);
    const int H = static_cast<int>(x.dim(2)), W = static_cast<int>(x.dim(3));
    const int R = static_cast<int>(w.dim(2)), S = static_cast<int>(w.dim(3));
    const lab02::Padding1d ph = lab02::tf_padding(lab02::TfPadding::Same, H, R, 1, dh);
    const lab02::Padding1d pw = lab02::tf_padding(lab02::TfPadding::Same, W, S, 1, dw);
    const lab02::Conv2dParams p = lab02_tests::params(ph.before, ph.after, pw.before, pw.after, 1, 1, dh, dw);
    Tensor out = grader::poisoned(expected.shape());
    lab02::conv2d_forward(x, w, b, p, out);
    grader::check_tensor("tf_padding(SAME) + conv2d_forward vs PyTorch padding=\"same\", " + key, out, expected,
                         kTorchTolerance);
  }
  CHECK(cases >= 3);
}

TEST_CASE("fixtures: TensorFlow's SAME table") {
  const Tensor table = fixture("tf_same_table");
  REQUIRE(table.rank() == 2);
  REQUIRE(table.dim(1) == 6);
  int student_wrong = 0;
  for (std::int64_t row = 0; row < table.dim(0); ++row) {
    const auto v = [&](int col) { return as_int(table[static_cast<std::size_t>(row * 6 + col)]); };
    const int in = v(0), k = v(1), s = v(2), d = v(3), before = v(4), after = v(5);
    const lab02::Padding1d p = lab02::tf_padding(lab02::TfPadding::Same, in, k, s, d);
    if ((p.before != before || p.after != after) && ++student_wrong <= 5)
      FAIL_CHECK("tf_padding(SAME, input=" << in << ", kernel=" << k << ", stride=" << s << ", dilation=" << d << ") = {"
                                           << p.before << ", " << p.after << "}, TensorFlow pads {" << before << ", "
                                           << after << "}");
  }
  CHECK(table.dim(0) >= 100);
  CHECK(student_wrong == 0);
}

TEST_CASE("fixtures: NCHW -> NHWC matches PyTorch's permute(0, 2, 3, 1)") {
  const Tensor nchw = fixture("layout_nchw"), nhwc = fixture("layout_nhwc");
  Tensor out = grader::poisoned(nhwc.shape());
  lab02::nchw_to_nhwc(nchw, out);
  grader::check_tensor("nchw_to_nhwc vs PyTorch permute", out, nhwc, {0, 0});
  Tensor back = grader::poisoned(nchw.shape());
  lab02::nhwc_to_nchw(nhwc, back);
  grader::check_tensor("nhwc_to_nchw vs PyTorch", back, nchw, {0, 0});
}
