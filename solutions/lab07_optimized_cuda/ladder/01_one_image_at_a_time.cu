// Rung 01: one image at a time -- for each image, allocate the activations, launch lab 06's twelve
// kernels with N = 1 and a cudaDeviceSynchronize() after each, then free the activations.
// Why it is here: it is the program everyone writes first, and the baseline of the ladder. Every
// image pays six cudaMalloc, six cudaFree, twelve launches and twelve full stops of the host, and
// a launch for one image fills a few of the GPU's SMs: the GPU idles almost all of the time.
#include <cuda_runtime_api.h>

#include "course/cuda_check.hpp"
#include "ladder.hpp"
#include "rung_support.hpp"

namespace {

namespace sup = ladder::support;

class OneImageAtATime final : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    sup::check_max_batch(max_batch);
    weights_ = sup::DeviceWeights(net);
    max_batch_ = max_batch;
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    sup::check_forward(d_images, n, max_batch_, d_logits, d_labels);
    const auto wait_for_the_gpu = [] { CUDA_CHECK(cudaDeviceSynchronize()); };  // "to be safe", every time
    for (int i = 0; i < n; ++i) {
      sup::Activations one_image(1);  // six cudaMalloc now, six cudaFree at the end of the iteration
      sup::lab06_layers(weights_, one_image, d_images + static_cast<std::size_t>(i) * sup::kImage, 1,
                        d_logits + static_cast<std::size_t>(i) * 10, d_labels + i, stream, wait_for_the_gpu);
    }
  }

 private:
  sup::DeviceWeights weights_;
  int max_batch_ = 0;
};

}  // namespace

COURSE_LADDER_RUNG(1, "one_image_at_a_time",
                   "a loop over images: per image malloc, 12 launches each followed by a device sync, free",
                   OneImageAtATime);
