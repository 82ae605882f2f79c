// Lab 05 tests: the whole CudnnLeNet against the golden CPU LeNet (grader/reference/
// lenet_reference.hpp): random weights on a few images first, then the complete MNIST test split
// (1,996 images) and the Fashion-MNIST test split (10,000) at batch sizes 1, 7, 64 and 10,000.
// Weights are folded by the golden reference, never by the student's lab 04.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "lab05_test_support.hpp"

using course::Shape;
using course::Tensor;
namespace ln = course::lenet;

namespace {

/// Untrained weights scaled by 1/sqrt(fan-in) (activations stay near 1) and batch-norm
/// statistics far from the identity, so that any mistake shows in the logits.
ln::Weights random_weights(course::Rng& rng) {
  ln::Weights w;
  w.bn_epsilon = 1e-3;
  for (const ln::ParamSpec& p : ln::parameters()) {
    const bool bn = p.name.rfind("bn", 0) == 0;
    Tensor t;
    if (bn && p.name.find("running_var") != std::string::npos)
      t = rng.tensor(p.shape, 0.05f, 0.5f);
    else if (bn && p.name.find(".weight") != std::string::npos)
      t = rng.tensor(p.shape, 0.5f, 1.5f);
    else if (bn)
      t = rng.tensor(p.shape, -0.5f, 0.5f);
    else {
      const std::size_t fan_in = p.shape.size() > 1 ? course::shape_numel(p.shape) / static_cast<std::size_t>(p.shape[0]) : 1;
      const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
      t = rng.tensor(p.shape, -bound, bound);
    }
    w.tensors.emplace(p.name, std::move(t));
  }
  return w;
}

/// Logits within tolerance of the golden ones, the same predicted class for every image whose
/// golden top-2 gap is not within rounding (< 1e-4), and (whole splits) the accuracy PyTorch
/// recorded in the weights file.
void check_logits(const std::string& what, const Tensor& logits, const Tensor& golden_logits,
                  const std::vector<std::uint8_t>* labels = nullptr, std::int64_t recorded_correct = -1) {
  if (!grader::check_tensor(what + ": logits vs golden CPU LeNet", logits, golden_logits, lab05_tests::kLogitTolerance))
    return;
  const std::vector<lab05_tests::RowTop> got = lab05_tests::row_tops(logits), want = lab05_tests::row_tops(golden_logits);
  std::int64_t differing = 0, exempt = 0, correct = 0;
  for (std::size_t n = 0; n < got.size(); ++n) {
    if (want[n].margin < 1e-4) ++exempt;
    else if (got[n].label != want[n].label) ++differing;
    if (labels != nullptr && got[n].label == (*labels)[n]) ++correct;
  }
  CHECK_MESSAGE(differing == 0, what << ": " << differing << " images classified differently from the golden LeNet ("
                                     << exempt << " near-ties exempt)");
  if (recorded_correct >= 0)
    CHECK_MESSAGE(correct == recorded_correct, what << ": " << correct << " correct, PyTorch recorded " << recorded_correct);
}

std::int64_t recorded_correct(const lab05_tests::Model& m) { return std::stoll(m.weights.metadata.at("test_correct")); }

}  // namespace

TEST_CASE("lenet: random weights, batches of 1, 3 and 7 images") {
  course::Rng rng = grader::case_rng("lenet: random weights");
  const ln::Weights w = random_weights(rng);
  const lab04::FoldedLeNet net = golden::lab04_fold_lenet(w);
  for (std::int64_t n : {1, 3, 7}) {
    const Tensor images = rng.tensor({n, 1, 28, 28}, 0.0f, 1.0f);
    Tensor logits = grader::poisoned({n, ln::kNumClasses});
    lab05_harness::lenet_forward(net, images, logits);
    check_logits("random weights, N=" + std::to_string(n), logits, golden::lenet_forward(w, images));
  }
}

TEST_CASE("lenet: forward() only enqueues work on its stream (recorded and replayed as a CUDA graph)") {
  const lab05_tests::Model& m = lab05_tests::mnist_model();
  const Tensor images = m.test.images.reshaped({m.test.images.dim(0), 1, 28, 28});
  Tensor logits = grader::poisoned({images.dim(0), ln::kNumClasses});
  lab05_harness::lenet_forward_captured(m.folded, images, logits);
  check_logits("MNIST, replayed graph", logits, m.golden_logits, &m.test.labels, recorded_correct(m));
}

TEST_CASE("lenet: MNIST test split at batch sizes 1, 7, 64 and all 1,996 at once") {
  const lab05_tests::Model& m = lab05_tests::mnist_model();
  const int total = static_cast<int>(m.test.images.dim(0));
  for (int batch : {total, 64, 7, 1}) {
    Tensor logits = grader::poisoned({total, ln::kNumClasses});
    lab05_harness::lenet_forward_batched(m.folded, m.test.images, batch, batch, true, logits);
    check_logits("MNIST, batch " + std::to_string(batch), logits, m.golden_logits, &m.test.labels, recorded_correct(m));
  }
}

TEST_CASE("lenet: Fashion-MNIST test split (10,000) at batch sizes 10,000, 64, 7 and 1") {
  const lab05_tests::Model& m = lab05_tests::fashion_model();
  const int total = static_cast<int>(m.test.images.dim(0));
  for (int batch : {10000, 64, 7, 1}) {
    Tensor logits = grader::poisoned({total, ln::kNumClasses});
    lab05_harness::lenet_forward_batched(m.folded, m.test.images, std::min(batch, total), batch, true, logits);
    check_logits("Fashion-MNIST, batch " + std::to_string(batch), logits, m.golden_logits, &m.test.labels,
                 recorded_correct(m));
  }
}

TEST_CASE("lenet: unfused (conv, bias, ReLU as three calls) and a smaller last batch in a larger network") {
  const lab05_tests::Model& m = lab05_tests::mnist_model();
  const int total = static_cast<int>(m.test.images.dim(0));
  Tensor logits = grader::poisoned({total, ln::kNumClasses});
  // Capacity 100, batches of 64: every call runs fewer images than the buffers hold.
  lab05_harness::lenet_forward_batched(m.folded, m.test.images, 100, 64, false, logits);
  check_logits("MNIST, unfused, batch 64 in a network for 100", logits, m.golden_logits, &m.test.labels,
               recorded_correct(m));
}
