// IDX reader tests, including every malformed-file case on real files written by the test.
#include <doctest/doctest.h>
#include <zlib.h>

#include <filesystem>

#include "course/idx.hpp"
#include "expect_error.hpp"
#include "temp_dir.hpp"

using namespace course;
using course::testing::expect_error;
using course::testing::read_bytes;
using course::testing::TempDir;
using course::testing::write_bytes;

namespace {

void gzip_file(const std::string& in, const std::string& out) {
  auto bytes = read_bytes(in);
  gzFile gz = gzopen(out.c_str(), "wb");
  REQUIRE(gz != nullptr);
  gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
}

// 3 images of 2x2 and their labels.
void write_small_set(const TempDir& dir) {
  write_idx(dir.file("img"), {3, 2, 2}, {0, 255, 51, 102, 1, 2, 3, 4, 5, 6, 7, 8});
  write_idx(dir.file("lbl"), {3}, {7, 0, 9});
}

}  // namespace

TEST_CASE("idx: raw and gzip files read back the same") {
  TempDir dir;
  write_small_set(dir);
  IdxArray raw = read_idx(dir.file("img"));
  CHECK(raw.dims == std::vector<std::uint32_t>{3, 2, 2});
  CHECK(raw.values.size() == 12);
  CHECK(raw.values[1] == 255);
  gzip_file(dir.file("img"), dir.file("img.gz"));
  IdxArray gz = read_idx(dir.file("img.gz"));
  CHECK(gz.dims == raw.dims);
  CHECK(gz.values == raw.values);
}

TEST_CASE("idx: load_dataset scales pixels to [0,1] as NCHW and keeps labels") {
  TempDir dir;
  write_small_set(dir);
  Dataset ds = load_dataset(dir.file("img"), dir.file("lbl"), "tiny");
  CHECK(ds.name == "tiny");
  CHECK(ds.images.shape() == Shape{3, 1, 2, 2});
  CHECK(ds.images.at(0, 0, 0, 1) == doctest::Approx(1.0));
  CHECK(ds.images.at(0, 0, 1, 0) == doctest::Approx(0.2));
  CHECK(ds.labels == std::vector<std::uint8_t>{7, 0, 9});
}

TEST_CASE("idx: malformed files give one clear error naming the file") {
  TempDir dir;
  write_small_set(dir);
  const auto good = read_bytes(dir.file("img"));

  SUBCASE("missing file") { expect_error([&] { read_idx(dir.file("nope")); }, {dir.file("nope"), "cannot open"}); }
  SUBCASE("empty file") {
    write_bytes(dir.file("bad"), {});
    expect_error([&] { read_idx(dir.file("bad")); }, {dir.file("bad"), "not an IDX file"});
  }
  SUBCASE("wrong magic number") {
    auto b = good;
    b[0] = 0x1a;
    write_bytes(dir.file("bad"), b);
    expect_error([&] { read_idx(dir.file("bad")); }, {dir.file("bad"), "magic"});
  }
  SUBCASE("unsupported data type") {
    auto b = good;
    b[2] = 0x0D;  // float32 IDX
    write_bytes(dir.file("bad"), b);
    expect_error([&] { read_idx(dir.file("bad")); }, {dir.file("bad"), "data type 0x0d"});
  }
  SUBCASE("zero or too many dimensions") {
    auto b = good;
    b[3] = 0;
    write_bytes(dir.file("bad"), b);
    expect_error([&] { read_idx(dir.file("bad")); }, {"0 dimensions"});
    b[3] = 9;
    write_bytes(dir.file("bad"), b);
    expect_error([&] { read_idx(dir.file("bad")); }, {"9 dimensions"});
  }
  SUBCASE("truncated header") {
    write_bytes(dir.file("bad"), {good.begin(), good.begin() + 9});
    expect_error([&] { read_idx(dir.file("bad")); }, {dir.file("bad"), "truncated IDX header"});
  }
  SUBCASE("truncated data") {
    write_bytes(dir.file("bad"), {good.begin(), good.end() - 3});
    expect_error([&] { read_idx(dir.file("bad")); }, {dir.file("bad"), "truncated", "promises 12", "has 9"});
  }
  SUBCASE("trailing bytes") {
    auto b = good;
    b.push_back(1);
    write_bytes(dir.file("bad"), b);
    expect_error([&] { read_idx(dir.file("bad")); }, {dir.file("bad"), "1 trailing bytes"});
  }
  SUBCASE("zero extent") {
    auto b = good;
    b[4] = b[5] = b[6] = b[7] = 0;
    write_bytes(dir.file("bad"), b);
    expect_error([&] { read_idx(dir.file("bad")); }, {"dimension 0 is zero"});
  }
  SUBCASE("corrupt gzip") {
    gzip_file(dir.file("img"), dir.file("img.gz"));
    auto b = read_bytes(dir.file("img.gz"));
    for (std::size_t i = 12; i < b.size(); ++i) b[i] = static_cast<unsigned char>(b[i] ^ 0x5a);
    write_bytes(dir.file("bad.gz"), b);
    expect_error([&] { read_idx(dir.file("bad.gz")); }, {dir.file("bad.gz"), "gzip"});
  }
  SUBCASE("truncated gzip") {
    gzip_file(dir.file("img"), dir.file("img.gz"));
    auto b = read_bytes(dir.file("img.gz"));
    b.resize(b.size() / 2);
    write_bytes(dir.file("bad.gz"), b);
    expect_error([&] { read_idx(dir.file("bad.gz")); }, {dir.file("bad.gz"), "truncated"});
  }
}

TEST_CASE("idx: image and label files must belong together") {
  TempDir dir;
  write_small_set(dir);
  write_idx(dir.file("lbl2"), {2}, {1, 2});
  expect_error([&] { load_dataset(dir.file("img"), dir.file("lbl2")); }, {"3 images", "2 labels"});
  write_idx(dir.file("lbl3"), {3}, {1, 2, 10});
  expect_error([&] { load_dataset(dir.file("img"), dir.file("lbl3")); }, {"label 10 at index 2"});
  expect_error([&] { load_dataset(dir.file("lbl2"), dir.file("lbl2")); }, {"3 dimensions"});
  expect_error([&] { load_dataset(dir.file("img"), dir.file("img")); }, {"1 dimension"});
}

TEST_CASE("idx: the converted MNIST split has the documented sizes") {
  const DatasetFiles files = mnist_files(COURSE_DATA_DIR);
  REQUIRE_MESSAGE(std::filesystem::exists(files.test_images), "MNIST not converted yet: run ./course setup");
  Dataset test = load_dataset(files.test_images, files.test_labels, "MNIST test");
  Dataset train = load_dataset(files.train_images, files.train_labels, "MNIST train");
  CHECK(test.size() == 1996);
  CHECK(train.size() == 8004);
  CHECK(test.images.shape() == Shape{1996, 1, 28, 28});
}
