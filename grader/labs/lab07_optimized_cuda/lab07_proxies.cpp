// Lab 07's RPC proxies (a PROXY_SOURCE): the harness functions as the trusted test program sees
// them. Each forwards its arguments to the worker and brings back the outputs (non-const
// references and return values); the signatures match lab07_harness.hpp exactly.
#include "rpc/proxy.hpp"
#include "lab07_harness.hpp"

namespace lab07_harness {

void lenet_forward(const lab04::FoldedLeNet& net, const course::Tensor& images, int max_batch, course::Tensor& logits,
                   std::vector<int>& labels) {
  COURSE_RPC_FORWARD(lab07_harness::lenet_forward, net, images, max_batch, logits, labels);
}

void lenet_forward_captured(const lab04::FoldedLeNet& net, const course::Tensor& images, course::Tensor& logits,
                            std::vector<int>& labels) {
  COURSE_RPC_FORWARD(lab07_harness::lenet_forward_captured, net, images, logits, labels);
}

void call_lenet_with_arguments(const lab04::FoldedLeNet& net, int max_batch, int n, const std::string& null_argument) {
  COURSE_RPC_FORWARD(lab07_harness::call_lenet_with_arguments, net, max_batch, n, null_argument);
}

void timing_prepare(const lab04::FoldedLeNet& net, const course::Tensor& pool, const std::string& pipeline,
                    int forwards) {
  COURSE_RPC_FORWARD(lab07_harness::timing_prepare, net, pool, pipeline, forwards);
}

void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms) {
  COURSE_RPC_FORWARD(lab07_harness::timing_round, nonce, run, event_ms);
}

}  // namespace lab07_harness
