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
