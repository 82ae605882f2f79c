// IDX reader tests, including every malformed-file case on real files written by the test.
#include <doctest/doctest.h>
#include <zlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

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

// --- regressions: hostile headers (each once crashed, allocated wildly or was accepted) --------

namespace {

// Gzip-compresses `bytes` in memory as one gzip member (zlib's gzip wrapper: windowBits 15+16).
std::vector<unsigned char> gzip_bytes(const std::vector<unsigned char>& bytes) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::vector<unsigned char> out(deflateBound(&zs, static_cast<uLong>(bytes.size())));
  zs.next_in = const_cast<Bytef*>(bytes.data());
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// One gzip stream (a single member) that inflates to `prefix` and then `chunks` x 16 MiB of zero
// bytes, yet is small and quick to make: after Z_FULL_FLUSH deflate's output is byte-aligned and
// refers to nothing before it, so the compressed bytes of one 16 MiB chunk (about 16 KiB) can be
// repeated. The trailer's checksum covers only one chunk: a reader that inflates everything
// would also find the stream corrupt at its very end, after all that work.
std::vector<unsigned char> gzip_bomb(const std::vector<unsigned char>& prefix, int chunks) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  const auto pump = [&](const std::vector<unsigned char>& in, int flush) {
    std::vector<unsigned char> produced(deflateBound(&zs, static_cast<uLong>(in.size())) + 64);
    zs.next_in = const_cast<Bytef*>(in.data());
    zs.avail_in = static_cast<uInt>(in.size());
    zs.next_out = produced.data();
    zs.avail_out = static_cast<uInt>(produced.size());
    const int status = deflate(&zs, flush);
    REQUIRE((status == Z_OK || status == Z_STREAM_END));
    REQUIRE(zs.avail_in == 0);
    produced.resize(produced.size() - zs.avail_out);
    return produced;
  };
  const auto head = pump(prefix, Z_FULL_FLUSH);
  const auto chunk = pump(std::vector<unsigned char>(16u << 20, 0), Z_FULL_FLUSH);
  const auto tail = pump({}, Z_FINISH);
  deflateEnd(&zs);
  std::vector<unsigned char> out = head;
  for (int i = 0; i < chunks; ++i) out.insert(out.end(), chunk.begin(), chunk.end());
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

}  // namespace

TEST_CASE("idx: extents whose product overflows are rejected before anything is allocated") {
  TempDir dir;
  SUBCASE("[4, 2^31, 2^31] in a 16-byte file: the product wraps to 0 bytes") {
    // Once read as 4 images of 2^31 x 2^31 pixels with no data at all.
    write_bytes(dir.file("bad"), {0, 0, 8, 3, 0, 0, 0, 4, 0x80, 0, 0, 0, 0x80, 0, 0, 0});
    expect_error([&] { read_idx(dir.file("bad")); }, {dir.file("bad"), "[4, 2147483648, 2147483648]", "overflows"});
  }
  SUBCASE("four maximal extents") {
    write_bytes(dir.file("bad"), {0, 0, 8, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff, 1, 2, 3});
    expect_error([&] { read_idx(dir.file("bad")); }, {dir.file("bad"), "overflows"});
  }
  SUBCASE("a huge but representable size is compared with the file, not allocated") {
    // [65536, 65536, 65536] = 2^48 bytes promised by a 16-byte file.
    write_bytes(dir.file("bad"), {0, 0, 8, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0});
    expect_error([&] { read_idx(dir.file("bad")); }, {dir.file("bad"), "promises 281474976710656", "has 0"});
  }
  SUBCASE("the same lie inside a gzip file") {
    write_bytes(dir.file("bad.gz"), gzip_bytes({0, 0, 8, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0}));
    expect_error([&] { read_idx(dir.file("bad.gz")); }, {dir.file("bad.gz"), "promises 281474976710656", "gzip file can hold"});
  }
  SUBCASE("the overflow inside a gzip file") {
    write_bytes(dir.file("bad.gz"), gzip_bytes({0, 0, 8, 3, 0, 0, 0, 4, 0x80, 0, 0, 0, 0x80, 0, 0, 0}));
    expect_error([&] { read_idx(dir.file("bad.gz")); }, {dir.file("bad.gz"), "overflows"});
  }
}

TEST_CASE("idx: a gzip file's header is checked before its data is inflated") {
  // 1 GiB of zeros in ~1 MiB of gzip. Inflating it all first (as the reader once did) takes
  // seconds and a gigabyte; reading only the header takes microseconds. The bound is loose on
  // purpose (sanitizer builds, a busy CI machine), but far below what a full inflate costs.
  TempDir dir;
  const auto timed_error = [&](const std::string& path, std::initializer_list<std::string> parts) {
    const auto start = std::chrono::steady_clock::now();
    expect_error([&] { read_idx(path); }, parts);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK_MESSAGE(seconds < 0.25, "took " << seconds << " s: the reader inflated more than it needed");
  };
  SUBCASE("zeros only: the type byte 0x00 is wrong") {
    write_bytes(dir.file("zeros.gz"), gzip_bomb({}, 64));
    timed_error(dir.file("zeros.gz"), {dir.file("zeros.gz"), "data type 0x00"});
  }
  SUBCASE("a valid 12-byte image file followed by a gigabyte: trailing bytes") {
    write_idx(dir.file("img"), {3, 2, 2}, {0, 255, 51, 102, 1, 2, 3, 4, 5, 6, 7, 8});
    write_bytes(dir.file("long.gz"), gzip_bomb(read_bytes(dir.file("img")), 64));
    timed_error(dir.file("long.gz"), {dir.file("long.gz"), "trailing bytes after the 12 data bytes"});
  }
  SUBCASE("trailing bytes in a small gzip file") {
    write_idx(dir.file("img"), {3}, {1, 2, 3});
    auto b = read_bytes(dir.file("img"));
    b.push_back(9);
    write_bytes(dir.file("t.gz"), gzip_bytes(b));
    expect_error([&] { read_idx(dir.file("t.gz")); }, {dir.file("t.gz"), "trailing bytes after the 3 data bytes"});
  }
  SUBCASE("truncated data in a complete gzip stream") {
    write_bytes(dir.file("short.gz"), gzip_bytes({0, 0, 8, 1, 0, 0, 0, 5, 1, 2}));
    expect_error([&] { read_idx(dir.file("short.gz")); }, {dir.file("short.gz"), "truncated", "promises 5", "has 2"});
  }
  SUBCASE("a header cut short inside a gzip stream") {
    write_bytes(dir.file("hdr.gz"), gzip_bytes({0, 0, 8, 3, 0, 0}));
    expect_error([&] { read_idx(dir.file("hdr.gz")); }, {dir.file("hdr.gz"), "truncated IDX header"});
  }
}

TEST_CASE("idx: a directory is not an IDX file") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("sub"));
  expect_error([&] { read_idx(dir.file("sub")); }, {dir.file("sub"), "cannot open"});
}

// --- where the data sets are found ---------------------------------------------------------------

namespace {

// Sets (or with nullptr unsets) an environment variable for one scope, restoring it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      old_ = old;
      had_ = true;
    }
    set(value);
  }
  ~ScopedEnv() { set(had_ ? old_.c_str() : nullptr); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const char* value) {
    if (value != nullptr) {
      setenv(name_.c_str(), value, 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

  std::string name_, old_;
  bool had_ = false;
};

}  // namespace

TEST_CASE("idx: COURSE_MNIST_DIR and COURSE_FASHION_MNIST_DIR move the data sets") {
  SUBCASE("defaults when unset or empty") {
    ScopedEnv mnist("COURSE_MNIST_DIR", nullptr);
    ScopedEnv fashion("COURSE_FASHION_MNIST_DIR", "");
    CHECK(mnist_files("/repo/data").test_images == "/repo/data/generated/mnist/test-images-idx3-ubyte");
    CHECK(fashion_mnist_files().train_labels == "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz");
  }
  SUBCASE("overrides") {
    ScopedEnv mnist("COURSE_MNIST_DIR", "/mnt/mnist");
    ScopedEnv fashion("COURSE_FASHION_MNIST_DIR", "/mnt/fashion");
    const DatasetFiles m = mnist_files("/repo/data");
    CHECK(m.train_images == "/mnt/mnist/train-images-idx3-ubyte");
    CHECK(m.train_labels == "/mnt/mnist/train-labels-idx1-ubyte");
    CHECK(m.test_images == "/mnt/mnist/test-images-idx3-ubyte");
    CHECK(m.test_labels == "/mnt/mnist/test-labels-idx1-ubyte");
    const DatasetFiles f = fashion_mnist_files();
    CHECK(f.train_images == "/mnt/fashion/train-images-idx3-ubyte.gz");
    CHECK(f.test_labels == "/mnt/fashion/t10k-labels-idx1-ubyte.gz");
    CHECK(fashion_mnist_files("/explicit").test_images == "/explicit/t10k-images-idx3-ubyte.gz");
  }
  SUBCASE("an override really loads from there") {
    TempDir dir;
    write_idx(dir.file("test-images-idx3-ubyte"), {2, 1, 1}, {0, 255});
    write_idx(dir.file("test-labels-idx1-ubyte"), {2}, {3, 4});
    ScopedEnv mnist("COURSE_MNIST_DIR", dir.file("").c_str());
    const DatasetFiles m = mnist_files("/nonexistent");
    const Dataset ds = load_dataset(m.test_images, m.test_labels);
    CHECK(ds.labels == std::vector<std::uint8_t>{3, 4});
  }
}
