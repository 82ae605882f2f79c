// Golden reference for the whole LeNet-5-BN forward pass (course/lenet.hpp): the CPU reference
// that lab 04 grades against and that the GPU labs (05-07) compare their logits with.
//
//   golden::lenet_forward(weights, images [N,1,28,28]) -> logits [N,10]
//
// Written independently of every student-facing implementation: one image at a time, every
// activation kept in double between layers, batch-norm applied unfolded straight from its
// definition, and only the final logits rounded to float. It is checked against PyTorch's logits
// (data/weights/lenet_*_fixture.safetensors) and against the test accuracy recorded in the
// weights file. Internal linkage (anonymous namespace) keeps it out of reach of student code.
//
// Self-contained on purpose (only course/ headers): a GPU lab can include it on its own.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/error.hpp"
#include "course/lenet.hpp"
#include "course/tensor.hpp"

namespace golden {
namespace {
namespace lenet_detail {

/// Activations of one image: planes of rows x cols values, channel-major (C, H, W).
struct Planes {
  int channels = 0, rows = 0, cols = 0;
  std::vector<double> v;
  Planes(int c, int h, int w) : channels(c), rows(h), cols(w), v(static_cast<std::size_t>(c) * h * w, 0.0) {}
  double& at(int c, int h, int w) { return v[(static_cast<std::size_t>(c) * rows + h) * cols + w]; }
  double at(int c, int h, int w) const { return v[(static_cast<std::size_t>(c) * rows + h) * cols + w]; }
  const double* ptr(int c, int h, int w) const { return &v[(static_cast<std::size_t>(c) * rows + h) * cols + w]; }
};

/// Valid (unpadded) stride-1 convolution of already padded planes, accumulated in double.
/// Weight [K, C, R, S] and bias [K] as float tensors.
///
/// Output (p, q) and its tap (r, s) read input (p + r, q + s), i.e. flat input index
/// (p*cols + q) + (r*cols + s). So each tap adds a shifted copy of the input plane to one long
/// accumulator indexed j = p*cols + q, and that inner loop is long and contiguous. Positions
/// with q >= out.cols ("wrapped" columns) are computed too and then ignored; the last valid j is
/// (out.rows-1)*cols + out.cols-1, which keeps every read inside the input plane.
inline Planes conv_valid(const Planes& in, const course::Tensor& weight, const course::Tensor& bias) {
  const int filters = static_cast<int>(weight.dim(0));
  const int kr = static_cast<int>(weight.dim(2)), ks = static_cast<int>(weight.dim(3));
  Planes out(filters, in.rows - kr + 1, in.cols - ks + 1);
  const std::size_t span = static_cast<std::size_t>((out.rows - 1) * in.cols + out.cols);
  std::vector<double> acc(span);
  for (int k = 0; k < filters; ++k) {
    std::fill(acc.begin(), acc.end(), static_cast<double>(bias[static_cast<std::size_t>(k)]));
    for (int c = 0; c < in.channels; ++c)
      for (int r = 0; r < kr; ++r)
        for (int s = 0; s < ks; ++s) {
          const double w = weight.at(k, c, r, s);
          const double* src = in.ptr(c, r, s);
          for (std::size_t j = 0; j < span; ++j) acc[j] += w * src[j];
        }
    for (int p = 0; p < out.rows; ++p)
      for (int q = 0; q < out.cols; ++q) out.at(k, p, q) = acc[static_cast<std::size_t>(p * in.cols + q)];
  }
  return out;
}

/// (x - mean) / sqrt(var + eps) * gamma + beta, then max(0, .), per channel, in place.
inline void batchnorm_relu(Planes& x, const course::lenet::Weights& weights, const std::string& bn, double eps) {
  const course::Tensor& gamma = weights.at(bn + ".weight");
  const course::Tensor& beta = weights.at(bn + ".bias");
  const course::Tensor& mean = weights.at(bn + ".running_mean");
  const course::Tensor& var = weights.at(bn + ".running_var");
  const std::size_t plane = static_cast<std::size_t>(x.rows) * static_cast<std::size_t>(x.cols);
  for (int c = 0; c < x.channels; ++c) {
    const auto ci = static_cast<std::size_t>(c);
    const double stddev = std::sqrt(static_cast<double>(var[ci]) + eps);
    double* values = &x.at(c, 0, 0);
    for (std::size_t i = 0; i < plane; ++i) {
      const double y = (values[i] - mean[ci]) / stddev * gamma[ci] + beta[ci];
      values[i] = y > 0.0 ? y : 0.0;
    }
  }
}

/// 2x2 max pooling with stride 2 (both LeNet pooling layers; extents are even).
inline Planes max_pool_2x2(const Planes& in) {
  Planes out(in.channels, in.rows / 2, in.cols / 2);
  for (int c = 0; c < in.channels; ++c)
    for (int p = 0; p < out.rows; ++p)
      for (int q = 0; q < out.cols; ++q)
        out.at(c, p, q) = std::max(std::max(in.at(c, 2 * p, 2 * q), in.at(c, 2 * p, 2 * q + 1)),
                                   std::max(in.at(c, 2 * p + 1, 2 * q), in.at(c, 2 * p + 1, 2 * q + 1)));
  return out;
}

/// y = W x + b for weight [OUT, IN]; optional ReLU.
inline std::vector<double> dense(const std::vector<double>& x, const course::Tensor& weight, const course::Tensor& bias,
                                 bool relu) {
  const std::size_t out_features = static_cast<std::size_t>(weight.dim(0));
  const std::size_t in_features = static_cast<std::size_t>(weight.dim(1));
  std::vector<double> y(out_features);
  for (std::size_t o = 0; o < out_features; ++o) {
    double sum = bias[o];
    const float* row = weight.data() + o * in_features;
    for (std::size_t i = 0; i < in_features; ++i) sum += static_cast<double>(row[i]) * x[i];
    y[o] = relu && sum < 0.0 ? 0.0 : sum;
  }
  return y;
}

}  // namespace lenet_detail

/// Logits [N, 10] of LeNet-5-BN for images [N, 1, 28, 28], using weights.bn_epsilon.
inline course::Tensor lenet_forward(const course::lenet::Weights& weights, const course::Tensor& images) {
  namespace ln = course::lenet;
  using lenet_detail::Planes;
  if (images.rank() != 4 || images.dim(0) < 1 || images.dim(1) != ln::kInputChannels ||
      images.dim(2) != ln::kInputSize || images.dim(3) != ln::kInputSize)
    throw course::Error("golden::lenet_forward: images must be [N, 1, 28, 28], got " +
                        course::shape_to_string(images.shape()));
  const std::int64_t batch = images.dim(0);
  course::Tensor logits(course::Shape{batch, ln::kNumClasses});
  const int pad = ln::kConv1Pad, side = ln::kInputSize;
  for (std::int64_t n = 0; n < batch; ++n) {
    // conv1's zero padding, made explicit: the image sits in the middle of a 32x32 plane.
    Planes x(1, side + 2 * pad, side + 2 * pad);
    for (int h = 0; h < side; ++h)
      for (int w = 0; w < side; ++w) x.at(0, h + pad, w + pad) = images.at(n, 0, h, w);

    Planes a1 = lenet_detail::conv_valid(x, weights.at("conv1.weight"), weights.at("conv1.bias"));
    lenet_detail::batchnorm_relu(a1, weights, "bn1", weights.bn_epsilon);
    const Planes p1 = lenet_detail::max_pool_2x2(a1);

    Planes a2 = lenet_detail::conv_valid(p1, weights.at("conv2.weight"), weights.at("conv2.bias"));
    lenet_detail::batchnorm_relu(a2, weights, "bn2", weights.bn_epsilon);
    const Planes p2 = lenet_detail::max_pool_2x2(a2);

    // Planes store (c, h, w) contiguously, which is exactly PyTorch's flatten order c*25 + h*5 + w.
    const std::vector<double> h1 = lenet_detail::dense(p2.v, weights.at("fc1.weight"), weights.at("fc1.bias"), true);
    const std::vector<double> h2 = lenet_detail::dense(h1, weights.at("fc2.weight"), weights.at("fc2.bias"), true);
    const std::vector<double> out = lenet_detail::dense(h2, weights.at("fc3.weight"), weights.at("fc3.bias"), false);
    for (int k = 0; k < ln::kNumClasses; ++k)
      logits[static_cast<std::size_t>(n * ln::kNumClasses + k)] = static_cast<float>(out[static_cast<std::size_t>(k)]);
  }
  return logits;
}

}  // namespace
}  // namespace golden
