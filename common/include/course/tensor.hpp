// A float32 tensor on the host: shape, row-major (contiguous) strides and storage.
//
// The course keeps tensors deliberately simple: one dtype (float32), contiguous memory, and
// NCHW order for 4-D activations ([batch, channels, height, width]) and KCRS order for
// convolution weights ([out-channels, in-channels, kernel-height, kernel-width]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace course {

using Shape = std::vector<std::int64_t>;

/// "[2, 3, 28, 28]" -- used in every shape-related error message.
std::string shape_to_string(const Shape& shape);

/// Number of elements of a shape (1 for a scalar shape {}). Throws course::Error on a negative
/// extent and when the product of the extents (ignoring zeros) times sizeof(float) would not
/// fit in an int64 -- so a product that wraps around can never pass for a small tensor.
std::size_t shape_numel(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  /// A tensor of the given shape, every element set to `fill`. A shape that shape_numel rejects,
  /// or an allocation the machine cannot satisfy, throws course::Error.
  explicit Tensor(Shape shape, float fill = 0.0f);
  /// A tensor that takes ownership of `values`; their count must match the shape.
  Tensor(Shape shape, std::vector<float> values);

  /// Convenience constructor for the NCHW activations the course uses everywhere.
  static Tensor nchw(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, float fill = 0.0f) {
    return Tensor(Shape{n, c, h, w}, fill);
  }

  const Shape& shape() const { return shape_; }
  const std::vector<std::int64_t>& strides() const { return strides_; }
  std::size_t rank() const { return shape_.size(); }
  std::int64_t dim(std::size_t i) const;
  std::size_t numel() const { return data_.size(); }
  std::size_t bytes() const { return data_.size() * sizeof(float); }

  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  std::vector<float>& values() { return data_; }
  const std::vector<float>& values() const { return data_; }

  float& operator[](std::size_t i) { return data_[i]; }
  float operator[](std::size_t i) const { return data_[i]; }

  /// Element access for 4-D (NCHW / KCRS) tensors, with bounds checked in debug builds.
  float& at(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) { return data_[offset4(n, c, h, w)]; }
  float at(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const { return data_[offset4(n, c, h, w)]; }

  /// Throws course::Error("<what>: expected shape [..], got [..]") unless the shapes match.
  void expect_shape(const Shape& expected, const std::string& what) const;

  /// Same storage, new shape with the same element count (e.g. flatten [N,16,5,5] -> [N,400]).
  Tensor reshaped(Shape new_shape) const;

  void fill(float value);

 private:
  // Inline: at() sits in the innermost loop of every CPU lab, and an out-of-line call there
  // costs several times the multiply-add it guards.
  std::size_t offset4(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
#ifndef NDEBUG
    check_index4(n, c, h, w);
#endif
    return static_cast<std::size_t>(n * strides_[0] + c * strides_[1] + h * strides_[2] + w);
  }
  void check_index4(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const;  // throws if out of bounds
  void compute_strides();

  Shape shape_;
  std::vector<std::int64_t> strides_;
  std::vector<float> data_;
};

}  // namespace course
