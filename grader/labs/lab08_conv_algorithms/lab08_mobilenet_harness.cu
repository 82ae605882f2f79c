// Lab 08's trusted harness, part C (see lab08_mobilenet_harness.hpp): the inverted residual
// block and the whole MobileNetV2, host tensors in, host tensors out; and the speed gate's timed
// networks (the student's, or in the reference worker the cuDNN + cuBLAS one registered by
// cudnn_baseline.cu).
#include "lab08_mobilenet_harness.hpp"

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
#include "course/mobilenet.hpp"
#include "gpu_harness_kit.hpp"
#include "gpu_timing_session.hpp"
#include "lab08_harness_support.hpp"
#include "lab08_mobilenet_baseline.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace lab08_harness {
namespace {

using course::Tensor;

using grader_gpu_harness::finish;
using grader_gpu_harness::GuardedOutput;
using grader_gpu_harness::Stream;
using grader_gpu_harness::upload;

namespace mn = course::mobilenet;

constexpr std::int64_t kImageFloats = std::int64_t{mn::kInputSize} * mn::kInputSize;

void require_images(const Tensor& images, const Tensor& logits) {
  require(images.rank() == 4 && images.dim(0) >= 1 && images.dim(1) == mn::kInputChannels &&
              images.dim(2) == mn::kInputSize && images.dim(3) == mn::kInputSize,
          "images must be [N,1,28,28], got " + course::shape_to_string(images.shape()));
  logits.expect_shape({images.dim(0), mn::kNumClasses}, "logits");
}

// ---- the speed gate's networks ----------------------------------------------------------------

/// The student's MobileNetV2 as the speed gate times it.
class StudentNetwork final : public TimedMobileNet {
 public:
  StudentNetwork(const lab08::FoldedMobileNet& net, int max_batch) : model_(net, max_batch) {}
  void forward(const float* d_images, int n, float* d_logits, cudaStream_t stream) override {
    model_.forward(d_images, n, d_logits, stream);
  }

 private:
  lab08::MobileNetV2 model_;
};

MobileNetFactory& cudnn_factory() {
  static MobileNetFactory factory = nullptr;  // set before main() in the reference worker only
  return factory;
}

grader_gpu_timing::TimedPipeline<TimedMobileNet>& timing() {
  static grader_gpu_timing::TimedPipeline<TimedMobileNet> t;
  return t;
}

/// Every function that builds a MobileNetV2 or runs a block calls this first: the network a
/// previous timing_prepare built must be gone (a student's network may keep weights in
/// __constant__ memory, which a new one -- or a block -- overwrites), and its memory with it.
void release_timing_network() { timing().reset(); }

}  // namespace

bool register_cudnn_baseline(MobileNetFactory factory) {
  cudnn_factory() = factory;
  return true;
}

void inverted_residual_block(const Tensor& x, const lab08::FoldedBlock& block, int stride, Tensor& out,
                             std::uint64_t& workspace_bytes) {
  require(x.rank() == 4 && x.numel() > 0, "x must be a non-empty 4-D tensor");
  const bool expand = block.expand_weight.numel() != 0;
  const std::int64_t in = x.dim(1);
  const std::int64_t hidden = expand ? block.expand_weight.dim(0) : in;
  if (expand) {
    block.expand_weight.expect_shape({hidden, in}, "expand_weight");
    block.expand_bias.expect_shape({hidden}, "expand_bias");
    require(hidden != in, "an expanding block needs hidden != in");
  }
  block.depthwise_weight.expect_shape({hidden, 1, 3, 3}, "depthwise_weight");
  block.depthwise_bias.expect_shape({hidden}, "depthwise_bias");
  require(block.project_weight.rank() == 2 && block.project_weight.dim(1) == hidden, "project_weight must be [out, hidden]");
  const std::int64_t outc = block.project_weight.dim(0);
  block.project_bias.expect_shape({outc}, "project_bias");
  require(stride == 1 || stride == 2, "stride must be 1 or 2");
  out.expect_shape({x.dim(0), outc, (x.dim(2) - 1) / stride + 1, (x.dim(3) - 1) / stride + 1}, "out");

  const std::string fn = "lab08::inverted_residual_block";
  const int N = as_int(x.dim(0), "N"), C = as_int(in, "in"), Hd = as_int(hidden, "hidden"), O = as_int(outc, "out");
  const int H = as_int(x.dim(2), "H"), W = as_int(x.dim(3), "W");
  release_timing_network();
  const std::size_t needed = lab08::inverted_residual_workspace(N, C, Hd, O, H, W, stride);
  require(needed <= kMaxWorkspaceBytes, "lab08::inverted_residual_workspace asks for " + std::to_string(needed) +
                                            " bytes: more than the harness gives (2 GiB); is the formula right?");
  workspace_bytes = needed;

  Stream stream;
  const auto d_x = upload(x);
  // A one-element stand-in keeps the uploads non-empty; the pointers passed are null without expansion.
  const auto d_ew = upload(expand ? block.expand_weight : Tensor(course::Shape{1}));
  const auto d_eb = upload(expand ? block.expand_bias : Tensor(course::Shape{1}));
  const auto d_dw = upload(block.depthwise_weight), d_db = upload(block.depthwise_bias);
  const auto d_pw = upload(block.project_weight), d_pb = upload(block.project_bias);
  GuardedOutput<float> d_out(out.numel());
  GuardedOutput<unsigned char> d_workspace(needed);
  lab08::InvertedResidualWeights w;
  w.expand_weight = expand ? d_ew.get() : nullptr;
  w.expand_bias = expand ? d_eb.get() : nullptr;
  w.depthwise_weight = d_dw.get();
  w.depthwise_bias = d_db.get();
  w.project_weight = d_pw.get();
  w.project_bias = d_pb.get();
  lab08::inverted_residual_block(w, d_x.get(), d_out.get(), N, C, Hd, O, H, W, stride, d_workspace.get(), needed,
                                 stream.get());
  finish(stream, fn);
  for (const auto* input : {&d_x, &d_ew, &d_eb, &d_dw, &d_db, &d_pw, &d_pb}) input->check_unchanged(fn);
  d_workspace.check_guard(fn + " (in its workspace, past the bytes inverted_residual_workspace asked for)");
  d_out.download(out.data(), fn);
}

void mobilenet_forward(const lab08::FoldedMobileNet& net, const Tensor& images, int max_batch, Tensor& logits) {
  require_images(images, logits);
  require(max_batch >= 1, "max_batch must be >= 1");
  const std::string fn = "lab08::MobileNetV2::forward";
  const int total = as_int(images.dim(0), "N");
  release_timing_network();
  lab08::MobileNetV2 model(net, max_batch);  // construction may upload synchronously; that is fine
  Stream stream;
  const auto d_images = upload(images);
  GuardedOutput<float> d_logits(logits.numel());
  // All batches back to back without waiting: a forward() that leans on a synchronisation it does
  // not do itself (a buffer reused while the previous batch still reads it) shows here.
  for (int begin = 0; begin < total; begin += max_batch) {
    const int count = std::min(max_batch, total - begin);
    model.forward(d_images.get() + begin * kImageFloats, count, d_logits.get() + std::int64_t{begin} * mn::kNumClasses,
                  stream.get());
  }
  finish(stream, fn);
  d_images.check_unchanged(fn);
  d_logits.download(logits.data(), fn);
}

void mobilenet_forward_captured(const lab08::FoldedMobileNet& net, const Tensor& images, Tensor& logits) {
  require_images(images, logits);
  const std::string fn = "lab08::MobileNetV2::forward";
  const int total = as_int(images.dim(0), "N");
  release_timing_network();
  lab08::MobileNetV2 model(net, total);
  Stream stream;
  const auto d_images = upload(images);
  GuardedOutput<float> d_logits(logits.numel());
  grader_gpu_harness::capture_and_replay(
      stream, [&](cudaStream_t s) { model.forward(d_images.get(), total, d_logits.get(), s); },
      [&](cudaStream_t s) { return cudaMemsetAsync(d_logits.get(), 0xFF, d_logits.bytes(), s); }, fn);
  d_images.check_unchanged(fn);
  d_logits.download(logits.data(), fn);
}

void call_block_with_arguments(const std::string& function, const std::vector<int>& sizes,
                               const std::string& null_argument) {
  release_timing_network();
  constexpr std::size_t kScratch = 1 << 16;
  course::DeviceBuffer<float> input(kScratch), output(kScratch), ew(kScratch), eb(kScratch), dw(kScratch),
      db(kScratch), pw(kScratch), pb(kScratch);
  for (auto* b : {&input, &output, &ew, &eb, &dw, &db, &pw, &pb}) b->fill_bytes(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto& s = sizes;
  if (function == "inverted_residual_workspace") {
    require(s.size() == 7, "inverted_residual_workspace takes 7 sizes");
    (void)lab08::inverted_residual_workspace(s[0], s[1], s[2], s[3], s[4], s[5], s[6]);
    return;
  }
  require(function == "inverted_residual_block", "unknown function '" + function + "'");
  require(s.size() == 8, "inverted_residual_block takes 8 sizes");
  RejectionWorkspace workspace = rejection_workspace(
      [&] { return lab08::inverted_residual_workspace(s[0], s[1], s[2], s[3], s[4], s[5], s[6]); }, s[7]);

  const bool expand = s[1] != s[2];
  const auto pick = [&](const char* name, course::DeviceBuffer<float>& buffer, bool present) -> float* {
    if (null_argument == name) return nullptr;
    if (null_argument == std::string("+") + name) return buffer.get();
    return present ? buffer.get() : nullptr;
  };
  lab08::InvertedResidualWeights w;
  w.expand_weight = pick("expand_weight", ew, expand);
  w.expand_bias = pick("expand_bias", eb, expand);
  w.depthwise_weight = pick("depthwise_weight", dw, true);
  w.depthwise_bias = pick("depthwise_bias", db, true);
  w.project_weight = pick("project_weight", pw, true);
  w.project_bias = pick("project_bias", pb, true);
  Stream stream;
  lab08::inverted_residual_block(w, pick("d_input", input, true), pick("d_output", output, true), s[0], s[1], s[2],
                                 s[3], s[4], s[5], s[6],
                                 null_argument == "d_workspace" ? nullptr : static_cast<void*>(workspace.buffer.get()),
                                 workspace.claimed, stream.get());
  finish(stream, "lab08::inverted_residual_block");
}

void call_mobilenet_with_arguments(const lab08::FoldedMobileNet& net, int max_batch, int n,
                                   const std::string& null_argument) {
  const auto images = static_cast<std::size_t>(std::max(n, 1));
  course::DeviceBuffer<float> d_images(images * static_cast<std::size_t>(kImageFloats)),
      d_logits(images * mn::kNumClasses);
  d_images.fill_bytes(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  release_timing_network();
  Stream stream;
  lab08::MobileNetV2 model(net, max_batch);
  model.forward(null_argument == "d_images" ? nullptr : d_images.get(), n,
                null_argument == "d_logits" ? nullptr : d_logits.get(), stream.get());
  finish(stream, "lab08::MobileNetV2::forward");
}

void timing_prepare(const lab08::FoldedMobileNet& net, const Tensor& pool, const std::string& pipeline, int forwards) {
  release_timing_network();
  require(pool.rank() == 4 && pool.dim(0) >= 1, "timing_prepare: the pool must be [N,1,28,28]");
  const int batch = as_int(pool.dim(0), "N");
  std::unique_ptr<TimedMobileNet> timed;
  if (pipeline == "student") {
    timed = std::make_unique<StudentNetwork>(net, batch);
  } else if (pipeline == "cudnn") {
    if (cudnn_factory() == nullptr)
      throw course::Error("the cuDNN + cuBLAS baseline exists only in the reference worker (built where cuDNN was found)");
    timed = cudnn_factory()(net, batch);
  } else {
    throw course::Error("lab08 harness: timing_prepare: unknown pipeline '" + pipeline + "' (\"student\" or \"cudnn\")");
  }
  timing().prepare(std::move(timed), pool, mn::kNumClasses, forwards);
}

void timing_round(std::uint64_t nonce, bool run, std::vector<double>& event_ms) {
  auto& t = timing();
  t.session().round(
      nonce, run,
      [&](const float* images, int n, float* out, int* /*labels: forward() returns none*/, cudaStream_t stream) {
        t.pipeline().forward(images, n, out, stream);
      },
      "lab08::MobileNetV2::forward", event_ms);
}

}  // namespace lab08_harness
