// Lab 04 exercise, part 1: batch-norm at inference and folding it into the convolution before it.
// The contract of each function is documented in common/include/labs/lab04_lenet_cpu.hpp; the
// lecture is lectures/04-batchnorm-fusion-lenet.md. Replace each `throw course::NotImplemented(...)`
// with your code. Grade this lab with `./course grade lab04`.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/error.hpp"
#include "labs/lab04_lenet_cpu.hpp"

namespace lab04 {

void batchnorm_inference([[maybe_unused]] const course::Tensor& input, [[maybe_unused]] const course::Tensor& gamma,
                         [[maybe_unused]] const course::Tensor& beta,
                         [[maybe_unused]] const course::Tensor& running_mean,
                         [[maybe_unused]] const course::Tensor& running_var, [[maybe_unused]] double eps,
                         [[maybe_unused]] course::Tensor& output) {
  // TODO 1: validate before writing anything (throw course::Error; the message must name the
  //   argument): input is 4-D [N, C, H, W]; gamma, beta, running_mean, running_var are [C]
  //   (Tensor::expect_shape({C}, "batch-norm gamma") does it); eps is finite and > 0; no
  //   running_var value is negative or NaN; output has the input's shape. Checking the four
  //   parameters and eps in a helper lets fold_batchnorm reuse it.
  // TODO 2: per channel c, precompute scale = gamma[c] / sqrt(running_var[c] + eps) (use the
  //   eps you were given, not a constant) and then, for every element of that channel,
  //     output = (input - running_mean[c]) * scale + beta[c]
  //   Channel c of image n is the contiguous plane starting at ((n*C + c) * H*W).
  //   `output` may be the same tensor as `input`: read each element before you overwrite it.
  throw course::NotImplemented("lab04::batchnorm_inference");
}

void fold_batchnorm([[maybe_unused]] const course::Tensor& conv_weight, [[maybe_unused]] const course::Tensor& conv_bias,
                    [[maybe_unused]] const course::Tensor& gamma, [[maybe_unused]] const course::Tensor& beta,
                    [[maybe_unused]] const course::Tensor& running_mean,
                    [[maybe_unused]] const course::Tensor& running_var, [[maybe_unused]] double eps,
                    [[maybe_unused]] course::Tensor& folded_weight, [[maybe_unused]] course::Tensor& folded_bias) {
  // TODO 1: validate: conv_weight is 4-D [K, C, R, S]; conv_bias is empty (numel() == 0, a
  //   convolution without bias) or [K]; the batch-norm parameters are [K] (one per OUTPUT
  //   channel); eps > 0; running_var >= 0; folded_weight has conv_weight's shape, folded_bias is [K].
  // TODO 2: with scale[k] = gamma[k] / sqrt(running_var[k] + eps):
  //     folded_weight[k, c, r, s] = conv_weight[k, c, r, s] * scale[k]   (the whole filter k)
  //     folded_bias[k] = (conv_bias[k] - running_mean[k]) * scale[k] + beta[k]   (conv_bias = 0 if empty)
  //   Filter k is the contiguous block of C*R*S values starting at k * C*R*S.
  throw course::NotImplemented("lab04::fold_batchnorm");
}

}  // namespace lab04
