// Lab 08's trusted harness, part C: the inverted residual block and the whole MobileNetV2, as
// host-tensor functions in the worker next to the student's code (the tests call them through
// lab08_mobilenet_proxies.cpp). The same discipline as lab08_harness.hpp: inputs uploaded and
// checked unchanged afterwards, outputs and workspace poisoned with NaN behind guard zones, the
// student's code on a stream of its own, CUDA errors turned into course::Error naming the
// student's function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "course/tensor.hpp"
#include "labs/lab08_mobilenet_weights.hpp"

#if __has_include("rpc/codec.hpp")
#include "rpc/codec.hpp"
COURSE_RPC_FIELDS(lab08::FoldedBlock, expand_weight, expand_bias, depthwise_weight, depthwise_bias, project_weight,
                  project_bias)
COURSE_RPC_FIELDS(lab08::FoldedMobileNet, stem_weight, stem_bias, blocks, head_weight, head_bias, classifier_weight,
                  classifier_bias)
#endif

namespace lab08_harness {

/// lab08::inverted_residual_block on x [N,in,H,W] with block's folded weights (in, hidden, out
/// taken from them; expand pointers null when block.expand_weight is empty); out must be
/// [N,out,(H-1)/stride+1,(W-1)/stride+1]. The workspace is exactly what
/// lab08::inverted_residual_workspace asks for (returned in workspace_bytes), poisoned, guarded.
void inverted_residual_block(const course::Tensor& x, const lab08::FoldedBlock& block, int stride, course::Tensor& out,
                             std::uint64_t& workspace_bytes);

/// A lab08::MobileNetV2(net, max_batch) classifies images [N,1,28,28] in consecutive batches of
/// max_batch (the last may be smaller), all enqueued back to back on one stream; logits must be
/// [N,10].
void mobilenet_forward(const lab08::FoldedMobileNet& net, const course::Tensor& images, int max_batch,
                       course::Tensor& logits);

/// One batch through MobileNetV2::forward recorded into a CUDA graph (global capture mode) and
/// the graph launched twice, the logits poisoned in between (lab 06's check that forward() only
/// enqueues work on its stream).
void mobilenet_forward_captured(const lab08::FoldedMobileNet& net, const course::Tensor& images,
                                course::Tensor& logits);

/// Calls lab08::inverted_residual_workspace ("inverted_residual_workspace", sizes
/// {N,in,hidden,out,H,W,stride}) or lab08::inverted_residual_block ("inverted_residual_block",
/// sizes {N,in,hidden,out,H,W,stride,short_by}) with raw sizes on scratch device buffers of
/// 65,536 floats. null_argument names a pointer to pass as nullptr ("d_input", "d_output",
/// "d_workspace", "expand_weight", ..., "project_bias"); "+expand_weight" / "+expand_bias" pass
/// a real pointer where hidden == in wants none. The workspace is what the student's query asks
/// for minus short_by (a scratch buffer's size when the query rejects the sizes). Whatever the
/// student throws comes back; a call that returns normally is synchronised first.
void call_block_with_arguments(const std::string& function, const std::vector<int>& sizes,
                               const std::string& null_argument);

/// Builds lab08::MobileNetV2(net, max_batch) and calls forward() once with n images of zeros
/// (buffers for max(n, 1) images; "d_images" or "d_logits" as null_argument passes nullptr).
void call_mobilenet_with_arguments(const lab08::FoldedMobileNet& net, int max_batch, int n,
                                   const std::string& null_argument);

/// The speed gate (grader/testkit/gpu_speed.hpp, grader/labs/gpu_timing_session.hpp): builds one
/// network for batches of the pool's size and uploads the pool of real images the rounds are made
/// from, kept until the next timing_prepare or until another function here builds a MobileNetV2.
/// `pipeline` is "student" (this worker's lab08::MobileNetV2) or "cudnn" (the same network through
/// cuDNN + cuBLAS, lab08_mobilenet_baseline.hpp, which only the reference worker contains:
/// anywhere else it throws course::Error).
void timing_prepare(const lab08::FoldedMobileNet& net, const course::Tensor& pool, const std::string& pipeline,
                    int forwards);
/// One round of the speed gate: R = `forwards` calls of the prepared network on R batches made on
/// the GPU from `nonce` (`run` false: the same round without the calls, its fixed cost). Every
/// call's logits [R*N,10] (and labels, left at -1: forward() returns none) are left in the region
/// shared with the test program; event_ms: the harness's CUDA-event time of each call
/// (information only, never a verdict).
void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms);

}  // namespace lab08_harness
