// Golden reference for lab 08's network, the small MobileNetV2 of course/mobilenet.hpp:
//
//   golden::mobilenet_forward(weights, images [N,1,28,28]) -> logits [N,10]
//
// Written for clarity, not speed, and independently of every student-facing implementation: one
// image at a time, every activation kept in double, each convolution straight from its definition
// (3x3 with zero padding and stride, 1x1 as a sum over channels), batch-norm applied unfolded, and
// only the final logits rounded to float. Checked against PyTorch's logits of the first 100 test
// images (data/weights/mobilenet_fashion_mnist_fixture.safetensors) by reference.mobilenet.
// Internal linkage (anonymous namespace) keeps it out of reach of student code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/error.hpp"
#include "course/mobilenet.hpp"
#include "course/tensor.hpp"

namespace golden {
namespace {
namespace mobilenet_detail {

/// Activations of one image, channel-major (C, H, W) like NCHW.
struct Maps {
  int channels = 0, size = 0;  // square maps: size x size
  std::vector<double> v;
  Maps(int c, int s) : channels(c), size(s), v(static_cast<std::size_t>(c) * s * s, 0.0) {}
  std::size_t pixels() const { return static_cast<std::size_t>(size) * size; }
  double* plane(int c) { return &v[static_cast<std::size_t>(c) * pixels()]; }
  const double* plane(int c) const { return &v[static_cast<std::size_t>(c) * pixels()]; }
};

/// 3x3 convolution, zero padding 1, with `stride`; groups = 1 (in.channels inputs per filter,
/// weight [K, C, 3, 3]) or depthwise (weight [C, 1, 3, 3]: output channel c reads input channel c).
inline Maps conv3x3(const Maps& in, const course::Tensor& weight, int stride, bool depthwise) {
  const int filters = static_cast<int>(weight.dim(0));
  Maps out(filters, (in.size - 1) / stride + 1);
  for (int k = 0; k < filters; ++k) {
    const int first = depthwise ? k : 0, count = depthwise ? 1 : in.channels;
    double* o = out.plane(k);
    for (int p = 0; p < out.size; ++p)
      for (int q = 0; q < out.size; ++q) {
        double sum = 0.0;
        for (int c = 0; c < count; ++c)
          for (int r = 0; r < 3; ++r)
            for (int s = 0; s < 3; ++s) {
              const int h = p * stride + r - 1, w = q * stride + s - 1;  // pad 1: tap (1,1) is the centre
              if (h < 0 || h >= in.size || w < 0 || w >= in.size) continue;
              sum += static_cast<double>(weight.at(k, c, r, s)) * in.plane(first + c)[h * in.size + w];
            }
        o[p * out.size + q] = sum;
      }
  }
  return out;
}

/// 1x1 convolution (weight [K, C, 1, 1]): every output pixel is a weighted sum over channels.
inline Maps conv1x1(const Maps& in, const course::Tensor& weight) {
  const int filters = static_cast<int>(weight.dim(0));
  Maps out(filters, in.size);
  const std::size_t n = in.pixels();
  for (int k = 0; k < filters; ++k) {
    double* o = out.plane(k);
    for (int c = 0; c < in.channels; ++c) {
      const double w = weight.at(k, c, 0, 0);
      const double* x = in.plane(c);
      for (std::size_t i = 0; i < n; ++i) o[i] += w * x[i];
    }
  }
  return out;
}

/// (x - mean) / sqrt(var + eps) * gamma + beta per channel, then ReLU6 (min(max(x, 0), 6)) unless
/// `linear` (the projection's "linear bottleneck"), in place.
inline void batchnorm(Maps& x, const course::mobilenet::Weights& weights, const std::string& bn, bool linear) {
  const course::Tensor& gamma = weights.at(bn + ".weight");
  const course::Tensor& beta = weights.at(bn + ".bias");
  const course::Tensor& mean = weights.at(bn + ".running_mean");
  const course::Tensor& var = weights.at(bn + ".running_var");
  for (int c = 0; c < x.channels; ++c) {
    const auto ci = static_cast<std::size_t>(c);
    const double stddev = std::sqrt(static_cast<double>(var[ci]) + weights.bn_epsilon);
    double* values = x.plane(c);
    for (std::size_t i = 0; i < x.pixels(); ++i) {
      const double y = (values[i] - mean[ci]) / stddev * gamma[ci] + beta[ci];
      values[i] = linear ? y : std::min(std::max(y, 0.0), 6.0);
    }
  }
}

inline Maps inverted_residual(const Maps& x, const course::mobilenet::BlockSpec& b,
                              const course::mobilenet::Weights& weights, const std::string& name) {
  Maps h = x;
  if (b.expand()) {
    h = conv1x1(x, weights.at(name + ".expand.conv.weight"));
    batchnorm(h, weights, name + ".expand.bn", false);
  }
  Maps d = conv3x3(h, weights.at(name + ".depthwise.conv.weight"), b.stride, true);
  batchnorm(d, weights, name + ".depthwise.bn", false);
  Maps y = conv1x1(d, weights.at(name + ".project.conv.weight"));
  batchnorm(y, weights, name + ".project.bn", true);
  if (b.residual())
    for (std::size_t i = 0; i < y.v.size(); ++i) y.v[i] += x.v[i];
  return y;
}

}  // namespace mobilenet_detail

/// Logits [N, 10] of the course's MobileNetV2 for images [N, 1, 28, 28].
inline course::Tensor mobilenet_forward(const course::mobilenet::Weights& weights, const course::Tensor& images) {
  namespace mn = course::mobilenet;
  using mobilenet_detail::Maps;
  if (images.rank() != 4 || images.dim(0) < 1 || images.dim(1) != mn::kInputChannels ||
      images.dim(2) != mn::kInputSize || images.dim(3) != mn::kInputSize)
    throw course::Error("golden::mobilenet_forward: images must be [N, 1, 28, 28], got " +
                        course::shape_to_string(images.shape()));
  const std::int64_t batch = images.dim(0);
  course::Tensor logits(course::Shape{batch, mn::kNumClasses});
  const course::Tensor& fc_w = weights.at("classifier.weight");
  const course::Tensor& fc_b = weights.at("classifier.bias");
  for (std::int64_t n = 0; n < batch; ++n) {
    Maps x(mn::kInputChannels, mn::kInputSize);
    for (int h = 0; h < mn::kInputSize; ++h)
      for (int w = 0; w < mn::kInputSize; ++w) x.plane(0)[h * mn::kInputSize + w] = images.at(n, 0, h, w);

    x = mobilenet_detail::conv3x3(x, weights.at("stem.conv.weight"), 1, false);
    mobilenet_detail::batchnorm(x, weights, "stem.bn", false);
    for (std::size_t i = 0; i < mn::blocks().size(); ++i) {
      const mn::BlockSpec& b = mn::blocks()[i];
      x = mobilenet_detail::inverted_residual(x, b, weights, b.name(static_cast<int>(i)));
    }
    x = mobilenet_detail::conv1x1(x, weights.at("head.conv.weight"));
    mobilenet_detail::batchnorm(x, weights, "head.bn", false);

    std::vector<double> pooled(static_cast<std::size_t>(x.channels), 0.0);  // global average pool
    for (int c = 0; c < x.channels; ++c) {
      for (std::size_t i = 0; i < x.pixels(); ++i) pooled[static_cast<std::size_t>(c)] += x.plane(c)[i];
      pooled[static_cast<std::size_t>(c)] /= static_cast<double>(x.pixels());
    }
    for (int k = 0; k < mn::kNumClasses; ++k) {
      double sum = fc_b[static_cast<std::size_t>(k)];
      for (int c = 0; c < x.channels; ++c)
        sum += static_cast<double>(fc_w[static_cast<std::size_t>(k * x.channels + c)]) * pooled[static_cast<std::size_t>(c)];
      logits[static_cast<std::size_t>(n * mn::kNumClasses + k)] = static_cast<float>(sum);
    }
  }
  return logits;
}

}  // namespace
}  // namespace golden
