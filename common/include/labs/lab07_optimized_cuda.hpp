// Lab 07 interface: the optimized CUDA LeNet -- the same network and the same contract as lab 06's
// NaiveLeNet, as fast as you can make it while every logit stays FP32-accurate.
//
// The lecture is lectures/07-optimized-cuda.md; the task is exercises/lab07_optimized_cuda/README.md.
// Exercises and solutions implement exactly this class, in fast_lenet.cu (the class) and
// kernels.cu (the kernels), with the lab folder's own header kernels.cuh between them. How the
// work is split into kernels, which buffers exist and what lives in shared or constant memory is
// yours to decide: the class keeps its state behind a pointer (`State`, defined in fast_lenet.cu).
//
// Conventions (lab 06's, unchanged):
//  - every pointer is a DEVICE pointer (d_ prefix); images are [n,1,28,28] float32 in [0,1],
//    logits [n,10] float32, labels [n] int32;
//  - outputs may hold garbage on entry (the tests fill them with NaN and -1): write every element;
//  - forward() enqueues its work on `stream` and on no other stream and returns without
//    synchronising, copying to or from the host, or allocating (the tests capture it into a CUDA
//    graph, which fails if it does any of those);
//  - arithmetic is FP32: the logits must match the golden CPU network within 1e-3 (reordered FP32
//    sums differ by about 1e-5; TF32, FP16 or BF16 arithmetic does not stay that close -- the
//    lecture's tensor-core rung shows what it costs);
//  - invalid arguments throw course::Error naming the argument, before anything is launched.
//  - only one FastLeNet exists at a time in a process (the harness builds them one after the
//    other), so the weights may live in __constant__ memory, which belongs to the whole program.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "labs/lab04_lenet_cpu.hpp"

namespace lab07 {

/// LeNet-5 with both batch-norms folded (lab04::FoldedLeNet), optimized for the GPU:
///   conv1 (pad 2, +bias) -> ReLU -> maxpool 2 -> conv2 (+bias) -> ReLU -> maxpool 2
///   -> fc1 -> ReLU -> fc2 -> ReLU -> fc3 -> logits -> argmax (lowest index on a tie)
class FastLeNet {
 public:
  /// Checks every tensor of host_net against LeNet's shapes (course/lenet.hpp) and throws
  /// course::Error naming the first wrong one ("conv1_weight", ..., "fc3_bias"); throws when
  /// max_batch < 1 or too large for int indexing of your largest buffer ("max_batch"). Then uploads
  /// the weights and allocates whatever forward() needs for up to max_batch images.
  FastLeNet(const lab04::FoldedLeNet& host_net, int max_batch);
  ~FastLeNet();
  FastLeNet(const FastLeNet&) = delete;
  FastLeNet& operator=(const FastLeNet&) = delete;

  /// Classifies n images: d_images [n,1,28,28] -> d_logits [n,10] and d_labels [n], all device
  /// pointers. Enqueues everything on `stream` and returns without waiting.
  /// Throws course::Error when a pointer is null ("d_images", "d_logits", "d_labels") or n is not
  /// in [1, max_batch()] ("n"; for n > max_batch() the message also says "max_batch").
  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream);

  int max_batch() const { return max_batch_; }

 private:
  struct State;  ///< your device buffers and settings (fast_lenet.cu)
  int max_batch_ = 0;
  std::unique_ptr<State> state_;
};

}  // namespace lab07
