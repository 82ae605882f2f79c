// Lab 01 -- direct convolution on the CPU (stride 1, no padding), NCHW activations, KCRS weights.
//
// The lecture is lectures/01-convolution.md; the task is exercises/lab01_conv2d/README.md.
// Both the exercise skeleton and the solution implement exactly these functions; the grader's
// tests call them and compare with an independent golden reference.
//
// Conventions (the same as PyTorch's F.conv2d with stride 1 and padding 0; the letters are the
// course's notation, lectures/notation.md):
//   input  [N, C, H, W]   N images, C input channels, H rows, W columns (row-major, W fastest)
//   weight [K, C, R, S]   K filters, each C channels of R rows by S columns
//   bias   [K]            one number per output channel
//   output [N, K, P, Q]   P = H - R + 1 output rows, Q = W - S + 1 output columns
//
//   output[n][k][p][q] = bias[k] + sum over c, r, s of input[n][c][p + r][q + s] * weight[k][c][r][s]
//
// This is cross-correlation (the kernel is NOT flipped), which is what every deep-learning
// framework calls "convolution". Lab 02 adds padding, stride and dilation.
#pragma once

#include "course/tensor.hpp"

namespace lab01 {

/// The shape of conv2d_forward's output for an input of shape [N, C, H, W] and a weight of shape
/// [K, C, R, S]: [N, K, P, Q] with P = H - R + 1 and Q = W - S + 1.
///
/// Throws course::Error, with a message naming the argument and the problem, when:
///   - the input or the weight is not 4-D (message names "input" or "weight");
///   - an extent is not positive: N, C, H, W, K, R, S must all be at least 1 (names the tensor);
///   - the input's C differs from the weight's C (message mentions "channels");
///   - the kernel is taller (R > H) or wider (S > W) than the input, so no output position fits
///     (message mentions "kernel").
course::Shape conv2d_output_shape(const course::Shape& input, const course::Shape& weight);

/// Direct convolution with bias, stride 1 and no padding:
///   output[n][k][p][q] = bias[k] + sum_{c,r,s} input[n][c][p+r][q+s] * weight[k][c][r][s].
///
/// `output` must already have the shape conv2d_output_shape(input.shape(), weight.shape()); every
/// element of it is overwritten (its previous contents, NaN for example, must not matter).
/// `bias` has shape [K].
///
/// Throws course::Error for every problem conv2d_output_shape reports, and when `bias` or
/// `output` has the wrong shape; the message names the tensor ("bias", "output"), the expected
/// and the actual shape, e.g. "conv2d output: expected shape [1, 4, 6, 6], got [1, 4, 6, 5]".
void conv2d_forward(const course::Tensor& input, const course::Tensor& weight, const course::Tensor& bias,
                    course::Tensor& output);

}  // namespace lab01
