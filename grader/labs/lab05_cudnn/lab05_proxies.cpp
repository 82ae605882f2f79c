// Lab 05's RPC proxies (a PROXY_SOURCE): the harness functions as the trusted test program sees
// them. Each forwards its arguments to the worker and brings back the outputs (non-const
// references and return values); the signatures match lab05_harness.hpp exactly.
#include "rpc/proxy.hpp"
#include "lab05_harness.hpp"

namespace lab05_harness {

course::Shape conv2d_output_shape(const course::Shape& x, const course::Shape& w, const lab05::ConvParams& p) {
  return COURSE_RPC_FORWARD(lab05_harness::conv2d_output_shape, x, w, p);
}

course::Shape pool2d_output_shape(const course::Shape& x, const lab05::PoolParams& p) {
  return COURSE_RPC_FORWARD(lab05_harness::pool2d_output_shape, x, p);
}

void conv2d_forward(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b,
                    const lab05::ConvParams& p, course::Tensor& out) {
  COURSE_RPC_FORWARD(lab05_harness::conv2d_forward, x, w, b, p, out);
}

void conv_bias_relu_forward(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b,
                            const lab05::ConvParams& p, course::Tensor& out) {
  COURSE_RPC_FORWARD(lab05_harness::conv_bias_relu_forward, x, w, b, p, out);
}

void relu_forward(const course::Tensor& x, bool in_place, course::Tensor& out) {
  COURSE_RPC_FORWARD(lab05_harness::relu_forward, x, in_place, out);
}

void max_pool2d(const course::Tensor& x, const lab05::PoolParams& p, course::Tensor& out) {
  COURSE_RPC_FORWARD(lab05_harness::max_pool2d, x, p, out);
}

void linear_forward(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, bool relu,
                    course::Tensor& out) {
  COURSE_RPC_FORWARD(lab05_harness::linear_forward, x, w, b, relu, out);
}

void softmax_forward(const course::Tensor& logits, course::Tensor& probabilities) {
  COURSE_RPC_FORWARD(lab05_harness::softmax_forward, logits, probabilities);
}

AlgorithmReport conv_algorithm_report(const course::Shape& x, const course::Shape& w, const lab05::ConvParams& p,
                                      bool heuristic) {
  return COURSE_RPC_FORWARD(lab05_harness::conv_algorithm_report, x, w, p, heuristic);
}

void lenet_forward(const lab04::FoldedLeNet& net, const course::Tensor& images, course::Tensor& logits) {
  COURSE_RPC_FORWARD(lab05_harness::lenet_forward, net, images, logits);
}

void lenet_forward_batched(const lab04::FoldedLeNet& net, const course::Tensor& images, int max_batch, int batch,
                           bool fused, course::Tensor& logits) {
  COURSE_RPC_FORWARD(lab05_harness::lenet_forward_batched, net, images, max_batch, batch, fused, logits);
}

void timing_prepare(const lab04::FoldedLeNet& net, const course::Tensor& pool, int forwards) {
  COURSE_RPC_FORWARD(lab05_harness::timing_prepare, net, pool, forwards);
}

void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms) {
  COURSE_RPC_FORWARD(lab05_harness::timing_round, nonce, run, event_ms);
}

void lenet_forward_captured(const lab04::FoldedLeNet& net, const course::Tensor& images, course::Tensor& logits) {
  COURSE_RPC_FORWARD(lab05_harness::lenet_forward_captured, net, images, logits);
}

}  // namespace lab05_harness
