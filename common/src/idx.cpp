#include "course/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "course/error.hpp"

namespace course {
namespace {

constexpr std::uint8_t kTypeUnsignedByte = 0x08;
// deflate cannot compress better than about 1032:1, so a gzip file of C bytes inflates to at most
// this many times C (plus a little): a header that promises more is rejected before reading.
constexpr std::uint64_t kMaxDeflateRatio = 1032;
constexpr std::uint64_t kDeflateSlack = 1 << 16;
constexpr std::size_t kReadChunk = 1 << 20;

// Reads an IDX file through zlib, which passes a file that is not gzip through unchanged
// ("transparent" mode), so raw and gzip files share one reader that inflates only as much as
// the caller asks for: the header is checked before a single data byte is decompressed.
class IdxInput {
 public:
  explicit IdxInput(const std::string& path) : path_(path) {
    std::error_code ec;
    file_bytes_ = std::filesystem::file_size(path, ec);
    if (ec) throw Error(path + ": cannot open file (" + ec.message() + ")");
    gz_ = gzopen(path.c_str(), "rb");
    if (gz_ == nullptr) throw Error(path + ": cannot open file (" + std::strerror(errno) + ")");
    compressed_ = gzdirect(gz_) == 0;
  }
  ~IdxInput() { gzclose(gz_); }
  IdxInput(const IdxInput&) = delete;
  IdxInput& operator=(const IdxInput&) = delete;

  bool compressed() const { return compressed_; }
  std::uint64_t file_bytes() const { return file_bytes_; }

  // Reads up to `count` bytes into `out`; returns how many arrived (fewer only at the end of the
  // data). A corrupt or cut-off gzip stream is an error, not a short read.
  std::size_t read(std::uint8_t* out, std::size_t count) {
    std::size_t done = 0;
    while (done < count) {
      const auto piece = static_cast<unsigned>(std::min(count - done, kReadChunk));
      const int got = gzread(gz_, out + done, piece);
      if (got < 0 || (got == 0 && !gzeof(gz_))) fail_on_stream_error();
      if (got <= 0) break;
      done += static_cast<std::size_t>(got);
    }
    if (done < count) fail_on_stream_error();  // a short read may hide a truncated stream
    return done;
  }

 private:
  [[noreturn]] void stream_error(const char* reason) {
    throw Error(path_ + ": corrupt or truncated gzip data (" + reason + ")");
  }
  void fail_on_stream_error() {
    int code = Z_OK;
    const char* reason = gzerror(gz_, &code);
    if (code != Z_OK) stream_error(code == Z_BUF_ERROR ? "unexpected end of data, the file is truncated" : reason);
  }

  std::string path_;
  std::uint64_t file_bytes_ = 0;
  gzFile gz_ = nullptr;
  bool compressed_ = false;
};

std::uint32_t read_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

std::string dims_to_string(const std::vector<std::uint32_t>& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

std::string hex_byte(std::uint8_t byte) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02x", byte);
  return buf;
}

// Checks the 4-byte magic and the extents; returns the number of data bytes they promise.
std::uint64_t checked_data_bytes(const std::string& path, const std::vector<std::uint32_t>& dims) {
  std::uint64_t expected = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0) throw Error(path + ": IDX dimension " + std::to_string(i) + " is zero");
    // Checked before multiplying: four uint32 extents overflow 64 bits, and a product that
    // wraps around would describe a tiny array (e.g. [4, 2^31, 2^31] wraps to 0 bytes).
    if (expected > std::numeric_limits<std::uint64_t>::max() / dims[i])
      throw Error(path + ": IDX dimensions " + dims_to_string(dims) +
                  " multiply to more bytes than any file can hold (the product overflows 64 bits)");
    expected *= dims[i];
  }
  return expected;
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  IdxInput in(path);
  std::uint8_t magic[4] = {0, 0, 0, 0};
  const std::size_t got = in.read(magic, 4);
  if (got < 4)
    throw Error(path + ": not an IDX file (only " + std::to_string(got) + " bytes, a header needs at least 4)");
  if (magic[0] != 0 || magic[1] != 0)
    throw Error(path + ": bad IDX magic number (first two bytes must be 0x00 0x00); is this really an IDX file?");
  if (magic[2] != kTypeUnsignedByte)
    throw Error(path + ": unsupported IDX data type 0x" + hex_byte(magic[2]) + " (only unsigned bytes, 0x08, are used by MNIST)");
  const std::size_t ndims = magic[3];
  if (ndims < 1 || ndims > 4)
    throw Error(path + ": IDX header declares " + std::to_string(ndims) + " dimensions (expected 1 to 4)");

  std::uint8_t extents[16];
  if (in.read(extents, 4 * ndims) < 4 * ndims) throw Error(path + ": truncated IDX header");
  IdxArray result;
  for (std::size_t i = 0; i < ndims; ++i) result.dims.push_back(read_be32(&extents[4 * i]));
  const std::uint64_t expected = checked_data_bytes(path, result.dims);
  const std::uint64_t header = 4 + 4 * ndims;

  // Compare the promise with the bytes that can actually be there before allocating anything.
  if (!in.compressed()) {
    const std::uint64_t actual = in.file_bytes() - header;
    if (actual < expected)
      throw Error(path + ": truncated: header promises " + std::to_string(expected) + " data bytes, file has " +
                  std::to_string(actual));
    if (actual > expected)
      throw Error(path + ": " + std::to_string(actual - expected) + " trailing bytes after the " +
                  std::to_string(expected) + " data bytes the header declares");
  } else if (expected / kMaxDeflateRatio > in.file_bytes() + kDeflateSlack) {
    throw Error(path + ": truncated: header promises " + std::to_string(expected) + " data bytes, more than a " +
                std::to_string(in.file_bytes()) + "-byte gzip file can hold");
  }

  // Grow with the data that arrives (a lying gzip header cannot make us allocate ahead of it).
  std::uint64_t have = 0;
  while (have < expected) {
    const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(expected - have, kReadChunk));
    result.values.resize(static_cast<std::size_t>(have) + piece);
    const std::size_t n = in.read(result.values.data() + have, piece);
    have += n;
    if (n < piece)
      throw Error(path + ": truncated: header promises " + std::to_string(expected) + " data bytes, file has " +
                  std::to_string(have));
  }
  std::uint8_t extra = 0;
  if (in.read(&extra, 1) != 0)
    throw Error(path + ": trailing bytes after the " + std::to_string(expected) + " data bytes the header declares");
  return result;
}

void write_idx(const std::string& path, const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& values) {
  std::size_t n = 1;
  for (auto d : dims) n *= d;
  if (n != values.size() || dims.empty() || dims.size() > 255)
    throw Error("write_idx: " + std::to_string(values.size()) + " values do not match the dimensions");
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(path + ": cannot create file (" + std::strerror(errno) + ")");
  const char head[4] = {0, 0, static_cast<char>(kTypeUnsignedByte), static_cast<char>(dims.size())};
  out.write(head, 4);
  for (auto d : dims) {
    const char be[4] = {static_cast<char>(d >> 24), static_cast<char>(d >> 16), static_cast<char>(d >> 8), static_cast<char>(d)};
    out.write(be, 4);
  }
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size()));
  if (!out) throw Error(path + ": write failed");
}

Dataset load_dataset(const std::string& images_path, const std::string& labels_path, const std::string& name) {
  IdxArray images = read_idx(images_path);
  IdxArray labels = read_idx(labels_path);
  if (images.dims.size() != 3)
    throw Error(images_path + ": expected an image file with 3 dimensions [N, rows, cols], got " +
                std::to_string(images.dims.size()));
  if (labels.dims.size() != 1)
    throw Error(labels_path + ": expected a label file with 1 dimension [N], got " + std::to_string(labels.dims.size()));
  if (images.dims[0] != labels.dims[0])
    throw Error(images_path + " has " + std::to_string(images.dims[0]) + " images but " + labels_path + " has " +
                std::to_string(labels.dims[0]) + " labels");
  for (std::size_t i = 0; i < labels.values.size(); ++i)
    if (labels.values[i] > 9)
      throw Error(labels_path + ": label " + std::to_string(labels.values[i]) + " at index " + std::to_string(i) +
                  " is not a digit class 0..9");

  Dataset ds;
  ds.name = name.empty() ? images_path : name;
  ds.images = Tensor(Shape{images.dims[0], 1, images.dims[1], images.dims[2]});
  for (std::size_t i = 0; i < images.values.size(); ++i) ds.images[i] = static_cast<float>(images.values[i]) / 255.0f;
  ds.labels = std::move(labels.values);
  return ds;
}

namespace {
// The value of an environment variable, or `fallback` where it is unset or empty.
std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}
}  // namespace

DatasetFiles mnist_files(const std::string& data_root) {
  const std::string dir = env_or("COURSE_MNIST_DIR", data_root + "/generated/mnist") + "/";
  return {"MNIST", dir + "train-images-idx3-ubyte", dir + "train-labels-idx1-ubyte", dir + "test-images-idx3-ubyte",
          dir + "test-labels-idx1-ubyte"};
}

DatasetFiles fashion_mnist_files(const std::string& system_dir) {
  const std::string dir =
      (system_dir.empty() ? env_or("COURSE_FASHION_MNIST_DIR", kDefaultFashionMnistDir) : system_dir) + "/";
  return {"Fashion-MNIST", dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz",
          dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz"};
}

}  // namespace course
