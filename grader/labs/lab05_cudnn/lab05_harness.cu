// Lab 05's trusted harness (see lab05_harness.hpp): host tensors in, host tensors out, the
// student's cuDNN/cuBLAS functions in between.
#include "lab05_harness.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>

#include "course/cudnn_check.hpp"
#include "course/cudnn_raii.hpp"
#include "course/device_buffer.hpp"
#include "gpu_timing_session.hpp"
#include "course/error.hpp"

namespace lab05_harness {
namespace {

using course::Shape;
using course::Tensor;

/// A stream of the harness's own, non-blocking: work the student put on the legacy default
/// stream is not silently ordered with it.
class Stream {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

void require(bool ok, const std::string& message) {
  if (!ok) throw course::Error("lab05 harness: " + message);
}

void check_cuda(cudaError_t status, const std::string& function) {
  if (status != cudaSuccess)
    throw course::Error("CUDA error " + std::string(cudaGetErrorName(status)) + " while the GPU ran " + function +
                        ": " + cudaGetErrorString(status));
}

/// Waits for the harness's stream and for anything the student put elsewhere, and reports the
/// first CUDA error as a course::Error naming the student's function.
void finish(const Stream& stream, const std::string& function) {
  check_cuda(cudaStreamSynchronize(stream.get()), function);
  check_cuda(cudaDeviceSynchronize(), function);
  check_cuda(cudaGetLastError(), function);
}

course::DeviceBuffer<float> upload(const Tensor& t) { return course::DeviceBuffer<float>(t.values()); }

/// An output buffer of at least one element, every byte 0xFF (NaN as a float).
course::DeviceBuffer<float> poisoned(std::size_t count) {
  course::DeviceBuffer<float> buffer(std::max<std::size_t>(count, 1));
  buffer.fill_bytes(0xFF);
  CUDA_CHECK(cudaDeviceSynchronize());
  return buffer;
}

void download(const course::DeviceBuffer<float>& buffer, Tensor& out) { buffer.download(out.data(), out.numel()); }

void expect_output(const Tensor& out, const Shape& expected, const char* function) {
  require(out.shape() == expected, std::string("the output tensor of ") + function + " is " +
                                       course::shape_to_string(out.shape()) + " but the student's output-shape function says " +
                                       course::shape_to_string(expected));
}

const float* or_null(const course::DeviceBuffer<float>& buffer, const Tensor& t) {
  return t.numel() == 0 ? nullptr : buffer.get();
}

/// The workspace cuDNN says `algo` needs, from descriptors the harness builds itself.
std::size_t workspace_for(cudnnHandle_t handle, const Shape& x, const Shape& w, const lab05::ConvParams& p,
                          int algo) {
  course::cudnn::TensorDescriptor xd, yd;
  course::cudnn::FilterDescriptor wd;
  course::cudnn::ConvolutionDescriptor cd;
  const auto i = [](std::int64_t v) { return static_cast<int>(v); };
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(x[0]), i(x[1]), i(x[2]), i(x[3])));
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, i(w[0]), i(w[1]), i(w[2]), i(w[3])));
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(cd, p.pad_h, p.pad_w, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_CHECK(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
  int n = 0, k = 0, h = 0, wo = 0;
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &n, &k, &h, &wo));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, k, h, wo));
  std::size_t bytes = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, xd, wd, cd, yd, static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                                      &bytes));
  return bytes;
}

template <typename Layer>
void run_conv(const Tensor& x, const Tensor& w, const Tensor& b, const lab05::ConvParams& p, Tensor& out,
              const char* function, Layer layer) {
  const Shape expected = lab05::conv2d_output_shape(x.shape(), w.shape(), p);
  expect_output(out, expected, function);
  Stream stream;
  lab05::Context ctx(stream.get());
  const auto dx = upload(x), dw = upload(w), db = upload(b);
  auto dy = poisoned(out.numel());
  layer(ctx, dx.get(), x.shape(), dw.get(), w.shape(), or_null(db, b), p, dy.get());
  finish(stream, function);
  download(dy, out);
}

void check_images(const Tensor& images, const Tensor& logits) {
  require(images.rank() == 4 && images.dim(0) >= 1 && images.dim(1) == 1 && images.dim(2) == 28 && images.dim(3) == 28,
          "images must be [N, 1, 28, 28], got " + course::shape_to_string(images.shape()));
  require(logits.shape() == Shape{images.dim(0), 10},
          "logits must be [N, 10] for N images, got " + course::shape_to_string(logits.shape()));
}

}  // namespace

Shape conv2d_output_shape(const Shape& x, const Shape& w, const lab05::ConvParams& p) {
  return lab05::conv2d_output_shape(x, w, p);
}

Shape pool2d_output_shape(const Shape& x, const lab05::PoolParams& p) { return lab05::pool2d_output_shape(x, p); }

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const lab05::ConvParams& p, Tensor& out) {
  run_conv(x, w, b, p, out, "lab05::conv2d_forward", lab05::conv2d_forward);
}

void conv_bias_relu_forward(const Tensor& x, const Tensor& w, const Tensor& b, const lab05::ConvParams& p, Tensor& out) {
  run_conv(x, w, b, p, out, "lab05::conv_bias_relu_forward", lab05::conv_bias_relu_forward);
}

void relu_forward(const Tensor& x, bool in_place, Tensor& out) {
  require(out.shape() == x.shape(), "relu output must have the input's shape");
  Stream stream;
  lab05::Context ctx(stream.get());
  const auto dx = upload(x);
  if (in_place) {
    auto data = upload(x);
    lab05::relu_forward(ctx, data.get(), x.shape(), data.get());
    finish(stream, "lab05::relu_forward (in place)");
    download(data, out);
  } else {
    auto dy = poisoned(out.numel());
    lab05::relu_forward(ctx, dx.get(), x.shape(), dy.get());
    finish(stream, "lab05::relu_forward");
    download(dy, out);
  }
}

void max_pool2d(const Tensor& x, const lab05::PoolParams& p, Tensor& out) {
  expect_output(out, lab05::pool2d_output_shape(x.shape(), p), "lab05::max_pool2d");
  Stream stream;
  lab05::Context ctx(stream.get());
  const auto dx = upload(x);
  auto dy = poisoned(out.numel());
  lab05::max_pool2d(ctx, dx.get(), x.shape(), p, dy.get());
  finish(stream, "lab05::max_pool2d");
  download(dy, out);
}

void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, bool relu, Tensor& out) {
  if (x.rank() == 2 && w.rank() == 2)
    require(out.shape() == Shape{x.dim(0), w.dim(0)}, "linear output must be [N, OUT]");
  Stream stream;
  lab05::Context ctx(stream.get());
  const auto dx = upload(x), dw = upload(w), db = upload(b);
  auto dy = poisoned(out.numel());
  lab05::linear_forward(ctx, dx.get(), x.shape(), dw.get(), w.shape(), or_null(db, b), relu, dy.get());
  finish(stream, "lab05::linear_forward");
  download(dy, out);
}

void softmax_forward(const Tensor& logits, Tensor& probabilities) {
  require(probabilities.shape() == logits.shape(), "probabilities must have the logits' shape");
  Stream stream;
  lab05::Context ctx(stream.get());
  const auto dx = upload(logits);
  auto dy = poisoned(probabilities.numel());
  lab05::softmax_forward(ctx, dx.get(), logits.shape(), dy.get());
  finish(stream, "lab05::softmax_forward");
  download(dy, probabilities);
}

AlgorithmReport conv_algorithm_report(const Shape& x, const Shape& w, const lab05::ConvParams& p, bool heuristic) {
  Stream stream;
  lab05::Context ctx(stream.get(), heuristic ? lab05::AlgoSearch::Heuristic : lab05::AlgoSearch::Measured);
  AlgorithmReport report;
  const lab05::ConvDescriptors d = lab05::make_conv_descriptors(x, w, p);
  const lab05::ConvKey key{x, w, p, false};
  const lab05::ConvAlgorithm first = lab05::choose_conv_algorithm(ctx, key, d);
  report.first_algo = static_cast<int>(first.algo);
  report.workspace_bytes = static_cast<std::int64_t>(first.workspace_bytes);
  report.cache_after_first = static_cast<int>(ctx.conv_algorithms().size());
  report.repeat_algo = static_cast<int>(lab05::choose_conv_algorithm(ctx, key, d).algo);
  report.cache_after_repeat = static_cast<int>(ctx.conv_algorithms().size());

  Shape bigger = x;
  bigger[0] += 1;
  const lab05::ConvDescriptors d2 = lab05::make_conv_descriptors(bigger, w, p);
  lab05::choose_conv_algorithm(ctx, lab05::ConvKey{bigger, w, p, false}, d2);
  report.cache_after_other_batch = static_cast<int>(ctx.conv_algorithms().size());
  report.fused_algo = static_cast<int>(lab05::choose_conv_algorithm(ctx, lab05::ConvKey{x, w, p, true}, d).algo);
  report.cache_after_fused = static_cast<int>(ctx.conv_algorithms().size());
  finish(stream, "lab05::choose_conv_algorithm");

  if (report.first_algo >= 0 && report.first_algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT)
    report.expected_workspace_bytes = static_cast<std::int64_t>(workspace_for(ctx.cudnn(), x, w, p, report.first_algo));
  return report;
}

void lenet_forward(const lab04::FoldedLeNet& net, const Tensor& images, Tensor& logits) {
  check_images(images, logits);
  const int n = static_cast<int>(images.dim(0));
  lenet_forward_batched(net, images, n, n, true, logits);
}

void lenet_forward_batched(const lab04::FoldedLeNet& net, const Tensor& images, int max_batch, int batch, bool fused,
                           Tensor& logits) {
  check_images(images, logits);
  require(batch >= 1, "batch must be >= 1");
  Stream stream;
  lab05::LeNetOptions options;
  options.fused = fused;
  lab05::CudnnLeNet lenet(net, max_batch, options);
  const auto d_images = upload(images);
  auto d_logits = poisoned(logits.numel());
  const int total = static_cast<int>(images.dim(0));
  for (int begin = 0; begin < total; begin += batch) {
    const int count = std::min(batch, total - begin);
    lenet.forward(d_images.get() + static_cast<std::size_t>(begin) * 28 * 28, count,
                  d_logits.get() + static_cast<std::size_t>(begin) * 10, stream.get());
  }
  finish(stream, "lab05::CudnnLeNet::forward");
  download(d_logits, logits);
}

void lenet_forward_captured(const lab04::FoldedLeNet& net, const Tensor& images, Tensor& logits) {
  check_images(images, logits);
  const int n = static_cast<int>(images.dim(0));
  Stream stream;
  lab05::CudnnLeNet lenet(net, n);
  const auto d_images = upload(images);
  auto d_logits = poisoned(logits.numel());
  lenet.forward(d_images.get(), n, d_logits.get(), stream.get());
  finish(stream, "lab05::CudnnLeNet::forward");
  CUDA_CHECK(cudaMemset(d_logits.get(), 0xFF, logits.bytes()));

  // Global mode: an allocation, a free, a synchronisation or a blocking copy during the capture
  // is an error instead of happening.
  CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
  std::string failure;
  cudaGraph_t graph = nullptr;
  try {
    lenet.forward(d_images.get(), n, d_logits.get(), stream.get());
  } catch (const course::NotImplemented&) {
    cudaStreamEndCapture(stream.get(), &graph);
    cudaGetLastError();
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const cudaError_t end = cudaStreamEndCapture(stream.get(), &graph);
  cudaGetLastError();  // capture errors are not sticky: later calls start clean
  if (!failure.empty() || end != cudaSuccess || graph == nullptr) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (failure.empty()) failure = std::string("the capture ended with ") + cudaGetErrorName(end) + ": " + cudaGetErrorString(end);
    throw course::Error(
        "lab05::CudnnLeNet::forward must only enqueue work on the stream it is given (no cudaMalloc or "
        "workspace per call, no synchronisation, no other stream) -- recording it as a CUDA graph failed: " +
        failure);
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (made != cudaSuccess) throw course::Error(std::string("instantiating the recorded graph failed: ") + cudaGetErrorName(made));
  const cudaError_t launched = cudaGraphLaunch(exec, stream.get());
  cudaGraphExecDestroy(exec);
  if (launched != cudaSuccess) throw course::Error(std::string("replaying the recorded graph failed: ") + cudaGetErrorName(launched));
  finish(stream, "lab05::CudnnLeNet::forward (replayed as a CUDA graph)");
  download(d_logits, logits);
}

namespace {

grader_gpu_timing::TimedPipeline<lab05::CudnnLeNet>& timing() {
  static grader_gpu_timing::TimedPipeline<lab05::CudnnLeNet> t;
  return t;
}

}  // namespace

void timing_prepare(const lab04::FoldedLeNet& net, const Tensor& pool, int forwards) {
  timing().reset();
  require(pool.rank() == 4 && pool.dim(0) >= 1, "timing_prepare: the pool must be [N,1,28,28]");
  timing().prepare(std::make_unique<lab05::CudnnLeNet>(net, static_cast<int>(pool.dim(0))), pool, course::lenet::kNumClasses,
                   forwards);
}

void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms) {
  auto& t = timing();
  t.session().round(
      nonce, run,
      [&](const float* images, int n, float* out, int*, cudaStream_t stream) { t.pipeline().forward(images, n, out, stream); },
      "lab05::CudnnLeNet::forward", event_ms);
}

}  // namespace lab05_harness
