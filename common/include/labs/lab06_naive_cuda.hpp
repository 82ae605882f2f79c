// Lab 06 interface: a naive CUDA LeNet -- one thread per output element, one kernel per layer,
// a whole batch of images per launch.
//
// The lecture is lectures/06-naive-cuda.md; the task is exercises/lab06_naive_cuda/README.md.
// Exercises and solutions both implement exactly these functions (conv2d.cu, layers.cu,
// naive_lenet.cu).
//
// Conventions (the same as the CPU labs, but every pointer is a DEVICE pointer, d_ prefix):
//  - activations are NCHW float32, convolution weights KCRS, linear weights [out, in] (PyTorch);
//  - outputs are allocated by the caller and may hold garbage (the tests fill them with NaN), so
//    every element must be written;
//  - every launcher enqueues its kernel on `stream` and on no other stream, checks the launch
//    with CUDA_CHECK_LAST_LAUNCH() (course/cuda_check.hpp) and returns WITHOUT synchronising:
//    the caller decides when to wait. No cudaDeviceSynchronize and no cudaMemcpy inside a layer;
//  - invalid arguments are reported by throwing course::Error whose message names the argument
//    ("d_input", "N", "pad", ...), BEFORE anything is launched;
//  - every size is an int >= 1, and a tensor may hold at most INT_MAX elements (so that a flat
//    int index reaches all of them); a larger one is rejected naming the tensor ("output too
//    large", "input too large").
#pragma once

#include <cuda_runtime_api.h>

#include "course/device_buffer.hpp"
#include "labs/lab04_lenet_cpu.hpp"

namespace lab06 {

// ---------------------------------------------------------------------------------------------
// conv2d.cu
// ---------------------------------------------------------------------------------------------

/// Convolution with stride 1 and the same zero padding `pad` on all four sides, bias added:
///   output[n,k,p,q] = bias[k] + sum_{c,r,s} weight[k,c,r,s] * input[n,c,p-pad+r,q-pad+s]
/// where input values outside the image count as 0.
/// d_input [N,C,H,W]; d_weight [K,C,R,S]; d_bias [K]; d_output [N,K,P,Q] with
/// P = H + 2*pad - R + 1 and Q = W + 2*pad - S + 1. One thread computes one output element.
///
/// Throws course::Error when: a pointer is null ("d_input", "d_weight", "d_bias", "d_output");
/// a size is < 1 ("N", "C", "H", "W", "K", "R", "S"); pad < 0 ("pad"); the kernel is larger than
/// the padded input, so P or Q would be < 1 ("kernel larger than the padded input"); the input or
/// the weight or the output holds more than INT_MAX elements ("too large").
void conv2d_forward(const float* d_input, const float* d_weight, const float* d_bias, float* d_output, int N, int C,
                    int H, int W, int K, int R, int S, int pad, cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// layers.cu
// ---------------------------------------------------------------------------------------------

/// data[i] = max(data[i], 0) for i < count, in place. Kept as its own kernel on purpose: lab 07
/// measures what fusing it into the layer before saves.
/// Throws course::Error when d_data is null ("d_data") or count < 1 ("count").
void relu_inplace(float* d_data, int count, cudaStream_t stream);

/// Max pooling without padding: a window x window window moved by `stride`,
///   output[n,c,p,q] = max over (i,j) in [0,window)^2 of input[n,c,p*stride+i,q*stride+j]
/// d_input [N,C,H,W]; d_output [N,C,P,Q] with P = (H - window) / stride + 1 and
/// Q = (W - window) / stride + 1 (integer division: rows or columns that do not fill a whole
/// window are dropped, as in PyTorch). LeNet uses window 2, stride 2.
/// Throws course::Error when: a pointer is null ("d_input", "d_output"); a size is < 1 ("N",
/// "C", "H", "W", "window", "stride"); the window is larger than the input ("window larger than
/// the input"); the input holds more than INT_MAX elements ("too large").
void max_pool2d(const float* d_input, float* d_output, int N, int C, int H, int W, int window, int stride,
                cudaStream_t stream);

/// Fully connected layer, one thread per output element:
///   output[n,o] = bias[o] + sum_i input[n,i] * weight[o,i]
/// d_input [N, in_features]; d_weight [out_features, in_features]; d_bias [out_features];
/// d_output [N, out_features]. A 4-D activation [N,C,H,W] is already [N, C*H*W] in memory.
/// Throws course::Error when: a pointer is null ("d_input", "d_weight", "d_bias", "d_output");
/// a size is < 1 ("N", "in_features", "out_features"); a tensor holds more than INT_MAX
/// elements ("too large").
void linear_forward(const float* d_input, const float* d_weight, const float* d_bias, float* d_output, int N,
                    int in_features, int out_features, cudaStream_t stream);

/// The predicted class of every row of d_logits [N, classes]: labels[n] = the index of the row's
/// largest value; on a tie the LOWEST index wins (like torch.argmax). One thread per row.
/// The rows are finite (the network's logits are); NaN handling is not specified.
/// Throws course::Error when: a pointer is null ("d_logits", "d_labels"); N < 1 ("N");
/// classes < 1 ("classes"); d_logits holds more than INT_MAX elements ("too large").
void argmax_rows(const float* d_logits, int* d_labels, int N, int classes, cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// naive_lenet.cu
// ---------------------------------------------------------------------------------------------

/// LeNet-5 with both batch-norms already folded (lab04::FoldedLeNet), on the GPU:
///   conv1 (pad 2, +bias) -> ReLU -> maxpool 2 -> conv2 (+bias) -> ReLU -> maxpool 2
///   -> fc1 -> ReLU -> fc2 -> ReLU -> fc3 -> logits -> argmax
/// built from the launchers above, one kernel per step. The constructor uploads the weights once
/// and allocates every intermediate activation once, for batches of up to max_batch images;
/// forward() then only launches kernels (no allocation, no copy, no synchronisation).
class NaiveLeNet {
 public:
  /// Checks every tensor of host_net against LeNet's shapes (course/lenet.hpp) and throws
  /// course::Error naming the first wrong one ("conv1_weight", "conv1_bias", ..., "fc3_bias");
  /// throws when max_batch < 1 or so large that an activation would hold more than INT_MAX
  /// elements ("max_batch"). Then uploads the weights and allocates the activations for
  /// max_batch images.
  NaiveLeNet(const lab04::FoldedLeNet& host_net, int max_batch);

  /// Classifies n images: d_images [n,1,28,28] -> d_logits [n,10] and d_labels [n] (argmax),
  /// all device pointers. Enqueues everything on `stream` and returns without waiting.
  /// Throws course::Error when a pointer is null ("d_images", "d_logits", "d_labels") or n is not
  /// in [1, max_batch()] ("n"; for n > max_batch() the message also says "max_batch").
  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream);

  int max_batch() const { return max_batch_; }

 private:
  int max_batch_ = 0;
  // Folded weights, uploaded once by the constructor.
  course::DeviceBuffer<float> conv1_weight_, conv1_bias_, conv2_weight_, conv2_bias_;
  course::DeviceBuffer<float> fc1_weight_, fc1_bias_, fc2_weight_, fc2_bias_, fc3_weight_, fc3_bias_;
  // Activations for max_batch images, allocated once and reused by every forward():
  // conv1 [B,6,28,28] -> pool1 [B,6,14,14] -> conv2 [B,16,10,10] -> pool2 [B,16,5,5] = [B,400]
  // -> fc1 [B,120] -> fc2 [B,84].
  course::DeviceBuffer<float> conv1_out_, pool1_out_, conv2_out_, pool2_out_, fc1_out_, fc2_out_;
};

}  // namespace lab06
