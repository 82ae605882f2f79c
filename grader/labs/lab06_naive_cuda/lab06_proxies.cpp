// Lab 06's RPC proxies (a PROXY_SOURCE): the harness functions as the trusted test program sees
// them. Each forwards its arguments to the worker and brings back the outputs (non-const
// references and return values); the signatures match lab06_harness.hpp exactly.
#include "rpc/proxy.hpp"
#include "lab06_harness.hpp"

namespace lab06_harness {

void conv2d_forward(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, int pad,
                    course::Tensor& out) {
  COURSE_RPC_FORWARD(lab06_harness::conv2d_forward, x, w, b, pad, out);
}

void relu_inplace(course::Tensor& data) { COURSE_RPC_FORWARD(lab06_harness::relu_inplace, data); }

void max_pool2d(const course::Tensor& x, int window, int stride, course::Tensor& out) {
  COURSE_RPC_FORWARD(lab06_harness::max_pool2d, x, window, stride, out);
}

void linear_forward(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, course::Tensor& out) {
  COURSE_RPC_FORWARD(lab06_harness::linear_forward, x, w, b, out);
}

std::vector<int> argmax_rows(const course::Tensor& logits) {
  return COURSE_RPC_FORWARD(lab06_harness::argmax_rows, logits);
}

void lenet_forward(const lab04::FoldedLeNet& net, const course::Tensor& images, int max_batch, course::Tensor& logits,
                   std::vector<int>& labels) {
  COURSE_RPC_FORWARD(lab06_harness::lenet_forward, net, images, max_batch, logits, labels);
}

void lenet_forward_captured(const lab04::FoldedLeNet& net, const course::Tensor& images, course::Tensor& logits,
                            std::vector<int>& labels) {
  COURSE_RPC_FORWARD(lab06_harness::lenet_forward_captured, net, images, logits, labels);
}

void call_with_arguments(const std::string& function, const std::vector<int>& sizes, const std::string& null_argument) {
  COURSE_RPC_FORWARD(lab06_harness::call_with_arguments, function, sizes, null_argument);
}

void call_lenet_with_arguments(const lab04::FoldedLeNet& net, int max_batch, int n, const std::string& null_argument) {
  COURSE_RPC_FORWARD(lab06_harness::call_lenet_with_arguments, net, max_batch, n, null_argument);
}

void timing_prepare(const lab04::FoldedLeNet& net, const course::Tensor& pool, int forwards) {
  COURSE_RPC_FORWARD(lab06_harness::timing_prepare, net, pool, forwards);
}

void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms) {
  COURSE_RPC_FORWARD(lab06_harness::timing_round, nonce, run, event_ms);
}

}  // namespace lab06_harness
