// Self-checks of the golden whole-network reference, run once by the course's test suite rather
// than every time a student grades: on the FULL test splits the golden LeNet must reproduce
// exactly the accuracy the training run recorded in each weights file, and PyTorch's logits of
// the first 100 test images (an implementation the course did not write).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "course/compare.hpp"
#include "course/idx.hpp"
#include "course/lenet.hpp"
#include "course/safetensors.hpp"
#include "lenet_reference.hpp"
#include "mobilenet_folding_reference.hpp"
#include "mobilenet_reference.hpp"
#include "course/rng.hpp"
#include "course/mobilenet.hpp"

namespace {

void check_reference(const std::string& weights_name, const course::DatasetFiles& files) {
  const std::string dir = std::string(COURSE_DATA_DIR) + "/weights/";
  const course::lenet::Weights weights = course::lenet::load_weights(dir + "lenet_" + weights_name + ".safetensors");
  const course::Dataset test = course::load_dataset(files.test_images, files.test_labels, files.name);
  const course::Tensor logits = golden::lenet_forward(weights, test.images);

  std::int64_t correct = 0;
  for (std::size_t n = 0; n < test.size(); ++n) {
    const float* row = logits.data() + n * course::lenet::kNumClasses;
    int best = 0;
    for (int k = 1; k < course::lenet::kNumClasses; ++k)
      if (row[k] > row[best]) best = k;
    correct += best == test.labels[n];
  }
  REQUIRE(weights.metadata.count("test_correct") == 1);
  CHECK_MESSAGE(correct == std::atoll(weights.metadata.at("test_correct").c_str()),
                files.name << ": golden LeNet classifies " << correct << " of " << test.size()
                           << " correctly; the training run recorded " << weights.metadata.at("test_correct"));

  const course::Tensor pytorch =
      course::read_safetensors(dir + "lenet_" + weights_name + "_fixture.safetensors").tensors.at("logits");
  const course::Tensor head(pytorch.shape(), std::vector<float>(logits.data(), logits.data() + pytorch.numel()));
  const course::Comparison c = course::compare(head, pytorch, course::Tolerance{1e-4, 0.0});
  CHECK_MESSAGE(c.ok(), files.name << ": golden logits vs PyTorch: " << c.report(pytorch.shape()));
}

}  // namespace

TEST_CASE("golden LeNet on the full MNIST test split: recorded accuracy and PyTorch logits") {
  check_reference("mnist", course::mnist_files(COURSE_DATA_DIR));
}

TEST_CASE("golden LeNet on the full Fashion-MNIST test split: recorded accuracy and PyTorch logits") {
  check_reference("fashion_mnist", course::fashion_mnist_files());
}

// Lab 08's network: the golden MobileNetV2 against PyTorch's logits of the first 100 Fashion-MNIST
// test images (the full split would cost ~1e11 double multiply-adds here; the GPU labs check it).
TEST_CASE("golden MobileNetV2 matches PyTorch's logits and labels on the first 100 Fashion-MNIST test images") {
  const std::string dir = std::string(COURSE_DATA_DIR) + "/weights/";
  const course::mobilenet::Weights weights = course::mobilenet::load_weights(dir + "mobilenet_fashion_mnist.safetensors");
  const course::TensorFile fixture = course::read_safetensors(dir + "mobilenet_fashion_mnist_fixture.safetensors");
  const course::Tensor& pytorch = fixture.tensors.at("logits");
  const course::Tensor& fixture_labels = fixture.tensors.at("labels");
  const course::DatasetFiles files = course::fashion_mnist_files();
  const course::Dataset test = course::load_dataset(files.test_images, files.test_labels, files.name);
  const std::int64_t count = pytorch.dim(0);
  REQUIRE(count == 100);
  course::Tensor head(course::Shape{count, 1, 28, 28},
                      std::vector<float>(test.images.data(), test.images.data() + count * 28 * 28));
  for (std::int64_t n = 0; n < count; ++n)  // the fixture was made from the same images
    REQUIRE(test.labels[static_cast<std::size_t>(n)] == static_cast<int>(fixture_labels[static_cast<std::size_t>(n)]));

  const course::Tensor logits = golden::mobilenet_forward(weights, head);
  const course::Comparison c = course::compare(logits, pytorch, course::Tolerance{1e-4, 0.0});
  CHECK_MESSAGE(c.ok(), "golden MobileNetV2 logits vs PyTorch: " << c.report(pytorch.shape()));
  CHECK(course::mobilenet::multiply_adds_per_image() > 0);
}

// Lab 08 part C judges the student's network against the folded golden network
// (golden::lab08_fold_mobilenet): the fold itself is checked here, on the grader's side, against
// the unfolded golden network -- on the trained weights and on a copy whose batch-norm statistics
// and epsilon are moved away from the trained ones (so that a fold ignoring any of them fails).
TEST_CASE("golden MobileNetV2: lab 08's trusted fold equals the unfolded network (trained and perturbed weights)") {
  const std::string dir = std::string(COURSE_DATA_DIR) + "/weights/";
  course::mobilenet::Weights weights = course::mobilenet::load_weights(dir + "mobilenet_fashion_mnist.safetensors");
  course::Rng rng(20261126);
  const course::Tensor images = rng.tensor({3, 1, 28, 28}, 0.0f, 1.0f);
  const course::Tolerance tolerance{1e-4, 1e-5};
  for (int variant = 0; variant < 2; ++variant) {
    const course::Comparison c = course::compare(
        golden::lab08_folded_mobilenet_forward(golden::lab08_fold_mobilenet(weights), images),
        golden::mobilenet_forward(weights, images), tolerance);
    CHECK_MESSAGE(c.ok(), (variant == 0 ? "trained" : "perturbed") << " network, folded vs unfolded: "
                                                                    << c.report(course::Shape{3, 10}));
    for (auto& [name, t] : weights.tensors) {  // the perturbed variant
      if (name.find(".bn.running_mean") != std::string::npos || name.find(".bn.bias") != std::string::npos)
        for (std::size_t i = 0; i < t.numel(); ++i) t[i] += rng.uniform(-0.3f, 0.3f);
      if (name.find(".bn.running_var") != std::string::npos || name.find(".bn.weight") != std::string::npos)
        for (std::size_t i = 0; i < t.numel(); ++i) t[i] *= rng.uniform(0.6f, 1.4f);
    }
    weights.bn_epsilon = 1e-3;
  }
}

TEST_CASE("MobileNetV2 weights: a file of another architecture or with a missing tensor is refused by name") {
  const std::string dir = std::string(COURSE_DATA_DIR) + "/weights/";
  // LeNet's weights are a valid safetensors file of the wrong network.
  CHECK_THROWS_WITH_AS(course::mobilenet::load_weights(dir + "lenet_fashion_mnist.safetensors"),
                       doctest::Contains("missing MobileNetV2 parameter 'stem.conv.weight'"), course::Error);
  CHECK_THROWS_WITH_AS(course::mobilenet::load_weights(dir + "no_such_file.safetensors"),
                       doctest::Contains("no_such_file.safetensors"), course::Error);
}
