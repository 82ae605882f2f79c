#include "course/safetensors.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "course/error.hpp"

namespace course {
namespace {

constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;  // the format's own limit is 100 MB
// The course's headers nest three levels deep (object -> tensor entry -> shape array). Parsing
// is iterative, but copying, printing and destroying a json value recurse, so a hostile header
// of a million '[' would overflow the stack: anything deeper than this is refused while parsing.
constexpr int kMaxJsonDepth = 16;

std::uint64_t read_le64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Quotes at most a line of a hostile value in an error message.
std::string abbreviated(const std::string& text) { return text.size() <= 40 ? text : text.substr(0, 37) + "..."; }

}  // namespace

TensorFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open weights file (" + std::strerror(errno) + ")");
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 8)
    throw Error(path + ": truncated safetensors file (" + std::to_string(bytes.size()) +
                " bytes; the 8-byte header length alone is missing)");
  const std::uint64_t header_len = read_le64(bytes.data());
  if (header_len > kMaxHeaderBytes || header_len > bytes.size() - 8)
    throw Error(path + ": corrupt safetensors file (header length " + std::to_string(header_len) +
                " does not fit in the " + std::to_string(bytes.size()) + "-byte file)");

  nlohmann::json header;
  try {
    const auto limit_depth = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxJsonDepth)
        throw Error(path + ": corrupt safetensors header (JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                    " levels)");
      return true;
    };
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header_len),
                                   limit_depth);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": corrupt safetensors header (not valid JSON: " + e.what() + ")");
  }
  if (!header.is_object()) throw Error(path + ": corrupt safetensors header (JSON must be an object)");

  const unsigned char* data = bytes.data() + 8 + header_len;
  const std::size_t data_len = bytes.size() - 8 - header_len;
  TensorFile file;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw Error(path + ": __metadata__ must be an object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) throw Error(path + ": metadata value of '" + key + "' is not a string");
        file.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = path + ": tensor '" + name + "'";
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
      throw Error(where + " needs dtype, shape and data_offsets");
    if (!entry["dtype"].is_string() || entry["dtype"] != "F32")
      throw Error(where + " has dtype " + abbreviated(entry["dtype"].dump()) + "; the course uses F32 (float32) only");
    Shape shape;
    if (!entry["shape"].is_array()) throw Error(where + ": shape must be an array");
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0) throw Error(where + ": shape entries must be integers >= 0");
      shape.push_back(d.get<std::int64_t>());
    }
    const auto& off = entry["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw Error(where + ": data_offsets must be [begin, end]");
    const std::uint64_t begin = off[0], end = off[1];
    std::uint64_t want = 0;
    try {
      want = shape_numel(shape) * sizeof(float);  // shape_numel keeps this product within int64
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
    if (end < begin || end - begin != want)
      throw Error(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] hold " +
                  std::to_string(end >= begin ? end - begin : 0) + " bytes but F32 " + shape_to_string(shape) +
                  " needs " + std::to_string(want));
    if (end > data_len)
      throw Error(where + ": data ends at byte " + std::to_string(end) + " but the file's data section has only " +
                  std::to_string(data_len) + " bytes (truncated file?)");
    std::vector<float> values(shape_numel(shape));  // at most data_len / 4 floats: checked above
    // The format is little-endian and so is every machine the course runs on (x86-64, arm64).
    // An empty tensor has no storage (values.data() may be null): memcpy must not see it.
    if (want > 0) std::memcpy(values.data(), data + begin, want);
    file.tensors.emplace(name, Tensor(shape, std::move(values)));
    ranges.emplace_back(begin, end);
  }
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t covered = 0;
  for (const auto& [b, e] : ranges) {
    if (b < covered) throw Error(path + ": corrupt safetensors file (tensor data ranges overlap)");
    covered = e;
  }
  if (covered != data_len)
    throw Error(path + ": corrupt safetensors file (" + std::to_string(data_len - covered) +
                " bytes after the last tensor's data)");
  return file;
}

void write_safetensors(const std::string& path, const TensorFile& file) {
  nlohmann::json header = nlohmann::json::object();
  std::uint64_t offset = 0;
  for (const auto& [name, t] : file.tensors) {
    header[name] = {{"dtype", "F32"}, {"shape", t.shape()}, {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(path + ": cannot create file (" + std::strerror(errno) + ")");
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(text.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, t] : file.tensors) out.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.bytes()));
  if (!out) throw Error(path + ": write failed");
}

}  // namespace course
