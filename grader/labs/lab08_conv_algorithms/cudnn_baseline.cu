// The baseline of lab 08's speed gate: the same MobileNetV2 through cuDNN + cuBLAS calls
// (grader/reference/cudnn_mobilenet.hpp), offered to the harness through
// lab08_mobilenet_baseline.hpp. Compiled ONLY into the solutions variant's worker, i.e. the
// reference worker (see CMakeLists.txt): a student's worker never contains it.
#include <memory>

#include "cudnn_mobilenet.hpp"
#include "lab08_mobilenet_baseline.hpp"

namespace {

// The algorithm searches run at 1,000 images, not at the gate's 10,000: the same choices
// (bench/results/lab08_mobilenet_*.txt lists those of a search at 10,000; the gate's cuDNN time
// and the benchmark's agree), in a fraction of the time -- a search at 10,000 images costs about
// two seconds per network, twice per gate.
constexpr int kSearchBatch = 1000;

class CudnnBaseline final : public lab08_harness::TimedMobileNet {
 public:
  CudnnBaseline(const lab08::FoldedMobileNet& net, int max_batch) : model_(net, max_batch, kSearchBatch) {}
  void forward(const float* d_images, int n, float* d_logits, cudaStream_t stream) override {
    model_.forward(d_images, n, d_logits, stream);
  }

 private:
  cudnn_reference::CudnnMobileNetV2 model_;
};

std::unique_ptr<lab08_harness::TimedMobileNet> make_cudnn(const lab08::FoldedMobileNet& net, int max_batch) {
  return std::make_unique<CudnnBaseline>(net, max_batch);
}

// Runs before main(): the worker only starts serving calls in main.
[[maybe_unused]] const bool registered = lab08_harness::register_cudnn_baseline(&make_cudnn);

}  // namespace
