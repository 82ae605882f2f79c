// Lab 06's trusted harness (see lab06_harness.hpp): host tensors in, host tensors out, the
// student's device-pointer functions in between.
#include "lab06_harness.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/lenet.hpp"
#include "gpu_harness_kit.hpp"
#include "gpu_timing_session.hpp"
#include "labs/lab06_naive_cuda.hpp"

namespace lab06_harness {
namespace {

using course::Tensor;

using grader_gpu_harness::check_cuda;
using grader_gpu_harness::finish;
using grader_gpu_harness::GuardedOutput;
using grader_gpu_harness::Stream;
using grader_gpu_harness::upload;

void require(bool ok, const std::string& message) {
  if (!ok) throw course::Error("lab06 harness: " + message);
}

int as_int(std::int64_t value, const std::string& what) {
  require(value >= 0 && value <= INT_MAX, what + " does not fit an int: " + std::to_string(value));
  return static_cast<int>(value);
}


void require_rank(const Tensor& t, std::size_t rank, const std::string& name) {
  require(t.rank() == rank && t.numel() > 0,
          name + " must be a non-empty " + std::to_string(rank) + "-D tensor, got " + course::shape_to_string(t.shape()));
}

}  // namespace

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, int pad, Tensor& out) {
  require_rank(x, 4, "x");
  require_rank(w, 4, "w");
  require(w.dim(1) == x.dim(1), "w's channels differ from x's");
  b.expect_shape({w.dim(0)}, "b");
  const std::int64_t P = x.dim(2) + 2 * pad - w.dim(2) + 1, Q = x.dim(3) + 2 * pad - w.dim(3) + 1;
  require(P >= 1 && Q >= 1, "the kernel does not fit the padded input");
  out.expect_shape({x.dim(0), w.dim(0), P, Q}, "out");

  Stream stream;
  const auto d_x = upload(x), d_w = upload(w), d_b = upload(b);
  GuardedOutput<float> d_out(out.numel());
  lab06::conv2d_forward(d_x.get(), d_w.get(), d_b.get(), d_out.get(), as_int(x.dim(0), "N"), as_int(x.dim(1), "C"),
                        as_int(x.dim(2), "H"), as_int(x.dim(3), "W"), as_int(w.dim(0), "K"), as_int(w.dim(2), "R"),
                        as_int(w.dim(3), "S"), pad, stream.get());
  finish(stream, "lab06::conv2d_forward");
  for (const auto* input : {&d_x, &d_w, &d_b}) input->check_unchanged("lab06::conv2d_forward");
  d_out.download(out.data(), "lab06::conv2d_forward");
}

void relu_inplace(Tensor& data) {
  require(data.numel() > 0, "data must not be empty");
  Stream stream;
  GuardedOutput<float> d_data(data.numel());
  CUDA_CHECK(cudaMemcpy(d_data.get(), data.data(), d_data.bytes(), cudaMemcpyHostToDevice));
  lab06::relu_inplace(d_data.get(), as_int(static_cast<std::int64_t>(data.numel()), "count"), stream.get());
  finish(stream, "lab06::relu_inplace");
  d_data.download(data.data(), "lab06::relu_inplace");
}

void max_pool2d(const Tensor& x, int window, int stride, Tensor& out) {
  require_rank(x, 4, "x");
  require(window >= 1 && stride >= 1 && window <= x.dim(2) && window <= x.dim(3), "invalid window or stride");
  out.expect_shape({x.dim(0), x.dim(1), (x.dim(2) - window) / stride + 1, (x.dim(3) - window) / stride + 1}, "out");

  Stream stream;
  const auto d_x = upload(x);
  GuardedOutput<float> d_out(out.numel());
  lab06::max_pool2d(d_x.get(), d_out.get(), as_int(x.dim(0), "N"), as_int(x.dim(1), "C"), as_int(x.dim(2), "H"),
                    as_int(x.dim(3), "W"), window, stride, stream.get());
  finish(stream, "lab06::max_pool2d");
  d_x.check_unchanged("lab06::max_pool2d");
  d_out.download(out.data(), "lab06::max_pool2d");
}

void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& out) {
  require_rank(x, 2, "x");
  require_rank(w, 2, "w");
  require(w.dim(1) == x.dim(1), "w's in_features differ from x's");
  b.expect_shape({w.dim(0)}, "b");
  out.expect_shape({x.dim(0), w.dim(0)}, "out");

  Stream stream;
  const auto d_x = upload(x), d_w = upload(w), d_b = upload(b);
  GuardedOutput<float> d_out(out.numel());
  lab06::linear_forward(d_x.get(), d_w.get(), d_b.get(), d_out.get(), as_int(x.dim(0), "N"),
                        as_int(x.dim(1), "in_features"), as_int(w.dim(0), "out_features"), stream.get());
  finish(stream, "lab06::linear_forward");
  for (const auto* input : {&d_x, &d_w, &d_b}) input->check_unchanged("lab06::linear_forward");
  d_out.download(out.data(), "lab06::linear_forward");
}

std::vector<int> argmax_rows(const Tensor& logits) {
  require_rank(logits, 2, "logits");
  Stream stream;
  const auto d_logits = upload(logits);
  GuardedOutput<int> d_labels(static_cast<std::size_t>(logits.dim(0)));
  lab06::argmax_rows(d_logits.get(), d_labels.get(), as_int(logits.dim(0), "N"), as_int(logits.dim(1), "classes"),
                     stream.get());
  finish(stream, "lab06::argmax_rows");
  d_logits.check_unchanged("lab06::argmax_rows");
  return d_labels.download("lab06::argmax_rows");
}

namespace {

constexpr std::int64_t kImageFloats = std::int64_t{course::lenet::kInputSize} * course::lenet::kInputSize;

void require_images(const Tensor& images, const Tensor& logits) {
  namespace ln = course::lenet;
  require(images.rank() == 4 && images.dim(0) >= 1 && images.dim(1) == ln::kInputChannels &&
              images.dim(2) == ln::kInputSize && images.dim(3) == ln::kInputSize,
          "images must be [N, 1, 28, 28], got " + course::shape_to_string(images.shape()));
  logits.expect_shape({images.dim(0), ln::kNumClasses}, "logits");
}

}  // namespace

void lenet_forward(const lab04::FoldedLeNet& net, const Tensor& images, int max_batch, Tensor& logits,
                   std::vector<int>& labels) {
  require_images(images, logits);
  require(max_batch >= 1, "max_batch must be >= 1");
  const int total = as_int(images.dim(0), "N");

  lab06::NaiveLeNet model(net, max_batch);  // construction may upload synchronously; that is fine
  CUDA_CHECK(cudaDeviceSynchronize());
  grader_gpu_harness::forward_in_batches(model, images, total, max_batch, logits, labels, "lab06::NaiveLeNet::forward");
}

void lenet_forward_captured(const lab04::FoldedLeNet& net, const Tensor& images, Tensor& logits,
                            std::vector<int>& labels) {
  require_images(images, logits);
  const int total = as_int(images.dim(0), "N");

  lab06::NaiveLeNet model(net, total);
  grader_gpu_harness::forward_captured(model, images, total, logits, labels, "lab06::NaiveLeNet::forward");
}

void call_with_arguments(const std::string& function, const std::vector<int>& sizes, const std::string& null_argument) {
  constexpr std::size_t kScratch = 1 << 16;
  course::DeviceBuffer<float> a(kScratch), b(kScratch), c(kScratch), d(kScratch);
  course::DeviceBuffer<int> labels(kScratch);
  a.fill_bytes(0);
  b.fill_bytes(0);
  c.fill_bytes(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  // The named pointer becomes nullptr; every other one points at scratch memory.
  const auto ptr = [&](const char* name, course::DeviceBuffer<float>& buffer) {
    return null_argument == name ? nullptr : buffer.get();
  };
  const auto need = [&](std::size_t count) {
    require(sizes.size() == count, function + " takes " + std::to_string(count) + " sizes, got " + std::to_string(sizes.size()));
  };
  Stream stream;
  const std::vector<int>& s = sizes;
  if (function == "conv2d_forward") {
    need(8);
    lab06::conv2d_forward(ptr("d_input", a), ptr("d_weight", b), ptr("d_bias", c), ptr("d_output", d), s[0], s[1], s[2],
                          s[3], s[4], s[5], s[6], s[7], stream.get());
  } else if (function == "relu_inplace") {
    need(1);
    lab06::relu_inplace(ptr("d_data", a), s[0], stream.get());
  } else if (function == "max_pool2d") {
    need(6);
    lab06::max_pool2d(ptr("d_input", a), ptr("d_output", d), s[0], s[1], s[2], s[3], s[4], s[5], stream.get());
  } else if (function == "linear_forward") {
    need(3);
    lab06::linear_forward(ptr("d_input", a), ptr("d_weight", b), ptr("d_bias", c), ptr("d_output", d), s[0], s[1], s[2],
                          stream.get());
  } else if (function == "argmax_rows") {
    need(2);
    lab06::argmax_rows(ptr("d_logits", a), null_argument == "d_labels" ? nullptr : labels.get(), s[0], s[1], stream.get());
  } else {
    require(false, "unknown function '" + function + "'");
  }
  finish(stream, "lab06::" + function);
}

void call_lenet_with_arguments(const lab04::FoldedLeNet& net, int max_batch, int n, const std::string& null_argument) {
  const auto images = static_cast<std::size_t>(std::max(n, 1));
  course::DeviceBuffer<float> d_images(images * static_cast<std::size_t>(kImageFloats)), d_logits(images * course::lenet::kNumClasses);
  course::DeviceBuffer<int> d_labels(images);
  d_images.fill_bytes(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  Stream stream;
  lab06::NaiveLeNet model(net, max_batch);
  model.forward(null_argument == "d_images" ? nullptr : d_images.get(), n,
                null_argument == "d_logits" ? nullptr : d_logits.get(),
                null_argument == "d_labels" ? nullptr : d_labels.get(), stream.get());
  finish(stream, "lab06::NaiveLeNet::forward");
}

namespace {

grader_gpu_timing::TimedPipeline<lab06::NaiveLeNet>& timing() {
  static grader_gpu_timing::TimedPipeline<lab06::NaiveLeNet> t;
  return t;
}

}  // namespace

void timing_prepare(const lab04::FoldedLeNet& net, const Tensor& pool, int forwards) {
  timing().reset();
  require(pool.rank() == 4 && pool.dim(0) >= 1, "timing_prepare: the pool must be [N,1,28,28]");
  timing().prepare(std::make_unique<lab06::NaiveLeNet>(net, as_int(pool.dim(0), "N")), pool, course::lenet::kNumClasses,
                   forwards);
}

void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms) {
  auto& t = timing();
  t.session().round(
      nonce, run,
      [&](const float* images, int n, float* out, int* out_labels, cudaStream_t stream) {
        t.pipeline().forward(images, n, out, out_labels, stream);
      },
      "lab06::NaiveLeNet::forward", event_ms);
}

}  // namespace lab06_harness
