// Lab 03 tests: ReLU, leaky ReLU, sigmoid and tanh (element-wise, in place allowed).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "lab03_test_support.hpp"

using course::Shape;
using course::Tensor;
using lab03_tests::kExact;
using lab03_tests::kFloat;

namespace {

using Activation = std::function<void(const Tensor&, Tensor&)>;
using Reference = std::function<Tensor(const Tensor&)>;

struct Named {
  std::string name;
  Activation student;
  Reference reference;
  course::Tolerance tol;
};

std::vector<Named> all_activations() {
  return {
      {"relu", [](const Tensor& x, Tensor& y) { lab03::relu(x, y); }, [](const Tensor& x) { return golden::relu(x); }, kExact},
      {"leaky_relu(0.01)", [](const Tensor& x, Tensor& y) { lab03::leaky_relu(x, 0.01f, y); },
       [](const Tensor& x) { return golden::leaky_relu(x, 0.01f); }, kFloat},
      {"leaky_relu(0.2)", [](const Tensor& x, Tensor& y) { lab03::leaky_relu(x, 0.2f, y); },
       [](const Tensor& x) { return golden::leaky_relu(x, 0.2f); }, kFloat},
      {"sigmoid", [](const Tensor& x, Tensor& y) { lab03::sigmoid(x, y); }, [](const Tensor& x) { return golden::sigmoid(x); }, kFloat},
      {"tanh_activation", [](const Tensor& x, Tensor& y) { lab03::tanh_activation(x, y); },
       [](const Tensor& x) { return golden::tanh(x); }, kFloat},
  };
}

Tensor vec(std::vector<float> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return Tensor({n}, std::move(values));
}

}  // namespace

TEST_CASE("activations: lecture examples at x = -2, -0.5, 0, 0.5, 2") {
  const Tensor x = vec({-2.0f, -0.5f, 0.0f, 0.5f, 2.0f});
  Tensor y = grader::poisoned(x.shape());
  lab03::relu(x, y);
  grader::check_tensor("relu", y, vec({0, 0, 0, 0.5f, 2}), kExact);
  lab03::leaky_relu(x, 0.1f, y);
  grader::check_tensor("leaky_relu slope 0.1", y, vec({-0.2f, -0.05f, 0, 0.5f, 2}), kFloat);
  lab03::sigmoid(x, y);
  grader::check_tensor("sigmoid", y, vec({0.11920292f, 0.37754067f, 0.5f, 0.62245933f, 0.88079708f}), kFloat);
  lab03::tanh_activation(x, y);
  grader::check_tensor("tanh", y, vec({-0.96402758f, -0.46211716f, 0, 0.46211716f, 0.96402758f}), kFloat);
}

TEST_CASE("activations: random tensors of several shapes vs golden, same buffer reused") {
  course::Rng rng = grader::case_rng("activations random");
  const std::vector<Shape> shapes = {{1}, {17}, {3, 10}, {2, 6, 28, 28}, {1, 16, 10, 10}, {4, 3, 5, 7}};
  for (const Named& a : all_activations())
    for (const Shape& s : shapes) {
      const Tensor x = rng.tensor(s, -6.0f, 6.0f);
      Tensor y = grader::poisoned(s);
      a.student(x, y);
      grader::check_tensor(a.name + " on " + course::shape_to_string(s), y, a.reference(x), a.tol);
      const Tensor x2 = rng.tensor(s, -0.5f, 0.5f);
      a.student(x2, y);
      grader::check_tensor(a.name + " second input, same buffer, " + course::shape_to_string(s), y, a.reference(x2), a.tol);
    }
}

TEST_CASE("activations: in-place call (input and output are the same tensor)") {
  course::Rng rng = grader::case_rng("activations in place");
  for (const Named& a : all_activations()) {
    const Tensor original = rng.tensor({2, 3, 6, 5}, -5.0f, 5.0f);
    Tensor buffer = original;
    a.student(buffer, buffer);
    grader::check_tensor(a.name + " in place", buffer, a.reference(original), a.tol);
  }
}

TEST_CASE("leaky_relu: the slope scales negative inputs only") {
  course::Rng rng = grader::case_rng("leaky slope");
  const Tensor x = rng.tensor({4, 25}, -10.0f, 10.0f);
  for (float slope : {0.0f, 0.01f, 0.1f, 0.3f, 1.0f, 2.5f}) {
    Tensor y = grader::poisoned(x.shape());
    lab03::leaky_relu(x, slope, y);
    grader::check_tensor("leaky_relu slope " + std::to_string(slope), y, golden::leaky_relu(x, slope), kFloat);
  }
  // Slope 0 is ReLU; slope 1 is the identity.
  Tensor y = grader::poisoned(x.shape());
  lab03::leaky_relu(x, 0.0f, y);
  grader::check_tensor("leaky_relu slope 0 = relu", y, golden::relu(x), kExact);
  lab03::leaky_relu(x, 1.0f, y);
  grader::check_tensor("leaky_relu slope 1 = identity", y, x, kExact);
}

TEST_CASE("sigmoid and tanh saturate at +-100 (and beyond) without NaN or Inf") {
  const Tensor x = vec({-1000.0f, -100.0f, -89.0f, -88.0f, -50.0f, -20.0f, 0.0f, 20.0f, 50.0f, 88.0f, 89.0f, 100.0f, 1000.0f,
                        -3.0e38f, 3.0e38f});
  Tensor y = grader::poisoned(x.shape());
  lab03::sigmoid(x, y);
  grader::check_tensor("sigmoid at large |x|", y, golden::sigmoid(x), kFloat);
  CHECK_MESSAGE(y[1] >= 0.0f, "sigmoid(-100) must be >= 0");
  CHECK_MESSAGE(y[1] < 1e-30f, "sigmoid(-100) must be about 0 (exactly 3.7e-44)");
  CHECK_MESSAGE(y[11] == 1.0f, "sigmoid(100) must round to exactly 1 in float");
  CHECK_MESSAGE(y[6] == 0.5f, "sigmoid(0) must be exactly 0.5");

  lab03::tanh_activation(x, y);
  grader::check_tensor("tanh at large |x|", y, golden::tanh(x), kFloat);
  CHECK_MESSAGE(y[1] == -1.0f, "tanh(-100) must be exactly -1");
  CHECK_MESSAGE(y[11] == 1.0f, "tanh(100) must be exactly 1");
  CHECK_MESSAGE(y[6] == 0.0f, "tanh(0) must be exactly 0");
}

TEST_CASE("tanh and sigmoid: symmetry tanh(-x) = -tanh(x), sigmoid(-x) = 1 - sigmoid(x)") {
  course::Rng rng = grader::case_rng("activation symmetry");
  const Tensor x = rng.tensor({64}, -12.0f, 12.0f);
  Tensor minus_x(x.shape());
  for (std::size_t i = 0; i < x.numel(); ++i) minus_x[i] = -x[i];
  Tensor a = grader::poisoned(x.shape()), b = grader::poisoned(x.shape());
  lab03::tanh_activation(x, a);
  lab03::tanh_activation(minus_x, b);
  for (std::size_t i = 0; i < x.numel(); ++i) b[i] = -b[i];
  grader::check_tensor("tanh(x) vs -tanh(-x)", a, b, kFloat);
  lab03::sigmoid(x, a);
  lab03::sigmoid(minus_x, b);
  for (std::size_t i = 0; i < x.numel(); ++i) b[i] = 1.0f - b[i];
  grader::check_tensor("sigmoid(x) vs 1 - sigmoid(-x)", a, b, kFloat);
}

TEST_CASE("activations reject an output of a different shape") {
  const Tensor x = Tensor::nchw(1, 2, 3, 4, 1.0f);
  Tensor wrong = grader::poisoned({1, 2, 4, 3});  // same element count, different shape
  grader::check_rejects("relu", [&] { lab03::relu(x, wrong); }, "output");
  grader::check_rejects("leaky_relu", [&] { lab03::leaky_relu(x, 0.1f, wrong); }, "output");
  grader::check_rejects("sigmoid", [&] { lab03::sigmoid(x, wrong); }, "output");
  grader::check_rejects("tanh_activation", [&] { lab03::tanh_activation(x, wrong); }, "output");
  Tensor small = grader::poisoned({1, 2, 3});
  grader::check_rejects("relu, fewer elements", [&] { lab03::relu(x, small); }, "output");
}

TEST_CASE("ReLU and max pooling commute; ReLU and average pooling do not (lecture section 8)") {
  course::Rng rng = grader::case_rng("relu pool commute");
  const lab03::Pool2dParams p = lab03::Pool2dParams::square(3, 2, 1);
  const Tensor x = rng.tensor({2, 3, 9, 8}, -3.0f, 3.0f);
  const Shape pooled = golden::pool_shape(x.shape(), lab03_tests::to_golden(p));

  Tensor relu_first = grader::poisoned(x.shape()), relu_then_pool = grader::poisoned(pooled);
  lab03::relu(x, relu_first);
  lab03::max_pool2d(relu_first, p, relu_then_pool);
  Tensor pool_first = grader::poisoned(pooled), pool_then_relu = grader::poisoned(pooled);
  lab03::max_pool2d(x, p, pool_first);
  lab03::relu(pool_first, pool_then_relu);
  grader::check_tensor("max_pool(relu(x)) vs relu(max_pool(x))", relu_then_pool, pool_then_relu, kExact);

  // The lecture's counterexample for averages: the window [-1, 3].
  const Tensor pair({1, 1, 1, 2}, std::vector<float>{-1.0f, 3.0f});
  const lab03::Pool2dParams whole = lab03_tests::make_params(1, 2, 1, 2, 0, 0);
  Tensor avg = grader::poisoned({1, 1, 1, 1}), out = grader::poisoned({1, 1, 1, 1});
  lab03::avg_pool2d(pair, whole, avg);
  lab03::relu(avg, out);
  grader::check_tensor("relu(mean([-1, 3])) = 1", out, Tensor({1, 1, 1, 1}, 1.0f), kFloat);
  Tensor rectified = grader::poisoned(pair.shape());
  lab03::relu(pair, rectified);
  lab03::avg_pool2d(rectified, whole, out);
  grader::check_tensor("mean(relu([-1, 3])) = 1.5", out, Tensor({1, 1, 1, 1}, 1.5f), kFloat);
}
