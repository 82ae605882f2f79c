// The worker-side seam through which the REFERENCE worker (and only it) offers lab 06's naive
// pipeline to lab 07's speed gate. naive_baseline.cu, compiled into the solutions variant's worker
// alone, registers a factory from a static initializer; a student's worker never links lab 06
// code, so there the factory stays empty and timing_prepare(..., "naive") refuses.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "labs/lab04_lenet_cpu.hpp"

namespace lab07_harness {

/// Any LeNet pipeline with lab 06's forward() contract, as the speed gate times it.
class TimedLeNet {
 public:
  virtual ~TimedLeNet() = default;
  virtual void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) = 0;
};

using BaselineFactory = std::unique_ptr<TimedLeNet> (*)(const lab04::FoldedLeNet& net, int max_batch);

/// Sets the factory of the naive baseline (called once, by naive_baseline.cu's static
/// initializer); returns true so that it can initialise a static.
bool register_naive_baseline(BaselineFactory factory);

}  // namespace lab07_harness
