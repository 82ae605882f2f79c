// Golden reference for lab 02 (general convolution, TF padding, layouts).
//
// Written independently of the solution: the convolution first builds the zero-padded input
// explicitly (as PyTorch's F.pad would) and then runs a plain strided/dilated "valid" convolution
// over it, accumulating in double with the channel loop outermost; output sizes use floating-point
// floor; TF SAME padding uses the modular form from TensorFlow's documentation. Everything has
// internal linkage, so student code cannot call or replace it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "course/tensor.hpp"
#include "labs/lab02_padding_stride.hpp"

namespace golden {
namespace {

/// floor((in + pb + pa - d*(k-1) - 1) / s) + 1 in floating point; may be <= 0 (an invalid case).
inline long long lab02_output_size(long long in, long long k, long long pb, long long pa, long long s, long long d) {
  return static_cast<long long>(std::floor(static_cast<double>(in + pb + pa - d * (k - 1) - 1) / static_cast<double>(s))) + 1;
}

/// True when one dimension's output size is at least 1 and fits in an int (the contract's range).
inline bool lab02_size_ok(long long in, long long k, long long pb, long long pa, long long s, long long d) {
  const long long size = lab02_output_size(in, k, pb, pa, s, d);
  return size > 0 && size <= std::numeric_limits<int>::max();
}

/// True when the parameters describe a convolution that the contract accepts: 4-D shapes with
/// every extent >= 1, H, W, R, S within int, matching channels, and at least one output pixel.
inline bool lab02_valid(const course::Shape& x, const course::Shape& w, const lab02::Conv2dParams& p) {
  if (x.size() != 4 || w.size() != 4 || x[1] != w[1]) return false;
  if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1) return false;
  if (p.pad_top < 0 || p.pad_bottom < 0 || p.pad_left < 0 || p.pad_right < 0) return false;
  for (std::size_t i = 0; i < 4; ++i)
    if (x[i] < 1 || w[i] < 1) return false;
  const long long int_max = std::numeric_limits<int>::max();
  if (x[2] > int_max || x[3] > int_max || w[2] > int_max || w[3] > int_max) return false;
  return lab02_size_ok(x[2], w[2], p.pad_top, p.pad_bottom, p.stride_h, p.dilation_h) &&
         lab02_size_ok(x[3], w[3], p.pad_left, p.pad_right, p.stride_w, p.dilation_w);
}

/// The input surrounded by explicit zeros: [N, C, H + top + bottom, W + left + right].
inline course::Tensor lab02_zero_pad(const course::Tensor& x, const lab02::Conv2dParams& p) {
  const auto& s = x.shape();
  course::Tensor padded(course::Shape{s[0], s[1], s[2] + p.pad_top + p.pad_bottom, s[3] + p.pad_left + p.pad_right}, 0.0f);
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t c = 0; c < s[1]; ++c)
      for (std::int64_t h = 0; h < s[2]; ++h)
        for (std::int64_t w = 0; w < s[3]; ++w) padded.at(n, c, h + p.pad_top, w + p.pad_left) = x.at(n, c, h, w);
  return padded;
}

/// The convolution, for parameters that lab02_valid() accepts.
inline course::Tensor lab02_conv2d(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b,
                                   const lab02::Conv2dParams& p) {
  const course::Tensor xp = lab02_zero_pad(x, p);
  const std::int64_t N = x.dim(0), C = x.dim(1), K = w.dim(0), R = w.dim(2), S = w.dim(3);
  const std::int64_t P = lab02_output_size(x.dim(2), R, p.pad_top, p.pad_bottom, p.stride_h, p.dilation_h);
  const std::int64_t Q = lab02_output_size(x.dim(3), S, p.pad_left, p.pad_right, p.stride_w, p.dilation_w);
  std::vector<double> acc(static_cast<std::size_t>(N * K * P * Q), 0.0);
  const auto at = [&](std::int64_t n, std::int64_t k, std::int64_t i, std::int64_t j) -> double& {
    return acc[static_cast<std::size_t>(((n * K + k) * P + i) * Q + j)];
  };
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t k = 0; k < K; ++k) {
          const double weight = w.at(k, c, r, s);
          for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t i = 0; i < P; ++i)
              for (std::int64_t j = 0; j < Q; ++j)
                at(n, k, i, j) += weight * xp.at(n, c, i * p.stride_h + r * p.dilation_h, j * p.stride_w + s * p.dilation_w);
        }
  course::Tensor out(course::Shape{N, K, P, Q});
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t i = 0; i < P; ++i)
        for (std::int64_t j = 0; j < Q; ++j)
          out.at(n, k, i, j) = static_cast<float>(at(n, k, i, j) + static_cast<double>(b[static_cast<std::size_t>(k)]));
  return out;
}

/// TF SAME padding {before, after} in the form TensorFlow's documentation gives it:
/// total = max(k_eff - s, 0) if in % s == 0 else max(k_eff - in % s, 0).
inline lab02::Padding1d lab02_tf_same(int in, int k, int s, int d) {
  const int k_eff = d * (k - 1) + 1;
  const int total = (in % s == 0) ? std::max(k_eff - s, 0) : std::max(k_eff - in % s, 0);
  return {total / 2, total - total / 2};
}

/// NCHW -> NHWC through the strides of the source: out[n][h][w][c] = x[n][c][h][w].
inline course::Tensor lab02_to_nhwc(const course::Tensor& x) {
  const auto& s = x.shape();
  const auto& st = x.strides();
  course::Tensor out(course::Shape{s[0], s[2], s[3], s[1]});
  std::size_t i = 0;
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t h = 0; h < s[2]; ++h)
      for (std::int64_t w = 0; w < s[3]; ++w)
        for (std::int64_t c = 0; c < s[1]; ++c)
          out[i++] = x[static_cast<std::size_t>(n * st[0] + c * st[1] + h * st[2] + w * st[3])];
  return out;
}

}  // namespace
}  // namespace golden
