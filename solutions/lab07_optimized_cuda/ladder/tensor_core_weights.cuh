// The weight matrices B[k][n] of the tensor-core kernels' GEMMs, in the k-order in which those
// kernels read their activations (12_tensor_cores_kernels.cuh explains the orders), zero in the
// padding. Shared by rung 12 (which stores them as FP16 fragments) and rungs 15-16 (TF32
// fragments), so that the permutations are written down once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "12_tensor_cores_kernels.cuh"
#include "course/lenet.hpp"
#include "course/tensor.hpp"
#include "labs/lab04_lenet_cpu.hpp"

namespace ladder::tensor_cores {

/// Element (row, col) of a 2-D [rows, cols] weight tensor.
inline float element(const course::Tensor& w, int row, int col) {
  return w[static_cast<std::size_t>(row) * static_cast<std::size_t>(w.dim(1)) + static_cast<std::size_t>(col)];
}

/// conv1: k = 2j + e, pair j = 3r + u covers taps (r, 2u) and (r, 2u + 1); tap s = 5 and pair 15
/// are padding. n = output channel (6 of 8).
inline float conv1_b(const lab04::FoldedLeNet& net, int k, int n) {
  const int j = k / 2, r = j / 3, s = 2 * (j % 3) + k % 2;
  return (j < kConv1TapPairs && s < course::lenet::kKernel && n < course::lenet::kConv1Out)
             ? net.conv1_weight.at(n, 0, r, s)
             : 0.0f;
}

/// conv2: pair j = (5r + s) * 3 + cp covers input channels 2cp and 2cp + 1 at tap (r, s).
inline float conv2_b(const lab04::FoldedLeNet& net, int k, int n) {
  const int j = k / 2, r = j / 15, s = (j / 3) % 5, c = 2 * (j % 3) + k % 2;
  return j < kConv2TapPairs ? net.conv2_weight.at(n, c, r, s) : 0.0f;
}

/// fc1: the kernel's k = 16 * pooled pixel + channel; PyTorch's flatten index is 25 * channel + pixel.
inline float fc1_b(const lab04::FoldedLeNet& net, int k, int n) {
  return element(net.fc1_weight, n, (k % 16) * 25 + k / 16);
}

inline float fc2_b(const lab04::FoldedLeNet& net, int k, int n) {
  return (k < course::lenet::kFc1Out && n < course::lenet::kFc2Out) ? element(net.fc2_weight, n, k) : 0.0f;
}

inline float fc3_b(const lab04::FoldedLeNet& net, int k, int n) {
  return (k < course::lenet::kFc2Out && n < course::lenet::kNumClasses) ? element(net.fc3_weight, n, k) : 0.0f;
}

/// A bias zero-padded to `padded` entries (padded output columns then compute exactly zero).
inline std::vector<float> padded_bias(const course::Tensor& bias, int padded) {
  std::vector<float> out(static_cast<std::size_t>(padded), 0.0f);
  std::copy(bias.values().begin(), bias.values().end(), out.begin());
  return out;
}

}  // namespace ladder::tensor_cores
