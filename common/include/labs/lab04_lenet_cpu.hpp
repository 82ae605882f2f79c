// Lab 04 interface: batch-norm at inference, folding batch-norm into the convolution before it,
// fully connected layers, and the whole LeNet-5-BN forward pass on the CPU.
//
// The lecture is lectures/04-batchnorm-fusion-lenet.md; the task is
// exercises/lab04_lenet_cpu/README.md. Exercises and solutions both implement exactly these
// functions (batchnorm.cpp, linear.cpp, lenet.cpp). The network functions build on the
// student's own lab 02 (lab02::conv2d_forward) and lab 03 (lab03::max_pool2d, lab03::relu).
//
// Conventions shared with the other labs:
//  - activations are NCHW float32, convolution weights KCRS, linear weights [out, in] (PyTorch);
//  - outputs are allocated by the caller with the right shape and may hold garbage (the tests
//    fill them with NaN), so every element must be written;
//  - every invalid argument is reported by throwing course::Error whose message names the
//    argument and the problem.
#pragma once

#include <cstdint>
#include <vector>

#include "course/lenet.hpp"
#include "course/tensor.hpp"

namespace lab04 {

// ---------------------------------------------------------------------------------------------
// batchnorm.cpp
// ---------------------------------------------------------------------------------------------

/// Batch-norm in inference mode, per channel c of an NCHW tensor:
///   output[n,c,h,w] = gamma[c] * (input[n,c,h,w] - running_mean[c]) / sqrt(running_var[c] + eps)
///                     + beta[c]
/// input [N, C, H, W]; gamma, beta, running_mean, running_var [C]; output [N, C, H, W].
/// `output` may be the SAME tensor as `input` (in-place call).
///
/// Throws course::Error when: the input is not 4-D or has an extent < 1 ("input"); a parameter is not of shape [C]
/// (the message names it: "gamma", "beta", "running_mean", "running_var"); eps is not a finite
/// number > 0 ("eps"); running_var holds a negative or NaN value ("running_var"); the output
/// shape differs from the input's ("output").
void batchnorm_inference(const course::Tensor& input, const course::Tensor& gamma, const course::Tensor& beta,
                         const course::Tensor& running_mean, const course::Tensor& running_var, double eps,
                         course::Tensor& output);

/// Folds an inference-mode batch-norm into the convolution in front of it, so that
///   conv(x, folded_weight, folded_bias) == batchnorm_inference(conv(x, conv_weight, conv_bias), ...)
/// for every input x. With scale[k] = gamma[k] / sqrt(running_var[k] + eps):
///   folded_weight[k,c,r,s] = conv_weight[k,c,r,s] * scale[k]
///   folded_bias[k]         = (conv_bias[k] - running_mean[k]) * scale[k] + beta[k]
/// conv_weight [K, C, R, S]; conv_bias [K], or an empty Tensor (numel() == 0) for a convolution
/// without bias (then conv_bias[k] counts as 0); gamma, beta, running_mean, running_var [K];
/// folded_weight [K, C, R, S] and folded_bias [K], allocated by the caller.
///
/// Throws course::Error when: conv_weight is not 4-D or has an extent < 1, e.g. K = 0
/// ("conv_weight"); conv_bias is neither empty
/// nor [K] ("conv_bias"); a batch-norm parameter is not [K] (named as above); eps is not a finite
/// number > 0 ("eps"); running_var holds a negative or NaN value ("running_var"); an output has
/// the wrong shape ("folded_weight", "folded_bias").
void fold_batchnorm(const course::Tensor& conv_weight, const course::Tensor& conv_bias, const course::Tensor& gamma,
                    const course::Tensor& beta, const course::Tensor& running_mean,
                    const course::Tensor& running_var, double eps, course::Tensor& folded_weight,
                    course::Tensor& folded_bias);

// ---------------------------------------------------------------------------------------------
// linear.cpp
// ---------------------------------------------------------------------------------------------

/// Fully connected layer (PyTorch's nn.Linear), one row of the batch at a time:
///   output[n, o] = bias[o] + sum_i input[n, i] * weight[o, i]
/// input [N, IN]; weight [OUT, IN] (PyTorch layout: one row per output); bias [OUT];
/// output [N, OUT]. For a 4-D activation, flatten it first (Tensor::reshaped({N, C*H*W})).
///
/// Throws course::Error when: input or weight is not 2-D or has an extent < 1 ("input", "weight"); the input's
/// feature count differs from the weight's ("input features" / "weight"); bias is not [OUT]
/// ("bias"); output is not [N, OUT] ("output").
void linear_forward(const course::Tensor& input, const course::Tensor& weight, const course::Tensor& bias,
                    course::Tensor& output);

// ---------------------------------------------------------------------------------------------
// lenet.cpp
// ---------------------------------------------------------------------------------------------

/// The whole LeNet-5-BN (see course/lenet.hpp), batch-norm applied as its own step:
///   conv1 (pad 2) -> bn1 -> ReLU -> maxpool 2 -> conv2 -> bn2 -> ReLU -> maxpool 2 -> flatten
///   -> fc1 -> ReLU -> fc2 -> ReLU -> fc3
/// using weights.bn_epsilon for both batch-norms. images [N, 1, 28, 28] (N >= 1); logits [N, 10],
/// allocated by the caller. Throws course::Error for wrong image or logits shapes ("images",
/// "logits") and for missing parameters (course::lenet::Weights::at names them).
void lenet_forward(const course::lenet::Weights& weights, const course::Tensor& images, course::Tensor& logits);

/// LeNet with both batch-norms folded into conv1 and conv2: what an inference engine runs.
/// Shapes as in PyTorch: conv1 [6,1,5,5]+[6], conv2 [16,6,5,5]+[16], fc1 [120,400]+[120],
/// fc2 [84,120]+[84], fc3 [10,84]+[10].
struct FoldedLeNet {
  course::Tensor conv1_weight, conv1_bias;
  course::Tensor conv2_weight, conv2_bias;
  course::Tensor fc1_weight, fc1_bias;
  course::Tensor fc2_weight, fc2_bias;
  course::Tensor fc3_weight, fc3_bias;
};

/// Folds bn1 into conv1 and bn2 into conv2 (with weights.bn_epsilon) and copies the fully
/// connected layers unchanged.
FoldedLeNet fold_lenet(const course::lenet::Weights& weights);

/// The same network as lenet_forward without the batch-norm steps:
///   conv1 (pad 2) -> ReLU -> maxpool 2 -> conv2 -> ReLU -> maxpool 2 -> flatten
///   -> fc1 -> ReLU -> fc2 -> ReLU -> fc3
/// Same shapes and errors as lenet_forward.
void lenet_forward_folded(const FoldedLeNet& net, const course::Tensor& images, course::Tensor& logits);

/// The predicted class of every row of logits [N, L] (L classes): the index of the row's
/// largest value; on a tie the lowest index wins (like torch.argmax). Throws course::Error when
/// logits is not 2-D with L >= 1 ("logits") or a row holds a NaN ("logits", naming the row).
std::vector<int> predicted_classes(const course::Tensor& logits);

/// How many rows of logits [N, L] predict their label: predicted_classes(logits)[n] == labels[n].
/// Throws course::Error as predicted_classes does, and when labels.size() != N ("labels").
std::int64_t count_correct(const course::Tensor& logits, const std::vector<std::uint8_t>& labels);

}  // namespace lab04
