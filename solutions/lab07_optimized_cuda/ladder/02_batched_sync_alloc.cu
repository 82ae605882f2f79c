// Rung 02: the whole batch per launch -- lab 06's twelve kernels with N = n, so each layer is one
// launch for all images -- but still allocating the activations, synchronising after every layer
// and freeing them again on every call.
// Why faster than rung 01: launches, synchronisations and allocations are paid once per call
// instead of once per image, and each grid is large enough to fill the GPU.
#include <cuda_runtime_api.h>

#include "course/cuda_check.hpp"
#include "ladder.hpp"
#include "rung_support.hpp"

namespace {

namespace sup = ladder::support;

class BatchedSyncAlloc final : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    sup::check_max_batch(max_batch);
    weights_ = sup::DeviceWeights(net);
    max_batch_ = max_batch;
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    sup::check_forward(d_images, n, max_batch_, d_logits, d_labels);
    sup::Activations batch(n);  // allocated on every call (what rung 03 stops doing)...
    sup::lab06_layers(weights_, batch, d_images, n, d_logits, d_labels, stream,
                      [] { CUDA_CHECK(cudaDeviceSynchronize()); });  // ...and a full stop after each layer
  }  // ...and freed on every call

 private:
  sup::DeviceWeights weights_;
  int max_batch_ = 0;
};

}  // namespace

COURSE_LADDER_RUNG(2, "batched_sync_alloc",
                   "the whole batch per launch, but malloc/free and a device sync per layer on every call",
                   BatchedSyncAlloc);
