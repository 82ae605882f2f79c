// Lab 08's trusted harness, parts A and B (see lab08_harness.hpp): host tensors in, host tensors
// out, the student's device-pointer functions in between.
#include "lab08_harness.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "gpu_harness_kit.hpp"
#include "lab08_harness_support.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace lab08_harness {
namespace {

using course::Tensor;

using grader_gpu_harness::finish;
using grader_gpu_harness::GuardedOutput;
using grader_gpu_harness::Stream;
using grader_gpu_harness::upload;

}  // namespace

void depthwise_conv3x3(const Tensor& x, const Tensor& w, const Tensor& b, int stride, bool relu6, Tensor& out) {
  require_rank(x, 4, "x");
  w.expect_shape({x.dim(1), 1, 3, 3}, "w");
  b.expect_shape({x.dim(1)}, "b");
  require(stride == 1 || stride == 2, "stride must be 1 or 2");
  out.expect_shape({x.dim(0), x.dim(1), (x.dim(2) - 1) / stride + 1, (x.dim(3) - 1) / stride + 1}, "out");

  const std::string fn = "lab08::depthwise_conv3x3";
  Stream stream;
  const auto d_x = upload(x), d_w = upload(w), d_b = upload(b);
  GuardedOutput<float> d_out(out.numel());
  lab08::depthwise_conv3x3(d_x.get(), d_w.get(), d_b.get(), d_out.get(), as_int(x.dim(0), "N"), as_int(x.dim(1), "C"),
                           as_int(x.dim(2), "H"), as_int(x.dim(3), "W"), stride, relu6, stream.get());
  finish(stream, fn);
  for (const auto* input : {&d_x, &d_w, &d_b}) input->check_unchanged(fn);
  d_out.download(out.data(), fn);
}

void im2col(const Tensor& x, int R, int S, int pad, int stride, Tensor& columns) {
  require_rank(x, 4, "x");
  require(R >= 1 && S >= 1 && pad >= 0 && stride >= 1, "invalid R, S, pad or stride");
  const std::int64_t P = (x.dim(2) + 2 * pad - R) / stride + 1, Q = (x.dim(3) + 2 * pad - S) / stride + 1;
  require(x.dim(2) + 2 * pad >= R && x.dim(3) + 2 * pad >= S, "the kernel does not fit the padded input");
  columns.expect_shape({x.dim(1) * R * S, x.dim(0) * P * Q}, "columns");

  const std::string fn = "lab08::im2col";
  Stream stream;
  const auto d_x = upload(x);
  GuardedOutput<float> d_columns(columns.numel());
  lab08::im2col(d_x.get(), d_columns.get(), as_int(x.dim(0), "N"), as_int(x.dim(1), "C"), as_int(x.dim(2), "H"),
                as_int(x.dim(3), "W"), R, S, pad, stride, stream.get());
  finish(stream, fn);
  d_x.check_unchanged(fn);
  d_columns.download(columns.data(), fn);
}

void sgemm(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c) {
  require_rank(a, 2, "a");
  require_rank(b, 2, "b");
  require(a.dim(1) == b.dim(0), "a's columns differ from b's rows");
  if (bias.numel() != 0) bias.expect_shape({a.dim(0)}, "bias");
  c.expect_shape({a.dim(0), b.dim(1)}, "c");

  const std::string fn = "lab08::sgemm";
  Stream stream;
  // An empty bias means d_bias = nullptr; a one-element stand-in keeps the upload non-empty.
  const auto d_a = upload(a), d_b = upload(b), d_bias = upload(bias.numel() == 0 ? Tensor(course::Shape{1}) : bias);
  GuardedOutput<float> d_c(c.numel());
  lab08::sgemm(as_int(a.dim(0), "M"), as_int(b.dim(1), "N"), as_int(a.dim(1), "K"), d_a.get(), d_b.get(),
               bias.numel() == 0 ? nullptr : d_bias.get(), d_c.get(), stream.get());
  finish(stream, fn);
  for (const auto* input : {&d_a, &d_b, &d_bias}) input->check_unchanged(fn);
  d_c.download(c.data(), fn);
}

void conv2d_im2col_gemm(const Tensor& x, const Tensor& w, const Tensor& b, int pad, int stride, Tensor& out,
                        std::uint64_t& workspace_bytes) {
  require_rank(x, 4, "x");
  require_rank(w, 4, "w");
  require(w.dim(1) == x.dim(1), "w's channels differ from x's");
  b.expect_shape({w.dim(0)}, "b");
  require(pad >= 0 && stride >= 1, "invalid pad or stride");
  require(x.dim(2) + 2 * pad >= w.dim(2) && x.dim(3) + 2 * pad >= w.dim(3), "the kernel does not fit the padded input");
  const std::int64_t P = (x.dim(2) + 2 * pad - w.dim(2)) / stride + 1, Q = (x.dim(3) + 2 * pad - w.dim(3)) / stride + 1;
  out.expect_shape({x.dim(0), w.dim(0), P, Q}, "out");

  const std::string fn = "lab08::conv2d_im2col_gemm";
  const int N = as_int(x.dim(0), "N"), C = as_int(x.dim(1), "C"), H = as_int(x.dim(2), "H"), W = as_int(x.dim(3), "W");
  const int K = as_int(w.dim(0), "K"), R = as_int(w.dim(2), "R"), S = as_int(w.dim(3), "S");
  const std::size_t needed = lab08::conv2d_im2col_gemm_workspace(N, C, H, W, R, S, pad, stride);
  require(needed <= kMaxWorkspaceBytes, "lab08::conv2d_im2col_gemm_workspace asks for " + std::to_string(needed) +
                                            " bytes for input " + course::shape_to_string(x.shape()) +
                                            ": more than the harness gives (2 GiB); is the formula right?");
  workspace_bytes = needed;

  Stream stream;
  const auto d_x = upload(x), d_w = upload(w), d_b = upload(b);
  GuardedOutput<float> d_out(out.numel());
  // Bytes, every one 0xFF (NaN as floats): a workspace is garbage on entry, and a write past the
  // size the student asked for lands in the guard.
  GuardedOutput<unsigned char> d_workspace(needed);
  lab08::conv2d_im2col_gemm(d_x.get(), d_w.get(), d_b.get(), d_out.get(), d_workspace.get(), needed, N, C, H, W, K, R,
                            S, pad, stride, stream.get());
  finish(stream, fn);
  for (const auto* input : {&d_x, &d_w, &d_b}) input->check_unchanged(fn);
  d_workspace.check_guard(fn + " (in its workspace, past the bytes conv2d_im2col_gemm_workspace asked for)");
  d_out.download(out.data(), fn);
}

// ---------------------------------------------------------------------------------------------
// Part B: Winograd F(2x2, 3x3)
// ---------------------------------------------------------------------------------------------

namespace {

/// T = N * ((H + 1) / 2) * ((W + 1) / 2): the 2x2 output tiles of a 3x3, pad-1, stride-1 convolution.
std::int64_t winograd_tiles(std::int64_t N, std::int64_t H, std::int64_t W) {
  return N * ((H + 1) / 2) * ((W + 1) / 2);
}

}  // namespace

void winograd_filter_transform(const Tensor& w, Tensor& u) {
  require_rank(w, 4, "w");
  require(w.dim(2) == 3 && w.dim(3) == 3, "w must be [K,C,3,3], got " + course::shape_to_string(w.shape()));
  u.expect_shape({16, w.dim(0), w.dim(1)}, "u");

  const std::string fn = "lab08::winograd_filter_transform";
  Stream stream;
  const auto d_w = upload(w);
  GuardedOutput<float> d_u(u.numel());
  lab08::winograd_filter_transform(d_w.get(), d_u.get(), as_int(w.dim(0), "K"), as_int(w.dim(1), "C"), stream.get());
  finish(stream, fn);
  d_w.check_unchanged(fn);
  d_u.download(u.data(), fn);
}

void winograd_input_transform(const Tensor& x, Tensor& v) {
  require_rank(x, 4, "x");
  v.expect_shape({16, x.dim(1), winograd_tiles(x.dim(0), x.dim(2), x.dim(3))}, "v");

  const std::string fn = "lab08::winograd_input_transform";
  Stream stream;
  const auto d_x = upload(x);
  GuardedOutput<float> d_v(v.numel());
  lab08::winograd_input_transform(d_x.get(), d_v.get(), as_int(x.dim(0), "N"), as_int(x.dim(1), "C"),
                                  as_int(x.dim(2), "H"), as_int(x.dim(3), "W"), stream.get());
  finish(stream, fn);
  d_x.check_unchanged(fn);
  d_v.download(v.data(), fn);
}

void winograd_batched_multiply(const Tensor& u, const Tensor& v, Tensor& m) {
  require_rank(u, 3, "u");
  require_rank(v, 3, "v");
  require(u.dim(0) == 16 && v.dim(0) == 16 && u.dim(2) == v.dim(1),
          "u must be [16,K,C] and v [16,C,T], got " + course::shape_to_string(u.shape()) + " and " +
              course::shape_to_string(v.shape()));
  m.expect_shape({16, u.dim(1), v.dim(2)}, "m");

  const std::string fn = "lab08::winograd_batched_multiply";
  Stream stream;
  const auto d_u = upload(u), d_v = upload(v);
  GuardedOutput<float> d_m(m.numel());
  lab08::winograd_batched_multiply(d_u.get(), d_v.get(), d_m.get(), as_int(u.dim(1), "K"), as_int(u.dim(2), "C"),
                                   as_int(v.dim(2), "T"), stream.get());
  finish(stream, fn);
  for (const auto* input : {&d_u, &d_v}) input->check_unchanged(fn);
  d_m.download(m.data(), fn);
}

void winograd_output_transform(const Tensor& m, const Tensor& bias, int N, int H, int W, Tensor& out) {
  require_rank(m, 3, "m");
  require(N >= 1 && H >= 1 && W >= 1, "invalid N, H or W");
  require(m.dim(0) == 16 && m.dim(2) == winograd_tiles(N, H, W),
          "m must be [16,K,T] with T = " + std::to_string(winograd_tiles(N, H, W)) + ", got " +
              course::shape_to_string(m.shape()));
  if (bias.numel() != 0) bias.expect_shape({m.dim(1)}, "bias");
  out.expect_shape({N, m.dim(1), H, W}, "out");

  const std::string fn = "lab08::winograd_output_transform";
  Stream stream;
  // An empty bias means d_bias = nullptr; a one-element stand-in keeps the upload non-empty.
  const auto d_m = upload(m), d_bias = upload(bias.numel() == 0 ? Tensor(course::Shape{1}) : bias);
  GuardedOutput<float> d_out(out.numel());
  lab08::winograd_output_transform(d_m.get(), bias.numel() == 0 ? nullptr : d_bias.get(), d_out.get(), N,
                                   as_int(m.dim(1), "K"), H, W, stream.get());
  finish(stream, fn);
  for (const auto* input : {&d_m, &d_bias}) input->check_unchanged(fn);
  d_out.download(out.data(), fn);
}

void conv2d_winograd(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& out, std::uint64_t& workspace_bytes) {
  require_rank(x, 4, "x");
  require_rank(w, 4, "w");
  require(w.dim(1) == x.dim(1) && w.dim(2) == 3 && w.dim(3) == 3,
          "w must be [K,C,3,3] with x's C, got " + course::shape_to_string(w.shape()));
  b.expect_shape({w.dim(0)}, "b");
  out.expect_shape({x.dim(0), w.dim(0), x.dim(2), x.dim(3)}, "out");

  const std::string fn = "lab08::conv2d_winograd";
  const int N = as_int(x.dim(0), "N"), C = as_int(x.dim(1), "C"), H = as_int(x.dim(2), "H"), W = as_int(x.dim(3), "W");
  const int K = as_int(w.dim(0), "K");
  const std::size_t needed = lab08::conv2d_winograd_workspace(N, C, H, W, K);
  require(needed <= kMaxWorkspaceBytes, "lab08::conv2d_winograd_workspace asks for " + std::to_string(needed) +
                                            " bytes for input " + course::shape_to_string(x.shape()) +
                                            ": more than the harness gives (2 GiB); is the formula right?");
  workspace_bytes = needed;

  Stream stream;
  const auto d_x = upload(x), d_w = upload(w), d_b = upload(b);
  GuardedOutput<float> d_out(out.numel());
  GuardedOutput<unsigned char> d_workspace(needed);  // 0xFF bytes: NaN as floats, then a guard zone
  lab08::conv2d_winograd(d_x.get(), d_w.get(), d_b.get(), d_out.get(), d_workspace.get(), needed, N, C, H, W, K,
                         stream.get());
  finish(stream, fn);
  for (const auto* input : {&d_x, &d_w, &d_b}) input->check_unchanged(fn);
  d_workspace.check_guard(fn + " (in its workspace, past the bytes conv2d_winograd_workspace asked for)");
  d_out.download(out.data(), fn);
}

void call_with_arguments(const std::string& function, const std::vector<int>& sizes, const std::string& null_argument) {
  constexpr std::size_t kScratch = 1 << 16;
  course::DeviceBuffer<float> a(kScratch), b(kScratch), c(kScratch), d(kScratch);
  a.fill_bytes(0);
  b.fill_bytes(0);
  c.fill_bytes(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto ptr = [&](const char* name, course::DeviceBuffer<float>& buffer) {
    return null_argument == name ? nullptr : buffer.get();
  };
  const auto need = [&](std::size_t count) {
    require(sizes.size() == count,
            function + " takes " + std::to_string(count) + " sizes, got " + std::to_string(sizes.size()));
  };
  Stream stream;
  const std::vector<int>& s = sizes;
  if (function == "depthwise_conv3x3") {
    need(6);
    lab08::depthwise_conv3x3(ptr("d_input", a), ptr("d_weight", b), ptr("d_bias", c), ptr("d_output", d), s[0], s[1],
                             s[2], s[3], s[4], s[5] != 0, stream.get());
  } else if (function == "im2col") {
    need(8);
    lab08::im2col(ptr("d_input", a), ptr("d_columns", d), s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], stream.get());
  } else if (function == "sgemm") {
    need(3);
    lab08::sgemm(s[0], s[1], s[2], ptr("d_A", a), ptr("d_B", b), ptr("d_bias", c), ptr("d_C", d), stream.get());
  } else if (function == "conv2d_im2col_gemm_workspace") {
    need(8);
    (void)lab08::conv2d_im2col_gemm_workspace(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]);
  } else if (function == "conv2d_im2col_gemm") {
    need(10);
    RejectionWorkspace workspace = rejection_workspace(
        [&] { return lab08::conv2d_im2col_gemm_workspace(s[0], s[1], s[2], s[3], s[5], s[6], s[7], s[8]); }, s[9]);
    void* d_workspace = null_argument == "d_workspace" ? nullptr : static_cast<void*>(workspace.buffer.get());
    lab08::conv2d_im2col_gemm(ptr("d_input", a), ptr("d_weight", b), ptr("d_bias", c), ptr("d_output", d), d_workspace,
                              workspace.claimed, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], stream.get());
  } else if (function == "winograd_filter_transform") {
    need(2);
    lab08::winograd_filter_transform(ptr("d_weight", a), ptr("d_U", d), s[0], s[1], stream.get());
  } else if (function == "winograd_input_transform") {
    need(4);
    lab08::winograd_input_transform(ptr("d_input", a), ptr("d_V", d), s[0], s[1], s[2], s[3], stream.get());
  } else if (function == "winograd_batched_multiply") {
    need(3);
    lab08::winograd_batched_multiply(ptr("d_U", a), ptr("d_V", b), ptr("d_M", d), s[0], s[1], s[2], stream.get());
  } else if (function == "winograd_output_transform") {
    need(4);
    lab08::winograd_output_transform(ptr("d_M", a), ptr("d_bias", c), ptr("d_output", d), s[0], s[1], s[2], s[3],
                                     stream.get());
  } else if (function == "conv2d_winograd_workspace") {
    need(5);
    (void)lab08::conv2d_winograd_workspace(s[0], s[1], s[2], s[3], s[4]);
  } else if (function == "conv2d_winograd") {
    need(6);
    RejectionWorkspace workspace =
        rejection_workspace([&] { return lab08::conv2d_winograd_workspace(s[0], s[1], s[2], s[3], s[4]); }, s[5]);
    void* d_workspace = null_argument == "d_workspace" ? nullptr : static_cast<void*>(workspace.buffer.get());
    lab08::conv2d_winograd(ptr("d_input", a), ptr("d_weight", b), ptr("d_bias", c), ptr("d_output", d), d_workspace,
                           workspace.claimed, s[0], s[1], s[2], s[3], s[4], stream.get());
  } else {
    require(false, "unknown function '" + function + "'");
  }
  finish(stream, "lab08::" + function);
}

}  // namespace lab08_harness
