// Lab 08's trusted harness (parts A and B): host-tensor versions of the student's device-pointer
// functions, in the worker next to the student's code, called by the tests through the proxies.
//
// Like lab 06's: each function checks its host tensors, uploads the inputs (with a NaN guard
// after each), fills every device output with NaN and puts a poisoned guard zone after it, calls
// the student's launcher on a stream of its own, synchronises, turns any CUDA error into a
// course::Error naming the student's function, checks that the inputs are unchanged and the
// guards untouched, and downloads the output. The convolution's workspace is poisoned too (its
// contents on entry are garbage by contract) and has a guard zone of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "course/tensor.hpp"

namespace lab08_harness {

/// lab08::depthwise_conv3x3 on x [N,C,H,W], w [C,1,3,3], b [C]; out must be
/// [N,C,(H-1)/stride+1,(W-1)/stride+1].
void depthwise_conv3x3(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, int stride,
                       bool relu6, course::Tensor& out);

/// lab08::im2col on x [N,C,H,W]; columns must be [C*R*S, N*P*Q].
void im2col(const course::Tensor& x, int R, int S, int pad, int stride, course::Tensor& columns);

/// lab08::sgemm on a [M,K], b [K,N], bias [M] or empty (then d_bias = nullptr); c must be [M,N].
void sgemm(const course::Tensor& a, const course::Tensor& b, const course::Tensor& bias, course::Tensor& c);

/// lab08::conv2d_im2col_gemm on x [N,C,H,W], w [K,C,R,S], b [K]; out must be [N,K,P,Q]. The
/// workspace is exactly what lab08::conv2d_im2col_gemm_workspace asks for (its byte count comes
/// back in workspace_bytes), poisoned with NaN and followed by a guard zone.
void conv2d_im2col_gemm(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, int pad, int stride,
                        course::Tensor& out, std::uint64_t& workspace_bytes);

/// Part B, Winograd F(2x2, 3x3) (T = N * ((H + 1) / 2) * ((W + 1) / 2) tiles):
/// lab08::winograd_filter_transform on w [K,C,3,3]; u must be [16,K,C].
void winograd_filter_transform(const course::Tensor& w, course::Tensor& u);
/// lab08::winograd_input_transform on x [N,C,H,W]; v must be [16,C,T].
void winograd_input_transform(const course::Tensor& x, course::Tensor& v);
/// lab08::winograd_batched_multiply on u [16,K,C], v [16,C,T]; m must be [16,K,T].
void winograd_batched_multiply(const course::Tensor& u, const course::Tensor& v, course::Tensor& m);
/// lab08::winograd_output_transform on m [16,K,T] for an N x K x H x W output, bias [K] or empty
/// (then d_bias = nullptr); out must be [N,K,H,W].
void winograd_output_transform(const course::Tensor& m, const course::Tensor& bias, int N, int H, int W,
                               course::Tensor& out);
/// lab08::conv2d_winograd on x [N,C,H,W], w [K,C,3,3], b [K]; out must be [N,K,H,W]. The workspace
/// is exactly what lab08::conv2d_winograd_workspace asks for (its byte count comes back in
/// workspace_bytes), poisoned with NaN and followed by a guard zone.
void conv2d_winograd(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, course::Tensor& out,
                     std::uint64_t& workspace_bytes);

/// Calls one of the student's functions with raw sizes on scratch device buffers of 65,536
/// floats (the pointer named by null_argument replaced by nullptr if not empty), so that the
/// tests can check the argument validation. function and sizes:
///   "depthwise_conv3x3" {N,C,H,W,stride,relu6}     "im2col" {N,C,H,W,R,S,pad,stride}
///   "sgemm" {M,N,K}                                "conv2d_im2col_gemm_workspace" {N,C,H,W,R,S,pad,stride}
///   "conv2d_im2col_gemm" {N,C,H,W,K,R,S,pad,stride,short_by}: workspace_bytes is what
///     conv2d_im2col_gemm_workspace returns minus short_by (when that function itself rejects the
///     sizes, a scratch buffer's size, so that conv2d_im2col_gemm must reject them on its own).
///   "winograd_filter_transform" {K,C}              "winograd_input_transform" {N,C,H,W}
///   "winograd_batched_multiply" {K,C,T}            "winograd_output_transform" {N,K,H,W}
///   "conv2d_winograd_workspace" {N,C,H,W,K}
///   "conv2d_winograd" {N,C,H,W,K,short_by}: the workspace as for conv2d_im2col_gemm.
/// Whatever the student throws comes back; a call that returns normally is synchronised first.
void call_with_arguments(const std::string& function, const std::vector<int>& sizes, const std::string& null_argument);

}  // namespace lab08_harness
