// Lab 08 interface: convolution algorithms for real networks -- the depthwise 3x3 convolution of
// MobileNetV2, im2col, a tiled SGEMM, and the convolution as im2col + GEMM (part A); the 3x3
// convolution by Winograd's F(2x2, 3x3) (part B); the inverted residual block and the whole
// MobileNetV2 (part C).
//
// The lecture is lectures/08-conv-algorithms.md; the task is exercises/lab08_conv_algorithms/README.md.
// Exercises and solutions both implement exactly these functions (depthwise.cu, im2col_gemm.cu,
// winograd.cu, inverted_residual.cu, mobilenet.cu).
//
// Conventions (lab 06's): every pointer is a DEVICE pointer (d_ prefix);
//  - activations are NCHW float32, convolution weights KCRS, matrices row-major;
//  - outputs are allocated by the caller and may hold garbage (the tests fill them with NaN), so
//    every element must be written; inputs are const and must not be changed;
//  - every launcher enqueues its kernels on `stream` and on no other stream, checks each launch
//    with CUDA_CHECK_LAST_LAUNCH() (course/cuda_check.hpp) and returns WITHOUT synchronising;
//    no cudaMalloc, cudaMemcpy or synchronisation inside;
//  - invalid arguments are reported by throwing course::Error whose message names the argument
//    ("d_input", "N", "stride", "workspace", ...), BEFORE anything is launched;
//  - every size is an int >= 1, and a tensor may hold at most INT_MAX elements (so that a flat
//    int index reaches all of them); a larger one is rejected with a message containing
//    "too large" (e.g. "output too large for int indexing").
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "course/device_buffer.hpp"
#include "labs/lab08_mobilenet_weights.hpp"

namespace lab08 {

// ---------------------------------------------------------------------------------------------
// depthwise.cu
// ---------------------------------------------------------------------------------------------

/// Depthwise 3x3 convolution, zero padding 1 on every side, stride 1 or 2: every channel has its
/// own 3x3 filter and output channel c reads input channel c only,
///   output[n,c,p,q] = bias[c] + sum_{r,s in 0..2} weight[c,0,r,s] * input[n,c,p*stride-1+r,q*stride-1+s]
/// (input values outside the image count as 0), then, if relu6, clamped to [0, 6] (MobileNetV2's
/// activation after its depthwise layers).
/// d_input [N,C,H,W]; d_weight [C,1,3,3] (PyTorch's layout for groups = C); d_bias [C];
/// d_output [N,C,P,Q] with P = (H - 1) / stride + 1 and Q = (W - 1) / stride + 1.
///
/// Throws course::Error when: a pointer is null ("d_input", "d_weight", "d_bias", "d_output");
/// a size is < 1 ("N", "C", "H", "W"); stride is not 1 or 2 ("stride"); the input holds more
/// than INT_MAX elements ("too large").
void depthwise_conv3x3(const float* d_input, const float* d_weight, const float* d_bias, float* d_output, int N,
                       int C, int H, int W, int stride, bool relu6, cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// im2col_gemm.cu
// ---------------------------------------------------------------------------------------------

/// im2col: unrolls every R x S window of the zero-padded input into one column of a matrix, so that
/// a convolution becomes one matrix product. With P = (H + 2*pad - R) / stride + 1 and
/// Q = (W + 2*pad - S) / stride + 1, d_columns is the row-major matrix [C*R*S, N*P*Q]:
///   columns[(c*R + r)*S + s][(n*P + p)*Q + q] = input[n, c, p*stride - pad + r, q*stride - pad + s]
/// and 0 where that input position lies in the padding.
/// d_input [N,C,H,W]; d_columns [C*R*S, N*P*Q].
///
/// Throws course::Error when: a pointer is null ("d_input", "d_columns"); a size is < 1 ("N",
/// "C", "H", "W", "R", "S", "stride"); pad < 0 ("pad"); the kernel is larger than the padded
/// input, so P or Q would be < 1 ("kernel larger than the padded input"); the input or the column
/// matrix holds more than INT_MAX elements ("too large").
void im2col(const float* d_input, float* d_columns, int N, int C, int H, int W, int R, int S, int pad, int stride,
            cudaStream_t stream);

/// Single-precision matrix product with a bias per row, all matrices row-major and contiguous:
///   C[m][n] = sum_k A[m][k] * B[k][n]  (+ bias[m] when d_bias is not null)
/// d_A [M,K]; d_B [K,N]; d_bias [M] or nullptr; d_C [M,N]. Any M, N, K >= 1 (not only multiples
/// of a tile). d_C must not overlap d_A, d_B or d_bias.
///
/// Throws course::Error when: d_A, d_B or d_C is null ("d_A", "d_B", "d_C"); a size is < 1
/// ("M", "N", "K"); A, B or C holds more than INT_MAX elements ("too large").
void sgemm(int M, int N, int K, const float* d_A, const float* d_B, const float* d_bias, float* d_C,
           cudaStream_t stream);

/// The bytes of device scratch memory conv2d_im2col_gemm needs for these sizes (0 if it needs
/// none). What it counts is your design's choice (the reference: the column matrix of the whole
/// batch, C*R*S x N*P*Q floats, and nothing for a 1x1 convolution with pad 0 and stride 1, whose
/// input already is its column matrix); conv2d_im2col_gemm must then work with any workspace of
/// at least this many bytes (and with any other K). Throws course::Error on the same invalid sizes
/// as conv2d_im2col_gemm (named the same way), so it never returns a size for an impossible call.
std::size_t conv2d_im2col_gemm_workspace(int N, int C, int H, int W, int R, int S, int pad, int stride);

/// Convolution as im2col + GEMM, with zero padding `pad` on all four sides and `stride` in both
/// directions, bias added:
///   output[n,k,p,q] = bias[k] + sum_{c,r,s} weight[k,c,r,s] * input[n,c,p*stride-pad+r,q*stride-pad+s]
/// d_input [N,C,H,W]; d_weight [K,C,R,S] (= the row-major matrix [K, C*R*S]); d_bias [K];
/// d_output [N,K,P,Q] (NCHW, P and Q as for im2col). d_workspace: scratch device memory of
/// workspace_bytes bytes (its contents on entry are garbage; it may be null when
/// conv2d_im2col_gemm_workspace returns 0).
///
/// Throws course::Error when: a pointer is null ("d_input", "d_weight", "d_bias", "d_output";
/// "d_workspace" when a workspace is needed); a size is < 1 ("N", "C", "H", "W", "K", "R", "S",
/// "stride"); pad < 0 ("pad"); the kernel is larger than the padded input ("kernel larger than
/// the padded input"); workspace_bytes is smaller than conv2d_im2col_gemm_workspace(...)
/// ("workspace too small"); the input, the weight, the output or the column matrix holds more
/// than INT_MAX elements ("too large").
void conv2d_im2col_gemm(const float* d_input, const float* d_weight, const float* d_bias, float* d_output,
                        void* d_workspace, std::size_t workspace_bytes, int N, int C, int H, int W, int K, int R,
                        int S, int pad, int stride, cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// winograd.cu -- part B: the 3x3 convolution, pad 1, stride 1, by Winograd's F(2x2, 3x3)
// (lecture section 5). With
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
// a 2x2 block of outputs Y of one output channel is A^T [ sum_c (G g_kc G^T) (.) (B^T d_c B) ] A,
// d_c the 4x4 input patch of channel c under the block. The output of a 3x3 convolution with pad 1
// and stride 1 has the input's size, P = H and Q = W; it is cut into tiles of 2x2 outputs,
//   tiles_h = (H + 1) / 2,  tiles_w = (W + 1) / 2,  T = N * tiles_h * tiles_w,
// numbered t = (n * tiles_h + th) * tiles_w + tw. Tile (th, tw) covers output rows 2*th, 2*th+1
// and columns 2*tw, 2*tw+1 (the second row or column lies outside the output when H or W is odd),
// and its input patch d is input rows 2*th - 1 .. 2*th + 2, columns 2*tw - 1 .. 2*tw + 2, zeros
// outside the image. The 16 positions of a 4x4 transform are numbered xi = 4*i + j (row i,
// column j); each transformed tensor stores position xi's values as one contiguous matrix, so that
// the element-wise stage is 16 independent matrix products.
// ---------------------------------------------------------------------------------------------

/// Filter transform: U = G g G^T for every filter g = weight[k, c] (3x3), stored position-major:
///   U[xi][k][c] = (G weight[k,c] G^T)[i][j],  xi = 4*i + j,
/// i.e. 16 row-major [K x C] matrices. d_weight [K,C,3,3]; d_U [16,K,C].
///
/// Throws course::Error when: a pointer is null ("d_weight", "d_U"); a size is < 1 ("K", "C");
/// U holds more than INT_MAX elements ("too large").
void winograd_filter_transform(const float* d_weight, float* d_U, int K, int C, cudaStream_t stream);

/// Input transform: V = B^T d B for every channel c and tile t (d: the tile's 4x4 input patch of
/// channel c, zeros outside the image), stored
///   V[xi][c][t] = (B^T d B)[i][j],  xi = 4*i + j,
/// i.e. 16 row-major [C x T] matrices. d_input [N,C,H,W]; d_V [16,C,T].
///
/// Throws course::Error when: a pointer is null ("d_input", "d_V"); a size is < 1 ("N", "C",
/// "H", "W"); the input or V holds more than INT_MAX elements ("too large").
void winograd_input_transform(const float* d_input, float* d_V, int N, int C, int H, int W, cudaStream_t stream);

/// The element-wise stage as 16 matrix products, one per position xi:
///   M[xi] [K x T] = U[xi] [K x C] * V[xi] [C x T],  i.e.  M[xi][k][t] = sum_c U[xi][k][c] * V[xi][c][t].
/// d_U [16,K,C]; d_V [16,C,T]; d_M [16,K,T]. Any K, C, T >= 1 (not only multiples of a tile).
/// d_M must not overlap d_U or d_V.
///
/// Throws course::Error when: a pointer is null ("d_U", "d_V", "d_M"); a size is < 1 ("K", "C",
/// "T"); U, V or M holds more than INT_MAX elements ("too large").
void winograd_batched_multiply(const float* d_U, const float* d_V, float* d_M, int K, int C, int T,
                               cudaStream_t stream);

/// Output transform: for every output channel k and tile t = (n, th, tw), the 2x2 block
///   Y = A^T m A + bias[k],  m[i][j] = M[4*i + j][k][t],
/// written to output[n, k, 2*th + a, 2*tw + b] for a, b in {0, 1} -- only the outputs inside the
/// H x W output (an odd H or W leaves the last tile's second row or column out). The tiles are
/// those of an N x ? x H x W input (T = N * ((H + 1) / 2) * ((W + 1) / 2)).
/// d_M [16,K,T]; d_bias [K] or nullptr (no bias); d_output [N,K,H,W].
///
/// Throws course::Error when: d_M or d_output is null ("d_M", "d_output"); a size is < 1 ("N",
/// "K", "H", "W"); M or the output holds more than INT_MAX elements ("too large").
void winograd_output_transform(const float* d_M, const float* d_bias, float* d_output, int N, int K, int H, int W,
                               cudaStream_t stream);

/// The bytes of device scratch memory conv2d_winograd needs: the reference keeps U, V and M there,
/// (16*K*C + 16*C*T + 16*K*T) floats. Throws course::Error on the same invalid sizes as
/// conv2d_winograd (named the same way), so it never returns a size for an impossible call.
std::size_t conv2d_winograd_workspace(int N, int C, int H, int W, int K);

/// The 3x3 convolution with zero padding 1 and stride 1, bias added, by F(2x2, 3x3):
///   output[n,k,p,q] = bias[k] + sum_{c,r,s} weight[k,c,r,s] * input[n,c,p-1+r,q-1+s]
/// i.e. the filter transform, the input transform, the 16 products and the output transform in
/// turn. (Real inference transforms the filters once per model, not on every call; here the
/// filter transform is part of the call so that the function is a complete convolution.)
/// d_input [N,C,H,W]; d_weight [K,C,3,3]; d_bias [K]; d_output [N,K,H,W]. d_workspace: scratch
/// device memory of workspace_bytes bytes (garbage on entry).
///
/// Throws course::Error when: a pointer is null ("d_input", "d_weight", "d_bias", "d_output",
/// "d_workspace"); a size is < 1 ("N", "C", "H", "W", "K"); workspace_bytes is smaller than
/// conv2d_winograd_workspace(...) ("workspace too small"); the input, the weight, the output, U,
/// V or M holds more than INT_MAX elements ("too large").
void conv2d_winograd(const float* d_input, const float* d_weight, const float* d_bias, float* d_output,
                     void* d_workspace, std::size_t workspace_bytes, int N, int C, int H, int W, int K,
                     cudaStream_t stream);

// =============================================================================================
// Part C: the inverted residual block and the whole MobileNetV2 (inverted_residual.cu,
// mobilenet.cu). The folded host weights are lab08::FoldedBlock / lab08::FoldedMobileNet
// (labs/lab08_mobilenet_weights.hpp).
// =============================================================================================

// ---------------------------------------------------------------------------------------------
// inverted_residual.cu
// ---------------------------------------------------------------------------------------------

/// One folded inverted residual block's parameters, all DEVICE pointers (batch-norm folded in,
/// see lab08_mobilenet_weights.hpp):
struct InvertedResidualWeights {
  const float* expand_weight = nullptr;     ///< [hidden, in]; must be nullptr when hidden == in
  const float* expand_bias = nullptr;       ///< [hidden];     must be nullptr when hidden == in
  const float* depthwise_weight = nullptr;  ///< [hidden, 1, 3, 3]
  const float* depthwise_bias = nullptr;    ///< [hidden]
  const float* project_weight = nullptr;    ///< [out, hidden]
  const float* project_bias = nullptr;      ///< [out]
};

/// The bytes of device scratch memory inverted_residual_block needs for these sizes (0 if it
/// needs none; a fully fused block needs none). Throws course::Error on the same invalid sizes as
/// inverted_residual_block, named the same way.
std::size_t inverted_residual_workspace(int N, int in, int hidden, int out, int H, int W, int stride);

/// MobileNetV2's inverted residual block, batch-norm folded, on d_input [N,in,H,W]:
///   e = relu6(expand_weight * x + expand_bias)          1x1, only when hidden != in (else e = x)
///   d = relu6(depthwise3x3(e, stride, pad 1) + depthwise_bias)     -> [N,hidden,P,Q]
///   y = project_weight * d + project_bias                1x1, linear (no activation)
///   y += x                                               only when stride == 1 and in == out
/// with relu6(v) = min(max(v, 0), 6), P = (H - 1) / stride + 1, Q = (W - 1) / stride + 1;
/// d_output [N,out,P,Q] must not overlap d_input. d_workspace: scratch device memory of
/// workspace_bytes bytes (garbage on entry; may be null when inverted_residual_workspace is 0).
///
/// Throws course::Error when: d_input or d_output is null ("d_input", "d_output"); a weight
/// pointer the block needs is null ("depthwise_weight", "depthwise_bias", "project_weight",
/// "project_bias", and "expand_weight", "expand_bias" when hidden != in); an expand pointer is
/// given although hidden == in ("expand_weight" / "expand_bias": a t = 1 block has none); a size
/// is < 1 ("N", "in", "hidden", "out", "H", "W"); stride is not 1 or 2 ("stride"); the workspace
/// is null although needed ("d_workspace") or smaller than inverted_residual_workspace(...)
/// ("workspace too small"); the input, the expanded tensor [N,hidden,H,W], the output or a
/// weight holds more than INT_MAX elements ("too large").
void inverted_residual_block(const InvertedResidualWeights& weights, const float* d_input, float* d_output, int N,
                             int in, int hidden, int out, int H, int W, int stride, void* d_workspace,
                             std::size_t workspace_bytes, cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// mobilenet.cu
// ---------------------------------------------------------------------------------------------

/// The course's MobileNetV2 (course/mobilenet.hpp), batch-norm folded, on the GPU:
///   stem conv 3x3 1->16 pad 1 (+bias) -> ReLU6 -> the 7 blocks (inverted_residual_block)
///   -> head 1x1 64->256 (+bias) -> ReLU6 -> global average pool over 7x7 -> linear 256->10.
/// The constructor uploads the weights and allocates every activation and workspace once, for
/// batches of up to max_batch images; forward() then only launches kernels on its stream (no
/// allocation, no copy, no synchronisation: it is recorded as a CUDA graph by the tests).
class MobileNetV2 {
 public:
  /// Checks every tensor of net against the network's shapes (course::mobilenet::blocks() for
  /// the blocks) and throws course::Error naming the first wrong one ("stem_weight",
  /// "stem_bias", "blocks" for a wrong count, "blocks[i].expand_weight", ...,
  /// "blocks[i].project_bias", "head_weight", "head_bias", "classifier_weight",
  /// "classifier_bias"); throws when max_batch < 1 or so large that an activation would hold more
  /// than INT_MAX elements ("max_batch"). Then uploads and allocates.
  MobileNetV2(const FoldedMobileNet& net, int max_batch);

  /// d_images [n,1,28,28] -> d_logits [n,10], device pointers, enqueued on `stream`.
  /// Throws course::Error when a pointer is null ("d_images", "d_logits") or n is not in
  /// [1, max_batch()] ("n"; for n > max_batch() the message also says "max_batch").
  void forward(const float* d_images, int n, float* d_logits, cudaStream_t stream);

  int max_batch() const { return max_batch_; }

 private:
  int max_batch_ = 0;
  // The design's choice: one buffer per uploaded weight tensor, in the order the constructor
  // chooses, and as many activation and scratch buffers as the forward pass needs.
  std::vector<course::DeviceBuffer<float>> weights_;
  std::vector<course::DeviceBuffer<float>> activations_;
  course::DeviceBuffer<unsigned char> workspace_;
};

}  // namespace lab08
