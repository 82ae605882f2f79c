// `./course grade` before the grader lands, and `./course info` after: checks and reports what
// this machine has for the course -- the data sets (with image counts), the committed weights
// (validated, with the accuracy the training run recorded) and the GPU, if any.
// Exit code 0 when the data and weights are usable, 1 otherwise (each problem printed).
#include <cstdio>
#include <filesystem>
#include <string>

#include "course/device.hpp"
#include "course/error.hpp"
#include "course/idx.hpp"
#include "course/lenet.hpp"

namespace {

bool report_dataset(const course::DatasetFiles& files) {
  bool ok = true;
  for (const auto& [split, images, labels] :
       {std::tuple{"train", files.train_images, files.train_labels}, std::tuple{"test", files.test_images, files.test_labels}}) {
    try {
      course::Dataset ds = course::load_dataset(images, labels, files.name);
      std::printf("  %-14s %-5s %6zu images %lldx%lld  (%s)\n", files.name.c_str(), split, ds.size(),
                  static_cast<long long>(ds.images.dim(2)), static_cast<long long>(ds.images.dim(3)), images.c_str());
    } catch (const course::Error& e) {
      std::printf("  %-14s %-5s PROBLEM: %s\n", files.name.c_str(), split, e.what());
      ok = false;
    }
  }
  return ok;
}

bool report_weights(const std::string& path) {
  try {
    course::lenet::Weights w = course::lenet::load_weights(path);
    auto get = [&](const char* key) { return w.metadata.count(key) ? w.metadata.at(key) : std::string("?"); };
    std::printf("  %-34s valid: 18 tensors, data set %s, recorded test accuracy %s (%s/%s), BN eps %g\n",
                std::filesystem::path(path).filename().c_str(), get("dataset").c_str(), get("test_accuracy").c_str(),
                get("test_correct").c_str(), get("test_images").c_str(), w.bn_epsilon);
    return true;
  } catch (const course::Error& e) {
    std::printf("  PROBLEM: %s\n", e.what());
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string data_root = argc > 1 ? argv[1] : COURSE_DATA_DIR;
  bool ok = true;
  std::printf("Data sets\n");
  ok &= report_dataset(course::mnist_files(data_root));
  ok &= report_dataset(course::fashion_mnist_files());
  std::printf("Trained weights (LeNet-5-BN, %lld multiply-adds per image)\n",
              static_cast<long long>(course::lenet::multiply_adds_per_image()));
  ok &= report_weights(data_root + "/weights/lenet_mnist.safetensors");
  ok &= report_weights(data_root + "/weights/lenet_fashion_mnist.safetensors");
  std::printf("GPU\n");
  if (course::has_gpu()) {
    const course::DeviceInfo info = course::query_device(0);
    std::printf("  %s, ~%.0f GB/s peak memory bandwidth: GPU labs will run\n", info.summary().c_str(),
                info.peak_bandwidth_gbs());
  } else {
    std::printf("  none (%s): GPU labs will be reported as skipped\n", course::gpu_unavailable_reason().c_str());
  }
  std::printf("%s\n", ok ? "Everything the CPU labs need is in place." : "Some inputs are missing or broken (see PROBLEM lines).");
  return ok ? 0 : 1;
}
