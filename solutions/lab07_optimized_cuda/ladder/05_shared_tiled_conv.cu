// Rung 05: shared-memory tiles for the convolutions -- one block per image loads the image's conv
// input (+ conv1's zero halo) into shared memory once, then computes all its outputs from there;
// weights still in constant memory (rung 04), everything else as in rung 03.
// Why faster than rung 04: each input value crosses from global memory (or L2) once per block
// instead of once per tap, and conv1's padding checks disappear from the inner loop.
#include <cuda_runtime_api.h>

#include "constant_conv_weights.cuh"
#include "labs/lab06_naive_cuda.hpp"
#include "ladder.hpp"
#include "rung_support.hpp"
#include "shared_tiled_conv.cuh"

namespace {

namespace sup = ladder::support;

class SharedTiledConv final : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    sup::check_max_batch(max_batch);
    upload_conv_weights_to_constant(net);
    weights_ = sup::DeviceWeights(net);
    activations_ = sup::Activations(max_batch);
    max_batch_ = max_batch;
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    sup::check_forward(d_images, n, max_batch_, d_logits, d_labels);
    sup::Activations& a = activations_;
    conv1_shared(d_images, a.conv1.get(), n, stream);
    lab06::relu_inplace(a.conv1.get(), n * sup::kConv1, stream);
    lab06::max_pool2d(a.conv1.get(), a.pool1.get(), n, 6, 28, 28, 2, 2, stream);
    conv2_shared(a.pool1.get(), a.conv2.get(), n, stream);
    lab06::relu_inplace(a.conv2.get(), n * sup::kConv2, stream);
    lab06::max_pool2d(a.conv2.get(), a.pool2.get(), n, 16, 10, 10, 2, 2, stream);
    lab06::linear_forward(a.pool2.get(), weights_.fc1_w.get(), weights_.fc1_b.get(), a.fc1.get(), n, 400, 120, stream);
    lab06::relu_inplace(a.fc1.get(), n * 120, stream);
    lab06::linear_forward(a.fc1.get(), weights_.fc2_w.get(), weights_.fc2_b.get(), a.fc2.get(), n, 120, 84, stream);
    lab06::relu_inplace(a.fc2.get(), n * 84, stream);
    lab06::linear_forward(a.fc2.get(), weights_.fc3_w.get(), weights_.fc3_b.get(), d_logits, n, 84, 10, stream);
    lab06::argmax_rows(d_logits, d_labels, n, 10, stream);
  }

 private:
  sup::DeviceWeights weights_;
  sup::Activations activations_;
  int max_batch_ = 0;
};

}  // namespace

COURSE_LADDER_RUNG(5, "shared_tiled_conv",
                   "conv input tile (+halo) of an image staged in shared memory once, then read by all its outputs",
                   SharedTiledConv);
