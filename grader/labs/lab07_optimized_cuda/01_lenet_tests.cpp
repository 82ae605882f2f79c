// Lab 07 tests, part 1: the whole network (FastLeNet) against the golden CPU LeNet. First the
// lecture's example (a handful of Fashion-MNIST images), then both full test splits in ONE batch
// of up to 10,000 images -- every label identical to the golden network's and every logit within
// 1e-3, which is what catches reduced precision (TF32, FP16, BF16) -- then the stream discipline
// (forward() recorded and replayed as a CUDA graph), and random untrained networks, which fail a
// pipeline that hard-codes the trained weights.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lab07_test_support.hpp"

using course::Tensor;

namespace lab07_tests {
namespace {

TEST_CASE("lenet: the lecture's example -- the first 8 Fashion-MNIST test images in one batch") {
  const Model& model = fashion_model();
  check_network("fashion-mnist", model.weights, model.folded, grader::image_slice(model.test.images, 0, 8), 8);
}

TEST_CASE("lenet: the whole Fashion-MNIST test split in one batch of 10,000") {
  const Model& model = fashion_model();
  REQUIRE(model.test.size() == 10000);
  check_network("fashion-mnist", model.weights, model.folded, model.test.images, 10000, nullptr,
                model.recorded_correct, &model.test.labels);
}

TEST_CASE("lenet: the whole MNIST test split in one batch") {
  const Model& model = mnist_model();
  const int n = static_cast<int>(model.test.size());
  REQUIRE(n > 1000);
  check_network("mnist", model.weights, model.folded, model.test.images, n, nullptr, model.recorded_correct,
                &model.test.labels);
}

TEST_CASE("lenet: forward() only enqueues work on its stream (recorded and replayed as a CUDA graph)") {
  const Model& model = mnist_model();
  const Tensor images = grader::image_slice(model.test.images, 100, 300);
  Tensor logits = grader::poisoned({300, course::lenet::kNumClasses});
  std::vector<int> labels;
  lab07_harness::lenet_forward_captured(model.folded, images, logits, labels);
  const Tensor expected = golden::lenet_forward(model.weights, images);
  grader::check_tensor("graph replay: logits vs golden", logits, expected, kLogitTolerance);
  check_labels_vs_golden("graph replay", labels, logits, expected);
}

TEST_CASE("lenet: three random untrained networks on Fashion-MNIST and random images") {
  course::Rng rng = grader::case_rng("lenet: random networks");
  const Model& fashion = fashion_model();
  for (int i = 0; i < 3; ++i) {
    const course::lenet::Weights weights = random_weights(rng);
    const lab04::FoldedLeNet net = golden::lab04_fold_lenet(weights);
    // Real images (structure, many exact zeros) and uniform noise: 97 + 3 = 100 in one batch.
    Tensor images(course::Shape{100, 1, 28, 28});
    const Tensor real = grader::image_slice(fashion.test.images, 500 * i, 97);
    const Tensor noise = rng.tensor({3, 1, 28, 28}, 0.0f, 1.0f);
    std::copy(real.values().begin(), real.values().end(), images.values().begin());
    std::copy(noise.values().begin(), noise.values().end(), images.values().begin() + static_cast<std::ptrdiff_t>(real.numel()));
    check_network("random network " + std::to_string(i + 1), weights, net, images, 100);
  }
}

}  // namespace
}  // namespace lab07_tests
