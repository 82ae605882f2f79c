// Lab 04 exercise, part 3: the whole LeNet-5-BN on the CPU, unfolded and folded, and turning
// logits into predicted classes. Build the layers from your earlier labs: lab02::conv2d_forward,
// lab03::relu and lab03::max_pool2d. The contract is in common/include/labs/lab04_lenet_cpu.hpp,
// the model in common/include/course/lenet.hpp; grade this lab with `./course grade lab04`.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/error.hpp"
#include "course/lenet.hpp"
#include "labs/lab02_padding_stride.hpp"
#include "labs/lab03_pooling_activations.hpp"
#include "labs/lab04_lenet_cpu.hpp"

namespace lab04 {

// Hint: both forward passes share most of their code. A helper for one feature stage,
//   conv (lab02::Conv2dParams::symmetric(pad)) -> [batch-norm] -> ReLU -> 2x2 max pool, stride 2
// (lab03::Pool2dParams::square(2, 2)), and one for the classifier,
//   flatten [N,16,5,5] -> [N,400] (Tensor::reshaped) -> fc1 -> ReLU -> fc2 -> ReLU -> fc3,
// keep them short. Intermediate shapes: conv1 [N,6,28,28], pool1 [N,6,14,14], conv2 [N,16,10,10],
// pool2 [N,16,5,5]. Batch-norm and ReLU may run in place on the convolution's output.

void lenet_forward([[maybe_unused]] const course::lenet::Weights& weights, [[maybe_unused]] const course::Tensor& images,
                   [[maybe_unused]] course::Tensor& logits) {
  // TODO 1: check images is [N, 1, 28, 28] with N >= 1 (message names "images") and logits is
  //   [N, 10] (message names "logits") before computing anything.
  // TODO 2: conv1 (weights.at("conv1.weight"), "conv1.bias", pad 2) -> bn1 ("bn1.weight" is gamma,
  //   "bn1.bias" is beta, "bn1.running_mean", "bn1.running_var", eps = weights.bn_epsilon) -> ReLU
  //   -> max pool; conv2 (pad 0) -> bn2 -> ReLU -> max pool; then the classifier into `logits`.
  //   No ReLU after fc3: logits can be negative.
  throw course::NotImplemented("lab04::lenet_forward");
}

FoldedLeNet fold_lenet([[maybe_unused]] const course::lenet::Weights& weights) {
  // TODO: fold bn1 into conv1 and bn2 into conv2 with fold_batchnorm (allocate the folded
  //   tensors first: same shapes as the convolution's weight and bias), eps = weights.bn_epsilon.
  //   Copy fc1, fc2 and fc3 unchanged.
  throw course::NotImplemented("lab04::fold_lenet");
}

void lenet_forward_folded([[maybe_unused]] const FoldedLeNet& net, [[maybe_unused]] const course::Tensor& images,
                          [[maybe_unused]] course::Tensor& logits) {
  // TODO: the same checks and layers as lenet_forward, without the two batch-norm steps.
  throw course::NotImplemented("lab04::lenet_forward_folded");
}

std::vector<int> predicted_classes([[maybe_unused]] const course::Tensor& logits) {
  // TODO: logits must be 2-D [N, K] with K >= 1 ("logits"). For each row return the index of
  //   its largest value; on a tie keep the FIRST index. Throw course::Error naming "logits" and
  //   the row ("row 3") when a value is NaN: a NaN loses every comparison and would go unnoticed.
  throw course::NotImplemented("lab04::predicted_classes");
}

std::int64_t count_correct([[maybe_unused]] const course::Tensor& logits,
                           [[maybe_unused]] const std::vector<std::uint8_t>& labels) {
  // TODO: labels.size() must equal the number of rows ("labels"); count the rows whose
  //   predicted class equals their label.
  throw course::NotImplemented("lab04::count_correct");
}

}  // namespace lab04
