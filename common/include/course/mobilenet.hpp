// The one place in the code that describes lab 08's network: a small MobileNetV2 for 28x28 grey
// images (trained by data/tools/train_mobilenet.py on Fashion-MNIST).
//
//   input [N,1,28,28]
//   stem   conv 3x3 1->16, pad 1, BN, ReLU6                                  -> [N,16,28,28]
//   blocks inverted residuals, (expansion t, channels c, stride s):
//            0: t1 c16 s1 (+ residual)                                       -> [N,16,28,28]
//            1: t6 c24 s2,  2: t6 c24 s1 (+ residual)                        -> [N,24,14,14]
//            3: t6 c32 s2,  4: t6 c32 s1 (+ residual)                        -> [N,32,7,7]
//            5: t6 c64 s1,  6: t6 c64 s1 (+ residual)                        -> [N,64,7,7]
//          each: [expand 1x1 in->t*in, BN, ReLU6 (only when t > 1)] -> depthwise 3x3 (stride s, pad 1),
//          BN, ReLU6 -> project 1x1 t*in->c, BN (linear) -> + input when s = 1 and in = c
//   head   conv 1x1 64->256, BN, ReLU6 -> global average pool -> [N,256] -> linear 256->10 -> logits
//
// Convolutions have no bias; batch-norm statistics are stored unfused, under the PyTorch names
// stem.conv.weight, stem.bn.{weight,bias,running_mean,running_var}, blocks.<i>.expand.conv.weight,
// blocks.<i>.depthwise.bn.running_var, blocks.<i>.project.*, head.*, classifier.{weight,bias}.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "course/tensor.hpp"

namespace course::mobilenet {

constexpr int kInputChannels = 1, kInputSize = 28, kNumClasses = 10;
constexpr int kStemChannels = 16, kHeadChannels = 256;
constexpr double kDefaultBnEpsilon = 1e-5;

/// One row of MobileNetV2's block table: `repeats` blocks, the first with `stride`.
struct StageSpec {
  int expansion, channels, repeats, stride;
};
/// The table, shortened for 28x28 inputs (data/tools/train_mobilenet.py's BLOCKS).
const std::vector<StageSpec>& stages();

/// One inverted residual block, stages() unrolled; `size` is its input's height = width.
struct BlockSpec {
  int in_channels, hidden, out_channels, stride, size;
  bool expand() const { return hidden != in_channels; }  ///< t > 1: a 1x1 expansion comes first
  bool residual() const { return stride == 1 && in_channels == out_channels; }
  int out_size() const { return (size - 1) / stride + 1; }  ///< 3x3, pad 1
  std::string name(int index) const { return "blocks." + std::to_string(index); }
};
const std::vector<BlockSpec>& blocks();

struct ParamSpec {
  std::string name;
  Shape shape;
};
/// Every parameter the weights file must contain, in network order.
const std::vector<ParamSpec>& parameters();

/// Multiply-adds of one forward pass for one image (convolutions and the linear layer).
std::int64_t multiply_adds_per_image();

/// Named parameters of a trained network plus what the training run recorded about itself.
struct Weights {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;  ///< "dataset", "test_accuracy", "bn_eps", ...
  double bn_epsilon = kDefaultBnEpsilon;

  const Tensor& at(const std::string& name) const;  ///< throws naming the missing parameter
};

/// Reads a safetensors file, checks every parameter's name and shape against parameters(), the
/// recorded architecture against stages() and every variance against >= 0. Errors name the file
/// and the offending tensor or field.
Weights load_weights(const std::string& path);

}  // namespace course::mobilenet
