// Lab 01 exercise: direct convolution on the CPU, NCHW input, KCRS weights, stride 1, no padding.
// The interface and its contract are documented in common/include/labs/lab01_conv2d.hpp; the
// lecture is lectures/01-convolution.md. Replace each `throw course::NotImplemented(...)` with
// your code. Grade this lab with `./course grade lab01`.
#include "labs/lab01_conv2d.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

#include "course/error.hpp"

namespace lab01 {

course::Shape conv2d_output_shape([[maybe_unused]] const course::Shape& input,
                                  [[maybe_unused]] const course::Shape& weight) {
  // TODO 1: validate the shapes, throwing course::Error with a message that names the problem:
  //   - input and weight must both be 4-D (say "input" or "weight" in the message), and every
  //     extent must be at least 1;
  //   - input[1] (C) must equal weight[1] (mention "channels");
  //   - the kernel must fit: R <= H and S <= W (mention "kernel").
  //   course::shape_to_string(shape) turns a shape into "[1, 3, 28, 28]" for the message.
  // TODO 2: return {N, K, H - R + 1, W - S + 1}.
  throw course::NotImplemented("lab01::conv2d_output_shape");
}

void conv2d_forward([[maybe_unused]] const course::Tensor& input, [[maybe_unused]] const course::Tensor& weight,
                    [[maybe_unused]] const course::Tensor& bias, [[maybe_unused]] course::Tensor& output) {
  // TODO 1: validate before writing anything: call conv2d_output_shape(input.shape(), weight.shape()),
  //   then check bias has shape [K] and output has the shape you just computed.
  //   Tensor::expect_shape(expected, "conv2d output") throws the message the tests expect.
  // TODO 2: the seven loops. Four walk over the output (n, k, p, q), three over the terms of one
  //   output element (c, r, s):
  //     output[n][k][p][q] = bias[k] + sum_{c,r,s} input[n][c][p+r][q+s] * weight[k][c][r][s]
  //   Use the flat offsets of contiguous tensors (input.data(), weight.data(), ...):
  //     input  (n, c, h, w) -> ((n*C + c)*H + h)*W + w
  //     weight (k, c, r, s) -> ((k*C + c)*R + r)*S + s
  //     output (n, k, p, q) -> ((n*K + k)*P + p)*Q + q      (P = H-R+1, Q = W-S+1)
  //   Do not flip the kernel, add the bias once per output element, and write every output
  //   element: the tests fill `output` with NaN before calling you.
  throw course::NotImplemented("lab01::conv2d_forward");
}

}  // namespace lab01
