// Reader for the IDX format used by MNIST and Fashion-MNIST (raw or gzip-compressed).
//
// IDX layout (big-endian):  0x00 0x00 <type> <ndims>  then ndims x uint32 extents, then the data.
// The course reads unsigned-byte files only (type 0x08): images are [N, rows, cols] (ndims 3),
// labels are [N] (ndims 1). Every check failure throws course::Error naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "course/tensor.hpp"

namespace course {

struct IdxArray {
  std::vector<std::uint32_t> dims;   ///< extents from the header
  std::vector<std::uint8_t> values;  ///< product(dims) bytes
};

/// Reads an IDX file of unsigned bytes. gzip is detected from the file's first two bytes.
/// Checks: file exists and is readable, gzip stream intact, magic zero bytes, type 0x08,
/// 1..4 dimensions, no zero extent, a product of the extents that does not overflow, and the
/// data length equals that product (a shorter file is "truncated", a longer one has "trailing
/// bytes"). A gzip file is inflated piece by piece: the header is checked first, and no more
/// than the promised bytes are ever decompressed, so a small hostile file cannot cost gigabytes.
IdxArray read_idx(const std::string& path);

/// Writes an uncompressed IDX file of unsigned bytes (used by tests and the data tools).
void write_idx(const std::string& path, const std::vector<std::uint32_t>& dims,
               const std::vector<std::uint8_t>& values);

/// A labelled image set ready for inference: images as float NCHW [N,1,rows,cols] scaled to
/// [0,1] (pixel / 255, exactly what the training script feeds PyTorch) and labels 0..9.
struct Dataset {
  std::string name;
  Tensor images;
  std::vector<std::uint8_t> labels;
  std::size_t size() const { return labels.size(); }
};

/// Loads an image file and its label file and checks that they belong together (same count,
/// images are 3-D, every label is 0..9).
Dataset load_dataset(const std::string& images_path, const std::string& labels_path,
                     const std::string& name = "");

/// Where the course's data sets live. `data_root` is the repository's data/ folder; MNIST is
/// converted into data/generated/mnist by ./course setup (see data/README.md), Fashion-MNIST
/// comes from Debian's dataset-fashion-mnist package. For machines that keep the data elsewhere,
/// the environment variable COURSE_MNIST_DIR (the folder holding the four converted MNIST files)
/// replaces `<data_root>/generated/mnist`, and COURSE_FASHION_MNIST_DIR replaces the default
/// Fashion-MNIST folder (a `system_dir` passed explicitly still wins over it).
struct DatasetFiles {
  std::string name, train_images, train_labels, test_images, test_labels;
};
inline constexpr const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";
DatasetFiles mnist_files(const std::string& data_root);
/// `system_dir` empty: $COURSE_FASHION_MNIST_DIR if set, else kDefaultFashionMnistDir.
DatasetFiles fashion_mnist_files(const std::string& system_dir = "");

}  // namespace course
