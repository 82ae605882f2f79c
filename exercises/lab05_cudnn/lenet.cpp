// Lab 05 exercise, part 4: the folded LeNet-5-BN assembled from your layers.
// The contract is in common/include/labs/lab05_cudnn.hpp; the lecture is lectures/05-cudnn.md,
// section "The whole network".
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/lenet.hpp"
#include "labs/lab05_cudnn.hpp"

namespace lab05 {

// TODO 1: decide what the network keeps between calls and declare it here: a Context, the ten
//   weight tensors in DeviceBuffer<float>s (upload them once; t.expect_shape(expected, "conv1_weight")
//   names a wrong shape for you), activation buffers for max_batch images, the options.
struct CudnnLeNet::Impl {
  int max_batch = 0;
};

CudnnLeNet::CudnnLeNet([[maybe_unused]] const lab04::FoldedLeNet& net, [[maybe_unused]] int max_batch,
                       [[maybe_unused]] LeNetOptions options) {
  // TODO 2: reject max_batch < 1 ("max_batch") and wrong parameter shapes (their names), build Impl.
  throw course::NotImplemented("lab05::CudnnLeNet");
}

CudnnLeNet::~CudnnLeNet() = default;

int CudnnLeNet::max_batch() const { return impl_->max_batch; }

void CudnnLeNet::forward([[maybe_unused]] const float* d_images, [[maybe_unused]] int n,
                         [[maybe_unused]] float* d_logits, [[maybe_unused]] cudaStream_t stream) {
  // TODO 3: reject n < 1 or n > max_batch ("batch"); ctx.set_stream(stream); then
  //   conv1 (pad 2) + bias + ReLU -> max-pool 2 -> conv2 + bias + ReLU -> max-pool 2 ->
  //   fc1 + ReLU -> fc2 + ReLU -> fc3 into d_logits. options.fused picks conv_bias_relu_forward
  //   or conv2d_forward + relu_forward. The flatten costs nothing: why?
  throw course::NotImplemented("lab05::CudnnLeNet::forward");
}

}  // namespace lab05
