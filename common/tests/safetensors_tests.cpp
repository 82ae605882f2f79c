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
