// The convolutions' weights and biases in __constant__ memory, for rungs 04-06 (each rung's file
// includes this header and so gets its own copy: the arrays have internal linkage).
//
// Why constant memory: all lanes of a warp that compute the same output channel read the same
// weight at the same time; the constant cache serves that as one broadcast, and with the tap
// indices known at compile time the weight becomes an operand of the FMA instead of a load.
// 2,572 floats (10.3 KB) of the 64 KB a program may declare.
#pragma once

#include <cuda_runtime_api.h>

#include "course/cuda_check.hpp"
#include "labs/lab04_lenet_cpu.hpp"
#include "rung_support.hpp"

namespace {

__constant__ float c_conv1_w[6 * 1 * 5 * 5];  // KCRS
__constant__ float c_conv1_b[6];
__constant__ float c_conv2_w[16 * 6 * 5 * 5];  // KCRS
__constant__ float c_conv2_b[16];

/// Copies the folded convolutions into the constant arrays above (shapes checked first). A host
/// operation: in prepare(), never in forward().
void upload_conv_weights_to_constant(const lab04::FoldedLeNet& net) {
  ladder::support::DeviceWeights::check_shapes(net);
  CUDA_CHECK(cudaMemcpyToSymbol(c_conv1_w, net.conv1_weight.data(), sizeof(c_conv1_w)));
  CUDA_CHECK(cudaMemcpyToSymbol(c_conv1_b, net.conv1_bias.data(), sizeof(c_conv1_b)));
  CUDA_CHECK(cudaMemcpyToSymbol(c_conv2_w, net.conv2_weight.data(), sizeof(c_conv2_w)));
  CUDA_CHECK(cudaMemcpyToSymbol(c_conv2_b, net.conv2_bias.data(), sizeof(c_conv2_b)));
}

}  // namespace
