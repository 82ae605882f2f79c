// Lab 08 tests, part C2: the whole MobileNetV2 (lab08::MobileNetV2) with the trusted fold
// (golden::lab08_fold_mobilenet, itself checked by the grader's reference tests, CTest
// reference.mobilenet): random networks against golden::mobilenet_forward, batches
// split over several forward() calls, forward() recorded as a CUDA graph, PyTorch's own logits of
// the first 100 test images, and the whole Fashion-MNIST test split: every label equal to the
// golden network's, every logit within kLogitTolerance, and PyTorch's recorded accuracy
// (9,393 of 10,000) reproduced.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "course/safetensors.hpp"
#include "lab08_mobilenet_test_support.hpp"

using course::Tensor;

namespace {

namespace mn = course::mobilenet;

/// images through MobileNetV2(net, max_batch) vs golden::mobilenet_forward(weights, images), the
/// golden pass on the first `golden_count` images (all when < 0): it costs ~40 ms of CPU per image,
/// so the 10,000-image case compares 1,000 of them and judges the rest by the recorded accuracy.
void check_network(const std::string& what, const mn::Weights& weights, const lab08::FoldedMobileNet& net,
                   const Tensor& images, int max_batch, std::int64_t recorded_correct = -1,
                   const std::vector<std::uint8_t>* truth = nullptr, std::int64_t golden_count = -1) {
  const std::int64_t n = images.dim(0);
  const std::int64_t compared = golden_count < 0 ? n : std::min(golden_count, n);
  // The GPU first, then the golden pass on every core (parallel_golden): the GPU takes a fraction
  // of the golden time, and an unimplemented or crashing forward() then costs no golden pass.
  Tensor logits = grader::poisoned({n, mn::kNumClasses});
  lab08_harness::mobilenet_forward(net, images, max_batch, logits);
  const Tensor expected = lab08_c_tests::parallel_golden(weights, grader::image_slice(images, 0, compared));
  const std::string label = what + " (" + std::to_string(n) + " images, max_batch " + std::to_string(max_batch) + ")";
  Tensor compared_logits(course::Shape{compared, mn::kNumClasses});  // the first `compared` rows
  std::copy(logits.data(), logits.data() + compared * mn::kNumClasses, compared_logits.data());
  grader::check_tensor(label + ": logits vs golden (first " + std::to_string(compared) + ")", compared_logits,
                       expected, lab08_c_tests::kLogitTolerance);
  const std::vector<int> labels = lab08_c_tests::row_argmax(logits);
  lab08_c_tests::check_labels(label + ": predicted classes vs golden", lab08_c_tests::row_argmax(compared_logits),
                              lab08_c_tests::row_argmax(expected));
  if (recorded_correct >= 0 && truth != nullptr) {
    std::int64_t correct = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) correct += labels[i] == static_cast<int>((*truth)[i]) ? 1 : 0;
    CHECK_MESSAGE(correct == recorded_correct,
                  label << ": " << correct << " correct, PyTorch recorded " << recorded_correct);
  }
}

}  // namespace

TEST_CASE("mobilenet: a random network on 1, 2 and 3 random images") {
  course::Rng rng = grader::case_rng("mobilenet: random");
  const mn::Weights weights = lab08_c_tests::random_weights(rng);
  const lab08::FoldedMobileNet net = golden::lab08_fold_mobilenet(weights);
  for (int n : {1, 2, 3}) check_network("random network", weights, net, rng.tensor({n, 1, 28, 28}, 0.0f, 1.0f), n);
}

TEST_CASE("mobilenet: trained network, batches of 1, 7 and 100 (one forward() each)") {
  const lab08_c_tests::Model& model = lab08_c_tests::trained_model();
  check_network("batch 1", model.weights, model.folded, grader::image_slice(model.test.images, 300, 1), 1);
  check_network("batch 7", model.weights, model.folded, grader::image_slice(model.test.images, 301, 7), 7);
  check_network("batch 100", model.weights, model.folded, grader::image_slice(model.test.images, 400, 100), 100);
}

TEST_CASE("mobilenet: 37 images through max_batch 8 (five forward() calls back to back, the last with 5)") {
  const lab08_c_tests::Model& model = lab08_c_tests::trained_model();
  check_network("split batches", model.weights, model.folded, grader::image_slice(model.test.images, 1000, 37), 8);
}

TEST_CASE("mobilenet: under the sanitizers -- 12 images through max_batch 5") {
  // Small on purpose: racecheck follows every shared-memory access of every block's kernel.
  const lab08_c_tests::Model& model = lab08_c_tests::trained_model();
  check_network("sanitizers", model.weights, model.folded, grader::image_slice(model.test.images, 2000, 12), 5);
}

TEST_CASE("mobilenet: forward() only enqueues kernels on its stream (recorded and replayed as a CUDA graph)") {
  const lab08_c_tests::Model& model = lab08_c_tests::trained_model();
  const Tensor images = grader::image_slice(model.test.images, 100, 20);
  Tensor logits = grader::poisoned({20, mn::kNumClasses});
  lab08_harness::mobilenet_forward_captured(model.folded, images, logits);
  grader::check_tensor("graph replay: logits vs golden", logits, golden::mobilenet_forward(model.weights, images),
                       lab08_c_tests::kLogitTolerance);
}

TEST_CASE("mobilenet: PyTorch's logits of the first 100 test images (data/weights/..._fixture.safetensors)") {
  const lab08_c_tests::Model& model = lab08_c_tests::trained_model();
  const course::TensorFile fixture =
      course::read_safetensors(std::string(COURSE_DATA_DIR) + "/weights/mobilenet_fashion_mnist_fixture.safetensors");
  const Tensor& pytorch = fixture.tensors.at("logits");
  REQUIRE(pytorch.dim(0) == 100);
  Tensor logits = grader::poisoned({100, mn::kNumClasses});
  lab08_harness::mobilenet_forward(model.folded, grader::image_slice(model.test.images, 0, 100), 100, logits);
  grader::check_tensor("logits vs PyTorch", logits, pytorch, lab08_c_tests::kPyTorchTolerance);
}

TEST_CASE("mobilenet: the whole Fashion-MNIST test split (10,000 images, max_batch 1,000), 93.93 % as recorded, golden on 1,000") {
  const lab08_c_tests::Model& model = lab08_c_tests::trained_model();
  REQUIRE(model.test.size() == 10000);
  REQUIRE(model.recorded_correct == 9393);
  // Golden on the first 1,000 (logits and labels); all 10,000 by the count of correct labels, which
  // needs no golden pass: the golden network's smallest top-2 margin on this split is 5.5e-4, far
  // above FP32's error, so an honest FP32 network reproduces PyTorch's 9,393 exactly.
  check_network("fashion-mnist", model.weights, model.folded, model.test.images, 1000, model.recorded_correct,
                &model.test.labels, 1000);
}
