// Lab 06 exercise, part 3: the whole LeNet on the GPU, one kernel launch per layer step.
// The contract is documented in common/include/labs/lab06_naive_cuda.hpp; the lecture is
// lectures/06-naive-cuda.md. Grade this lab with `./course grade lab06`.
#include <climits>
#include <cstddef>
#include <string>

#include "course/error.hpp"
#include "course/lenet.hpp"
#include "labs/lab06_naive_cuda.hpp"

namespace lab06 {

NaiveLeNet::NaiveLeNet([[maybe_unused]] const lab04::FoldedLeNet& host_net, [[maybe_unused]] int max_batch) {
  // TODO 1: validate max_batch ("max_batch": >= 1, and small enough that max_batch * 6*28*28
  //   fits an int), then check every tensor of host_net against LeNet's shapes
  //   (Tensor::expect_shape(expected, "conv1_weight") writes the message for you) and upload it
  //   into its member: conv1_weight_ = course::DeviceBuffer<float>(host_net.conv1_weight.values());
  // TODO 2: allocate the six activation buffers for max_batch images (sizes in the header's
  //   comment), then set max_batch_.
  throw course::NotImplemented("lab06::NaiveLeNet::NaiveLeNet");
}

void NaiveLeNet::forward([[maybe_unused]] const float* d_images, [[maybe_unused]] int n,
                         [[maybe_unused]] float* d_logits, [[maybe_unused]] int* d_labels,
                         [[maybe_unused]] cudaStream_t stream) {
  // TODO 3: validate (null pointers; n in [1, max_batch_], and say "max_batch" when it is larger).
  // TODO 4: launch, all on `stream`, for n images:
  //   conv1 (pad 2) -> relu -> pool -> conv2 -> relu -> pool -> fc1 -> relu -> fc2 -> relu -> fc3
  //   (into d_logits) -> argmax (into d_labels). No allocation, copy or synchronisation here.
  throw course::NotImplemented("lab06::NaiveLeNet::forward");
}

}  // namespace lab06
