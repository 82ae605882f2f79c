// Lab 08 tests, part 6: bad arguments (parts A and B). Every function must throw course::Error naming the
// argument BEFORE it launches anything. The harness calls the student's functions with these raw
// sizes on scratch buffers of 65,536 floats, or with one pointer replaced by nullptr.
//
// Last in file order on purpose (as in lab 06): a launcher that does not validate may run its
// kernel out of bounds here, and such a fault can spoil the GPU context for the tests after it.
#include <cstdint>
#include <string>
#include <vector>

#include "lab08_test_support.hpp"

namespace {

void check_call_rejects(const std::string& function, const std::vector<int>& sizes, const std::string& part,
                        const std::string& null_argument = "") {
  std::string described = function + "(";
  for (std::size_t i = 0; i < sizes.size(); ++i) described += (i ? ", " : "") + std::to_string(sizes[i]);
  described += null_argument.empty() ? ")" : ") with " + null_argument + " = nullptr";
  grader::check_rejects(described, [&] { lab08_harness::call_with_arguments(function, sizes, null_argument); }, part);
}

// Sizes of the valid calls the rejections below start from.
const std::vector<int> kDepthwise{2, 3, 9, 8, 2, 1};            // N, C, H, W, stride, relu6
const std::vector<int> kIm2col{1, 2, 8, 8, 3, 3, 1, 1};         // N, C, H, W, R, S, pad, stride
const std::vector<int> kGemm{100, 80, 60};                      // M, N, K
const std::vector<int> kWorkspace{1, 2, 8, 8, 3, 3, 1, 1};      // N, C, H, W, R, S, pad, stride
const std::vector<int> kConv{1, 2, 8, 8, 3, 3, 3, 1, 1, 0};     // N, C, H, W, K, R, S, pad, stride, short_by
// Part B (all inside the 65,536-float scratch buffers).
const std::vector<int> kWinoFilter{8, 6};                       // K, C
const std::vector<int> kWinoInput{2, 3, 9, 8};                  // N, C, H, W (T = 40)
const std::vector<int> kWinoMultiply{20, 30, 40};               // K, C, T
const std::vector<int> kWinoOutput{2, 3, 9, 8};                 // N, K, H, W
const std::vector<int> kWinoWorkspace{1, 2, 7, 8, 3};           // N, C, H, W, K
const std::vector<int> kWinoConv{1, 2, 7, 8, 3, 0};             // N, C, H, W, K, short_by

void check_sizes_rejected(const std::string& function, const std::vector<int>& ok, const std::vector<const char*>& names,
                          std::size_t first = 0) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::vector<int> bad = ok;
    bad[first + i] = i % 2 == 0 ? 0 : -1;
    check_call_rejects(function, bad, names[i]);
  }
}

}  // namespace

TEST_CASE("rejects: valid calls through the same path succeed (so the rejections below mean something)") {
  lab08_harness::call_with_arguments("depthwise_conv3x3", kDepthwise, "");
  lab08_harness::call_with_arguments("depthwise_conv3x3", {2, 3, 9, 8, 1, 0}, "");
  lab08_harness::call_with_arguments("im2col", kIm2col, "");
  lab08_harness::call_with_arguments("sgemm", kGemm, "");
  lab08_harness::call_with_arguments("sgemm", kGemm, "d_bias");  // no bias: allowed
  lab08_harness::call_with_arguments("conv2d_im2col_gemm_workspace", kWorkspace, "");
  lab08_harness::call_with_arguments("conv2d_im2col_gemm", kConv, "");
  lab08_harness::call_with_arguments("conv2d_im2col_gemm", {2, 4, 6, 6, 5, 1, 1, 0, 1, 0}, "");  // 1x1 pointwise
}

TEST_CASE("rejects: valid Winograd calls through the same path succeed") {
  lab08_harness::call_with_arguments("winograd_filter_transform", kWinoFilter, "");
  lab08_harness::call_with_arguments("winograd_input_transform", kWinoInput, "");
  lab08_harness::call_with_arguments("winograd_batched_multiply", kWinoMultiply, "");
  lab08_harness::call_with_arguments("winograd_output_transform", kWinoOutput, "");
  lab08_harness::call_with_arguments("winograd_output_transform", kWinoOutput, "d_bias");  // no bias: allowed
  lab08_harness::call_with_arguments("conv2d_winograd_workspace", kWinoWorkspace, "");
  lab08_harness::call_with_arguments("conv2d_winograd", kWinoConv, "");
}

TEST_CASE("rejects: depthwise_conv3x3 -- null pointers, sizes < 1, a stride other than 1 or 2") {
  for (const char* p : {"d_input", "d_weight", "d_bias", "d_output"}) check_call_rejects("depthwise_conv3x3", kDepthwise, p, p);
  check_sizes_rejected("depthwise_conv3x3", kDepthwise, {"N", "C", "H", "W"});
  for (int stride : {0, 3, -1, 4}) check_call_rejects("depthwise_conv3x3", {2, 3, 9, 8, stride, 1}, "stride");
}

TEST_CASE("rejects: im2col -- null pointers, sizes < 1, negative padding, stride < 1, kernel too large") {
  for (const char* p : {"d_input", "d_columns"}) check_call_rejects("im2col", kIm2col, p, p);
  check_sizes_rejected("im2col", kIm2col, {"N", "C", "H", "W", "R", "S"});
  check_call_rejects("im2col", {1, 2, 8, 8, 3, 3, -1, 1}, "pad");
  check_call_rejects("im2col", {1, 2, 8, 8, 3, 3, 1, 0}, "stride");
  check_call_rejects("im2col", {1, 2, 4, 8, 7, 3, 1, 1}, "kernel larger");  // R = 7 > 4 + 2
  check_call_rejects("im2col", {1, 2, 8, 4, 3, 7, 1, 1}, "kernel larger");  // S = 7 > 4 + 2
}

TEST_CASE("rejects: sgemm -- null pointers, sizes < 1") {
  for (const char* p : {"d_A", "d_B", "d_C"}) check_call_rejects("sgemm", kGemm, p, p);
  check_sizes_rejected("sgemm", kGemm, {"M", "N", "K"});
}

TEST_CASE("rejects: conv2d_im2col_gemm_workspace and conv2d_im2col_gemm -- sizes, padding, stride, kernel") {
  check_sizes_rejected("conv2d_im2col_gemm_workspace", kWorkspace, {"N", "C", "H", "W", "R", "S"});
  check_call_rejects("conv2d_im2col_gemm_workspace", {1, 2, 8, 8, 3, 3, -1, 1}, "pad");
  check_call_rejects("conv2d_im2col_gemm_workspace", {1, 2, 8, 8, 3, 3, 1, 0}, "stride");
  check_call_rejects("conv2d_im2col_gemm_workspace", {1, 2, 4, 8, 7, 3, 1, 1}, "kernel larger");

  for (const char* p : {"d_input", "d_weight", "d_bias", "d_output"}) check_call_rejects("conv2d_im2col_gemm", kConv, p, p);
  check_sizes_rejected("conv2d_im2col_gemm", kConv, {"N", "C", "H", "W", "K", "R", "S"});
  check_call_rejects("conv2d_im2col_gemm", {1, 2, 8, 8, 3, 3, 3, -1, 1, 0}, "pad");
  check_call_rejects("conv2d_im2col_gemm", {1, 2, 8, 8, 3, 3, 3, 1, 0, 0}, "stride");
  check_call_rejects("conv2d_im2col_gemm", {1, 2, 8, 8, 3, 3, 3, 1, -2, 0}, "stride");
  check_call_rejects("conv2d_im2col_gemm", {1, 2, 4, 8, 3, 7, 3, 1, 1, 0}, "kernel larger");
}

TEST_CASE("rejects: conv2d_im2col_gemm -- a workspace one byte too small, or none") {
  // The workspace the student's own query asks for, for a 3x3 convolution with padding; an
  // implementation that needs none (an implicit GEMM) has nothing to reject.
  course::Rng rng = grader::case_rng("rejects: workspace");
  const course::Tensor x = rng.tensor({1, 2, 8, 8}), w = rng.tensor({3, 2, 3, 3}), b = rng.tensor({3});
  course::Tensor out = grader::poisoned({1, 3, 8, 8});
  std::uint64_t needed = 0;
  lab08_harness::conv2d_im2col_gemm(x, w, b, 1, 1, out, needed);
  if (needed == 0) {
    MESSAGE("conv2d_im2col_gemm_workspace asks for no workspace: nothing to reject");
    return;
  }
  check_call_rejects("conv2d_im2col_gemm", {1, 2, 8, 8, 3, 3, 3, 1, 1, 1}, "workspace");
  check_call_rejects("conv2d_im2col_gemm", {1, 2, 8, 8, 3, 3, 3, 1, 1, 1 << 30}, "workspace");  // 0 bytes
  check_call_rejects("conv2d_im2col_gemm", kConv, "d_workspace", "d_workspace");
}

TEST_CASE("rejects: the Winograd stages -- null pointers, sizes < 1") {
  for (const char* p : {"d_weight", "d_U"}) check_call_rejects("winograd_filter_transform", kWinoFilter, p, p);
  check_sizes_rejected("winograd_filter_transform", kWinoFilter, {"K", "C"});
  for (const char* p : {"d_input", "d_V"}) check_call_rejects("winograd_input_transform", kWinoInput, p, p);
  check_sizes_rejected("winograd_input_transform", kWinoInput, {"N", "C", "H", "W"});
  for (const char* p : {"d_U", "d_V", "d_M"}) check_call_rejects("winograd_batched_multiply", kWinoMultiply, p, p);
  check_sizes_rejected("winograd_batched_multiply", kWinoMultiply, {"K", "C", "T"});
  for (const char* p : {"d_M", "d_output"}) check_call_rejects("winograd_output_transform", kWinoOutput, p, p);
  check_sizes_rejected("winograd_output_transform", kWinoOutput, {"N", "K", "H", "W"});
}

TEST_CASE("rejects: conv2d_winograd_workspace and conv2d_winograd -- null pointers, sizes < 1, workspace") {
  check_sizes_rejected("conv2d_winograd_workspace", kWinoWorkspace, {"N", "C", "H", "W", "K"});
  for (const char* p : {"d_input", "d_weight", "d_bias", "d_output", "d_workspace"})
    check_call_rejects("conv2d_winograd", kWinoConv, p, p);
  check_sizes_rejected("conv2d_winograd", kWinoConv, {"N", "C", "H", "W", "K"});
  check_call_rejects("conv2d_winograd", {1, 2, 7, 8, 3, 1}, "workspace");        // one byte short
  check_call_rejects("conv2d_winograd", {1, 2, 7, 8, 3, 1 << 30}, "workspace");  // 0 bytes
}

TEST_CASE("rejects: tensors too large for int indexing (checked in 64 bits, before any launch)") {
  // 65,536 x 65,536 = 2^32 input elements: an int index would overflow.
  check_call_rejects("depthwise_conv3x3", {1, 1, 65536, 65536, 1, 0}, "too large");
  check_call_rejects("im2col", {1, 1, 65536, 65536, 1, 1, 0, 1}, "too large");
  check_call_rejects("conv2d_im2col_gemm", {1, 1, 65536, 65536, 1, 1, 1, 0, 1, 0}, "too large");
  // A 64 MB input whose 7x7 column matrix has 256*49 x 512*512 = 3.3e9 elements.
  check_call_rejects("im2col", {1, 256, 512, 512, 7, 7, 3, 1}, "too large");
  check_call_rejects("conv2d_im2col_gemm_workspace", {1, 256, 512, 512, 7, 7, 3, 1}, "too large");
  check_call_rejects("conv2d_im2col_gemm", {1, 256, 512, 512, 1, 7, 7, 3, 1, 0}, "too large");
  // A small input, but 2^31 outputs: 8 x 4096 x 256 x 256 (a 1x1 convolution: no column matrix).
  check_call_rejects("conv2d_im2col_gemm", {8, 1, 256, 256, 4096, 1, 1, 0, 1, 0}, "too large");
  // A 65,536 x 65,536 weight on a 1x1 image.
  check_call_rejects("conv2d_im2col_gemm", {1, 65536, 1, 1, 65536, 1, 1, 0, 1, 0}, "too large");
  // sgemm: C, then B, then A with 2^32 elements.
  check_call_rejects("sgemm", {65536, 65536, 1}, "too large");
  check_call_rejects("sgemm", {1, 65536, 65536}, "too large");
  check_call_rejects("sgemm", {65536, 1, 65536}, "too large");
}

TEST_CASE("rejects: Winograd tensors too large for int indexing (U, V, M, input, output; in 64 bits)") {
  // U = 16*K*C: 2^36, then 2^31 (K*C = 2^27: the weight itself would still fit).
  check_call_rejects("winograd_filter_transform", {65536, 65536}, "too large");
  check_call_rejects("winograd_filter_transform", {16384, 8192}, "too large");
  // The input (2^32 elements); V = 16*C*T = 16 * 128 * 1024^2 = 2^31 for a 2^29-element input.
  check_call_rejects("winograd_input_transform", {1, 1, 65536, 65536}, "too large");
  check_call_rejects("winograd_input_transform", {1, 128, 2048, 2048}, "too large");
  // U, then V, then M with 2^36 elements.
  check_call_rejects("winograd_batched_multiply", {65536, 65536, 1}, "too large");
  check_call_rejects("winograd_batched_multiply", {1, 65536, 65536}, "too large");
  check_call_rejects("winograd_batched_multiply", {65536, 1, 65536}, "too large");
  // The output (2^32), and M = 16*K*T = 2^32 for an output of 2^28 (1x1 images: T = N).
  check_call_rejects("winograd_output_transform", {1, 1, 65536, 65536}, "too large");
  check_call_rejects("winograd_output_transform", {16384, 16384, 1, 1}, "too large");
  // The whole convolution and its workspace query: input, output, U, V, M each alone too large.
  for (const char* function : {"conv2d_winograd_workspace", "conv2d_winograd"}) {
    const bool conv = std::string(function) == "conv2d_winograd";
    const auto sizes = [&](std::vector<int> s) {
      if (conv) s.push_back(0);  // short_by
      return s;
    };
    check_call_rejects(function, sizes({1, 1, 65536, 65536, 1}), "too large");   // input
    check_call_rejects(function, sizes({8, 1, 256, 256, 4096}), "too large");    // output: 2^31
    check_call_rejects(function, sizes({1, 65536, 1, 1, 65536}), "too large");  // U: 2^36
    check_call_rejects(function, sizes({1, 128, 2048, 2048, 1}), "too large");   // V: 2^31
    check_call_rejects(function, sizes({16384, 1, 1, 1, 16384}), "too large");   // M: 2^32
  }
}
