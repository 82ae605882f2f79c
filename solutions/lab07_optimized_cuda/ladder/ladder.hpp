// The optimization ladder of lab 07: every step from the first naive LeNet to the fastest one,
// each kept as its own small file (NN_name.cu) so that it can be read, run and timed on its own.
//
//   build/bench/lab07_ladder --version N --batch B      (bench/lab07_benchmark.py runs them all)
//
// A rung is one complete pipeline. Each file defines one class derived from Rung and registers it
// with COURSE_LADDER_RUNG(number, "name", "one-line reason", Class). The runner checks every rung
// against the golden CPU network before it times it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "labs/lab04_lenet_cpu.hpp"

namespace ladder {

class Rung {
 public:
  virtual ~Rung() = default;

  /// Uploads the folded weights and allocates everything for batches of up to max_batch images.
  /// Untimed. The runner builds one rung at a time (a rung may keep weights in __constant__ memory).
  virtual void prepare(const lab04::FoldedLeNet& net, int max_batch) = 0;

  /// Device-resident inference: d_images [n,1,28,28] float in [0,1] -> d_logits [n,10], d_labels [n].
  /// Enqueued on `stream`. A rung that synchronises or allocates inside (the early rungs do: that
  /// is their lesson) still must leave the results complete when the stream's work is done.
  virtual void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) = 0;

  /// End to end: h_pixels [n,28,28] uint8 in host memory (pinned: allocated by the runner with
  /// cudaMallocHost) -> h_labels [n] in host memory, complete when this returns. The default
  /// (runner.cu) is what a first program does: convert to float on the CPU, a synchronous copy,
  /// forward(), a synchronous copy back. Rungs about the host side override it.
  virtual void classify_from_host(const std::uint8_t* h_pixels, int n, int* h_labels, cudaStream_t stream);

  /// Arithmetic below FP32 (tensor cores): the runner then checks accuracy (within 0.1 percentage
  /// points of the CPU network's) instead of identical labels and logits within 1e-3.
  virtual bool reduced_precision() const { return false; }

  /// Empty when this GPU can run the rung; otherwise why not ("needs thread-block clusters, compute
  /// capability 9.0"). The runner then skips the rung with that reason: not a failure.
  virtual std::string unsupported_reason() const { return ""; }

};

struct RungInfo {
  int number = 0;
  std::string name;    ///< "fused_conv_pool"
  std::string reason;  ///< one line: what this rung changes and why it is faster
  std::function<std::unique_ptr<Rung>()> make;
};

/// Every registered rung, sorted by number.
std::vector<RungInfo>& rungs();

struct Registrar {
  explicit Registrar(RungInfo info);
};

}  // namespace ladder

#define COURSE_LADDER_CONCAT2(a, b) a##b
#define COURSE_LADDER_CONCAT(a, b) COURSE_LADDER_CONCAT2(a, b)
#define COURSE_LADDER_RUNG(number, name, reason, Class)                                                         \
  static const ::ladder::Registrar COURSE_LADDER_CONCAT(ladder_rung_, number)(                                  \
      ::ladder::RungInfo{number, name, reason, [] { return std::unique_ptr<::ladder::Rung>(new Class()); }})
