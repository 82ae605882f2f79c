// Shared pieces of lab 08's part C tests: tolerances, random folded blocks and random MobileNetV2
// weights, the trained network with its test split, and a parallel golden pass. The golden
// references are grader/reference/mobilenet_folding_reference.hpp (the trusted fold, the folded
// block and network in double) and mobilenet_reference.hpp (the unfolded network, which matches
// PyTorch).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "course/batch_slices.hpp"
#include "course/compare.hpp"
#include "course/idx.hpp"
#include "course/mobilenet.hpp"
#include "course/rng.hpp"
#include "course/tensor.hpp"
#include "lab08_mobilenet_harness.hpp"
#include "lenet_checks.hpp"
#include "mobilenet_folding_reference.hpp"
#include "mobilenet_reference.hpp"
#include "testkit.hpp"

namespace lab08_c_tests {
namespace {

namespace mn = course::mobilenet;

// One block: the GPU sums in float (fused multiply-adds), the reference in double. The expansion
// sums `in` products, the depthwise step 9, the projection `hidden` (up to 384): the float error
// grows with those counts, ~1e-6 per product for values near 1, so atol = 1e-5 + 2e-6 * (in +
// hidden): 8e-4 for the largest block (64 -> 384 -> 64), far below any indexing mistake (a wrong
// tap, a missing clamp or residual moves outputs by ~0.1 or more).
inline course::Tolerance block_tolerance(std::int64_t in, std::int64_t hidden) {
  return {1e-5 + 2e-6 * static_cast<double>(in + hidden), 1e-4};
}

// Whole-network logits (|logit| up to ~20 on the trained network) against the golden network in
// double: about twenty float layers, each off by ~1e-6 relative, give ~1e-5; 1e-3 absolute + 1e-3
// relative leaves a hundredfold margin for any summation order, and none for TF32/FP16/BF16.
const course::Tolerance kLogitTolerance{1e-3, 1e-3};
// Against PyTorch's own logits (the fixture, FP32 in PyTorch): golden matches them to 1e-4
// (reference.mobilenet), so the student's may differ by the sum of both errors.
const course::Tolerance kPyTorchTolerance{1.1e-3, 1e-3};

inline std::string shape_text(const course::Tensor& t) { return course::shape_to_string(t.shape()); }

/// A folded block with weights scaled by 1/sqrt(fan-in) (times `gain`), biases in [-0.5, 0.5].
inline lab08::FoldedBlock random_block(course::Rng& rng, int in, int hidden, int out, float gain = 1.0f) {
  const auto bound = [gain](int fan_in) { return gain / std::sqrt(static_cast<float>(fan_in)); };
  lab08::FoldedBlock b;
  if (hidden != in) {
    b.expand_weight = rng.tensor({hidden, in}, -bound(in), bound(in));
    b.expand_bias = rng.tensor({hidden}, -0.5f, 0.5f);
  }
  b.depthwise_weight = rng.tensor({hidden, 1, 3, 3}, -bound(3), bound(3));
  b.depthwise_bias = rng.tensor({hidden}, -0.5f, 0.5f);
  b.project_weight = rng.tensor({out, hidden}, -bound(hidden), bound(hidden));
  b.project_bias = rng.tensor({out}, -0.5f, 0.5f);
  return b;
}

/// An untrained MobileNetV2 (unfolded, as course::mobilenet::load_weights returns it): conv and
/// linear weights scaled by 1/sqrt(fan-in), batch-norm parameters away from the identity but
/// tame enough that activations neither explode nor all clamp.
inline mn::Weights random_weights(course::Rng& rng) {
  mn::Weights w;
  w.bn_epsilon = 1e-3;
  for (const mn::ParamSpec& p : mn::parameters()) {
    const bool bn = p.name.find(".bn.") != std::string::npos;
    course::Tensor t;
    if (bn && p.name.find("running_var") != std::string::npos)
      t = rng.tensor(p.shape, 0.5f, 1.5f);
    else if (bn && p.name.find(".weight") != std::string::npos)
      t = rng.tensor(p.shape, 0.5f, 1.5f);
    else if (bn)
      t = rng.tensor(p.shape, -0.5f, 0.5f);
    else {
      const std::size_t fan_in =
          p.shape.size() > 1 ? course::shape_numel(p.shape) / static_cast<std::size_t>(p.shape[0]) : 1;
      const float bound = static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in)));
      t = rng.tensor(p.shape, -bound, bound);
    }
    w.tensors.emplace(p.name, std::move(t));
  }
  return w;
}

/// golden::mobilenet_forward split over the machine's cores, 2 to 16 threads (one image's result
/// does not depend on another's, so the split changes nothing but the time).
inline course::Tensor parallel_golden(const mn::Weights& weights, const course::Tensor& images) {
  // ~40 ms per image per thread (211 s for the 10,000 images on 2 threads): use every core.
  return course::forward_in_slices(images, images.dim(0), std::clamp(std::thread::hardware_concurrency(), 2u, 16u),
                                   [&weights](const course::Tensor& slice) { return golden::mobilenet_forward(weights, slice); });
}

// Labels: the testkit's (also lab 06's and lab 07's), nothing LeNet-specific in them.
using grader::lenet_checks::check_labels;
using grader::lenet_checks::row_argmax;

/// The trained network (data/weights/mobilenet_fashion_mnist.safetensors), folded by the golden
/// fold, with the Fashion-MNIST test split and PyTorch's recorded count of correct images.
struct Model {
  mn::Weights weights;
  lab08::FoldedMobileNet folded;
  course::Dataset test;
  std::int64_t recorded_correct = -1;
};

inline const Model& trained_model() {
  static const Model model = [] {
    Model m;
    m.weights = mn::load_weights(std::string(COURSE_DATA_DIR) + "/weights/mobilenet_fashion_mnist.safetensors");
    m.folded = golden::lab08_fold_mobilenet(m.weights);
    const course::DatasetFiles files = course::fashion_mnist_files();
    m.test = course::load_dataset(files.test_images, files.test_labels, files.name);
    const auto it = m.weights.metadata.find("test_correct");
    if (it != m.weights.metadata.end()) m.recorded_correct = std::stoll(it->second);
    return m;
  }();
  return model;
}

}  // namespace
}  // namespace lab08_c_tests
