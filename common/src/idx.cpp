#include "course/idx.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>

#include "course/error.hpp"

namespace course {
namespace {

constexpr std::uint8_t kTypeUnsignedByte = 0x08;

std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open file (" + std::strerror(errno) + ")");
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool is_gzip(const std::vector<std::uint8_t>& bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

// Inflates a whole gzip stream; a truncated or corrupt stream is an error, not a short read.
std::vector<std::uint8_t> gunzip(const std::vector<std::uint8_t>& compressed, const std::string& path) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) throw Error(path + ": zlib initialisation failed");
  zs.next_in = const_cast<Bytef*>(compressed.data());
  zs.avail_in = static_cast<uInt>(compressed.size());
  std::vector<std::uint8_t> out;
  std::vector<std::uint8_t> chunk(1 << 20);
  int status = Z_OK;
  while (status == Z_OK) {
    zs.next_out = chunk.data();
    zs.avail_out = static_cast<uInt>(chunk.size());
    status = inflate(&zs, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END) {
      const std::string reason = zs.msg ? zs.msg : (status == Z_BUF_ERROR ? "unexpected end of data" : "inflate failed");
      inflateEnd(&zs);
      throw Error(path + ": corrupt or truncated gzip data (" + reason + ")");
    }
    out.insert(out.end(), chunk.data(), chunk.data() + (chunk.size() - zs.avail_out));
    if (status == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      throw Error(path + ": truncated gzip data (stream ends before its end marker)");
    }
  }
  inflateEnd(&zs);
  return out;
}

std::uint32_t read_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  std::vector<std::uint8_t> bytes = read_file_bytes(path);
  if (is_gzip(bytes)) bytes = gunzip(bytes, path);
  if (bytes.size() < 4)
    throw Error(path + ": not an IDX file (only " + std::to_string(bytes.size()) + " bytes, a header needs at least 4)");
  if (bytes[0] != 0 || bytes[1] != 0)
    throw Error(path + ": bad IDX magic number (first two bytes must be 0x00 0x00); is this really an IDX file?");
  if (bytes[2] != kTypeUnsignedByte)
    throw Error(path + ": unsupported IDX data type 0x" + [&] {
      char buf[8];
      std::snprintf(buf, sizeof buf, "%02x", bytes[2]);
      return std::string(buf);
    }() + " (only unsigned bytes, 0x08, are used by MNIST)");
  const std::size_t ndims = bytes[3];
  if (ndims < 1 || ndims > 4)
    throw Error(path + ": IDX header declares " + std::to_string(ndims) + " dimensions (expected 1 to 4)");
  const std::size_t header = 4 + 4 * ndims;
  if (bytes.size() < header) throw Error(path + ": truncated IDX header");

  IdxArray result;
  std::size_t expected = 1;
  for (std::size_t i = 0; i < ndims; ++i) {
    const std::uint32_t extent = read_be32(&bytes[4 + 4 * i]);
    if (extent == 0) throw Error(path + ": IDX dimension " + std::to_string(i) + " is zero");
    result.dims.push_back(extent);
    expected *= extent;
    if (expected > (std::size_t{1} << 34)) throw Error(path + ": IDX header declares an implausibly large array");
  }
  const std::size_t actual = bytes.size() - header;
  if (actual < expected)
    throw Error(path + ": truncated: header promises " + std::to_string(expected) + " data bytes, file has " +
                std::to_string(actual));
  if (actual > expected)
    throw Error(path + ": " + std::to_string(actual - expected) + " trailing bytes after the " +
                std::to_string(expected) + " data bytes the header declares");
  result.values.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
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

DatasetFiles mnist_files(const std::string& data_root) {
  const std::string dir = data_root + "/generated/mnist/";
  return {"MNIST", dir + "train-images-idx3-ubyte", dir + "train-labels-idx1-ubyte", dir + "test-images-idx3-ubyte",
          dir + "test-labels-idx1-ubyte"};
}

DatasetFiles fashion_mnist_files(const std::string& system_dir) {
  const std::string dir = system_dir + "/";
  return {"Fashion-MNIST", dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz",
          dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz"};
}

}  // namespace course
