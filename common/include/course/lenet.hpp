// The one place in the code that describes the course's model: LeNet-5 with batch-norm.
//
//   input [N,1,28,28]
//   conv1 1->6,  5x5, pad 2  -> [N,6,28,28]  -> bn1 -> ReLU -> maxpool 2x2 -> [N,6,14,14]
//   conv2 6->16, 5x5, pad 0  -> [N,16,10,10] -> bn2 -> ReLU -> maxpool 2x2 -> [N,16,5,5]
//   flatten                  -> [N,400]
//   fc1 400->120 -> ReLU,  fc2 120->84 -> ReLU,  fc3 84->10  -> logits [N,10]  (softmax for probabilities)
//
// Parameter names and shapes follow PyTorch's state_dict, so the training script exports them
// without renaming. Batch-norm statistics are stored unfused (lab 04 folds them).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "course/tensor.hpp"

namespace course::lenet {

constexpr int kInputChannels = 1, kInputSize = 28, kNumClasses = 10;
constexpr int kConv1Out = 6, kConv2Out = 16, kKernel = 5, kConv1Pad = 2, kPool = 2;
constexpr int kFlat = 400, kFc1Out = 120, kFc2Out = 84;
constexpr double kDefaultBnEpsilon = 1e-5;  // PyTorch's default; the weights file records its own

enum class LayerKind { Conv, BatchNorm, ReLU, MaxPool, Flatten, Linear };

struct LayerSpec {
  LayerKind kind;
  std::string name;      ///< parameter prefix ("conv1"), or a label for parameter-free layers
  Shape output;          ///< output shape for one image (batch dimension left out)
  int in_channels = 0, out_channels = 0, kernel = 0, stride = 1, padding = 0;  ///< conv/linear/pool
};

/// The layers in execution order, with per-image output shapes.
const std::vector<LayerSpec>& layers();

struct ParamSpec {
  std::string name;  ///< e.g. "conv1.weight", "bn1.running_var"
  Shape shape;
};

/// Every parameter the weights file must contain, in a fixed order.
const std::vector<ParamSpec>& parameters();

/// Multiply-adds of one forward pass for one image (convolutions and linear layers).
std::int64_t multiply_adds_per_image();

/// Named parameters of a trained network plus what the training run recorded about itself.
struct Weights {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;  ///< "dataset", "test_accuracy", "bn_eps", ...
  double bn_epsilon = kDefaultBnEpsilon;

  const Tensor& at(const std::string& name) const;  ///< throws naming the missing parameter
};

/// Reads a safetensors file and checks every parameter's name, dtype and shape against
/// parameters(). Errors name the file and the offending tensor.
Weights load_weights(const std::string& path);

}  // namespace course::lenet
