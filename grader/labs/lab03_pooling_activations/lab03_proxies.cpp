// Test-program side of lab03_pooling_activations: each function of the interface header forwards its call to
// the worker process that runs the student's code (grader/rpc/proxy.hpp).
#include "labs/lab03_pooling_activations.hpp"
#include "lab03_rpc.hpp"
#include "rpc/proxy.hpp"

namespace lab03 {

course::Shape pool2d_output_shape(const course::Shape& input, const Pool2dParams& p) {
  return COURSE_RPC_FORWARD(lab03::pool2d_output_shape, input, p);
}

void max_pool2d(const course::Tensor& input, const Pool2dParams& p, course::Tensor& output) {
  COURSE_RPC_FORWARD(lab03::max_pool2d, input, p, output);
}

void avg_pool2d(const course::Tensor& input, const Pool2dParams& p, course::Tensor& output) {
  COURSE_RPC_FORWARD(lab03::avg_pool2d, input, p, output);
}

void global_avg_pool2d(const course::Tensor& input, course::Tensor& output) {
  COURSE_RPC_FORWARD(lab03::global_avg_pool2d, input, output);
}

void relu(const course::Tensor& input, course::Tensor& output) {
  COURSE_RPC_FORWARD(lab03::relu, input, output);
}

void leaky_relu(const course::Tensor& input, float negative_slope, course::Tensor& output) {
  COURSE_RPC_FORWARD(lab03::leaky_relu, input, negative_slope, output);
}

void sigmoid(const course::Tensor& input, course::Tensor& output) {
  COURSE_RPC_FORWARD(lab03::sigmoid, input, output);
}

void tanh_activation(const course::Tensor& input, course::Tensor& output) {
  COURSE_RPC_FORWARD(lab03::tanh_activation, input, output);
}

void softmax(const course::Tensor& logits, course::Tensor& probabilities) {
  COURSE_RPC_FORWARD(lab03::softmax, logits, probabilities);
}

}  // namespace lab03
