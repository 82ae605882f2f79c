// Lab 05 tests: choosing the convolution algorithm (lecture section "Choosing the algorithm"):
// one search per problem, the cache keyed by shape, the workspace sized from the algorithm
// actually chosen, and the fused call's fixed algorithm.
#include <string>

#include "lab05_test_support.hpp"

using course::Shape;
using lab05::ConvParams;

namespace {

void check_report(const std::string& what, const Shape& x, const Shape& w, const ConvParams& p, bool heuristic) {
  const lab05_harness::AlgorithmReport r = lab05_harness::conv_algorithm_report(x, w, p, heuristic);
  INFO(what);
  CHECK_MESSAGE(r.first_algo >= 0, "no algorithm chosen");
  CHECK_MESSAGE(r.first_algo < static_cast<int>(CUDNN_CONVOLUTION_FWD_ALGO_COUNT), "not a cuDNN forward algorithm");
  CHECK_MESSAGE(r.repeat_algo == r.first_algo, "the same problem asked twice got two different algorithms");
  CHECK_MESSAGE(r.workspace_bytes == r.expected_workspace_bytes,
                "workspace of " << r.workspace_bytes << " bytes, but cuDNN says the chosen algorithm needs "
                                << r.expected_workspace_bytes);
  CHECK_MESSAGE(r.cache_after_first == 1, "after the first search the cache should hold 1 problem, holds "
                                              << r.cache_after_first);
  CHECK_MESSAGE(r.cache_after_repeat == 1, "asking again for the same shapes must be answered from the cache "
                                               "(it holds " << r.cache_after_repeat << " entries)");
  CHECK_MESSAGE(r.cache_after_other_batch == 2, "another batch size is another problem: the cache should hold 2, holds "
                                                    << r.cache_after_other_batch);
  CHECK_MESSAGE(r.fused_algo == static_cast<int>(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM),
                "the fused conv+bias+ReLU call should use IMPLICIT_PRECOMP_GEMM, got algorithm " << r.fused_algo);
  CHECK_MESSAGE(r.cache_after_fused == 3, "the fused call is its own cache entry: expected 3, got " << r.cache_after_fused);
}

}  // namespace

TEST_CASE("algorithms: measured search (cudnnFind...) is cached per shape, workspace from the chosen algorithm") {
  check_report("LeNet conv1, batch 8", {8, 1, 28, 28}, {6, 1, 5, 5}, ConvParams::symmetric(2), false);
  check_report("LeNet conv2, batch 8", {8, 6, 14, 14}, {16, 6, 5, 5}, ConvParams::symmetric(0), false);
  check_report("strided and dilated", {2, 4, 15, 15}, {8, 4, 3, 3}, ConvParams::symmetric(2, 2, 2), false);
}

TEST_CASE("algorithms: heuristic choice (cudnnGetConvolutionForwardAlgorithm_v7) follows the same rules") {
  check_report("LeNet conv1, batch 8 (heuristic)", {8, 1, 28, 28}, {6, 1, 5, 5}, ConvParams::symmetric(2), true);
  check_report("LeNet conv2, batch 64 (heuristic)", {64, 6, 14, 14}, {16, 6, 5, 5}, ConvParams::symmetric(0), true);
}
