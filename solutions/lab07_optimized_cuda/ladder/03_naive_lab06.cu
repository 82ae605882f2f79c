// Rung 03: lab 06's NaiveLeNet, unchanged -- the lab 06 solution's library is linked into the runner.
// Why faster than rung 02: the activations are allocated once (in the constructor) and forward()
// only enqueues its twelve launches on the caller's stream: no cudaMalloc/cudaFree, no
// cudaDeviceSynchronize, so the host queues the next launch while the GPU runs the previous one.
// This is the lab's naive reference: the speed gate and the "x rung 03" column measure against it.
#include <cuda_runtime_api.h>

#include <memory>

#include "course/error.hpp"
#include "labs/lab06_naive_cuda.hpp"
#include "ladder.hpp"

namespace {

class NaiveLab06 final : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    net_.reset();  // one network at a time: free the old buffers before allocating new ones
    net_ = std::make_unique<lab06::NaiveLeNet>(net, max_batch);
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    if (!net_) throw course::Error("rung 03: forward() before prepare()");
    net_->forward(d_images, n, d_logits, d_labels, stream);  // checks its arguments itself
  }

 private:
  std::unique_ptr<lab06::NaiveLeNet> net_;
};

}  // namespace

COURSE_LADDER_RUNG(3, "naive_lab06",
                   "lab 06's NaiveLeNet: buffers allocated once, forward() only enqueues 12 launches, no syncs",
                   NaiveLab06);
