// lab08_noise_sensitivity: does the speed gate's input noise defeat a memo of earlier answers?
//
// Every timed round of lab 08's speed gate (grader/labs/gpu_timing_session.hpp) feeds
// MobileNetV2::forward test images plus fresh noise of at most 1/256 per pixel, and compares every
// logit with the reference's to 2e-3 (grader/labs/lab08_conv_algorithms/10_speed_tests.cpp). A
// cheating forward() could recognise which test image an input was made from (the noise is far
// smaller than the images' differences) and return the logits it computed for an earlier noisy
// copy of that image -- or, since the network is piecewise linear (folded batch-norm, ReLU6,
// average pool, linear), those logits plus a first-order step towards the new copy. This program
// measures both on the trained network with the golden CPU MobileNetV2 (double precision): for
// each image, the largest logit difference between two noise draws, and what is left after a
// first-order step estimated by a finite difference along the segment between them. Either must
// stay under the gate's 2e-3 on every image for such a memo to pass.
//
//   build/bench/lab08_noise_sensitivity [images] [first image] [1/step]   (defaults 200 0 8)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "course/idx.hpp"
#include "course/mobilenet.hpp"
#include "course/tensor.hpp"
#include "mobilenet_reference.hpp"

namespace {

constexpr int kPixels = 28 * 28;
constexpr float kNoise = 1.0f / 256;  // the gate's (gpu_timing_session.hpp)
constexpr double kTolerance = 2e-3;   // the lab 08 gate's logit tolerance

void report(const char* what, std::vector<double> worst) {
  std::sort(worst.begin(), worst.end());
  const auto over = std::count_if(worst.begin(), worst.end(), [](double d) { return d > kTolerance; });
  std::printf("%-34s median %.2e  p90 %.2e  max %.2e  images over %.0e: %ld of %zu\n", what, worst[worst.size() / 2],
              worst[worst.size() * 9 / 10], worst.back(), kTolerance, static_cast<long>(over), worst.size());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    namespace mn = course::mobilenet;
    const int count = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
    const int first = argc > 2 ? std::max(0, std::atoi(argv[2])) : 0;
    const float step = 1.0f / static_cast<float>(argc > 3 ? std::max(1, std::atoi(argv[3])) : 8);
    const mn::Weights weights =
        mn::load_weights(std::string(COURSE_DATA_DIR) + "/weights/mobilenet_fashion_mnist.safetensors");
    const course::DatasetFiles files = course::fashion_mnist_files();
    const course::Dataset test = course::load_dataset(files.test_images, files.test_labels, files.name);
    if (first + count > test.images.dim(0)) throw course::Error("fewer test images than asked for");

    // Per image three inputs: the copy a memo saw (noise u1), this round's copy (u2), and a small
    // step from the first towards the second (for the first-order estimate).
    std::mt19937_64 rng(20260);
    std::uniform_real_distribution<float> noise(-kNoise, kNoise);
    course::Tensor inputs(course::Shape{3 * count, 1, 28, 28});
    for (int i = 0; i < count; ++i) {
      const float* image = test.images.data() + static_cast<std::ptrdiff_t>(first + i) * kPixels;
      float* seen = inputs.data() + static_cast<std::ptrdiff_t>(3 * i) * kPixels;
      for (int j = 0; j < kPixels; ++j) {
        const float u1 = noise(rng), u2 = noise(rng);
        seen[j] = image[j] + u1;
        seen[kPixels + j] = image[j] + u2;
        seen[2 * kPixels + j] = image[j] + u1 + step * (u2 - u1);
      }
    }
    const course::Tensor logits = golden::mobilenet_forward(weights, inputs);

    std::vector<double> memo, first_order;
    for (int i = 0; i < count; ++i) {
      const float* l = logits.data() + static_cast<std::ptrdiff_t>(3 * i) * mn::kNumClasses;
      double worst_memo = 0, worst_step = 0;
      for (int c = 0; c < mn::kNumClasses; ++c) {
        const double seen = l[c], now = l[mn::kNumClasses + c], stepped = l[2 * mn::kNumClasses + c];
        worst_memo = std::max(worst_memo, std::fabs(now - seen));
        worst_step = std::max(worst_step, std::fabs(now - (seen + (stepped - seen) / step)));
      }
      memo.push_back(worst_memo);
      first_order.push_back(worst_step);
    }
    std::printf("images %d..%d, noise +-1/256 per pixel, first-order step 1/%.0f; per image, the largest |logit "
                "difference|:\n",
                first, first + count - 1, 1.0 / step);
    report("memo (the earlier copy's logits)", memo);
    report("memo + first-order step", first_order);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab08_noise_sensitivity: %s\n", e.what());
    return 1;
  }
}
