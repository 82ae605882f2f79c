// Golden reference for lab 01: direct convolution, stride 1, no padding, NCHW / KCRS.
//
// Deliberately written differently from the course solution so that a shared mistake is
// unlikely: instead of finishing one output element at a time, it takes one weight tap
// (k, c, r, s) at a time and adds tap * (input plane c shifted by r rows and s columns) to the
// whole output plane k ("shift and add"), with the accumulators in double precision. It is checked against PyTorch's F.conv2d by the fixture test.
//
// Internal linkage (anonymous namespace): only the grader's tests can see it; student code is
// compiled without this folder on its include path and cannot link against it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "course/tensor.hpp"

namespace golden {
namespace {

/// [N, C, H, W] and [K, C, R, S] -> [N, K, H-R+1, W-S+1]. The tests only call it with valid
/// shapes; a misuse is a bug in the tests, hence std::logic_error rather than course::Error.
inline course::Shape lab01_output_shape(const course::Shape& input, const course::Shape& weight) {
  if (input.size() != 4 || weight.size() != 4 || input[1] != weight[1] || weight[2] > input[2] ||
      weight[3] > input[3])
    throw std::logic_error("golden::lab01_output_shape: invalid shapes " + course::shape_to_string(input) +
                           " and " + course::shape_to_string(weight));
  return {input[0], weight[0], input[2] - weight[2] + 1, input[3] - weight[3] + 1};
}

/// output[n][k][p][q] = bias[k] + sum_{c,r,s} weight[k][c][r][s] * input[n][c][p+r][q+s],
/// summed in double and rounded to float once at the end.
inline course::Tensor lab01_conv2d(const course::Tensor& input, const course::Tensor& weight,
                                   const course::Tensor& bias) {
  const course::Shape out_shape = lab01_output_shape(input.shape(), weight.shape());
  if (bias.shape() != course::Shape{weight.shape()[0]})
    throw std::logic_error("golden::lab01_conv2d: bias shape " + course::shape_to_string(bias.shape()));
  const std::int64_t N = out_shape[0], K = out_shape[1], P = out_shape[2], Q = out_shape[3];
  const std::int64_t C = input.shape()[1], R = weight.shape()[2], S = weight.shape()[3];

  std::vector<double> acc(course::shape_numel(out_shape), 0.0);
  auto out_index = [&](std::int64_t n, std::int64_t k, std::int64_t p, std::int64_t q) {
    return static_cast<std::size_t>(((n * K + k) * P + p) * Q + q);
  };

  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t k = 0; k < K; ++k) {
          const double tap = weight.at(k, c, r, s);
          for (std::int64_t n = 0; n < N; ++n)
            // Output row p reads input row p + r <= (H - R) + (R - 1): always inside the image.
            for (std::int64_t p = 0; p < P; ++p)
              for (std::int64_t q = 0; q < Q; ++q)
                acc[out_index(n, k, p, q)] += tap * static_cast<double>(input.at(n, c, p + r, q + s));
        }

  course::Tensor out(out_shape);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q)
          out.at(n, k, p, q) =
              static_cast<float>(acc[out_index(n, k, p, q)] + static_cast<double>(bias[static_cast<std::size_t>(k)]));
  return out;
}

}  // namespace
}  // namespace golden
