#include <doctest/doctest.h>

#include "course/safetensors.hpp"
#include "expect_error.hpp"
#include "temp_dir.hpp"

using namespace course;
using course::testing::expect_error;
using course::testing::read_bytes;
using course::testing::TempDir;
using course::testing::write_bytes;

namespace {

TensorFile sample() {
  TensorFile f;
  f.tensors.emplace("a", Tensor(Shape{2, 3}, {1, 2, 3, 4, 5, 6}));
  f.tensors.emplace("b", Tensor(Shape{4}, {-1, 0.5f, 1e-7f, 3e8f}));
  f.metadata["note"] = "hello";
  return f;
}

// Writes a file from a hand-made header and a data section.
void write_raw(const std::string& path, const std::string& header, std::size_t data_bytes) {
  std::vector<unsigned char> b(8);
  for (int i = 0; i < 8; ++i) b[static_cast<std::size_t>(i)] = static_cast<unsigned char>(header.size() >> (8 * i));
  b.insert(b.end(), header.begin(), header.end());
  b.resize(b.size() + data_bytes, 0);
  write_bytes(path, b);
}

}  // namespace

TEST_CASE("safetensors: round trip keeps names, shapes, values and metadata") {
  TempDir dir;
  write_safetensors(dir.file("w.safetensors"), sample());
  TensorFile back = read_safetensors(dir.file("w.safetensors"));
  REQUIRE(back.tensors.size() == 2);
  CHECK(back.tensors.at("a").shape() == Shape{2, 3});
  CHECK(back.tensors.at("a").values() == sample().tensors.at("a").values());
  CHECK(back.tensors.at("b").values() == sample().tensors.at("b").values());
  CHECK(back.metadata.at("note") == "hello");
}

TEST_CASE("safetensors: malformed files give one clear error naming the file") {
  TempDir dir;
  const std::string p = dir.file("w.safetensors");
  write_safetensors(p, sample());
  const auto good = read_bytes(p);

  SUBCASE("missing file") { expect_error([&] { read_safetensors(dir.file("none")); }, {dir.file("none"), "cannot open"}); }
  SUBCASE("shorter than the length field") {
    write_bytes(p, {1, 2, 3});
    expect_error([&] { read_safetensors(p); }, {p, "truncated"});
  }
  SUBCASE("header length larger than the file") {
    auto b = good;
    b[5] = 0x7f;
    write_bytes(p, b);
    expect_error([&] { read_safetensors(p); }, {p, "header length"});
  }
  SUBCASE("header is not JSON") {
    write_raw(p, "{not json", 0);
    expect_error([&] { read_safetensors(p); }, {p, "not valid JSON"});
  }
  SUBCASE("wrong dtype") {
    write_raw(p, R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4);
    expect_error([&] { read_safetensors(p); }, {p, "'w'", "F16"});
  }
  SUBCASE("offsets do not match the shape") {
    write_raw(p, R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8);
    expect_error([&] { read_safetensors(p); }, {p, "'w'", "needs 12"});
  }
  SUBCASE("data section truncated") {
    write_bytes(p, {good.begin(), good.end() - 4});
    expect_error([&] { read_safetensors(p); }, {p, "truncated"});
  }
  SUBCASE("trailing bytes after the data") {
    auto b = good;
    b.push_back(0);
    write_bytes(p, b);
    expect_error([&] { read_safetensors(p); }, {p, "after the last tensor"});
  }
  SUBCASE("overlapping tensors") {
    write_raw(p, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12);
    expect_error([&] { read_safetensors(p); }, {p, "overlap"});
  }
  SUBCASE("missing fields") {
    write_raw(p, R"({"a":{"dtype":"F32"}})", 0);
    expect_error([&] { read_safetensors(p); }, {p, "'a'", "data_offsets"});
  }
}

// --- regressions: hostile headers (each once crashed, allocated wildly or was accepted) --------

TEST_CASE("safetensors: an empty tensor reads back empty (no memcpy into a null buffer)") {
  TempDir dir;
  const std::string p = dir.file("e.safetensors");
  write_raw(p, R"({"e":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]},"s":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  const TensorFile f = read_safetensors(p);
  CHECK(f.tensors.at("e").shape() == Shape{0, 3});
  CHECK(f.tensors.at("e").numel() == 0);
  CHECK(f.tensors.at("s").numel() == 1);
}

TEST_CASE("safetensors: shapes whose element count overflows are rejected, naming the tensor") {
  TempDir dir;
  const std::string p = dir.file("w.safetensors");
  SUBCASE("2^32 x 2^32 wraps to 0 elements, matching empty offsets") {
    write_raw(p, R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0);
    expect_error([&] { read_safetensors(p); }, {p, "'w'", "too many elements"});
  }
  SUBCASE("2^62 x 2 elements: x4 bytes wraps to 0, and the vector would throw length_error") {
    write_raw(p, R"({"w":{"dtype":"F32","shape":[4611686018427387904,2],"data_offsets":[0,0]}})", 0);
    expect_error([&] { read_safetensors(p); }, {p, "'w'", "too many elements"});
  }
  SUBCASE("a representable but huge shape is checked against the data, never allocated") {
    write_raw(p, R"({"w":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,4398046511104]}})", 8);
    expect_error([&] { read_safetensors(p); }, {p, "'w'", "truncated"});
  }
  SUBCASE("an extent beyond int64") {
    write_raw(p, R"({"w":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]}})", 4);
    expect_error([&] { read_safetensors(p); }, {p, "'w'", "integers >= 0"});
  }
}

TEST_CASE("safetensors: deeply nested JSON is refused instead of overflowing the stack") {
  TempDir dir;
  const std::string p = dir.file("w.safetensors");
  SUBCASE("a dtype nested 200,000 levels deep") {
    // Printing it for the "wrong dtype" message recursed once per level.
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    write_raw(p, R"({"w":{"dtype":)" + deep + R"(,"shape":[1],"data_offsets":[0,4]}})", 4);
    expect_error([&] { read_safetensors(p); }, {p, "nested deeper than 16"});
  }
  SUBCASE("unclosed nesting is refused as too deep, before the parser reaches the end") {
    write_raw(p, std::string(100000, '['), 0);
    expect_error([&] { read_safetensors(p); }, {p, "nested deeper than 16"});
  }
  SUBCASE("the course's own nesting is far inside the bound") {
    write_raw(p, R"({"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
    CHECK(read_safetensors(p).tensors.at("w").numel() == 1);
  }
}

TEST_CASE("safetensors: a long wrong dtype is quoted abbreviated") {
  TempDir dir;
  const std::string p = dir.file("w.safetensors");
  write_raw(p, R"({"w":{"dtype":")" + std::string(5000, 'x') + R"(","shape":[1],"data_offsets":[0,4]}})", 4);
  std::string message;
  try {
    read_safetensors(p);
  } catch (const course::Error& e) {
    message = e.what();
  }
  CHECK(message.find("xxx...") != std::string::npos);
  CHECK(message.size() < 300 + p.size());
}
