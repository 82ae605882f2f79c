// Lab 03 solution: element-wise activations and a numerically stable row-wise softmax.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "course/error.hpp"
#include "labs/lab03_pooling_activations.hpp"

namespace lab03 {

namespace {

// Element-wise functions read element i and then write element i only, so they work in place
// (input and output the same tensor) without any temporary copy.
template <typename Function>
void map_elements(const course::Tensor& input, course::Tensor& output, const char* name, Function f) {
  output.expect_shape(input.shape(), std::string(name) + ": output");
  const float* in = input.data();
  float* out = output.data();
  const std::size_t count = input.numel();
  for (std::size_t i = 0; i < count; ++i) out[i] = f(in[i]);
}

// 1 / (1 + e^-x) is fine for x >= 0, where e^-x <= 1. For x < 0 the equivalent e^x / (1 + e^x)
// keeps the argument of exp non-positive, so exp never overflows (exp(89) is already inf in
// float) and tiny results such as sigmoid(-100) ~ 3.7e-44 keep their value instead of becoming 0.
float stable_sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

}  // namespace

void relu(const course::Tensor& input, course::Tensor& output) {
  map_elements(input, output, "relu", [](float x) { return x > 0.0f ? x : 0.0f; });
}

void leaky_relu(const course::Tensor& input, float negative_slope, course::Tensor& output) {
  map_elements(input, output, "leaky_relu", [negative_slope](float x) { return x >= 0.0f ? x : negative_slope * x; });
}

void sigmoid(const course::Tensor& input, course::Tensor& output) {
  map_elements(input, output, "sigmoid", stable_sigmoid);
}

void tanh_activation(const course::Tensor& input, course::Tensor& output) {
  // std::tanh saturates to exactly +-1; the textbook (e^2x - 1) / (e^2x + 1) would give
  // inf / inf = NaN for x > ~44.
  map_elements(input, output, "tanh_activation", [](float x) { return std::tanh(x); });
}

void softmax(const course::Tensor& logits, course::Tensor& probabilities) {
  if (logits.rank() != 2)
    throw course::Error("softmax: logits must be 2-D [N, K], got " + course::shape_to_string(logits.shape()));
  if (logits.dim(1) < 1)
    throw course::Error("softmax: logits " + course::shape_to_string(logits.shape()) + " have empty rows (K = 0)");
  if (logits.dim(0) < 1)
    throw course::Error("softmax: logits " + course::shape_to_string(logits.shape()) + " have no rows (N = 0)");
  probabilities.expect_shape(logits.shape(), "softmax: probabilities");

  const std::int64_t N = logits.dim(0), K = logits.dim(1);
  for (std::int64_t n = 0; n < N; ++n) {
    const float* x = logits.data() + n * K;
    float* p = probabilities.data() + n * K;
    // Shifting every logit by the row max leaves the result unchanged (the factor e^-max
    // cancels between numerator and denominator) but makes every exponent <= 0: no overflow,
    // and the largest term is exactly 1, so the sum is >= 1 and never underflows to 0.
    const float row_max = *std::max_element(x, x + K);
    float sum = 0.0f;
    for (std::int64_t k = 0; k < K; ++k) {
      p[k] = std::exp(x[k] - row_max);
      sum += p[k];
    }
    // One division, then multiplications: cheaper than K divisions.
    const float inv_sum = 1.0f / sum;
    for (std::int64_t k = 0; k < K; ++k) p[k] *= inv_sum;
  }
}

}  // namespace lab03
