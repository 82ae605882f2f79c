// Golden reference for lab 08: the depthwise 3x3 convolution, im2col and the matrix product
// (part A), and the four stages of Winograd's F(2x2, 3x3) (part B), straight from their
// definitions.
//
// Written for clarity and independently of the solution: every sum is accumulated in double in
// the plain loop order of the definition, every padding tap is an explicit "is this position
// inside the image" test, and only the final value is rounded to float. The convolution itself
// (for conv2d_im2col_gemm) is golden::lab04_conv2d (lab04_reference.hpp), which never goes
// through a column matrix. Internal linkage (anonymous namespace) keeps these functions out of
// reach of student code. The shape checks are asserts for the tests' own mistakes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <future>
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

/// Runs body(begin, end) over [0, count) in up to 16 slices on threads of their own when `work`
/// (multiply-adds) is large enough to pay for them, else in one call here. The golden results do
/// not depend on the split: each output element is one sum, computed by one thread, in one order.
template <class Body>
void lab08_parallel_rows(std::int64_t count, double work, const Body& body) {
  if (work < 4e6 || count < 2) {
    body(std::int64_t{0}, count);
    return;
  }
  const std::int64_t slices = std::min<std::int64_t>(16, count);
  std::vector<std::future<void>> running;
  for (std::int64_t s = 0; s < slices; ++s)
    running.push_back(std::async(std::launch::async, body, count * s / slices, count * (s + 1) / slices));
  for (std::future<void>& f : running) f.get();
}

/// C = A * B (+ bias per row when bias is not empty): A [M,K], B [K,N] -> [M,N], in double.
inline course::Tensor lab08_gemm(const course::Tensor& a, const course::Tensor& b, const course::Tensor& bias) {
  lab08_require(a.rank() == 2 && b.rank() == 2 && a.dim(1) == b.dim(0), "gemm shapes");
  const std::int64_t M = a.dim(0), K = a.dim(1), N = b.dim(1);
  lab08_require(bias.numel() == 0 || bias.numel() == static_cast<std::size_t>(M), "gemm bias");
  course::Tensor c(course::Shape{M, N});
  const float* A = a.data();
  const float* B = b.data();
  float* out = c.data();
  lab08_parallel_rows(M, static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K), [&](std::int64_t first, std::int64_t last) {
    std::vector<double> row(static_cast<std::size_t>(N));
    for (std::int64_t m = first; m < last; ++m) {
      std::fill(row.begin(), row.end(), bias.numel() == 0 ? 0.0 : static_cast<double>(bias[static_cast<std::size_t>(m)]));
      for (std::int64_t k = 0; k < K; ++k) {
        const double av = A[m * K + k];
        const float* brow = B + k * N;
        for (std::int64_t n = 0; n < N; ++n) row[static_cast<std::size_t>(n)] += av * brow[n];
      }
      for (std::int64_t n = 0; n < N; ++n) out[m * N + n] = static_cast<float>(row[static_cast<std::size_t>(n)]);
    }
  });
  return c;
}

// ---------------------------------------------------------------------------------------------
// Part B: Winograd F(2x2, 3x3). The matrices of lectures/08-conv-algorithms.md section 5, used as
// matrices: each transform is the matrix product of its definition (X^T d X as two explicit
// triple loops), in double, rounded once at the end -- not the solution's unrolled additions.
// Tiles: tiles_h = (H + 1) / 2, tiles_w = (W + 1) / 2, t = (n * tiles_h + th) * tiles_w + tw,
// patch rows 2*th - 1 .. 2*th + 2 (pad 1), position xi = 4*i + j.
// ---------------------------------------------------------------------------------------------

constexpr double kWinogradBT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
constexpr double kWinogradG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kWinogradAT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};

/// Element [i][j][k] of a 3-D tensor.
inline float& lab08_at3(course::Tensor& t, std::int64_t i, std::int64_t j, std::int64_t k) {
  return t.data()[(i * t.dim(1) + j) * t.dim(2) + k];
}
inline float lab08_at3(const course::Tensor& t, std::int64_t i, std::int64_t j, std::int64_t k) {
  return t.data()[(i * t.dim(1) + j) * t.dim(2) + k];
}

/// w [K,C,3,3] -> U [16,K,C], U[4i+j][k][c] = (G w[k,c] G^T)[i][j].
inline course::Tensor lab08_winograd_filter_transform(const course::Tensor& w) {
  lab08_require(w.rank() == 4 && w.dim(2) == 3 && w.dim(3) == 3, "winograd filter shape");
  const std::int64_t K = w.dim(0), C = w.dim(1);
  course::Tensor u(course::Shape{16, K, C});
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t c = 0; c < C; ++c) {
      double gg[4][3] = {};  // G g
      for (int i = 0; i < 4; ++i)
        for (int s = 0; s < 3; ++s)
          for (int r = 0; r < 3; ++r) gg[i][s] += kWinogradG[i][r] * w.at(k, c, r, s);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          double v = 0;  // (G g G^T)[i][j] = sum_s (G g)[i][s] * G[j][s]
          for (int s = 0; s < 3; ++s) v += gg[i][s] * kWinogradG[j][s];
          lab08_at3(u, 4 * i + j, k, c) = static_cast<float>(v);
        }
    }
  return u;
}

/// x [N,C,H,W] -> V [16,C,T], V[4i+j][c][t] = (B^T d B)[i][j], d the tile's 4x4 patch (pad 1).
inline course::Tensor lab08_winograd_input_transform(const course::Tensor& x) {
  lab08_require(x.rank() == 4, "winograd input shape");
  const std::int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const std::int64_t tiles_h = (H + 1) / 2, tiles_w = (W + 1) / 2, T = N * tiles_h * tiles_w;
  course::Tensor v(course::Shape{16, C, T});
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t th = 0; th < tiles_h; ++th)
      for (std::int64_t tw = 0; tw < tiles_w; ++tw) {
        const std::int64_t t = (n * tiles_h + th) * tiles_w + tw;
        for (std::int64_t c = 0; c < C; ++c) {
          double d[4][4];
          for (int r = 0; r < 4; ++r)
            for (int s = 0; s < 4; ++s) {
              const std::int64_t h = 2 * th - 1 + r, col = 2 * tw - 1 + s;
              const bool inside = h >= 0 && h < H && col >= 0 && col < W;
              d[r][s] = inside ? static_cast<double>(x.at(n, c, h, col)) : 0.0;
            }
          double bd[4][4] = {};  // B^T d
          for (int i = 0; i < 4; ++i)
            for (int s = 0; s < 4; ++s)
              for (int r = 0; r < 4; ++r) bd[i][s] += kWinogradBT[i][r] * d[r][s];
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
              double value = 0;  // (B^T d B)[i][j] = sum_s (B^T d)[i][s] * B^T[j][s]
              for (int s = 0; s < 4; ++s) value += bd[i][s] * kWinogradBT[j][s];
              lab08_at3(v, 4 * i + j, c, t) = static_cast<float>(value);
            }
        }
      }
  return v;
}

/// U [16,K,C], V [16,C,T] -> M [16,K,T], M[xi] = U[xi] V[xi], in double. The 16 products are
/// independent: large ones run on threads of their own (the ResNet-sized case is ~0.6 G
/// multiply-adds, seconds on one core).
inline course::Tensor lab08_winograd_batched_multiply(const course::Tensor& u, const course::Tensor& v) {
  lab08_require(u.rank() == 3 && v.rank() == 3 && u.dim(0) == 16 && v.dim(0) == 16 && u.dim(2) == v.dim(1),
                "winograd multiply shapes");
  const std::int64_t K = u.dim(1), C = u.dim(2), T = v.dim(2);
  course::Tensor m(course::Shape{16, K, T});
  lab08_parallel_rows(16, 16.0 * static_cast<double>(K) * static_cast<double>(C) * static_cast<double>(T), [&](std::int64_t first, std::int64_t last) {
    std::vector<double> row(static_cast<std::size_t>(T));
    for (std::int64_t xi = first; xi < last; ++xi) {
      const float* a = u.data() + xi * K * C;
      const float* b = v.data() + xi * C * T;
      float* out = m.data() + xi * K * T;
      for (std::int64_t k = 0; k < K; ++k) {
        std::fill(row.begin(), row.end(), 0.0);
        for (std::int64_t c = 0; c < C; ++c) {
          const double x = a[k * C + c];
          const float* b_row = b + c * T;
          for (std::int64_t t = 0; t < T; ++t) row[static_cast<std::size_t>(t)] += x * b_row[t];
        }
        for (std::int64_t t = 0; t < T; ++t) out[k * T + t] = static_cast<float>(row[static_cast<std::size_t>(t)]);
      }
    }
  });
  return m;
}

/// M [16,K,T] (T = N * tiles_h * tiles_w of an H x W output), bias [K] or empty -> [N,K,H,W]:
/// Y = A^T m A + bias[k] per tile, only the outputs inside H x W.
inline course::Tensor lab08_winograd_output_transform(const course::Tensor& m, const course::Tensor& bias,
                                                      std::int64_t N, std::int64_t H, std::int64_t W) {
  lab08_require(m.rank() == 3 && m.dim(0) == 16 && N >= 1 && H >= 1 && W >= 1, "winograd output arguments");
  const std::int64_t K = m.dim(1), tiles_h = (H + 1) / 2, tiles_w = (W + 1) / 2;
  lab08_require(m.dim(2) == N * tiles_h * tiles_w, "winograd output: M's tile count");
  lab08_require(bias.numel() == 0 || bias.numel() == static_cast<std::size_t>(K), "winograd output bias");
  course::Tensor y(course::Shape{N, K, H, W});
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t th = 0; th < tiles_h; ++th)
        for (std::int64_t tw = 0; tw < tiles_w; ++tw) {
          const std::int64_t t = (n * tiles_h + th) * tiles_w + tw;
          double am[2][4] = {};  // A^T m
          for (int a = 0; a < 2; ++a)
            for (int j = 0; j < 4; ++j)
              for (int i = 0; i < 4; ++i) am[a][j] += kWinogradAT[a][i] * lab08_at3(m, 4 * i + j, k, t);
          for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) {
              const std::int64_t p = 2 * th + a, q = 2 * tw + b;
              if (p >= H || q >= W) continue;
              double value = bias.numel() == 0 ? 0.0 : static_cast<double>(bias[static_cast<std::size_t>(k)]);
              for (int j = 0; j < 4; ++j) value += am[a][j] * kWinogradAT[b][j];  // (A^T m A)[a][b]
              y.at(n, k, p, q) = static_cast<float>(value);
            }
        }
  return y;
}

/// For the convolution's error bound: |bias[k]| + sum_{c,r,s} |w[k,c,r,s]| * |x[n,c,p-1+r,q-1+s]|
/// (3x3, pad 1, stride 1) -> [N,K,H,W], the size of the terms every output sums.
inline course::Tensor lab08_conv3x3_abs_sum(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b) {
  lab08_require(x.rank() == 4 && w.rank() == 4 && w.dim(1) == x.dim(1) && w.dim(2) == 3 && w.dim(3) == 3 &&
                    b.numel() == static_cast<std::size_t>(w.dim(0)),
                "abs-sum shapes");
  const std::int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), K = w.dim(0);
  course::Tensor out(course::Shape{N, K, H, W});
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t p = 0; p < H; ++p)
        for (std::int64_t q = 0; q < W; ++q) {
          double sum = std::fabs(static_cast<double>(b[static_cast<std::size_t>(k)]));
          for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t r = 0; r < 3; ++r)
              for (std::int64_t s = 0; s < 3; ++s) {
                const std::int64_t h = p - 1 + r, col = q - 1 + s;
                if (h >= 0 && h < H && col >= 0 && col < W)
                  sum += std::fabs(static_cast<double>(w.at(k, c, r, s)) * x.at(n, c, h, col));
              }
          out.at(n, k, p, q) = static_cast<float>(sum);
        }
  return out;
}

}  // namespace
}  // namespace golden
