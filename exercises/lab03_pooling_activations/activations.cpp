// Lab 03 exercise: element-wise activations and a numerically stable row-wise softmax.
//
// Read the interface first: common/include/labs/lab03_pooling_activations.hpp
// and the lecture: lectures/03-pooling-activations.md
// Grade just this lab with:  ./course grade lab03
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "course/error.hpp"
#include "labs/lab03_pooling_activations.hpp"

namespace lab03 {

// Every activation: first output.expect_shape(input.shape(), "<function>: output"), then one
// pass over the elements. Read element i, then write element i: that way the same tensor can
// be passed as input and output (an in-place call) and still give the right answer.

void relu([[maybe_unused]] const course::Tensor& input, [[maybe_unused]] course::Tensor& output) {
  // TODO: output[i] = max(0, input[i]).
  throw course::NotImplemented("lab03::relu");
}

void leaky_relu([[maybe_unused]] const course::Tensor& input,
                [[maybe_unused]] float negative_slope, [[maybe_unused]] course::Tensor& output) {
  // TODO: output[i] = input[i] if input[i] >= 0, else negative_slope * input[i].
  throw course::NotImplemented("lab03::leaky_relu");
}

void sigmoid([[maybe_unused]] const course::Tensor& input, [[maybe_unused]] course::Tensor& output) {
  // TODO: 1 / (1 + exp(-x)), but never call exp with a large positive argument
  //       (exp(89) is inf in float): for x < 0 use the equivalent exp(x) / (1 + exp(x)).
  throw course::NotImplemented("lab03::sigmoid");
}

void tanh_activation([[maybe_unused]] const course::Tensor& input, [[maybe_unused]] course::Tensor& output) {
  // TODO: output[i] = tanh(input[i]). Beware of (e^2x - 1) / (e^2x + 1): inf / inf = NaN.
  throw course::NotImplemented("lab03::tanh_activation");
}

void softmax([[maybe_unused]] const course::Tensor& logits, [[maybe_unused]] course::Tensor& probabilities) {
  // TODO: logits must be 2-D [N, K] with K >= 1; probabilities must have the same shape.
  // TODO: for each row: m = max of the row; e_k = exp(x_k - m); p_k = e_k / sum(e).
  //       Subtracting m keeps every exponent <= 0, so nothing overflows.
  throw course::NotImplemented("lab03::softmax");
}

}  // namespace lab03
