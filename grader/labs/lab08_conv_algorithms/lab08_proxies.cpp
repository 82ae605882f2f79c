// Lab 08's RPC proxies (a PROXY_SOURCE): the harness functions as the trusted test program sees
// them; the signatures match lab08_harness.hpp exactly.
#include "rpc/proxy.hpp"
#include "lab08_harness.hpp"

namespace lab08_harness {

void depthwise_conv3x3(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, int stride,
                       bool relu6, course::Tensor& out) {
  COURSE_RPC_FORWARD(lab08_harness::depthwise_conv3x3, x, w, b, stride, relu6, out);
}

void im2col(const course::Tensor& x, int R, int S, int pad, int stride, course::Tensor& columns) {
  COURSE_RPC_FORWARD(lab08_harness::im2col, x, R, S, pad, stride, columns);
}

void sgemm(const course::Tensor& a, const course::Tensor& b, const course::Tensor& bias, course::Tensor& c) {
  COURSE_RPC_FORWARD(lab08_harness::sgemm, a, b, bias, c);
}

void conv2d_im2col_gemm(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, int pad, int stride,
                        course::Tensor& out, std::uint64_t& workspace_bytes) {
  COURSE_RPC_FORWARD(lab08_harness::conv2d_im2col_gemm, x, w, b, pad, stride, out, workspace_bytes);
}

void winograd_filter_transform(const course::Tensor& w, course::Tensor& u) {
  COURSE_RPC_FORWARD(lab08_harness::winograd_filter_transform, w, u);
}

void winograd_input_transform(const course::Tensor& x, course::Tensor& v) {
  COURSE_RPC_FORWARD(lab08_harness::winograd_input_transform, x, v);
}

void winograd_batched_multiply(const course::Tensor& u, const course::Tensor& v, course::Tensor& m) {
  COURSE_RPC_FORWARD(lab08_harness::winograd_batched_multiply, u, v, m);
}

void winograd_output_transform(const course::Tensor& m, const course::Tensor& bias, int N, int H, int W,
                               course::Tensor& out) {
  COURSE_RPC_FORWARD(lab08_harness::winograd_output_transform, m, bias, N, H, W, out);
}

void conv2d_winograd(const course::Tensor& x, const course::Tensor& w, const course::Tensor& b, course::Tensor& out,
                     std::uint64_t& workspace_bytes) {
  COURSE_RPC_FORWARD(lab08_harness::conv2d_winograd, x, w, b, out, workspace_bytes);
}

void call_with_arguments(const std::string& function, const std::vector<int>& sizes, const std::string& null_argument) {
  COURSE_RPC_FORWARD(lab08_harness::call_with_arguments, function, sizes, null_argument);
}

}  // namespace lab08_harness
