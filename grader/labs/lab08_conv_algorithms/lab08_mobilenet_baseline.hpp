// The worker-side seam through which the REFERENCE worker (and only it) offers lab 08's speed gate
// a second MobileNetV2: the same network built from cuDNN + cuBLAS calls (cudnn_baseline.cu,
// compiled into the solutions variant's worker alone, registers a factory from a static
// initializer). A student's worker never links it, so there the factory stays empty and
// timing_prepare(..., "cudnn") refuses.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "labs/lab08_mobilenet_weights.hpp"

namespace lab08_harness {

/// Any MobileNetV2 with lab08::MobileNetV2::forward's contract, as the speed gate times it.
class TimedMobileNet {
 public:
  virtual ~TimedMobileNet() = default;
  virtual void forward(const float* d_images, int n, float* d_logits, cudaStream_t stream) = 0;
};

using MobileNetFactory = std::unique_ptr<TimedMobileNet> (*)(const lab08::FoldedMobileNet& net, int max_batch);

/// Sets the factory of the cuDNN + cuBLAS baseline (called once, by cudnn_baseline.cu's static
/// initializer); returns true so that it can initialise a static.
bool register_cudnn_baseline(MobileNetFactory factory);

}  // namespace lab08_harness
