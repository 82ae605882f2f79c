// Lab 05 exercise, part 2: choosing the convolution algorithm, once per shape.
// The contract is in common/include/labs/lab05_cudnn.hpp; the lecture is lectures/05-cudnn.md,
// section "Choosing the algorithm".
#include <array>
#include <sstream>
#include <string>

#include "course/cudnn_check.hpp"
#include "course/error.hpp"
#include "labs/lab05_cudnn.hpp"

namespace lab05 {

ConvAlgorithm choose_conv_algorithm([[maybe_unused]] Context& ctx, [[maybe_unused]] const ConvKey& key,
                                    [[maybe_unused]] const ConvDescriptors& d) {
  // TODO 1: return the cached answer if ctx.conv_algorithms() already holds `key`.
  // TODO 2: key.fused -> CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM (no search). Otherwise
  //   ask cuDNN for up to CUDNN_CONVOLUTION_FWD_ALGO_COUNT candidates (cudnnConvolutionFwdAlgoPerf_t):
  //     ctx.search() == AlgoSearch::Measured  -> cudnnFindConvolutionForwardAlgorithm
  //     AlgoSearch::Heuristic                 -> cudnnGetConvolutionForwardAlgorithm_v7
  //   and take the first with status CUDNN_STATUS_SUCCESS, a mathType that is not a tensor-op
  //   type, an algo that is not CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED (too inaccurate
  //   for 5x5 filters: the README says why) and memory <= Context::kMaxWorkspaceBytes. None:
  //   course::Error saying
  //   "no convolution algorithm" and the shapes.
  // TODO 3: workspace_bytes from cudnnGetConvolutionForwardWorkspaceSize for the CHOSEN
  //   algorithm; store the answer in the cache and return it.
  throw course::NotImplemented("lab05::choose_conv_algorithm");
}

}  // namespace lab05
