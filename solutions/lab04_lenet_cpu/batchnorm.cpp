// Lab 04 solution, part 1: batch-norm at inference and folding it into the convolution before it.
// The contract of each function is documented in common/include/labs/lab04_lenet_cpu.hpp.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/error.hpp"
#include "labs/lab04_lenet_cpu.hpp"

namespace lab04 {

namespace {

// The same rule as every earlier lab: 4-D, and every extent at least 1. (A zero filter count would
// otherwise reach a division by K below.)
void require_4d(const course::Tensor& t, const std::string& name, const std::string& layout) {
  if (t.rank() != 4)
    throw course::Error(name + ": expected a 4-D shape " + layout + ", got " + course::shape_to_string(t.shape()));
  for (std::int64_t extent : t.shape())
    if (extent < 1)
      throw course::Error(name + ": every extent of " + layout + " must be at least 1, got " +
                          course::shape_to_string(t.shape()));
}

// gamma, beta, running_mean and running_var all hold one number per channel. Checking them in
// one place keeps both functions' error messages the same.
void check_bn_parameters(std::int64_t channels, const course::Tensor& gamma, const course::Tensor& beta,
                         const course::Tensor& running_mean, const course::Tensor& running_var, double eps) {
  const course::Shape per_channel{channels};
  gamma.expect_shape(per_channel, "batch-norm gamma");
  beta.expect_shape(per_channel, "batch-norm beta");
  running_mean.expect_shape(per_channel, "batch-norm running_mean");
  running_var.expect_shape(per_channel, "batch-norm running_var");
  // eps keeps the division finite when a channel's variance is 0; it must be a real, positive
  // number, and it must be the one the model was trained with (PyTorch 1e-5, Keras 1e-3).
  if (!std::isfinite(eps) || !(eps > 0.0))
    throw course::Error("batch-norm eps must be a finite number > 0, got " + std::to_string(eps));
  for (std::size_t c = 0; c < running_var.numel(); ++c)
    if (!(running_var[c] >= 0.0f))  // also catches NaN, which compares false with everything
      throw course::Error("batch-norm running_var[" + std::to_string(c) + "] must be >= 0, got " +
                          std::to_string(running_var[c]));
}

// The per-channel affine form of inference-mode batch-norm: y = scale * x + shift with
//   scale = gamma / sqrt(var + eps),  shift = beta - mean * scale.
// The square root is taken in double so that scale is the correctly rounded float of the exact
// value; folding and the unfolded layer then agree to the last bits that float can resolve.
std::vector<float> bn_scale(const course::Tensor& gamma, const course::Tensor& running_var, double eps) {
  std::vector<float> scale(gamma.numel());
  for (std::size_t c = 0; c < scale.size(); ++c)
    scale[c] = static_cast<float>(static_cast<double>(gamma[c]) / std::sqrt(static_cast<double>(running_var[c]) + eps));
  return scale;
}

}  // namespace

void batchnorm_inference(const course::Tensor& input, const course::Tensor& gamma, const course::Tensor& beta,
                         const course::Tensor& running_mean, const course::Tensor& running_var, double eps,
                         course::Tensor& output) {
  require_4d(input, "batch-norm input", "[N, C, H, W]");
  const std::int64_t N = input.dim(0), C = input.dim(1), H = input.dim(2), W = input.dim(3);
  check_bn_parameters(C, gamma, beta, running_mean, running_var, eps);
  output.expect_shape(input.shape(), "batch-norm output");

  const std::vector<float> scale = bn_scale(gamma, running_var, eps);
  const std::size_t plane = static_cast<std::size_t>(H * W);
  const float* x = input.data();
  float* y = output.data();  // may be the same memory as x: each element is read before it is written

  // At inference the statistics are constants, so every channel is one multiply-add per element.
  // The loops walk the tensor in memory order: channel c of image n is one contiguous plane.
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t c = 0; c < C; ++c) {
      const auto ci = static_cast<std::size_t>(c);
      const float mean = running_mean[ci], s = scale[ci], offset = beta[ci];
      const std::size_t base = static_cast<std::size_t>(n * C + c) * plane;
      for (std::size_t i = 0; i < plane; ++i) y[base + i] = (x[base + i] - mean) * s + offset;
    }
  }
}

void fold_batchnorm(const course::Tensor& conv_weight, const course::Tensor& conv_bias, const course::Tensor& gamma,
                    const course::Tensor& beta, const course::Tensor& running_mean,
                    const course::Tensor& running_var, double eps, course::Tensor& folded_weight,
                    course::Tensor& folded_bias) {
  require_4d(conv_weight, "fold_batchnorm conv_weight", "[K, C, R, S]");
  const std::int64_t K = conv_weight.dim(0);
  // A convolution followed by batch-norm is often built without a bias (the BN shift makes it
  // redundant); an empty tensor stands for that case.
  const bool has_bias = conv_bias.numel() != 0;
  if (has_bias) conv_bias.expect_shape({K}, "fold_batchnorm conv_bias");
  check_bn_parameters(K, gamma, beta, running_mean, running_var, eps);
  folded_weight.expect_shape(conv_weight.shape(), "fold_batchnorm folded_weight");
  folded_bias.expect_shape({K}, "fold_batchnorm folded_bias");

  // BN(conv(x))[k] = scale[k] * (sum w[k]*x + b[k] - mean[k]) + beta[k]
  //               = sum (scale[k]*w[k]) * x  +  (scale[k]*(b[k] - mean[k]) + beta[k])
  // so the whole filter k is multiplied by scale[k], and the bias absorbs mean and beta.
  const std::vector<float> scale = bn_scale(gamma, running_var, eps);
  const std::size_t filter_size = conv_weight.numel() / static_cast<std::size_t>(K);
  for (std::size_t k = 0; k < static_cast<std::size_t>(K); ++k) {
    for (std::size_t i = 0; i < filter_size; ++i)
      folded_weight[k * filter_size + i] = conv_weight[k * filter_size + i] * scale[k];
    const float bias = has_bias ? conv_bias[k] : 0.0f;
    folded_bias[k] = (bias - running_mean[k]) * scale[k] + beta[k];
  }
}

}  // namespace lab04
