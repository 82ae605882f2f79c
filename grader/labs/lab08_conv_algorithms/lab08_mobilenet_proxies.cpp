// Lab 08's RPC proxies, part C (a PROXY_SOURCE): the harness functions of
// lab08_mobilenet_harness.hpp as the trusted test program sees them; signatures match exactly.
#include "rpc/proxy.hpp"
#include "lab08_mobilenet_harness.hpp"

namespace lab08_harness {

void inverted_residual_block(const course::Tensor& x, const lab08::FoldedBlock& block, int stride, course::Tensor& out,
                             std::uint64_t& workspace_bytes) {
  COURSE_RPC_FORWARD(lab08_harness::inverted_residual_block, x, block, stride, out, workspace_bytes);
}

void mobilenet_forward(const lab08::FoldedMobileNet& net, const course::Tensor& images, int max_batch,
                       course::Tensor& logits) {
  COURSE_RPC_FORWARD(lab08_harness::mobilenet_forward, net, images, max_batch, logits);
}

void mobilenet_forward_captured(const lab08::FoldedMobileNet& net, const course::Tensor& images,
                                course::Tensor& logits) {
  COURSE_RPC_FORWARD(lab08_harness::mobilenet_forward_captured, net, images, logits);
}

void call_block_with_arguments(const std::string& function, const std::vector<int>& sizes,
                               const std::string& null_argument) {
  COURSE_RPC_FORWARD(lab08_harness::call_block_with_arguments, function, sizes, null_argument);
}

void call_mobilenet_with_arguments(const lab08::FoldedMobileNet& net, int max_batch, int n,
                                   const std::string& null_argument) {
  COURSE_RPC_FORWARD(lab08_harness::call_mobilenet_with_arguments, net, max_batch, n, null_argument);
}

void timing_prepare(const lab08::FoldedMobileNet& net, const course::Tensor& pool, const std::string& pipeline,
                    int forwards) {
  COURSE_RPC_FORWARD(lab08_harness::timing_prepare, net, pool, pipeline, forwards);
}

void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms) {
  COURSE_RPC_FORWARD(lab08_harness::timing_round, nonce, run, event_ms);
}

}  // namespace lab08_harness
