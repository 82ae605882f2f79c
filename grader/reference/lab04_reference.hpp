// Golden reference for lab 04: batch-norm at inference, batch-norm folding, fully connected
// layers, and a small padded/strided convolution the folding tests need.
//
// Written independently of the solution: every sum is accumulated in double, batch-norm is
// evaluated as (x - mean) / sqrt(var + eps) straight from the definition (never through a
// precomputed float scale), and the loops run in a different order. Internal linkage (anonymous
// namespace) keeps these functions out of reach of student code. The shape checks here are
// plain asserts for the tests' own mistakes, not part of what is graded.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/lenet.hpp"
#include "course/tensor.hpp"
#include "labs/lab04_lenet_cpu.hpp"

namespace golden {
namespace {

inline void lab04_require(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("golden lab04 reference misused: ") + what);
}

/// y = gamma * (x - mean) / sqrt(var + eps) + beta per channel of an NCHW tensor.
inline course::Tensor lab04_batchnorm(const course::Tensor& x, const course::Tensor& gamma,
                                          const course::Tensor& beta, const course::Tensor& mean,
                                          const course::Tensor& var, double eps) {
  lab04_require(x.rank() == 4, "batchnorm input must be 4-D");
  const std::int64_t channels = x.dim(1);
  lab04_require(static_cast<std::int64_t>(gamma.numel()) == channels, "gamma must have C values");
  course::Tensor y(x.shape());
  const std::int64_t plane = x.dim(2) * x.dim(3);
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto ci = static_cast<std::size_t>(c);
    const double denominator = std::sqrt(static_cast<double>(var[ci]) + eps);
    for (std::int64_t n = 0; n < x.dim(0); ++n) {
      const std::size_t base = static_cast<std::size_t>((n * channels + c) * plane);
      for (std::int64_t i = 0; i < plane; ++i) {
        const std::size_t at = base + static_cast<std::size_t>(i);
        const double normalised = (static_cast<double>(x[at]) - mean[ci]) / denominator;
        y[at] = static_cast<float>(gamma[ci] * normalised + beta[ci]);
      }
    }
  }
  return y;
}

struct Lab04FoldedConv {
  course::Tensor weight, bias;
};

/// w' = w * gamma / sqrt(var + eps), b' = beta + gamma * (b - mean) / sqrt(var + eps); an empty
/// bias counts as zeros.
inline Lab04FoldedConv lab04_fold_batchnorm(const course::Tensor& w, const course::Tensor& b, const course::Tensor& gamma,
                                 const course::Tensor& beta, const course::Tensor& mean,
                                 const course::Tensor& var, double eps) {
  lab04_require(w.rank() == 4, "conv weight must be 4-D");
  const std::int64_t k_count = w.dim(0);
  lab04_require(k_count >= 1 && w.numel() > 0, "conv weight must have every extent >= 1");
  const std::size_t per_filter = w.numel() / static_cast<std::size_t>(k_count);
  Lab04FoldedConv out{course::Tensor(w.shape()), course::Tensor(course::Shape{k_count})};
  for (std::size_t k = 0; k < static_cast<std::size_t>(k_count); ++k) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(var[k]) + eps);
    const double bias = b.numel() == 0 ? 0.0 : static_cast<double>(b[k]);
    out.bias[k] = static_cast<float>(static_cast<double>(beta[k]) + gamma[k] * (bias - mean[k]) * inv_std);
    for (std::size_t i = 0; i < per_filter; ++i)
      out.weight[k * per_filter + i] = static_cast<float>(static_cast<double>(w[k * per_filter + i]) * gamma[k] * inv_std);
  }
  return out;
}

/// The whole network of a weights file with both batch-norms folded (lab04_fold_batchnorm): what
/// every GPU lab, benchmark and test builds its pipeline from.
inline lab04::FoldedLeNet lab04_fold_lenet(const course::lenet::Weights& w) {
  const auto fold = [&w](const std::string& conv, const std::string& bn) {
    return lab04_fold_batchnorm(w.at(conv + ".weight"), w.at(conv + ".bias"), w.at(bn + ".weight"), w.at(bn + ".bias"),
                                w.at(bn + ".running_mean"), w.at(bn + ".running_var"), w.bn_epsilon);
  };
  const Lab04FoldedConv c1 = fold("conv1", "bn1"), c2 = fold("conv2", "bn2");
  return {c1.weight,        c1.bias,          c2.weight,          c2.bias,          w.at("fc1.weight"),
          w.at("fc1.bias"), w.at("fc2.weight"), w.at("fc2.bias"), w.at("fc3.weight"), w.at("fc3.bias")};
}

/// y[n, o] = b[o] + sum_i x[n, i] * w[o, i], accumulated in double.
inline course::Tensor lab04_linear(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b) {
  lab04_require(x.rank() == 2 && w.rank() == 2 && x.dim(1) == w.dim(1), "linear shapes");
  const std::int64_t rows = x.dim(0), in = x.dim(1), out = w.dim(0);
  course::Tensor y(course::Shape{rows, out});
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t n = 0; n < rows; ++n) {
      double sum = b[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < in; ++i)
        sum += static_cast<double>(x[static_cast<std::size_t>(n * in + i)]) * w[static_cast<std::size_t>(o * in + i)];
      y[static_cast<std::size_t>(n * out + o)] = static_cast<float>(sum);
    }
  }
  return y;
}

/// Convolution with the same zero padding on every side and the same stride in both directions
/// (what the folding tests run before and after folding). Empty bias = no bias.
inline course::Tensor lab04_conv2d(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b,
                                       int pad, int stride) {
  lab04_require(x.rank() == 4 && w.rank() == 4 && x.dim(1) == w.dim(1), "conv shapes");
  const std::int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const std::int64_t filters = w.dim(0), kh = w.dim(2), kw = w.dim(3);
  const std::int64_t out_h = (height + 2 * pad - kh) / stride + 1, out_w = (width + 2 * pad - kw) / stride + 1;
  lab04_require(out_h > 0 && out_w > 0, "conv output would be empty");
  course::Tensor y(course::Shape{batch, filters, out_h, out_w});
  std::vector<double> acc(static_cast<std::size_t>(out_h * out_w));
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t k = 0; k < filters; ++k) {
      std::fill(acc.begin(), acc.end(), b.numel() == 0 ? 0.0 : static_cast<double>(b[static_cast<std::size_t>(k)]));
      for (std::int64_t c = 0; c < channels; ++c)
        for (std::int64_t r = 0; r < kh; ++r)
          for (std::int64_t s = 0; s < kw; ++s) {
            const double weight = w.at(k, c, r, s);
            for (std::int64_t p = 0; p < out_h; ++p) {
              const std::int64_t row = p * stride - pad + r;
              if (row < 0 || row >= height) continue;
              for (std::int64_t q = 0; q < out_w; ++q) {
                const std::int64_t col = q * stride - pad + s;
                if (col < 0 || col >= width) continue;
                acc[static_cast<std::size_t>(p * out_w + q)] += weight * x.at(n, c, row, col);
              }
            }
          }
      for (std::int64_t p = 0; p < out_h; ++p)
        for (std::int64_t q = 0; q < out_w; ++q) y.at(n, k, p, q) = static_cast<float>(acc[static_cast<std::size_t>(p * out_w + q)]);
    }
  }
  return y;
}

}  // namespace
}  // namespace golden
