// Rung 09: register blocking -- the lab 07 reference solution itself (lab07::FastLeNet, linked
// from solutions/lab07_optimized_cuda/), so the ladder's best FP32 rung IS the graded reference.
// Why faster than rung 08: each thread keeps many sums in registers and reuses every loaded value
// for all of them (conv1: 24 sums per 6x6 patch, conv2: all 16 channels of a pixel, fc1: an
// 8-image x 4-output block); the unrolled conv loops take their weights straight from the
// constant bank as FFMA operands; fc1 runs on tiles of 32 images, so each weight fetched serves 32.
// One image takes a separate one-block kernel (kernels.cu explains both paths).
#include <memory>

#include "labs/lab07_optimized_cuda.hpp"
#include "ladder.hpp"

namespace ladder {
namespace {

class RegisterBlocked final : public Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    net_.reset();  // one FastLeNet at a time: its weights live in __constant__ memory
    net_ = std::make_unique<lab07::FastLeNet>(net, max_batch);
  }
  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    net_->forward(d_images, n, d_logits, d_labels, stream);
  }

 private:
  std::unique_ptr<lab07::FastLeNet> net_;
};

}  // namespace
}  // namespace ladder

COURSE_LADDER_RUNG(9, "register_blocked",
                   "many sums per thread from each loaded value, conv weights as FFMA constant operands, fc1 on 32-image tiles",
                   ladder::RegisterBlocked);
