// Lab 04 exercise, part 2: the fully connected (linear) layer.
// The contract is documented in common/include/labs/lab04_lenet_cpu.hpp; the lecture is
// lectures/04-batchnorm-fusion-lenet.md. Grade this lab with `./course grade lab04`.
#include <cstddef>
#include <cstdint>
#include <string>

#include "course/error.hpp"
#include "labs/lab04_lenet_cpu.hpp"

namespace lab04 {

void linear_forward([[maybe_unused]] const course::Tensor& input, [[maybe_unused]] const course::Tensor& weight,
                    [[maybe_unused]] const course::Tensor& bias, [[maybe_unused]] course::Tensor& output) {
  // TODO 1: validate (throw course::Error naming the argument): input is 2-D [N, IN] ("input"),
  //   weight is 2-D [OUT, IN] ("weight"), their IN agree (say "input features"), bias is [OUT]
  //   ("bias"), output is [N, OUT] ("output").
  // TODO 2: output[n, o] = bias[o] + sum_i input[n, i] * weight[o, i]
  //   The weight is PyTorch's [OUT, IN]: row o (contiguous, starting at o*IN) belongs to output o.
  //   Write every output element once; the tests fill `output` with NaN before calling you.
  throw course::NotImplemented("lab04::linear_forward");
}

}  // namespace lab04
