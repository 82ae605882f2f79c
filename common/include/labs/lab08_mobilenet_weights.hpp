// Lab 08, part C: the folded MobileNetV2 as host tensors -- what lab08::MobileNetV2's constructor
// takes (lab08_conv_algorithms.hpp). Kept free of CUDA so that the trusted tests, which fold the
// trained network on the CPU (grader/reference/mobilenet_folding_reference.hpp), can build it.
//
// Every batch-norm is folded into the convolution before it (course/mobilenet.hpp has no
// convolution biases): with scale[k] = gamma[k] / sqrt(running_var[k] + eps),
//   weight'[k, ...] = weight[k, ...] * scale[k],   bias'[k] = beta[k] - running_mean[k] * scale[k].
// 1x1 convolutions are stored as matrices [out, in] (the same floats as PyTorch's [out, in, 1, 1]).
#pragma once

#include <vector>

#include "course/tensor.hpp"

namespace lab08 {

/// One folded inverted residual block (course::mobilenet::BlockSpec: in, hidden, out channels).
struct FoldedBlock {
  course::Tensor expand_weight;     ///< [hidden, in]; empty (no elements) when hidden == in (t = 1)
  course::Tensor expand_bias;       ///< [hidden];     empty when hidden == in
  course::Tensor depthwise_weight;  ///< [hidden, 1, 3, 3]
  course::Tensor depthwise_bias;    ///< [hidden]
  course::Tensor project_weight;    ///< [out, hidden]
  course::Tensor project_bias;      ///< [out]
};

/// The whole folded network of course/mobilenet.hpp.
struct FoldedMobileNet {
  course::Tensor stem_weight;        ///< [16, 1, 3, 3]
  course::Tensor stem_bias;          ///< [16]
  std::vector<FoldedBlock> blocks;   ///< 7, in the order of course::mobilenet::blocks()
  course::Tensor head_weight;        ///< [256, 64]
  course::Tensor head_bias;          ///< [256]
  course::Tensor classifier_weight;  ///< [10, 256] (not folded: no batch-norm before it)
  course::Tensor classifier_bias;    ///< [10]
};

}  // namespace lab08
