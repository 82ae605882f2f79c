// Test-program side of lab04_lenet_cpu: each function of the interface header forwards its call to
// the worker process that runs the student's code (grader/rpc/proxy.hpp).
#include "labs/lab04_lenet_cpu.hpp"
#include "lenet_rpc.hpp"
#include "rpc/proxy.hpp"

namespace lab04 {

void batchnorm_inference(const course::Tensor& input, const course::Tensor& gamma, const course::Tensor& beta, const course::Tensor& running_mean, const course::Tensor& running_var, double eps, course::Tensor& output) {
  COURSE_RPC_FORWARD(lab04::batchnorm_inference, input, gamma, beta, running_mean, running_var, eps, output);
}

void fold_batchnorm(const course::Tensor& conv_weight, const course::Tensor& conv_bias, const course::Tensor& gamma, const course::Tensor& beta, const course::Tensor& running_mean, const course::Tensor& running_var, double eps, course::Tensor& folded_weight, course::Tensor& folded_bias) {
  COURSE_RPC_FORWARD(lab04::fold_batchnorm, conv_weight, conv_bias, gamma, beta, running_mean, running_var, eps, folded_weight, folded_bias);
}

void linear_forward(const course::Tensor& input, const course::Tensor& weight, const course::Tensor& bias, course::Tensor& output) {
  COURSE_RPC_FORWARD(lab04::linear_forward, input, weight, bias, output);
}

void lenet_forward(const course::lenet::Weights& weights, const course::Tensor& images, course::Tensor& logits) {
  COURSE_RPC_FORWARD(lab04::lenet_forward, weights, images, logits);
}

FoldedLeNet fold_lenet(const course::lenet::Weights& weights) {
  return COURSE_RPC_FORWARD(lab04::fold_lenet, weights);
}

void lenet_forward_folded(const FoldedLeNet& net, const course::Tensor& images, course::Tensor& logits) {
  COURSE_RPC_FORWARD(lab04::lenet_forward_folded, net, images, logits);
}

std::vector<int> predicted_classes(const course::Tensor& logits) {
  return COURSE_RPC_FORWARD(lab04::predicted_classes, logits);
}

std::int64_t count_correct(const course::Tensor& logits, const std::vector<std::uint8_t>& labels) {
  return COURSE_RPC_FORWARD(lab04::count_correct, logits, labels);
}

}  // namespace lab04
