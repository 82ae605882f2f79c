// Lab 05 solution, part 2: choosing the convolution algorithm, once per shape.
//
// cuDNN implements a forward convolution several ways (implicit GEMM, explicit GEMM, FFT,
// Winograd, ...). Which one is fastest depends on the shapes, the GPU and the cuDNN version, and
// each may need a different amount of scratch memory. Searching costs milliseconds (measuring
// runs every candidate), so the answer is cached per problem.
#include <array>
#include <sstream>
#include <string>

#include "course/cudnn_check.hpp"
#include "course/error.hpp"
#include "labs/lab05_cudnn.hpp"

namespace lab05 {
namespace {

std::string describe(const ConvKey& key) {
  std::ostringstream out;
  out << "input " << course::shape_to_string(key.input) << ", weight " << course::shape_to_string(key.weight)
      << ", pad " << key.params.pad_h << "x" << key.params.pad_w << ", stride " << key.params.stride_h << "x"
      << key.params.stride_w << ", dilation " << key.params.dilation_h << "x" << key.params.dilation_w;
  return out.str();
}

// The candidates come sorted, best first; take the first that actually ran, keeps fp32 accuracy
// and fits the workspace budget. Two things cost accuracy: tensor-op math (TF32), and the
// non-fused Winograd algorithm, which on LeNet's 5x5 filters is off by 6e-3..1.2e-2 for outputs
// of rms ~1 even in FMA math (bench/lab05_algorithm_accuracy on the H100, cuDNN 9.14; FFT and
// FFT_TILING stay within ~3e-6). Find's ranking is one timing per candidate, so on a busy GPU it can put
// WINOGRAD_NONFUSED first, and the logits would then miss the 1e-3 tolerance.
bool acceptable(const cudnnConvolutionFwdAlgoPerf_t& perf) {
  return perf.status == CUDNN_STATUS_SUCCESS && perf.mathType != CUDNN_TENSOR_OP_MATH &&
         perf.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
         perf.algo != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED && perf.memory <= Context::kMaxWorkspaceBytes;
}

cudnnConvolutionFwdAlgo_t search(Context& ctx, const ConvKey& key, const ConvDescriptors& d) {
  std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
  int returned = 0;
  if (ctx.search() == AlgoSearch::Measured)
    CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(ctx.cudnn(), d.x, d.w, d.conv, d.y, static_cast<int>(perf.size()),
                                                     &returned, perf.data()));
  else
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn(), d.x, d.w, d.conv, d.y,
                                                       static_cast<int>(perf.size()), &returned, perf.data()));
  for (int i = 0; i < returned; ++i)
    if (acceptable(perf[static_cast<std::size_t>(i)])) return perf[static_cast<std::size_t>(i)].algo;
  throw course::Error("conv2d: no convolution algorithm cuDNN can run in fp32 within the workspace budget for " +
                      describe(key));
}

}  // namespace

ConvAlgorithm choose_conv_algorithm(Context& ctx, const ConvKey& key, const ConvDescriptors& d) {
  auto& cache = ctx.conv_algorithms();
  if (const auto hit = cache.find(key); hit != cache.end()) return hit->second;

  ConvAlgorithm chosen;
  // cudnnConvolutionBiasActivationForward is documented for IMPLICIT_PRECOMP_GEMM (the only
  // algorithm it accepts with the identity activation, and the one that works with ReLU in every
  // cuDNN version), so the fused call does not search.
  chosen.algo = key.fused ? CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM : search(ctx, key, d);
  // Size the workspace from the algorithm actually chosen, not from the largest candidate.
  CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn(), d.x, d.w, d.conv, d.y, chosen.algo,
                                                      &chosen.workspace_bytes));
  cache.emplace(key, chosen);
  return chosen;
}

}  // namespace lab05
