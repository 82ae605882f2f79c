#include "course/tensor.hpp"

#include <algorithm>
#include <sstream>

#include "course/error.hpp"

namespace course {

std::string shape_to_string(const Shape& shape) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

std::size_t shape_numel(const Shape& shape) {
  std::size_t n = 1;
  for (auto extent : shape) {
    if (extent < 0) throw Error("negative extent in shape " + shape_to_string(shape));
    n *= static_cast<std::size_t>(extent);
  }
  return n;
}

Tensor::Tensor(Shape shape, float fill) : shape_(std::move(shape)), data_(shape_numel(shape_), fill) {
  compute_strides();
}

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
