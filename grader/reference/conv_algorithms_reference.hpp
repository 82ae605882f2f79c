// Golden reference for lab 08, part A: the depthwise 3x3 convolution, im2col and the matrix
// product, straight from their definitions.
//
// Written for clarity and independently of the solution: every sum is accumulated in double in
// the plain loop order of the definition, every padding tap is an explicit "is this position
// inside the image" test, and only the final value is rounded to float. The convolution itself
// (for conv2d_im2col_gemm) is golden::lab04_conv2d (lab04_reference.hpp), which never goes
// through a column matrix. Internal linkage (anonymous namespace) keeps these functions out of
// reach of student code. The shape checks are asserts for the tests' own mistakes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/tensor.hpp"

namespace golden {
namespace {

inline void lab08_require(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("golden lab08 reference misused: ") + what);
}

/// Depthwise 3x3, pad 1, stride 1 or 2: x [N,C,H,W], w [C,1,3,3], b [C] ->
/// [N,C,(H-1)/stride+1,(W-1)/stride+1], then clamped to [0, 6] if relu6.
inline course::Tensor lab08_depthwise3x3(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b,
                                         int stride, bool relu6) {
  lab08_require(x.rank() == 4 && w.rank() == 4 && w.dim(0) == x.dim(1) && w.dim(1) == 1 && w.dim(2) == 3 &&
                    w.dim(3) == 3 && b.numel() == static_cast<std::size_t>(x.dim(1)),
                "depthwise shapes");
  lab08_require(stride == 1 || stride == 2, "depthwise stride");
  const std::int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const std::int64_t P = (H - 1) / stride + 1, Q = (W - 1) / stride + 1;
  course::Tensor y(course::Shape{N, C, P, Q});
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q) {
          double sum = b[static_cast<std::size_t>(c)];
          for (std::int64_t r = 0; r < 3; ++r)
            for (std::int64_t s = 0; s < 3; ++s) {
              const std::int64_t h = p * stride - 1 + r, col = q * stride - 1 + s;
              const bool inside = h >= 0 && h < H && col >= 0 && col < W;
              if (inside) sum += static_cast<double>(w.at(c, 0, r, s)) * x.at(n, c, h, col);
            }
          if (relu6) sum = std::min(std::max(sum, 0.0), 6.0);
          y.at(n, c, p, q) = static_cast<float>(sum);
        }
  return y;
}

/// im2col: x [N,C,H,W] -> [C*R*S, N*P*Q], row (c*R + r)*S + s, column (n*P + p)*Q + q, zeros for
/// the padding.
inline course::Tensor lab08_im2col(const course::Tensor& x, int R, int S, int pad, int stride) {
  lab08_require(x.rank() == 4 && R >= 1 && S >= 1 && pad >= 0 && stride >= 1, "im2col arguments");
  const std::int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const std::int64_t P = (H + 2 * pad - R) / stride + 1, Q = (W + 2 * pad - S) / stride + 1;
  lab08_require(H + 2 * pad >= R && W + 2 * pad >= S, "im2col kernel larger than the padded input");
  course::Tensor cols(course::Shape{C * R * S, N * P * Q});
  float* out = cols.data();
  const std::int64_t width = N * P * Q;
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t s = 0; s < S; ++s) {
        const std::int64_t row = (c * R + r) * S + s;
        for (std::int64_t n = 0; n < N; ++n)
          for (std::int64_t p = 0; p < P; ++p)
            for (std::int64_t q = 0; q < Q; ++q) {
              const std::int64_t h = p * stride - pad + r, col = q * stride - pad + s;
              const bool inside = h >= 0 && h < H && col >= 0 && col < W;
              out[row * width + (n * P + p) * Q + q] = inside ? x.at(n, c, h, col) : 0.0f;
            }
      }
  return cols;
}

/// C = A * B (+ bias per row when bias is not empty): A [M,K], B [K,N] -> [M,N], in double.
inline course::Tensor lab08_gemm(const course::Tensor& a, const course::Tensor& b, const course::Tensor& bias) {
  lab08_require(a.rank() == 2 && b.rank() == 2 && a.dim(1) == b.dim(0), "gemm shapes");
  const std::int64_t M = a.dim(0), K = a.dim(1), N = b.dim(1);
  lab08_require(bias.numel() == 0 || bias.numel() == static_cast<std::size_t>(M), "gemm bias");
  course::Tensor c(course::Shape{M, N});
  std::vector<double> row(static_cast<std::size_t>(N));
  const float* A = a.data();
  const float* B = b.data();
  for (std::int64_t m = 0; m < M; ++m) {
    std::fill(row.begin(), row.end(), bias.numel() == 0 ? 0.0 : static_cast<double>(bias[static_cast<std::size_t>(m)]));
    for (std::int64_t k = 0; k < K; ++k) {
      const double av = A[m * K + k];
      const float* brow = B + k * N;
      for (std::int64_t n = 0; n < N; ++n) row[static_cast<std::size_t>(n)] += av * brow[n];
    }
    for (std::int64_t n = 0; n < N; ++n) c.data()[m * N + n] = static_cast<float>(row[static_cast<std::size_t>(n)]);
  }
  return c;
}

}  // namespace
}  // namespace golden
