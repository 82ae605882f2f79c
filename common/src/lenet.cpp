#include "course/lenet.hpp"

#include <cstdlib>

#include "course/error.hpp"
#include "course/safetensors.hpp"

namespace course::lenet {

const std::vector<LayerSpec>& layers() {
  static const std::vector<LayerSpec> spec = {
      {LayerKind::Conv, "conv1", {kConv1Out, 28, 28}, kInputChannels, kConv1Out, kKernel, 1, kConv1Pad},
      {LayerKind::BatchNorm, "bn1", {kConv1Out, 28, 28}, kConv1Out, kConv1Out},
      {LayerKind::ReLU, "relu1", {kConv1Out, 28, 28}},
      {LayerKind::MaxPool, "pool1", {kConv1Out, 14, 14}, kConv1Out, kConv1Out, kPool, kPool, 0},
      {LayerKind::Conv, "conv2", {kConv2Out, 10, 10}, kConv1Out, kConv2Out, kKernel, 1, 0},
      {LayerKind::BatchNorm, "bn2", {kConv2Out, 10, 10}, kConv2Out, kConv2Out},
      {LayerKind::ReLU, "relu2", {kConv2Out, 10, 10}},
      {LayerKind::MaxPool, "pool2", {kConv2Out, 5, 5}, kConv2Out, kConv2Out, kPool, kPool, 0},
      {LayerKind::Flatten, "flatten", {kFlat}},
      {LayerKind::Linear, "fc1", {kFc1Out}, kFlat, kFc1Out},
      {LayerKind::ReLU, "relu3", {kFc1Out}},
      {LayerKind::Linear, "fc2", {kFc2Out}, kFc1Out, kFc2Out},
      {LayerKind::ReLU, "relu4", {kFc2Out}},
      {LayerKind::Linear, "fc3", {kNumClasses}, kFc2Out, kNumClasses},
  };
  return spec;
}

const std::vector<ParamSpec>& parameters() {
  static const std::vector<ParamSpec> spec = [] {
    std::vector<ParamSpec> p;
    for (const auto& layer : layers()) {
      const std::int64_t in = layer.in_channels, out = layer.out_channels, k = layer.kernel;
      switch (layer.kind) {
        case LayerKind::Conv:
          p.push_back({layer.name + ".weight", {out, in, k, k}});
          p.push_back({layer.name + ".bias", {out}});
          break;
        case LayerKind::BatchNorm:
          for (const char* field : {"weight", "bias", "running_mean", "running_var"})
            p.push_back({layer.name + "." + field, {out}});
          break;
        case LayerKind::Linear:
          p.push_back({layer.name + ".weight", {out, in}});
          p.push_back({layer.name + ".bias", {out}});
          break;
        default:
          break;
      }
    }
    return p;
  }();
  return spec;
}

std::int64_t multiply_adds_per_image() {
  std::int64_t total = 0;
  for (const auto& layer : layers()) {
    if (layer.kind == LayerKind::Conv)
      total += shape_numel(layer.output) * std::int64_t{layer.in_channels} * layer.kernel * layer.kernel;
    else if (layer.kind == LayerKind::Linear)
      total += std::int64_t{layer.in_channels} * layer.out_channels;
  }
  return total;
}

const Tensor& Weights::at(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw Error("LeNet weights: no parameter named '" + name + "'");
  return it->second;
}

Weights load_weights(const std::string& path) {
  TensorFile file = read_safetensors(path);
  Weights w;
  for (const auto& spec : parameters()) {
    auto it = file.tensors.find(spec.name);
    if (it == file.tensors.end())
      throw Error(path + ": missing LeNet parameter '" + spec.name + "' (expected shape " + shape_to_string(spec.shape) + ")");
    if (it->second.shape() != spec.shape)
      throw Error(path + ": LeNet parameter '" + spec.name + "' has shape " + shape_to_string(it->second.shape()) +
                  ", expected " + shape_to_string(spec.shape));
    w.tensors.emplace(spec.name, std::move(it->second));
    file.tensors.erase(it);
  }
  if (!file.tensors.empty())
    throw Error(path + ": unexpected tensor '" + file.tensors.begin()->first + "' (not part of LeNet-5-BN)");
  for (const auto& name : {"bn1.running_var", "bn2.running_var"})
    for (float v : w.at(name).values())
      if (!(v >= 0.0f)) throw Error(path + ": " + name + " holds a negative or NaN variance");
  w.metadata = std::move(file.metadata);
  if (auto it = w.metadata.find("bn_eps"); it != w.metadata.end()) {
    char* end = nullptr;
    w.bn_epsilon = std::strtod(it->second.c_str(), &end);
    if (end == it->second.c_str() || !(w.bn_epsilon > 0))
      throw Error(path + ": metadata bn_eps '" + it->second + "' is not a positive number");
  }
  return w;
}

}  // namespace course::lenet
