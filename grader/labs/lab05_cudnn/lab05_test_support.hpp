// Shared pieces of lab 05's tests: tolerances, conversions to the golden references' parameter
// types, the folded networks (folded by the golden reference, never by the student's lab 04) and
// the test splits, loaded once per process.
#pragma once

#include <algorithm>
#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "course/compare.hpp"
#include "course/idx.hpp"
#include "course/lenet.hpp"
#include "course/tensor.hpp"
#include "lab02_reference.hpp"
#include "lab03_reference.hpp"
#include "lab04_reference.hpp"
#include "lab05_harness.hpp"
#include "lenet_reference.hpp"
#include "testkit.hpp"

namespace lab05_tests {
namespace {

// cuDNN computes in fp32 and may pick FFT or Winograd, whose rounding differs from a direct sum
// by a few 1e-6 of the output's scale; a wrong index or a missing term is off by far more.
const course::Tolerance kConvTolerance{2e-4, 2e-4};
const course::Tolerance kLinearTolerance{1e-4, 1e-4};
const course::Tolerance kExact{0.0, 0.0};
// Whole network against the golden CPU LeNet (double inside): the brief's 1e-3, relative where
// logits are large.
const course::Tolerance kLogitTolerance{1e-3, 1e-3};

inline lab02::Conv2dParams to_lab02(const lab05::ConvParams& p) {
  lab02::Conv2dParams q;
  q.pad_top = q.pad_bottom = p.pad_h;
  q.pad_left = q.pad_right = p.pad_w;
  q.stride_h = p.stride_h;
  q.stride_w = p.stride_w;
  q.dilation_h = p.dilation_h;
  q.dilation_w = p.dilation_w;
  return q;
}

inline golden::Pool2d to_golden(const lab05::PoolParams& p) {
  golden::Pool2d q;
  q.kernel_h = p.kernel_h;
  q.kernel_w = p.kernel_w;
  q.stride_h = p.stride_h;
  q.stride_w = p.stride_w;
  q.pad_h = p.pad_h;
  q.pad_w = p.pad_w;
  return q;
}


/// A trained network, its folded form, its test split, and the golden logits of the whole split.
struct Model {
  std::string name;
  course::lenet::Weights weights;
  lab04::FoldedLeNet folded;
  course::Dataset test;
  course::Tensor golden_logits;
};

/// golden::lenet_forward over all images, split across threads (10,000 images in double take a
/// while on one core).
inline course::Tensor compute_golden_logits(const course::lenet::Weights& weights, const course::Tensor& images) {
  const std::int64_t total = images.dim(0), per_image = 28 * 28, parts = 8;
  const std::int64_t chunk = (total + parts - 1) / parts;
  std::vector<std::future<course::Tensor>> pieces;
  for (std::int64_t begin = 0; begin < total; begin += chunk) {
    const std::int64_t count = std::min(chunk, total - begin);
    course::Tensor slice(course::Shape{count, 1, 28, 28});
    std::copy(images.data() + begin * per_image, images.data() + (begin + count) * per_image, slice.data());
    pieces.push_back(std::async(std::launch::async, [&weights, s = std::move(slice)] {
      return golden::lenet_forward(weights, s);
    }));
  }
  course::Tensor logits(course::Shape{total, course::lenet::kNumClasses});
  float* out = logits.data();
  for (auto& piece : pieces) {
    const course::Tensor part = piece.get();
    out = std::copy(part.data(), part.data() + part.numel(), out);
  }
  return logits;
}

inline Model load_model(const std::string& name, const std::string& weights_file, const course::DatasetFiles& files) {
  Model m;
  m.name = name;
  m.weights = course::lenet::load_weights(std::string(COURSE_DATA_DIR) + "/weights/" + weights_file);
  m.folded = golden::lab04_fold_lenet(m.weights);
  m.test = course::load_dataset(files.test_images, files.test_labels, name);
  m.golden_logits = compute_golden_logits(m.weights, m.test.images);
  return m;
}

inline const Model& mnist_model() {
  static const Model model = load_model("mnist", "lenet_mnist.safetensors", course::mnist_files(COURSE_DATA_DIR));
  return model;
}

inline const Model& fashion_model() {
  static const Model model =
      load_model("fashion-mnist", "lenet_fashion_mnist.safetensors", course::fashion_mnist_files());
  return model;
}

/// Index of the largest value of each row (the first on a tie) and the gap to the runner-up.
struct RowTop {
  int label = 0;
  double margin = 0.0;
};

inline std::vector<RowTop> row_tops(const course::Tensor& logits) {
  const auto rows = static_cast<std::size_t>(logits.dim(0)), cols = static_cast<std::size_t>(logits.dim(1));
  std::vector<RowTop> out(rows);
  for (std::size_t n = 0; n < rows; ++n) {
    const float* row = logits.data() + n * cols;
    std::size_t best = 0;
    for (std::size_t k = 1; k < cols; ++k)
      if (row[k] > row[best]) best = k;
    double second = -1e30;
    for (std::size_t k = 0; k < cols; ++k)
      if (k != best) second = std::max(second, static_cast<double>(row[k]));
    out[n] = {static_cast<int>(best), static_cast<double>(row[best]) - second};
  }
  return out;
}

}  // namespace
}  // namespace lab05_tests
