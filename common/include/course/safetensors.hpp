// Reader and writer for the safetensors format (the course's weights files).
//
// Layout: 8 bytes little-endian uint64 N, then N bytes of JSON
//   {"<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value", ...}}
// then the raw little-endian tensor data; offsets count from the first byte after the header.
#pragma once

#include <map>
#include <string>

#include "course/tensor.hpp"

namespace course {

struct TensorFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// Reads every tensor of a safetensors file. Only F32 tensors are accepted. Checks: file exists,
/// header length fits in the file, header is valid JSON of the expected form, offsets are
/// in range, match dtype x shape, do not overlap, and the data section has no trailing bytes.
TensorFile read_safetensors(const std::string& path);

/// Writes F32 tensors (tests use it to build valid and deliberately broken files).
void write_safetensors(const std::string& path, const TensorFile& file);

}  // namespace course
