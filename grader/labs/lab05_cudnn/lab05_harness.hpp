// Lab 05's trusted harness: host-tensor versions of the student's device-pointer functions.
//
// GPU pointers cannot travel between processes, so the tests never call lab05:: directly. Each
// function here builds a lab05::Context on a stream of its own, uploads the inputs, fills every
// device output with NaN (so that an unwritten element fails), calls the student's function,
// synchronises, turns any CUDA error into a course::Error naming the function, and downloads the
// result. Output tensors must already have the shape the student's *_output_shape function gives
// (a mismatch is a course::Error, before anything runs). It runs inside the worker process next
// to the student's code; the tests call it through the proxies (lab05_proxies.cpp).
#pragma once

#include <cstdint>

#include "course/tensor.hpp"
#include "labs/lab04_lenet_cpu.hpp"
#include "labs/lab05_cudnn.hpp"
#if __has_include("lenet_rpc.hpp")  // grader/labs/ is on the include path in the worker model
#include "lenet_rpc.hpp"
#endif

namespace lab05_harness {

/// What choose_conv_algorithm did for one problem, for the tests of the per-shape cache.
struct AlgorithmReport {
  int first_algo = -1;           ///< chosen for the problem
  int repeat_algo = -1;          ///< chosen when asked again for the same problem
  int fused_algo = -1;           ///< chosen for the same shapes with key.fused
  std::int64_t workspace_bytes = -1;           ///< what the student reported for first_algo
  std::int64_t expected_workspace_bytes = -1;  ///< what cuDNN says first_algo needs (harness's own query)
  int cache_after_first = -1, cache_after_repeat = -1, cache_after_other_batch = -1, cache_after_fused = -1;
};

}  // namespace lab05_harness

#if __has_include("rpc/codec.hpp")
#include "rpc/codec.hpp"
COURSE_RPC_FIELDS(lab05::ConvParams, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w)
COURSE_RPC_FIELDS(lab05::PoolParams, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w)
COURSE_RPC_FIELDS(lab05_harness::AlgorithmReport, first_algo, repeat_algo, fused_algo, workspace_bytes,
                  expected_workspace_bytes, cache_after_first, cache_after_repeat, cache_after_other_batch,
                  cache_after_fused)
#endif

namespace lab05_harness {

/// lab05::conv2d_output_shape and lab05::pool2d_output_shape, as they are (errors come back).
course::Shape conv2d_output_shape(const course::Shape& x, const course::Shape& w, const lab05::ConvParams& p);
course::Shape pool2d_output_shape(const course::Shape& x, const lab05::PoolParams& p);

/// lab05::conv2d_forward on x [N,C,H,W], w [K,C,R,S], b [K] (an empty tensor: no bias).
void conv2d_forward(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b,
                    const lab05::ConvParams& p, course::Tensor& out);

/// lab05::conv_bias_relu_forward; an empty b passes a null bias pointer.
void conv_bias_relu_forward(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b,
                            const lab05::ConvParams& p, course::Tensor& out);

/// lab05::relu_forward out of place (in_place false) or in place on a copy of x (true).
void relu_forward(const course::Tensor& x, bool in_place, course::Tensor& out);

/// lab05::max_pool2d.
void max_pool2d(const course::Tensor& x, const lab05::PoolParams& p, course::Tensor& out);

/// lab05::linear_forward on x [N,IN], w [OUT,IN], b [OUT] (empty: a null bias pointer).
void linear_forward(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, bool relu,
                    course::Tensor& out);

/// lab05::softmax_forward on logits [N,K].
void softmax_forward(const course::Tensor& logits, course::Tensor& probabilities);

/// Asks lab05::choose_conv_algorithm about one problem (measured or heuristic search) several
/// times on one Context and reports what it chose and what the cache held after each question.
AlgorithmReport conv_algorithm_report(const course::Shape& x, const course::Shape& w, const lab05::ConvParams& p,
                                      bool heuristic);

/// A lab05::CudnnLeNet(net, images.dim(0)) and one forward() over all images; logits [N,10].
void lenet_forward(const lab04::FoldedLeNet& net, const course::Tensor& images, course::Tensor& logits);

/// A lab05::CudnnLeNet(net, max_batch, {fused}) runs images [N,1,28,28] in consecutive batches
/// of `batch` images (the last one may be smaller) on one stream; logits [N,10].
void lenet_forward_batched(const lab04::FoldedLeNet& net, const course::Tensor& images, int max_batch, int batch,
                           bool fused, course::Tensor& logits);

/// The speed gate (grader/testkit/gpu_speed.hpp, grader/labs/gpu_timing_session.hpp): builds one
/// lab05::CudnnLeNet (fused) for batches of the pool's size and uploads the pool of real images
/// the rounds are made from.
void timing_prepare(const lab04::FoldedLeNet& net, const course::Tensor& pool, int forwards);
/// One round of the speed gate (grader/labs/gpu_timing_session.hpp): R = `forwards` calls of the
/// prepared pipeline on R batches made on the GPU from `nonce` (`run` false: the same round
/// without the calls, its fixed cost). Every call's logits [R*N,10] and then labels [R*N] are left
/// in the region shared with the test program (grader/rpc/frames.hpp, kWorkerSharedFd); event_ms:
/// the harness's CUDA-event time of each call (information only, never a verdict).
void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms);

/// One ordinary CudnnLeNet::forward on all images (the algorithm search and the libraries' lazy
/// set-up happen there), then a second one recorded into a CUDA graph (global capture mode) and
/// replayed with the outputs poisoned. The capture fails if forward() allocates (a workspace per
/// call), synchronises, copies, or uses another stream: so this proves forward() only enqueues
/// work on the stream it is given. Throws course::Error describing what broke the capture.
void lenet_forward_captured(const lab04::FoldedLeNet& net, const course::Tensor& images, course::Tensor& logits);

}  // namespace lab05_harness
