// The naive baseline of lab 07's speed gate: the lab 06 solution's NaiveLeNet, offered to the
// harness through lab07_baseline.hpp. Compiled ONLY into the solutions variant's worker (which
// also links the lab 06 solution; see CMakeLists.txt), i.e. the reference worker: a student's
// worker never contains another lab's solution.
#include <memory>

#include "lab07_baseline.hpp"
#include "labs/lab06_naive_cuda.hpp"

namespace {

class NaiveBaseline final : public lab07_harness::TimedLeNet {
 public:
  NaiveBaseline(const lab04::FoldedLeNet& net, int max_batch) : model_(net, max_batch) {}
  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    model_.forward(d_images, n, d_logits, d_labels, stream);
  }

 private:
  lab06::NaiveLeNet model_;
};

std::unique_ptr<lab07_harness::TimedLeNet> make_naive(const lab04::FoldedLeNet& net, int max_batch) {
  return std::make_unique<NaiveBaseline>(net, max_batch);
}

// Runs before main(): the worker only starts serving calls in main.
[[maybe_unused]] const bool registered = lab07_harness::register_naive_baseline(&make_naive);

}  // namespace
