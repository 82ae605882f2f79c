// Lab 06's trusted harness: host-tensor versions of the student's device-pointer functions.
//
// GPU pointers cannot travel between processes, so the tests never call lab06:: directly. Each
// function here validates its host tensors, allocates device buffers, poisons every device output
// with NaN (or -1 for labels) so that an unwritten element fails, puts a poisoned guard zone after
// each output so that a write past its end fails too, uploads the inputs, calls the student's
// function on a stream of its own, synchronises, turns any CUDA error into a course::Error naming
// the student's function, checks the guards, and downloads the result. It runs inside the
// worker process (next to the student's code); the tests call it through the proxies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "course/tensor.hpp"
#include "labs/lab04_lenet_cpu.hpp"
#include "lenet_rpc.hpp"  // the one RPC registration of lab04::FoldedLeNet (grader/labs/)

namespace lab06_harness {

/// lab06::conv2d_forward on x [N,C,H,W], w [K,C,R,S], b [K]; out must be [N,K,P,Q].
void conv2d_forward(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, int pad,
                    course::Tensor& out);

/// lab06::relu_inplace on every element of data (any shape, at least one element).
void relu_inplace(course::Tensor& data);

/// lab06::max_pool2d on x [N,C,H,W]; out must be [N,C,(H-window)/stride+1,(W-window)/stride+1].
void max_pool2d(const course::Tensor& x, int window, int stride, course::Tensor& out);

/// lab06::linear_forward on x [N,IN], w [OUT,IN], b [OUT]; out must be [N,OUT].
void linear_forward(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, course::Tensor& out);

/// lab06::argmax_rows on logits [N,K]; returns the N labels.
std::vector<int> argmax_rows(const course::Tensor& logits);

/// A lab06::NaiveLeNet for batches of up to max_batch images classifies images [N,1,28,28] in
/// consecutive batches of max_batch (the last one may be smaller): logits must be [N,10];
/// labels receives the N predicted classes.
void lenet_forward(const lab04::FoldedLeNet& net, const course::Tensor& images, int max_batch, course::Tensor& logits,
                   std::vector<int>& labels);

/// Like lenet_forward with one batch, but NaiveLeNet::forward runs while its stream is being
/// captured into a CUDA graph (global capture mode), and the graph is then launched twice. The
/// capture fails if forward() launches on another stream, synchronises, copies or allocates, so
/// this proves that forward() only enqueues kernels on the stream it was given. Throws
/// course::Error describing what broke the capture.
void lenet_forward_captured(const lab04::FoldedLeNet& net, const course::Tensor& images, course::Tensor& logits,
                            std::vector<int>& labels);

/// Calls one of the layer functions with raw sizes, on scratch device buffers of 65,536 elements
/// (the named pointer replaced by nullptr if null_argument is not empty), so that the tests can
/// check the student's argument validation. function and sizes:
///   "conv2d_forward" {N,C,H,W,K,R,S,pad}   "relu_inplace" {count}
///   "max_pool2d" {N,C,H,W,window,stride}   "linear_forward" {N,in_features,out_features}
///   "argmax_rows" {N,classes}
/// Whatever the student throws comes back; a call that returns normally is synchronised first.
void call_with_arguments(const std::string& function, const std::vector<int>& sizes, const std::string& null_argument);

/// Builds a lab06::NaiveLeNet(net, max_batch) and calls forward() once with n images of zeros
/// (buffers for max(n, 1) images; the pointer named by null_argument -- "d_images", "d_logits" or
/// "d_labels" -- replaced by nullptr if not empty), for the tests of the pipeline's validation.
void call_lenet_with_arguments(const lab04::FoldedLeNet& net, int max_batch, int n, const std::string& null_argument);

/// The speed gate (grader/testkit/gpu_speed.hpp, grader/labs/gpu_timing_session.hpp): builds one
/// lab06::NaiveLeNet for batches of the pool's size and uploads the pool of real images the rounds
/// are made from, kept until the next timing_prepare.
void timing_prepare(const lab04::FoldedLeNet& net, const course::Tensor& pool, int forwards);
/// One round of the speed gate (grader/labs/gpu_timing_session.hpp): R = `forwards` calls of the
/// prepared pipeline on R batches made on the GPU from `nonce` (`run` false: the same round
/// without the calls, its fixed cost). Every call's logits [R*N,10] and then labels [R*N] are left
/// in the region shared with the test program (grader/rpc/frames.hpp, kWorkerSharedFd); event_ms:
/// the harness's CUDA-event time of each call (information only, never a verdict).
void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms);

}  // namespace lab06_harness
