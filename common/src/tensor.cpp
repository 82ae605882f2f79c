#include "course/tensor.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <new>
#include <sstream>
#include <stdexcept>

#include "course/error.hpp"

namespace course {

std::string shape_to_string(const Shape& shape) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

namespace {

// The largest element count a shape may have: its byte size must fit in a signed 64-bit
// offset (strides are int64, and sizes are passed to memcpy/cudaMemcpy as byte counts).
constexpr std::uint64_t kMaxElements = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / sizeof(float);

// Allocation of a checked count can still fail (the machine lacks the memory); that is the
// caller's problem to report, so it becomes a course::Error rather than std::bad_alloc.
std::vector<float> allocate(const Shape& shape, float fill) {
  const std::size_t n = shape_numel(shape);
  try {
    return std::vector<float>(n, fill);
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  throw Error("Tensor: cannot allocate " + std::to_string(n) + " floats for shape " + shape_to_string(shape) +
              " (out of memory)");
}

}  // namespace

std::size_t shape_numel(const Shape& shape) {
  // Every extent is checked, and the product of the non-zero extents must stay in range even
  // when another extent is zero: the strides are products of trailing extents and must not
  // overflow either.
  std::uint64_t nonzero_product = 1;
  bool has_zero = false;
  for (auto extent : shape) {
    if (extent < 0) throw Error("negative extent in shape " + shape_to_string(shape));
    if (extent == 0) {
      has_zero = true;
      continue;
    }
    const auto e = static_cast<std::uint64_t>(extent);
    if (nonzero_product > kMaxElements / e)
      throw Error("shape " + shape_to_string(shape) + " has too many elements (more than " +
                  std::to_string(kMaxElements) + ")");
    nonzero_product *= e;
  }
  return has_zero ? 0 : static_cast<std::size_t>(nonzero_product);
}

Tensor::Tensor(Shape shape, float fill) : shape_(std::move(shape)), data_(allocate(shape_, fill)) { compute_strides(); }

Tensor::Tensor(Shape shape, std::vector<float> values) : shape_(std::move(shape)), data_(std::move(values)) {
  if (data_.size() != shape_numel(shape_))
    throw Error("Tensor: shape " + shape_to_string(shape_) + " needs " + std::to_string(shape_numel(shape_)) +
                " values, got " + std::to_string(data_.size()));
  compute_strides();
}

std::int64_t Tensor::dim(std::size_t i) const {
  if (i >= shape_.size())
    throw Error("Tensor::dim(" + std::to_string(i) + ") on a tensor of shape " + shape_to_string(shape_));
  return shape_[i];
}

void Tensor::compute_strides() {
  strides_.assign(shape_.size(), 1);
  for (std::size_t i = shape_.size(); i-- > 1;) strides_[i - 1] = strides_[i] * shape_[i];
}

void Tensor::check_index4(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
  if (shape_.size() != 4 || n < 0 || c < 0 || h < 0 || w < 0 || n >= shape_[0] || c >= shape_[1] ||
      h >= shape_[2] || w >= shape_[3])
    throw Error("Tensor::at(" + std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(h) + ", " +
                std::to_string(w) + ") out of bounds for shape " + shape_to_string(shape_));
}

void Tensor::expect_shape(const Shape& expected, const std::string& what) const {
  if (shape_ != expected)
    throw Error(what + ": expected shape " + shape_to_string(expected) + ", got " + shape_to_string(shape_));
}

Tensor Tensor::reshaped(Shape new_shape) const {
  if (shape_numel(new_shape) != data_.size())
    throw Error("Tensor::reshaped: cannot view " + shape_to_string(shape_) + " as " + shape_to_string(new_shape));
  return Tensor(std::move(new_shape), data_);
}

void Tensor::fill(float value) { std::fill(data_.begin(), data_.end(), value); }

}  // namespace course
