// Lab 03 tests: cross-check against values computed by PyTorch 1.13
// (grader/fixtures/lab03_pytorch.safetensors, written by data/tools/fixtures_lab03.py).
// The student's functions must reproduce PyTorch; the golden reference's own check against the
// same fixtures is in grader/reference/tests/ (run by the course's test suite, not when grading).
#include <string>

#include "course/safetensors.hpp"
#include "lab03_test_support.hpp"

using course::Tensor;
using lab03::Pool2dParams;
using lab03_tests::kFloat;
using lab03_tests::make_params;

namespace {

const Tensor& get(const std::string& name) { return grader::fixture_tensor("lab03_pytorch.safetensors", name); }

// PyTorch's float kernels and our double reference agree to float rounding.
const course::Tolerance kTorch{1e-5, 1e-5};

// The geometries of data/tools/fixtures_lab03.py.
const Pool2dParams kPoolA = Pool2dParams::square(3, 2, 1);
const Pool2dParams kPoolB = make_params(2, 3, 1, 2, 1, 1);

void check_pool_fixture(const std::string& input_key, const std::string& key, const Pool2dParams& geometry, bool is_max,
                        bool include_pad) {
  const Tensor x = get(input_key);
  const Tensor expected = get(key);
  Pool2dParams p = geometry;
  p.count_include_pad = include_pad;
  Tensor out = grader::poisoned(expected.shape());
  if (is_max)
    lab03::max_pool2d(x, p, out);
  else
    lab03::avg_pool2d(x, p, out);
  grader::check_tensor("student vs PyTorch " + key, out, expected, kTorch);
}

}  // namespace

TEST_CASE("PyTorch fixture: F.max_pool2d and F.avg_pool2d (count_include_pad both ways), global average") {
  check_pool_fixture("pool.input", "max.a", kPoolA, true, true);
  check_pool_fixture("pool.input", "avg.a.include_pad", kPoolA, false, true);
  check_pool_fixture("pool.input", "avg.a.exclude_pad", kPoolA, false, false);
  check_pool_fixture("pool.input", "max.b", kPoolB, true, true);
  check_pool_fixture("pool.input", "avg.b.include_pad", kPoolB, false, true);
  check_pool_fixture("pool.input", "avg.b.exclude_pad", kPoolB, false, false);
  check_pool_fixture("neg.input", "neg.max", kPoolA, true, true);

  const Tensor x = get("pool.input");
  Tensor g = grader::poisoned(get("global_avg").shape());
  lab03::global_avg_pool2d(x, g);
  grader::check_tensor("student vs PyTorch global average", g, get("global_avg"), kTorch);
}

TEST_CASE("PyTorch fixture: relu, leaky_relu(0.1), sigmoid, tanh, including +-100 and +-1000") {
  const Tensor x = get("act.input");
  Tensor y = grader::poisoned(x.shape());
  lab03::relu(x, y);
  grader::check_tensor("student relu vs PyTorch", y, get("act.relu"), kTorch);
  lab03::leaky_relu(x, 0.1f, y);
  grader::check_tensor("student leaky_relu vs PyTorch", y, get("act.leaky_relu_0.1"), kTorch);
  lab03::sigmoid(x, y);
  grader::check_tensor("student sigmoid vs PyTorch", y, get("act.sigmoid"), kTorch);
  lab03::tanh_activation(x, y);
  grader::check_tensor("student tanh vs PyTorch", y, get("act.tanh"), kTorch);
}

TEST_CASE("PyTorch fixture: F.softmax, including rows near +-1000 and a one-hot row") {
  const Tensor logits = get("softmax.logits");
  const Tensor expected = get("softmax.probabilities");
  Tensor p = grader::poisoned(expected.shape());
  lab03::softmax(logits, p);
  grader::check_tensor("student softmax vs PyTorch", p, expected, kFloat);
}
