// Shared pieces of lab 07's tests: the whole-network check of FastLeNet against the golden CPU
// LeNet (the network helpers and trained models come from grader/testkit/lenet_checks.hpp, shared
// with lab 06).
#pragma once

#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "course/lenet.hpp"
#include "course/tensor.hpp"
#include "lab07_harness.hpp"
#include "lenet_checks.hpp"
#include "lenet_reference.hpp"
#include "testkit.hpp"

namespace lab07_tests {
namespace {

using namespace grader::lenet_checks;  // Model, mnist_model(), check_labels(), kLogitTolerance, ...
using course::Tensor;

// Two classes whose golden logits are closer than this are a tie that FP32 sums in another order
// may break either way (their error is ~1e-5): there either label is accepted.
constexpr double kNearTie = 1e-4;

/// CHECKs the labels: each the argmax of the pipeline's own logits (the lowest index on a tie),
/// and each the golden network's, except at a near-tie of the golden logits.
inline bool check_labels_vs_golden(const std::string& what, const std::vector<int>& labels, const Tensor& logits,
                            const Tensor& golden) {
  const bool own = check_labels(what + ": labels vs the argmax of the logits it wrote", labels, row_argmax(logits));
  std::vector<int> expected = row_argmax(golden);
  const auto classes = static_cast<std::size_t>(golden.dim(1));
  for (std::size_t i = 0; i < expected.size() && i < labels.size(); ++i) {
    const int got = labels[i];
    if (got == expected[i] || got < 0 || got >= static_cast<int>(classes)) continue;
    const float* row = golden.data() + i * classes;
    if (static_cast<double>(row[expected[i]]) - static_cast<double>(row[got]) <= kNearTie) expected[i] = got;
  }
  return check_labels(what + ": labels vs golden", labels, expected) && own;
}

/// images through FastLeNet(net, max_batch) (consecutive batches of max_batch) against
/// golden::lenet_forward(weights, images): every logit within kLogitTolerance, every label equal
/// to the golden network's, and where given, PyTorch's recorded number of correct answers.
/// `golden` may hold the golden logits already (they take seconds for a whole test split).
inline void check_network(const std::string& what, const course::lenet::Weights& weights, const lab04::FoldedLeNet& net,
                   const Tensor& images, int max_batch, const Tensor* golden = nullptr,
                   std::int64_t recorded_correct = -1, const std::vector<std::uint8_t>* truth = nullptr) {
  const std::int64_t n = images.dim(0);
  // Without logits given, the golden pass runs on a second thread while the GPU works
  // (assertions stay on this one).
  std::future<Tensor> golden_pass;
  if (golden == nullptr)
    golden_pass = std::async(std::launch::async, [&weights, &images] { return golden::lenet_forward(weights, images); });
  Tensor logits = grader::poisoned({n, course::lenet::kNumClasses});
  std::vector<int> labels;
  try {
    lab07_harness::lenet_forward(net, images, max_batch, logits, labels);
  } catch (...) {
    if (golden_pass.valid()) golden_pass.wait();  // never leave the thread running behind a failed test
    throw;
  }
  const Tensor expected = golden != nullptr ? *golden : golden_pass.get();
  const std::string label = what + " (" + std::to_string(n) + " images, max_batch " + std::to_string(max_batch) + ")";
  grader::check_tensor(label + ": logits vs golden", logits, expected, kLogitTolerance);
  check_labels_vs_golden(label, labels, logits, expected);
  if (recorded_correct >= 0 && truth != nullptr) {
    std::int64_t correct = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) correct += labels[i] == static_cast<int>((*truth)[i]) ? 1 : 0;
    CHECK_MESSAGE(correct == recorded_correct, label << ": " << correct << " correct, PyTorch recorded " << recorded_correct);
  }
}

}  // namespace
}  // namespace lab07_tests
