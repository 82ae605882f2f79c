// Rung 09: register blocking -- the lab 07 reference solution itself (lab07::FastLeNet, linked
// from solutions/lab07_optimized_cuda/), so the ladder's best FP32 rung IS the graded reference.
// Why faster than rung 08: each thread keeps many sums in registers and reuses every loaded value
// for all of them (conv1: 24 sums per 6x6 patch, conv2: 4 channels x a 2x2 window, fc1: a
// 4-image x 4-output block), with the weights broadcast from shared memory as float4; fc1 runs on
// tiles of 32 images, so each weight fetched serves 32; and the grid is exactly as many blocks as
// the GPU holds, each with an equal share of the images (no partial last wave). One image takes a
// separate one-block kernel (kernels.cu explains both paths).
#include <memory>

#include "labs/lab07_optimized_cuda.hpp"
#include "ladder.hpp"

namespace ladder {
namespace {

class RegisterBlocked final : public Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    net_.reset();  // the old network's buffers go before the new one allocates its own
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
                   "many sums per thread from each loaded value, fc1 on 32-image tiles, one equal share of the images per resident block",
                   ladder::RegisterBlocked);
