// Lab 07's trusted harness: host-tensor versions of lab07::FastLeNet's device-pointer interface.
//
// As in lab 06 (grader/labs/lab06_naive_cuda/lab06_harness.hpp), GPU pointers cannot travel
// between processes, so the tests call these functions through the proxies; they run in the
// worker next to the student's code. Each validates its host tensors, uploads the inputs, poisons
// every device output (NaN, or -1 for labels) with a poisoned guard zone after it, calls the
// student's pipeline on a stream of its own, synchronises, turns any CUDA error into a
// course::Error naming lab07::FastLeNet, checks the guards and downloads the result.
//
// At most one FastLeNet exists at a time (the contract lets the student keep the weights in
// __constant__ memory, which belongs to the whole program): every function here that builds one
// first destroys the speed gate's (see timing_prepare).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "course/tensor.hpp"
#include "labs/lab04_lenet_cpu.hpp"
#include "lenet_rpc.hpp"  // the one RPC registration of lab04::FoldedLeNet (grader/labs/)

namespace lab07_harness {

/// A lab07::FastLeNet(net, max_batch) classifies images [N,1,28,28] in consecutive batches of
/// max_batch (the last one may be smaller), all enqueued back to back: logits must be [N,10];
/// labels receives the N predicted classes.
void lenet_forward(const lab04::FoldedLeNet& net, const course::Tensor& images, int max_batch, course::Tensor& logits,
                   std::vector<int>& labels);

/// Like lenet_forward with one batch of all the images, but FastLeNet::forward runs while its
/// stream is being captured into a CUDA graph (global capture mode), and the graph is launched
/// twice with the outputs poisoned in between. Proves that forward() only enqueues work on the
/// stream it is given (no allocation, copy, synchronisation or other stream); throws
/// course::Error describing what broke the capture.
void lenet_forward_captured(const lab04::FoldedLeNet& net, const course::Tensor& images, course::Tensor& logits,
                            std::vector<int>& labels);

/// Builds a lab07::FastLeNet(net, max_batch) and calls forward() once with n images of zeros
/// (buffers for max(n, 1) images; the pointer named by null_argument -- "d_images", "d_logits" or
/// "d_labels" -- replaced by nullptr if not empty), for the tests of the argument validation.
/// Whatever the student throws comes back; a call that returns normally is synchronised first.
void call_lenet_with_arguments(const lab04::FoldedLeNet& net, int max_batch, int n, const std::string& null_argument);

/// The speed gate (grader/testkit/gpu_speed.hpp, grader/labs/gpu_timing_session.hpp): builds one
/// pipeline for batches of the pool's size and uploads the pool of real images the rounds are made
/// from, kept until the next timing_prepare or until another function here builds a FastLeNet.
/// `pipeline` is "student" (this worker's lab07::FastLeNet) or "naive" (the lab 06 solution's
/// NaiveLeNet, which only the reference worker contains: anywhere else it throws course::Error).
void timing_prepare(const lab04::FoldedLeNet& net, const course::Tensor& pool, const std::string& pipeline,
                    int forwards);
/// One round of the speed gate (grader/labs/gpu_timing_session.hpp): R = `forwards` calls of the
/// prepared pipeline on R batches made on the GPU from `nonce` (`run` false: the same round
/// without the calls, its fixed cost). Every call's logits [R*N,10] and then labels [R*N] are left
/// in the region shared with the test program (grader/rpc/frames.hpp, kWorkerSharedFd); event_ms:
/// the harness's CUDA-event time of each call (information only, never a verdict).
void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms);

}  // namespace lab07_harness
