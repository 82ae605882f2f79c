// Golden reference for lab 08, part C: the course's MobileNetV2 with its batch-norms folded
// (lab08::FoldedMobileNet), and the folded network's pieces in double:
//
//   golden::lab08_fold_mobilenet(weights)              -> lab08::FoldedMobileNet (float, like lab 04's fold)
//   golden::lab08_inverted_residual(x, block, stride)  -> [N,out,P,Q], every step in double
//   golden::lab08_folded_mobilenet_forward(net, images) -> logits [N,10], every step in double
//
// Trusted side only: the tests build the student's FoldedMobileNet with this fold, so a student's
// MobileNetV2 is never judged on its own folding. The fold itself is checked against the unfolded
// golden network (golden::mobilenet_forward, mobilenet_reference.hpp, which matches PyTorch) by
// the tests. Written independently of the solution: plain loops from the definitions, the
// depthwise step the same sum as golden::lab08_depthwise3x3 (conv_algorithms_reference.hpp) but
// kept in double, 1x1 convolutions as sums over channels, only the results rounded to float.
// Internal linkage (anonymous namespace) keeps it out of reach of student code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/mobilenet.hpp"
#include "course/tensor.hpp"
#include "labs/lab08_mobilenet_weights.hpp"

namespace golden {
namespace {
namespace lab08_folding_detail {

inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::logic_error("golden lab08 folding reference misused: " + what);
}

/// conv + BN -> conv' (+ bias'): weight rows scaled by gamma / sqrt(var + eps) in double,
/// bias = beta - mean * scale; the weight comes out as [K, rest] with rest = weight's other dims
/// when as_matrix (1x1 convolutions), else in its own shape.
inline void fold(const course::mobilenet::Weights& w, const std::string& conv, const std::string& bn, bool as_matrix,
                 course::Tensor& weight, course::Tensor& bias) {
  const course::Tensor& kernel = w.at(conv + ".weight");
  const course::Tensor& gamma = w.at(bn + ".weight");
  const course::Tensor& beta = w.at(bn + ".bias");
  const course::Tensor& mean = w.at(bn + ".running_mean");
  const course::Tensor& var = w.at(bn + ".running_var");
  const std::int64_t K = kernel.dim(0);
  const std::size_t per_filter = kernel.numel() / static_cast<std::size_t>(K);
  weight = as_matrix ? course::Tensor(course::Shape{K, static_cast<std::int64_t>(per_filter)}) : course::Tensor(kernel.shape());
  bias = course::Tensor(course::Shape{K});
  for (std::int64_t k = 0; k < K; ++k) {
    const auto ki = static_cast<std::size_t>(k);
    const double scale = static_cast<double>(gamma[ki]) / std::sqrt(static_cast<double>(var[ki]) + w.bn_epsilon);
    for (std::size_t i = 0; i < per_filter; ++i)
      weight[ki * per_filter + i] = static_cast<float>(static_cast<double>(kernel[ki * per_filter + i]) * scale);
    bias[ki] = static_cast<float>(static_cast<double>(beta[ki]) - static_cast<double>(mean[ki]) * scale);
  }
}

inline double relu6(double v) { return std::min(std::max(v, 0.0), 6.0); }

/// One image's activations, channel-major (C, H, W), in double.
struct Planes {
  int channels = 0, height = 0, width = 0;
  std::vector<double> v;
  Planes(int c, int h, int w) : channels(c), height(h), width(w), v(static_cast<std::size_t>(c) * h * w, 0.0) {}
  std::size_t pixels() const { return static_cast<std::size_t>(height) * width; }
  double& at(int c, int h, int w) { return v[(static_cast<std::size_t>(c) * height + h) * width + w]; }
  double at(int c, int h, int w) const { return v[(static_cast<std::size_t>(c) * height + h) * width + w]; }
};

/// out[k] = bias[k] + sum_c weight[k][c] * in[c] per pixel (1x1 convolution), then relu6 if asked.
inline Planes pointwise(const Planes& in, const course::Tensor& weight, const course::Tensor& bias, bool relu) {
  const int K = static_cast<int>(weight.dim(0));
  require(weight.rank() == 2 && weight.dim(1) == in.channels && bias.numel() == static_cast<std::size_t>(K),
          "1x1 shapes");
  Planes out(K, in.height, in.width);
  const std::size_t n = in.pixels();
  for (int k = 0; k < K; ++k) {
    double* o = &out.v[static_cast<std::size_t>(k) * n];
    for (std::size_t i = 0; i < n; ++i) o[i] = bias[static_cast<std::size_t>(k)];
    for (int c = 0; c < in.channels; ++c) {
      const double wkc = weight[static_cast<std::size_t>(k) * static_cast<std::size_t>(in.channels) + static_cast<std::size_t>(c)];
      const double* x = &in.v[static_cast<std::size_t>(c) * n];
      for (std::size_t i = 0; i < n; ++i) o[i] += wkc * x[i];
    }
    if (relu)
      for (std::size_t i = 0; i < n; ++i) o[i] = relu6(o[i]);
  }
  return out;
}

/// 3x3 convolution, pad 1, `stride`, groups = 1 (weight [K,C,3,3]) or depthwise (weight [C,1,3,3]),
/// bias added, then relu6.
inline Planes conv3x3_relu6(const Planes& in, const course::Tensor& weight, const course::Tensor& bias, int stride,
                            bool depthwise) {
  const int K = static_cast<int>(weight.dim(0));
  require(weight.rank() == 4 && weight.dim(2) == 3 && weight.dim(3) == 3 && bias.numel() == static_cast<std::size_t>(K) &&
              (depthwise ? (weight.dim(1) == 1 && K == in.channels) : weight.dim(1) == in.channels),
          "3x3 shapes");
  Planes out(K, (in.height - 1) / stride + 1, (in.width - 1) / stride + 1);
  for (int k = 0; k < K; ++k)
    for (int p = 0; p < out.height; ++p)
      for (int q = 0; q < out.width; ++q) {
        double sum = bias[static_cast<std::size_t>(k)];
        const int first = depthwise ? k : 0, count = depthwise ? 1 : in.channels;
        for (int c = 0; c < count; ++c)
          for (int r = 0; r < 3; ++r)
            for (int s = 0; s < 3; ++s) {
              const int h = p * stride - 1 + r, w = q * stride - 1 + s;
              if (h < 0 || h >= in.height || w < 0 || w >= in.width) continue;
              sum += static_cast<double>(weight.at(k, c, r, s)) * in.at(first + c, h, w);
            }
        out.at(k, p, q) = relu6(sum);
      }
  return out;
}

inline Planes block(const Planes& x, const lab08::FoldedBlock& b, int stride) {
  const bool expand = b.expand_weight.numel() != 0;
  const Planes e = expand ? pointwise(x, b.expand_weight, b.expand_bias, true) : x;
  const Planes d = conv3x3_relu6(e, b.depthwise_weight, b.depthwise_bias, stride, true);
  Planes y = pointwise(d, b.project_weight, b.project_bias, false);
  if (stride == 1 && y.channels == x.channels)
    for (std::size_t i = 0; i < y.v.size(); ++i) y.v[i] += x.v[i];
  return y;
}

inline Planes image_planes(const course::Tensor& x, std::int64_t n) {
  Planes p(static_cast<int>(x.dim(1)), static_cast<int>(x.dim(2)), static_cast<int>(x.dim(3)));
  const float* src = x.data() + static_cast<std::size_t>(n) * p.v.size();
  for (std::size_t i = 0; i < p.v.size(); ++i) p.v[i] = src[i];
  return p;
}

}  // namespace lab08_folding_detail

/// The trained (or random) MobileNetV2 with every batch-norm folded into its convolution.
inline lab08::FoldedMobileNet lab08_fold_mobilenet(const course::mobilenet::Weights& w) {
  namespace mn = course::mobilenet;
  using lab08_folding_detail::fold;
  lab08::FoldedMobileNet net;
  fold(w, "stem.conv", "stem.bn", false, net.stem_weight, net.stem_bias);
  for (std::size_t i = 0; i < mn::blocks().size(); ++i) {
    const mn::BlockSpec& spec = mn::blocks()[i];
    const std::string name = spec.name(static_cast<int>(i));
    lab08::FoldedBlock b;
    if (spec.expand()) fold(w, name + ".expand.conv", name + ".expand.bn", true, b.expand_weight, b.expand_bias);
    fold(w, name + ".depthwise.conv", name + ".depthwise.bn", false, b.depthwise_weight, b.depthwise_bias);
    fold(w, name + ".project.conv", name + ".project.bn", true, b.project_weight, b.project_bias);
    net.blocks.push_back(std::move(b));
  }
  fold(w, "head.conv", "head.bn", true, net.head_weight, net.head_bias);
  net.classifier_weight = w.at("classifier.weight");
  net.classifier_bias = w.at("classifier.bias");
  return net;
}

/// One folded inverted residual block on x [N,in,H,W] (in double, rounded once at the end):
/// expand + ReLU6 when the block has an expand weight, depthwise 3x3 pad 1 + ReLU6, project,
/// + x when stride == 1 and in == out.
inline course::Tensor lab08_inverted_residual(const course::Tensor& x, const lab08::FoldedBlock& b, int stride) {
  namespace d = lab08_folding_detail;
  d::require(x.rank() == 4 && (stride == 1 || stride == 2), "block input or stride");
  const std::int64_t N = x.dim(0), out = b.project_weight.dim(0);
  const std::int64_t P = (x.dim(2) - 1) / stride + 1, Q = (x.dim(3) - 1) / stride + 1;
  course::Tensor y(course::Shape{N, out, P, Q});
  for (std::int64_t n = 0; n < N; ++n) {
    const d::Planes r = d::block(d::image_planes(x, n), b, stride);
    for (std::size_t i = 0; i < r.v.size(); ++i) y[static_cast<std::size_t>(n) * r.v.size() + i] = static_cast<float>(r.v[i]);
  }
  return y;
}

/// The folded network's logits for images [N,1,28,28], every activation in double.
inline course::Tensor lab08_folded_mobilenet_forward(const lab08::FoldedMobileNet& net, const course::Tensor& images) {
  namespace mn = course::mobilenet;
  namespace d = lab08_folding_detail;
  d::require(images.rank() == 4 && images.dim(1) == 1 && images.dim(2) == 28 && images.dim(3) == 28, "images");
  d::require(net.blocks.size() == mn::blocks().size(), "block count");
  const std::int64_t N = images.dim(0);
  course::Tensor logits(course::Shape{N, mn::kNumClasses});
  for (std::int64_t n = 0; n < N; ++n) {
    d::Planes x = d::conv3x3_relu6(d::image_planes(images, n), net.stem_weight, net.stem_bias, 1, false);
    for (std::size_t i = 0; i < net.blocks.size(); ++i) x = d::block(x, net.blocks[i], mn::blocks()[i].stride);
    const d::Planes h = d::pointwise(x, net.head_weight, net.head_bias, true);
    std::vector<double> pooled(static_cast<std::size_t>(h.channels), 0.0);
    for (int c = 0; c < h.channels; ++c) {
      for (std::size_t i = 0; i < h.pixels(); ++i) pooled[static_cast<std::size_t>(c)] += h.v[static_cast<std::size_t>(c) * h.pixels() + i];
      pooled[static_cast<std::size_t>(c)] /= static_cast<double>(h.pixels());
    }
    for (int k = 0; k < mn::kNumClasses; ++k) {
      double sum = net.classifier_bias[static_cast<std::size_t>(k)];
      for (int c = 0; c < h.channels; ++c)
        sum += static_cast<double>(net.classifier_weight[static_cast<std::size_t>(k * h.channels + c)]) *
               pooled[static_cast<std::size_t>(c)];
      logits[static_cast<std::size_t>(n * mn::kNumClasses + k)] = static_cast<float>(sum);
    }
  }
  return logits;
}

}  // namespace
}  // namespace golden
