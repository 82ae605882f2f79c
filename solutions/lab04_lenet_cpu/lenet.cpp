// Lab 04 solution, part 3: the whole LeNet-5-BN on the CPU, unfolded and folded, and turning
// logits into predicted classes. The layers come from the earlier labs: lab02::conv2d_forward,
// lab03::relu and lab03::max_pool2d. The contract is in common/include/labs/lab04_lenet_cpu.hpp.
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

namespace {

namespace ln = course::lenet;

// Both forward passes accept the same inputs; checking them first means a wrong shape is
// reported by name instead of surfacing as a confusing error from some layer deep inside.
std::int64_t check_images_and_logits(const course::Tensor& images, const course::Tensor& logits) {
  if (images.rank() != 4 || images.dim(0) < 1 || images.dim(1) != ln::kInputChannels ||
      images.dim(2) != ln::kInputSize || images.dim(3) != ln::kInputSize)
    throw course::Error("lenet images: expected shape [N, 1, 28, 28] with N >= 1, got " +
                        course::shape_to_string(images.shape()));
  const std::int64_t N = images.dim(0);
  logits.expect_shape({N, ln::kNumClasses}, "lenet logits");
  return N;
}

// The batch-norm that follows a convolution, or none (nullptr) once it has been folded away.
struct BatchNorm {
  const course::Tensor& gamma;
  const course::Tensor& beta;
  const course::Tensor& mean;
  const course::Tensor& var;
  double eps;
};

BatchNorm batchnorm_of(const ln::Weights& weights, const std::string& name) {
  return {weights.at(name + ".weight"), weights.at(name + ".bias"), weights.at(name + ".running_mean"),
          weights.at(name + ".running_var"), weights.bn_epsilon};
}

// One feature-extraction stage of LeNet: conv (stride 1) -> [batch-norm] -> ReLU -> 2x2 max pool.
// `out_size` is the convolution's output height and width, known from the model description.
course::Tensor conv_stage(const course::Tensor& x, const course::Tensor& weight, const course::Tensor& bias,
                          int pad, std::int64_t out_size, const BatchNorm* bn) {
  const std::int64_t N = x.dim(0), K = weight.dim(0);
  course::Tensor conv(course::Shape{N, K, out_size, out_size});
  lab02::conv2d_forward(x, weight, bias, lab02::Conv2dParams::symmetric(pad), conv);
  // Batch-norm and ReLU work element by element, so they can overwrite the convolution's output
  // instead of allocating (and later reading) another tensor of the same size.
  if (bn != nullptr) batchnorm_inference(conv, bn->gamma, bn->beta, bn->mean, bn->var, bn->eps, conv);
  lab03::relu(conv, conv);
  course::Tensor pooled(course::Shape{N, K, out_size / ln::kPool, out_size / ln::kPool});
  lab03::max_pool2d(conv, lab03::Pool2dParams::square(ln::kPool, ln::kPool), pooled);
  return pooled;
}

// The classifier: flatten [N,16,5,5] -> [N,400], then fc1 -> ReLU -> fc2 -> ReLU -> fc3.
void classifier(const course::Tensor& features, const course::Tensor& fc1_weight, const course::Tensor& fc1_bias,
                const course::Tensor& fc2_weight, const course::Tensor& fc2_bias, const course::Tensor& fc3_weight,
                const course::Tensor& fc3_bias, course::Tensor& logits) {
  const std::int64_t N = features.dim(0);
  // NCHW is contiguous, so flattening only changes the shape: element (c, h, w) of image n lands
  // at column c*25 + h*5 + w, the order PyTorch's flatten uses and fc1 was trained with.
  const course::Tensor flat = features.reshaped({N, ln::kFlat});
  course::Tensor hidden1(course::Shape{N, ln::kFc1Out});
  linear_forward(flat, fc1_weight, fc1_bias, hidden1);
  lab03::relu(hidden1, hidden1);
  course::Tensor hidden2(course::Shape{N, ln::kFc2Out});
  linear_forward(hidden1, fc2_weight, fc2_bias, hidden2);
  lab03::relu(hidden2, hidden2);
  linear_forward(hidden2, fc3_weight, fc3_bias, logits);  // no ReLU: logits may be negative
}

constexpr std::int64_t kConv1OutSize = ln::kInputSize;                       // 28 (pad 2 keeps the size)
constexpr std::int64_t kConv2OutSize = ln::kInputSize / ln::kPool - ln::kKernel + 1;  // 14 - 5 + 1 = 10

}  // namespace

void lenet_forward(const ln::Weights& weights, const course::Tensor& images, course::Tensor& logits) {
  check_images_and_logits(images, logits);
  const BatchNorm bn1 = batchnorm_of(weights, "bn1");
  const BatchNorm bn2 = batchnorm_of(weights, "bn2");
  const course::Tensor stage1 =
      conv_stage(images, weights.at("conv1.weight"), weights.at("conv1.bias"), ln::kConv1Pad, kConv1OutSize, &bn1);
  const course::Tensor stage2 =
      conv_stage(stage1, weights.at("conv2.weight"), weights.at("conv2.bias"), 0, kConv2OutSize, &bn2);
  classifier(stage2, weights.at("fc1.weight"), weights.at("fc1.bias"), weights.at("fc2.weight"),
             weights.at("fc2.bias"), weights.at("fc3.weight"), weights.at("fc3.bias"), logits);
}

FoldedLeNet fold_lenet(const ln::Weights& weights) {
  FoldedLeNet net;
  // Batch-norm is folded into the convolution right before it. The fully connected layers have
  // no batch-norm and are copied unchanged.
  auto fold = [&weights](const std::string& conv, const std::string& bn_name, course::Tensor& folded_weight,
                         course::Tensor& folded_bias) {
    const course::Tensor& weight = weights.at(conv + ".weight");
    const BatchNorm bn = batchnorm_of(weights, bn_name);
    folded_weight = course::Tensor(weight.shape());
    folded_bias = course::Tensor(course::Shape{weight.dim(0)});
    fold_batchnorm(weight, weights.at(conv + ".bias"), bn.gamma, bn.beta, bn.mean, bn.var, bn.eps, folded_weight,
                   folded_bias);
  };
  fold("conv1", "bn1", net.conv1_weight, net.conv1_bias);
  fold("conv2", "bn2", net.conv2_weight, net.conv2_bias);
  net.fc1_weight = weights.at("fc1.weight");
  net.fc1_bias = weights.at("fc1.bias");
  net.fc2_weight = weights.at("fc2.weight");
  net.fc2_bias = weights.at("fc2.bias");
  net.fc3_weight = weights.at("fc3.weight");
  net.fc3_bias = weights.at("fc3.bias");
  return net;
}

void lenet_forward_folded(const FoldedLeNet& net, const course::Tensor& images, course::Tensor& logits) {
  check_images_and_logits(images, logits);
  // Identical to lenet_forward except that no batch-norm pass runs: its work now happens inside
  // the convolutions' weights and biases, at no cost per image.
  const course::Tensor stage1 =
      conv_stage(images, net.conv1_weight, net.conv1_bias, ln::kConv1Pad, kConv1OutSize, nullptr);
  const course::Tensor stage2 = conv_stage(stage1, net.conv2_weight, net.conv2_bias, 0, kConv2OutSize, nullptr);
  classifier(stage2, net.fc1_weight, net.fc1_bias, net.fc2_weight, net.fc2_bias, net.fc3_weight, net.fc3_bias,
             logits);
}

std::vector<int> predicted_classes(const course::Tensor& logits) {
  if (logits.rank() != 2 || logits.dim(1) < 1)
    throw course::Error("predicted_classes logits: expected a 2-D shape [N, K] with K >= 1, got " +
                        course::shape_to_string(logits.shape()));
  const auto rows = static_cast<std::size_t>(logits.dim(0));
  const auto classes = static_cast<std::size_t>(logits.dim(1));
  std::vector<int> predicted(rows);
  for (std::size_t n = 0; n < rows; ++n) {
    const float* row = logits.data() + n * classes;
    std::size_t best = 0;
    for (std::size_t k = 0; k < classes; ++k) {
      // A NaN would silently lose every comparison and the row would be "classified" anyway.
      if (std::isnan(row[k]))
        throw course::Error("predicted_classes logits: row " + std::to_string(n) + " holds NaN at class " +
                            std::to_string(k));
      if (row[k] > row[best]) best = k;  // strictly greater: on a tie the first index stays
    }
    predicted[n] = static_cast<int>(best);
  }
  return predicted;
}

std::int64_t count_correct(const course::Tensor& logits, const std::vector<std::uint8_t>& labels) {
  const std::vector<int> predicted = predicted_classes(logits);
  if (labels.size() != predicted.size())
    throw course::Error("count_correct labels: " + std::to_string(labels.size()) + " labels for " +
                        std::to_string(predicted.size()) + " rows of logits");
  std::int64_t correct = 0;
  for (std::size_t n = 0; n < labels.size(); ++n)
    if (predicted[n] == static_cast<int>(labels[n])) ++correct;
  return correct;
}

}  // namespace lab04
