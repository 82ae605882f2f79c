// Lab 04 solution, part 2: the fully connected (linear) layer.
// The contract is documented in common/include/labs/lab04_lenet_cpu.hpp.
#include <cstddef>
#include <cstdint>
#include <string>

#include "course/error.hpp"
#include "labs/lab04_lenet_cpu.hpp"

namespace lab04 {

void linear_forward(const course::Tensor& input, const course::Tensor& weight, const course::Tensor& bias,
                    course::Tensor& output) {
  if (input.rank() != 2)
    throw course::Error("linear input: expected a 2-D shape [N, IN] (flatten 4-D activations first), got " +
                        course::shape_to_string(input.shape()));
  if (weight.rank() != 2)
    throw course::Error("linear weight: expected a 2-D shape [OUT, IN], got " +
                        course::shape_to_string(weight.shape()));
  const std::int64_t N = input.dim(0), IN = input.dim(1), OUT = weight.dim(0);
  // Every extent at least 1, as in the other labs: a layer without inputs or outputs is a mistake.
  if (N < 1 || IN < 1)
    throw course::Error("linear input: every extent of [N, IN] must be at least 1, got " +
                        course::shape_to_string(input.shape()));
  if (OUT < 1 || weight.dim(1) < 1)
    throw course::Error("linear weight: every extent of [OUT, IN] must be at least 1, got " +
                        course::shape_to_string(weight.shape()));
  if (weight.dim(1) != IN)
    throw course::Error("linear: input features (" + std::to_string(IN) + ", input " +
                        course::shape_to_string(input.shape()) + ") differ from the weight's " +
                        std::to_string(weight.dim(1)) + " (weight " + course::shape_to_string(weight.shape()) + ")");
  bias.expect_shape({OUT}, "linear bias");
  output.expect_shape({N, OUT}, "linear output");

  const auto in_features = static_cast<std::size_t>(IN);
  const auto out_features = static_cast<std::size_t>(OUT);
  // PyTorch stores the weight as [OUT, IN]: row o holds the coefficients of output o, so each
  // output is a dot product of two contiguous rows (one of the input, one of the weight). For
  // a batch this is the matrix product  Y = X * W^T + b.
  for (std::size_t n = 0; n < static_cast<std::size_t>(N); ++n) {
    const float* x = input.data() + n * in_features;
    float* y = output.data() + n * out_features;
    for (std::size_t o = 0; o < out_features; ++o) {
      const float* w = weight.data() + o * in_features;
      float sum = bias[o];
      for (std::size_t i = 0; i < in_features; ++i) sum += x[i] * w[i];
      y[o] = sum;  // written once, so the output's previous contents never matter
    }
  }
}

}  // namespace lab04
