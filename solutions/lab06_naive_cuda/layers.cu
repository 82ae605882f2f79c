// Lab 06 solution, part 2: ReLU, max pooling, the fully connected layer and argmax -- each one
// kernel, one thread per output element (per row for argmax).
// The contract is documented in common/include/labs/lab06_naive_cuda.hpp.
#include <climits>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "labs/lab06_naive_cuda.hpp"

namespace lab06 {
namespace {

constexpr int kThreadsPerBlock = 256;  // 8 warps; see conv2d.cu

void require(bool ok, const char* function, const std::string& message) {
  if (!ok) throw course::Error(std::string("lab06::") + function + ": " + message);
}

void require_positive(int value, const char* function, const char* name) {
  require(value >= 1, function, std::string(name) + " must be >= 1, got " + std::to_string(value));
}

void require_indexable(std::int64_t count, const char* function, const char* what) {
  require(count <= INT_MAX, function,
          std::string(what) + " too large for int indexing (" + std::to_string(count) + " elements)");
}

/// ceil(count / kThreadsPerBlock): enough blocks for one thread per element. count <= INT_MAX,
/// so the result fits an unsigned int (the grid's x extent may be up to 2^31 - 1).
unsigned blocks_for(std::int64_t count) {
  return static_cast<unsigned>((count + kThreadsPerBlock - 1) / kThreadsPerBlock);
}

/// The flat index of this thread. Unsigned: see the note in conv2d.cu.
__device__ unsigned thread_index() { return blockIdx.x * blockDim.x + threadIdx.x; }

}  // namespace

// The kernels are `static` (file-private) rather than in the anonymous namespace: see conv2d.cu.
static __global__ void relu_kernel(float* data, int count) {
  const unsigned i = thread_index();
  if (i >= static_cast<unsigned>(count)) return;
  data[i] = fmaxf(data[i], 0.0f);
}

static __global__ void max_pool2d_kernel(const float* input, float* output, int N, int C, int H, int W, int window,
                                  int stride, int P, int Q) {
  const unsigned idx = thread_index();
  if (idx >= static_cast<unsigned>(N * C * P * Q)) return;
  const int i = static_cast<int>(idx);
  const int q = i % Q;
  const int p = (i / Q) % P;
  const int nc = i / (Q * P);  // n * C + c: pooling never mixes channels, so keep them together
  const float* plane = input + nc * H * W;
  // Start from the window's first value, not from 0 or a "very negative" constant: the inputs
  // may be negative (pooling before a ReLU) and any constant is a guess.
  float best = plane[(p * stride) * W + q * stride];
  for (int r = 0; r < window; ++r)
    for (int s = 0; s < window; ++s) best = fmaxf(best, plane[(p * stride + r) * W + (q * stride + s)]);
  output[i] = best;
}

static __global__ void linear_kernel(const float* input, const float* weight, const float* bias, float* output, int N,
                              int in_features, int out_features) {
  const unsigned idx = thread_index();
  if (idx >= static_cast<unsigned>(N * out_features)) return;
  const int i = static_cast<int>(idx);
  const int o = i % out_features;  // consecutive threads take consecutive outputs of one image
  const int n = i / out_features;
  const float* x = input + n * in_features;    // row n of the input
  const float* w = weight + o * in_features;   // row o of the [out, in] weight
  float sum = bias[o];
  for (int j = 0; j < in_features; ++j) sum += x[j] * w[j];
  output[i] = sum;
}

static __global__ void argmax_kernel(const float* logits, int* labels, int N, int classes) {
  const unsigned idx = thread_index();
  if (idx >= static_cast<unsigned>(N)) return;
  const int n = static_cast<int>(idx);
  const float* row = logits + n * classes;
  int best = 0;
  // Strictly greater: on a tie the earlier (lower) index stays, like torch.argmax.
  for (int k = 1; k < classes; ++k)
    if (row[k] > row[best]) best = k;
  labels[n] = best;
}

void relu_inplace(float* d_data, int count, cudaStream_t stream) {
  require(d_data != nullptr, "relu_inplace", "d_data is null");
  require_positive(count, "relu_inplace", "count");
  relu_kernel<<<blocks_for(count), kThreadsPerBlock, 0, stream>>>(d_data, count);
  CUDA_CHECK_LAST_LAUNCH();
}

void max_pool2d(const float* d_input, float* d_output, int N, int C, int H, int W, int window, int stride,
                cudaStream_t stream) {
  const char* fn = "max_pool2d";
  require(d_input != nullptr, fn, "d_input is null");
  require(d_output != nullptr, fn, "d_output is null");
  require_positive(N, fn, "N");
  require_positive(C, fn, "C");
  require_positive(H, fn, "H");
  require_positive(W, fn, "W");
  require_positive(window, fn, "window");
  require_positive(stride, fn, "stride");
  require(window <= H && window <= W, fn,
          "window larger than the input (" + std::to_string(window) + " vs " + std::to_string(H) + "x" +
              std::to_string(W) + ")");
  require_indexable(std::int64_t{N} * C * H * W, fn, "input");
  const int P = (H - window) / stride + 1;  // both operands >= 0 here: C++ division is a floor
  const int Q = (W - window) / stride + 1;
  // The output is no larger than the input, so it is indexable too.
  max_pool2d_kernel<<<blocks_for(std::int64_t{N} * C * P * Q), kThreadsPerBlock, 0, stream>>>(
      d_input, d_output, N, C, H, W, window, stride, P, Q);
  CUDA_CHECK_LAST_LAUNCH();
}

void linear_forward(const float* d_input, const float* d_weight, const float* d_bias, float* d_output, int N,
                    int in_features, int out_features, cudaStream_t stream) {
  const char* fn = "linear_forward";
  require(d_input != nullptr, fn, "d_input is null");
  require(d_weight != nullptr, fn, "d_weight is null");
  require(d_bias != nullptr, fn, "d_bias is null");
  require(d_output != nullptr, fn, "d_output is null");
  require_positive(N, fn, "N");
  require_positive(in_features, fn, "in_features");
  require_positive(out_features, fn, "out_features");
  require_indexable(std::int64_t{N} * in_features, fn, "input");
  require_indexable(std::int64_t{out_features} * in_features, fn, "weight");
  const std::int64_t out_count = std::int64_t{N} * out_features;
  require_indexable(out_count, fn, "output");
  linear_kernel<<<blocks_for(out_count), kThreadsPerBlock, 0, stream>>>(d_input, d_weight, d_bias, d_output, N,
                                                                        in_features, out_features);
  CUDA_CHECK_LAST_LAUNCH();
}

void argmax_rows(const float* d_logits, int* d_labels, int N, int classes, cudaStream_t stream) {
  const char* fn = "argmax_rows";
  require(d_logits != nullptr, fn, "d_logits is null");
  require(d_labels != nullptr, fn, "d_labels is null");
  require_positive(N, fn, "N");
  require_positive(classes, fn, "classes");
  require_indexable(std::int64_t{N} * classes, fn, "d_logits");
  argmax_kernel<<<blocks_for(N), kThreadsPerBlock, 0, stream>>>(d_logits, d_labels, N, classes);
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace lab06
