// Golden reference for lab 03 (pooling, activations, softmax): what the tests compare with.
//
// Written independently of the solution, in double precision and with a different structure:
// pooling materialises an explicitly padded plane and sweeps it one kernel tap at a time
// (tap loops outside, output loops inside); softmax goes through the log-sum-exp. Internal
// linkage (anonymous namespace) so that student code can neither call nor replace it. The
// PyTorch fixtures (grader/fixtures/lab03_*.safetensors) check this file itself.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "course/tensor.hpp"

namespace golden {
namespace {

struct Pool2d {
  int kernel_h = 2, kernel_w = 2, stride_h = 2, stride_w = 2, pad_h = 0, pad_w = 0;
  bool count_include_pad = true;
};

// Output extent with a true floor: floor((in + 2*pad - kernel) / stride) + 1. Callers of the
// golden reference pass valid parameters only; anything else is a bug in a test.
inline std::int64_t pool_extent(std::int64_t in, int kernel, int stride, int pad) {
  const double q = std::floor((static_cast<double>(in) + 2.0 * pad - kernel) / static_cast<double>(stride));
  const auto out = static_cast<std::int64_t>(q) + 1;
  if (in < 1 || kernel < 1 || stride < 1 || pad < 0 || pad > kernel / 2 || out < 1)
    throw std::invalid_argument("golden::pool_extent: invalid pooling parameters in a test");
  return out;
}

inline course::Shape pool_shape(const course::Shape& in, const Pool2d& p) {
  if (in.size() != 4 || in[0] < 1 || in[1] < 1)
    throw std::invalid_argument("golden::pool_shape: invalid input shape in a test");
  return {in.at(0), in.at(1), pool_extent(in.at(2), p.kernel_h, p.stride_h, p.pad_h),
          pool_extent(in.at(3), p.kernel_w, p.stride_w, p.pad_w)};
}

enum class PoolKind { Max, Average };

inline course::Tensor pool2d(const course::Tensor& x, const Pool2d& p, PoolKind kind) {
  const course::Shape out_shape = pool_shape(x.shape(), p);
  const std::int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const std::int64_t HO = out_shape[2], WO = out_shape[3];
  const std::int64_t HP = H + 2 * p.pad_h, WP = W + 2 * p.pad_w;
  course::Tensor y(out_shape);

  const double fill = kind == PoolKind::Max ? -std::numeric_limits<double>::infinity() : 0.0;
  std::vector<double> padded(static_cast<std::size_t>(HP * WP));
  std::vector<double> real(padded.size());  // 1 where the padded plane holds an image pixel
  std::vector<double> acc(static_cast<std::size_t>(HO * WO));
  std::vector<double> taps(acc.size());

  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c) {
      std::fill(padded.begin(), padded.end(), fill);
      std::fill(real.begin(), real.end(), 0.0);
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t w = 0; w < W; ++w) {
          const auto i = static_cast<std::size_t>((h + p.pad_h) * WP + (w + p.pad_w));
          padded[i] = x.at(n, c, h, w);
          real[i] = 1.0;
        }
      std::fill(acc.begin(), acc.end(), fill);
      std::fill(taps.begin(), taps.end(), 0.0);
      for (int r = 0; r < p.kernel_h; ++r)
        for (int s = 0; s < p.kernel_w; ++s)
          for (std::int64_t oh = 0; oh < HO; ++oh)
            for (std::int64_t ow = 0; ow < WO; ++ow) {
              const auto src = static_cast<std::size_t>((oh * p.stride_h + r) * WP + (ow * p.stride_w + s));
              const auto dst = static_cast<std::size_t>(oh * WO + ow);
              if (kind == PoolKind::Max)
                acc[dst] = std::max(acc[dst], padded[src]);
              else
                acc[dst] += padded[src];
              taps[dst] += real[src];
            }
      for (std::int64_t oh = 0; oh < HO; ++oh)
        for (std::int64_t ow = 0; ow < WO; ++ow) {
          const auto i = static_cast<std::size_t>(oh * WO + ow);
          double v = acc[i];
          if (kind == PoolKind::Average)
            v /= p.count_include_pad ? static_cast<double>(p.kernel_h) * p.kernel_w : taps[i];
          y.at(n, c, oh, ow) = static_cast<float>(v);
        }
    }
  return y;
}

inline course::Tensor max_pool2d(const course::Tensor& x, const Pool2d& p) { return pool2d(x, p, PoolKind::Max); }
inline course::Tensor avg_pool2d(const course::Tensor& x, const Pool2d& p) { return pool2d(x, p, PoolKind::Average); }

inline course::Tensor global_avg_pool2d(const course::Tensor& x) {
  const std::int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  course::Tensor y = course::Tensor::nchw(N, C, 1, 1);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c) {
      // Row sums first, then the sum of rows: a different summation order from a flat loop.
      double total = 0.0;
      for (std::int64_t h = 0; h < H; ++h) {
        double row = 0.0;
        for (std::int64_t w = 0; w < W; ++w) row += x.at(n, c, h, w);
        total += row;
      }
      y.at(n, c, 0, 0) = static_cast<float>(total / static_cast<double>(H * W));
    }
  return y;
}

template <typename F>
course::Tensor map_double(const course::Tensor& x, F f) {
  course::Tensor y(x.shape());
  for (std::size_t i = 0; i < x.numel(); ++i) y[i] = static_cast<float>(f(static_cast<double>(x[i])));
  return y;
}

inline course::Tensor relu(const course::Tensor& x) {
  return map_double(x, [](double v) { return std::max(v, 0.0); });
}
inline course::Tensor leaky_relu(const course::Tensor& x, float slope) {
  return map_double(x, [slope](double v) { return v < 0.0 ? static_cast<double>(slope) * v : v; });
}
// In double, exp(-x) overflows only for x < -709, and 1 / (1 + inf) is a correct 0 anyway.
inline course::Tensor sigmoid(const course::Tensor& x) {
  return map_double(x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
}
inline course::Tensor tanh(const course::Tensor& x) {
  return map_double(x, [](double v) { return std::tanh(v); });
}

// log p = x - logsumexp(x), logsumexp(x) = m + log(sum exp(x - m)), all in double. The order
// matters: (x - m) - log(s), not x - (m + log(s)): for m ~ 1e38 the sum m + log(s) rounds back to
// m and the normalisation would be lost.
inline course::Tensor softmax(const course::Tensor& logits) {
  const std::int64_t N = logits.dim(0), K = logits.dim(1);
  course::Tensor p(logits.shape());
  for (std::int64_t n = 0; n < N; ++n) {
    const auto row = static_cast<std::size_t>(n * K);
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t k = 0; k < K; ++k) m = std::max(m, static_cast<double>(logits[row + static_cast<std::size_t>(k)]));
    double s = 0.0;
    for (std::int64_t k = 0; k < K; ++k) s += std::exp(static_cast<double>(logits[row + static_cast<std::size_t>(k)]) - m);
    const double log_s = std::log(s);
    for (std::int64_t k = 0; k < K; ++k) {
      const std::size_t i = row + static_cast<std::size_t>(k);
      p[i] = static_cast<float>(std::exp((static_cast<double>(logits[i]) - m) - log_s));
    }
  }
  return p;
}

}  // namespace
}  // namespace golden
