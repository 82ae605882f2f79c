// Lab 06 tests, part 3: the whole network (NaiveLeNet) against the golden CPU LeNet: random small
// networks first, then batches split over several forward() calls, the stream discipline
// (forward() recorded as a CUDA graph), and finally the full MNIST (1,996 images) and
// Fashion-MNIST (10,000 images) test splits -- every label identical to the golden reference's,
// every logit within 1e-3 (relative where large), and PyTorch's recorded accuracy reproduced.
#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "lab06_test_support.hpp"
#include "lenet_reference.hpp"

using course::Shape;
using course::Tensor;

namespace {

/// images through NaiveLeNet(net, max_batch) vs golden::lenet_forward(weights, images).
void check_network(const std::string& what, const course::lenet::Weights& weights, const lab04::FoldedLeNet& net,
                   const Tensor& images, int max_batch, std::int64_t recorded_correct = -1,
                   const std::vector<std::uint8_t>* truth = nullptr) {
  const std::int64_t n = images.dim(0);
  // The golden pass runs on a second thread while the GPU works (assertions stay on this one).
  std::future<Tensor> golden_pass =
      std::async(std::launch::async, [&weights, &images] { return golden::lenet_forward(weights, images); });
  Tensor logits = grader::poisoned({n, course::lenet::kNumClasses});
  std::vector<int> labels;
  try {
    lab06_harness::lenet_forward(net, images, max_batch, logits, labels);
  } catch (...) {
    golden_pass.wait();  // never leave the thread running behind a failed test
    throw;
  }
  const Tensor expected = golden_pass.get();
  const std::string label = what + " (" + std::to_string(n) + " images, max_batch " + std::to_string(max_batch) + ")";
  grader::check_tensor(label + ": logits vs golden", logits, expected, lab06_tests::kLogitTolerance);
  lab06_tests::check_labels(label + ": predicted classes vs golden", labels, lab06_tests::row_argmax(expected));
  if (recorded_correct >= 0 && truth != nullptr) {
    std::int64_t correct = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) correct += labels[i] == static_cast<int>((*truth)[i]) ? 1 : 0;
    CHECK_MESSAGE(correct == recorded_correct,
                  label << ": " << correct << " correct, PyTorch recorded " << recorded_correct);
  }
}

}  // namespace

TEST_CASE("lenet: a random network on 1, 2 and 3 random images") {
  course::Rng rng = grader::case_rng("lenet: random");
  const course::lenet::Weights weights = lab06_tests::random_weights(rng);
  const lab04::FoldedLeNet net = golden::lab04_fold_lenet(weights);
  for (int n : {1, 2, 3}) check_network("random network", weights, net, rng.tensor({n, 1, 28, 28}, 0.0f, 1.0f), n);
}

TEST_CASE("lenet: 37 MNIST images through max_batch 8 (five forward() calls, the last with 5 images)") {
  const lab06_tests::Model& model = lab06_tests::mnist_model();
  check_network("mnist", model.weights, model.folded, lab06_tests::image_slice(model.test.images, 0, 37), 8);
}

TEST_CASE("lenet: 1,200 MNIST images in one batch (max_batch 1,200)") {
  // The large batch that compute-sanitizer sees too (SANITIZE_TESTS): a kernel whose indexing
  // goes wrong only past a thousand images or so reads or writes outside its buffers here.
  const lab06_tests::Model& model = lab06_tests::mnist_model();
  check_network("mnist", model.weights, model.folded, lab06_tests::image_slice(model.test.images, 500, 1200), 1200);
}

TEST_CASE("lenet: forward() only enqueues kernels on its stream (recorded and replayed as a CUDA graph)") {
  const lab06_tests::Model& model = lab06_tests::mnist_model();
  const Tensor images = lab06_tests::image_slice(model.test.images, 100, 20);
  Tensor logits = grader::poisoned({20, course::lenet::kNumClasses});
  std::vector<int> labels;
  lab06_harness::lenet_forward_captured(model.folded, images, logits, labels);
  const Tensor expected = golden::lenet_forward(model.weights, images);
  grader::check_tensor("graph replay: logits vs golden", logits, expected, lab06_tests::kLogitTolerance);
  lab06_tests::check_labels("graph replay: classes vs golden", labels, lab06_tests::row_argmax(expected));
}

TEST_CASE("lenet: the whole MNIST test split (1,996 images, max_batch 256)") {
  const lab06_tests::Model& model = lab06_tests::mnist_model();
  REQUIRE(model.test.size() == 1996);
  check_network("mnist", model.weights, model.folded, model.test.images, 256, model.recorded_correct,
                &model.test.labels);
}

TEST_CASE("lenet: the whole Fashion-MNIST test split (10,000 images, max_batch 1,000)") {
  const lab06_tests::Model& model = lab06_tests::fashion_model();
  REQUIRE(model.test.size() == 10000);
  check_network("fashion-mnist", model.weights, model.folded, model.test.images, 1000, model.recorded_correct,
                &model.test.labels);
}
