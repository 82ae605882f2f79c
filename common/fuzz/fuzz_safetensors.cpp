// libFuzzer target: course::read_safetensors on arbitrary bytes. Every input either reads back
// consistently or throws course::Error. What it reads must survive a round trip through
// write_safetensors unchanged (bit for bit, NaNs included).
#include <cstdint>
#include <cstring>
#include <string>

#include "course/error.hpp"
#include "course/safetensors.hpp"
#include "fuzz_input.hpp"

namespace {

bool same_bits(const course::Tensor& a, const course::Tensor& b) {
  return a.shape() == b.shape() && a.numel() == b.numel() &&
         (a.numel() == 0 || std::memcmp(a.data(), b.data(), a.bytes()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const course_fuzz::ScratchFile input("st", data, size);
  const course_fuzz::ScratchFile copy("st-copy", nullptr, 0);
  course::TensorFile file;
  try {
    file = course::read_safetensors(input.path());
  } catch (const course::Error&) {
    return 0;  // rejected with a message
  }
  for (const auto& [name, t] : file.tensors)
    course_fuzz::require(t.numel() == course::shape_numel(t.shape()), "element count matches the shape");
  course::write_safetensors(copy.path(), file);
  const course::TensorFile back = course::read_safetensors(copy.path());
  course_fuzz::require(back.metadata == file.metadata, "metadata survives a round trip");
  course_fuzz::require(back.tensors.size() == file.tensors.size(), "every tensor survives a round trip");
  for (const auto& [name, t] : file.tensors)
    course_fuzz::require(back.tensors.count(name) == 1 && same_bits(back.tensors.at(name), t), "values survive a round trip");
  return 0;
}
