// What the GPU LeNet labs' tests (labs 06 and 07) share: the folded network built by the golden
// folding, random untrained networks, argmax of the golden logits, a label comparison that names
// the first differing image, and the trained models with their test splits. Header-only, for
// test files only (it needs the golden references and COURSE_DATA_DIR of a lab's test target).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "course/compare.hpp"
#include "course/idx.hpp"
#include "course/lenet.hpp"
#include "course/rng.hpp"
#include "course/tensor.hpp"
#include "lab04_reference.hpp"
#include "labs/lab04_lenet_cpu.hpp"
#include "testkit.hpp"

namespace grader::lenet_checks {
// Internal linkage, like the golden references these helpers call.
namespace {

namespace ln = course::lenet;

// Whole-network logits (|logit| up to ~25 for the trained models): five layers of float sums
// differ from the golden double sums by ~1e-5; 1e-3 leaves room for any order of summation, but
// not for TF32, FP16 or BF16 arithmetic.
const course::Tolerance kLogitTolerance{1e-3, 1e-3};


/// An untrained LeNet: weights scaled by 1/sqrt(fan-in) so activations stay near 1, batch-norm
/// parameters far from the identity.
inline ln::Weights random_weights(course::Rng& rng) {
  ln::Weights w;
  w.bn_epsilon = 1e-3;
  for (const ln::ParamSpec& p : ln::parameters()) {
    const bool batchnorm = p.name.rfind("bn", 0) == 0;
    course::Tensor t;
    if (batchnorm && p.name.find("running_var") != std::string::npos)
      t = rng.tensor(p.shape, 0.05f, 0.5f);
    else if (batchnorm && p.name.find(".weight") != std::string::npos)
      t = rng.tensor(p.shape, 0.5f, 1.5f);
    else if (batchnorm)
      t = rng.tensor(p.shape, -0.5f, 0.5f);
    else {
      const std::size_t fan_in =
          p.shape.size() > 1 ? course::shape_numel(p.shape) / static_cast<std::size_t>(p.shape[0]) : 1;
      const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
      t = rng.tensor(p.shape, -bound, bound);
    }
    w.tensors.emplace(p.name, std::move(t));
  }
  return w;
}

/// argmax of each row, the first index on a tie.
inline std::vector<int> row_argmax(const course::Tensor& logits) {
  const auto rows = static_cast<std::size_t>(logits.dim(0)), classes = static_cast<std::size_t>(logits.dim(1));
  std::vector<int> out(rows);
  for (std::size_t n = 0; n < rows; ++n) {
    const float* row = logits.data() + n * classes;
    out[n] = static_cast<int>(std::max_element(row, row + classes) - row);
  }
  return out;
}

/// CHECKs that two label lists are equal; on failure names the first differing image.
inline bool check_labels(const std::string& what, const std::vector<int>& actual, const std::vector<int>& expected) {
  if (actual.size() != expected.size()) {
    CHECK_MESSAGE(false, what << ": " << actual.size() << " labels, expected " << expected.size());
    return false;
  }
  std::size_t differ = 0, first = 0;
  for (std::size_t i = actual.size(); i-- > 0;)
    if (actual[i] != expected[i]) {
      ++differ;
      first = i;
    }
  CHECK_MESSAGE(differ == 0, what << ": " << differ << " of " << actual.size() << " labels differ; first at image "
                                  << first << ": got " << actual[first] << ", expected " << expected[first]
                                  << " (seed " << grader::seed() << ")");
  return differ == 0;
}

/// A trained network, folded by the golden code, with its test split.
struct Model {
  ln::Weights weights;
  lab04::FoldedLeNet folded;
  course::Dataset test;
  std::int64_t recorded_correct = -1;  ///< PyTorch's count of correct test images (weights metadata)
};

inline Model load_model(const std::string& weights_file, const course::DatasetFiles& files, const std::string& name) {
  Model m;
  m.weights = ln::load_weights(std::string(COURSE_DATA_DIR) + "/weights/" + weights_file);
  m.folded = golden::lab04_fold_lenet(m.weights);
  m.test = course::load_dataset(files.test_images, files.test_labels, name);
  const auto it = m.weights.metadata.find("test_correct");
  if (it != m.weights.metadata.end()) m.recorded_correct = std::stoll(it->second);
  return m;
}

inline const Model& mnist_model() {
  static const Model model = load_model("lenet_mnist.safetensors", course::mnist_files(COURSE_DATA_DIR), "mnist");
  return model;
}

inline const Model& fashion_model() {
  static const Model model =
      load_model("lenet_fashion_mnist.safetensors", course::fashion_mnist_files(), "fashion-mnist");
  return model;
}

}  // namespace
}  // namespace grader::lenet_checks
