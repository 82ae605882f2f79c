#include "course/mobilenet.hpp"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "course/error.hpp"
#include "course/safetensors.hpp"

namespace course::mobilenet {

const std::vector<StageSpec>& stages() {
  static const std::vector<StageSpec> table = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 2, 2}, {6, 64, 2, 1}};
  return table;
}

const std::vector<BlockSpec>& blocks() {
  static const std::vector<BlockSpec> list = [] {
    std::vector<BlockSpec> b;
    int in = kStemChannels, size = kInputSize;
    for (const StageSpec& s : stages())
      for (int i = 0; i < s.repeats; ++i) {
        const BlockSpec block{in, in * s.expansion, s.channels, i == 0 ? s.stride : 1, size};
        b.push_back(block);
        in = s.channels;
        size = block.out_size();
      }
    return b;
  }();
  return list;
}

namespace {

void add_conv_bn(std::vector<ParamSpec>& p, const std::string& name, std::int64_t out, std::int64_t in_per_group,
                 std::int64_t kernel) {
  p.push_back({name + ".conv.weight", {out, in_per_group, kernel, kernel}});
  for (const char* field : {"weight", "bias", "running_mean", "running_var"})
    p.push_back({name + ".bn." + field, {out}});
}

int last_channels() { return blocks().back().out_channels; }

}  // namespace

const std::vector<ParamSpec>& parameters() {
  static const std::vector<ParamSpec> spec = [] {
    std::vector<ParamSpec> p;
    add_conv_bn(p, "stem", kStemChannels, kInputChannels, 3);
    for (std::size_t i = 0; i < blocks().size(); ++i) {
      const BlockSpec& b = blocks()[i];
      const std::string name = b.name(static_cast<int>(i));
      if (b.expand()) add_conv_bn(p, name + ".expand", b.hidden, b.in_channels, 1);
      add_conv_bn(p, name + ".depthwise", b.hidden, 1, 3);  // groups = channels: one 3x3 filter each
      add_conv_bn(p, name + ".project", b.out_channels, b.hidden, 1);
    }
    add_conv_bn(p, "head", kHeadChannels, last_channels(), 1);
    p.push_back({"classifier.weight", {kNumClasses, kHeadChannels}});
    p.push_back({"classifier.bias", {kNumClasses}});
    return p;
  }();
  return spec;
}

std::int64_t multiply_adds_per_image() {
  const std::int64_t side = kInputSize;
  std::int64_t total = side * side * kStemChannels * kInputChannels * 9;
  for (const BlockSpec& b : blocks()) {
    const std::int64_t in_pixels = std::int64_t{b.size} * b.size, out_pixels = std::int64_t{b.out_size()} * b.out_size();
    if (b.expand()) total += in_pixels * b.in_channels * b.hidden;
    total += out_pixels * b.hidden * 9 + out_pixels * b.hidden * b.out_channels;
  }
  const std::int64_t last = blocks().back().out_size();
  return total + last * last * last_channels() * kHeadChannels + std::int64_t{kHeadChannels} * kNumClasses;
}

const Tensor& Weights::at(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw Error("MobileNetV2 weights: no parameter named '" + name + "'");
  return it->second;
}

namespace {

/// The file's "architecture" metadata must describe stages() exactly: weights of another table
/// can have the same tensor shapes (a stride is not visible in any shape) and would then run
/// silently wrong.
void check_architecture(const std::string& path, const std::map<std::string, std::string>& metadata) {
  auto it = metadata.find("architecture");
  if (it == metadata.end()) throw Error(path + ": no 'architecture' in the metadata (not written by train_mobilenet.py?)");
  nlohmann::json a;
  try {
    a = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": metadata 'architecture' is not JSON: " + e.what());
  }
  nlohmann::json want_blocks = nlohmann::json::array();
  for (const StageSpec& s : stages()) want_blocks.push_back({s.expansion, s.channels, s.repeats, s.stride});
  const nlohmann::json want = {{"stem_channels", kStemChannels}, {"blocks", want_blocks},
                               {"head_channels", kHeadChannels}, {"classes", kNumClasses},
                               {"activation", "relu6"},          {"input", {kInputChannels, kInputSize, kInputSize}}};
  if (a != want)
    throw Error(path + ": trained with architecture " + a.dump() + ", but course/mobilenet.hpp describes " + want.dump());
}

}  // namespace

Weights load_weights(const std::string& path) {
  TensorFile file = read_safetensors(path);
  Weights w;
  for (const ParamSpec& spec : parameters()) {
    auto it = file.tensors.find(spec.name);
    if (it == file.tensors.end())
      throw Error(path + ": missing MobileNetV2 parameter '" + spec.name + "' (expected shape " +
                  shape_to_string(spec.shape) + ")");
    if (it->second.shape() != spec.shape)
      throw Error(path + ": MobileNetV2 parameter '" + spec.name + "' has shape " + shape_to_string(it->second.shape()) +
                  ", expected " + shape_to_string(spec.shape));
    w.tensors.emplace(spec.name, std::move(it->second));
    file.tensors.erase(it);
  }
  if (!file.tensors.empty())
    throw Error(path + ": unexpected tensor '" + file.tensors.begin()->first + "' (not part of the course's MobileNetV2)");
  for (const auto& [name, tensor] : w.tensors)
    if (name.size() >= 11 && name.compare(name.size() - 11, 11, "running_var") == 0)
      for (float v : tensor.values())
        if (!(v >= 0.0f)) throw Error(path + ": " + name + " holds a negative or NaN variance");
  w.metadata = std::move(file.metadata);
  check_architecture(path, w.metadata);
  if (auto it = w.metadata.find("bn_eps"); it != w.metadata.end()) {
    char* end = nullptr;
    w.bn_epsilon = std::strtod(it->second.c_str(), &end);
    if (end == it->second.c_str() || !(w.bn_epsilon > 0))
      throw Error(path + ": metadata bn_eps '" + it->second + "' is not a positive number");
  }
  return w;
}

}  // namespace course::mobilenet
