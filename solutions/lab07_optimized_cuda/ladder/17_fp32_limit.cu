// Rung 17: FP32 at the limit -- rung 09's kernel with the shared-memory bank conflicts taken out.
// Why faster: rung 09's limit is not the FMA pipe (52 % busy) but the shared-memory pipe (81 % of
// its wavefront peak), and 31 % of its shared wavefronts are bank conflicts, from two layouts:
// padded image rows of 32 floats (pooled rows 64 floats apart land on the same banks) and conv2's
// lanes running along windows 28 floats apart. Rung 17 keeps rung 09's plan and arithmetic
// (persistent grid, 8-image conv tiles, 16 register-blocked sums per conv2 thread, 32-image fc1
// tiles, plain FP32 FFMA) and changes the layouts: rows of 30 floats with the zero border shared
// between rows, pool1 images 1,188 floats apart with conv2's lanes image-fastest. Conflicts fall
// to 5 % of the wavefronts, and the waits for shared memory with them. Smaller changes: a one-pass
// image load with an L2 prefetch a tile ahead, fc1's chunks double-buffered with cp.async, fc3 over
// 320 threads. 17_fp32_limit.cuh has the kernel.
//
// Measured on an H100 80GB HBM3 (lab07_ladder, device mode, L2 flushed before every run; one run,
// rung 09 beside it; labels identical to the golden network's, logits within 7.6e-6):
//   10,000 images  rung 09 0.2721 ms (45.8 % of FP32 peak)   rung 17 0.2263 ms (55.0 %), 1.20x
//    9,999 images  rung 09 0.2757 ms                         rung 17 0.2293 ms
//    1,000 images  rung 09 0.0762 ms                         rung 17 0.0535 ms
// ncu, same session (10,000 images): shared wavefronts 49.9 M -> 36.2 M, bank conflicts 15.9 M ->
// 2.1 M, issue slots busy 64 % -> 74 %, FMA pipe 52 % -> 61 %. Limiter now: instruction issue
// (a quarter of the instructions are not FFMAs) and barriers (1.31 cycles per instruction).
// Tried and rejected (each measured beside rung 09 in one run, 10,000 images):
//   - conv2 with 8 channels per thread (conv2-by-8): 0.2364 ms. Fewer shared loads per FFMA, but
//     400 items per tile are 1.56 rounds of 256 threads: barrier stalls 2.05 cycles per
//     instruction instead of 1.31;
//   - fc1's chunks one at a time (no-fc-pipeline, on the 8-channel version): 0.2376 against 0.2364;
//   - a first version with rung 09's layouts that made every conv round full by cutting the last,
//     partial round's items into single-channel pieces, and stored the images as float4 rows 128
//     bytes apart: 0.2827 ms against rung 09's 0.2722 (0.2608 without the cutting). The pieces
//     and the stores added shared wavefronts to the pipe that was already the limit. In that version
//     the L2 prefetch made no measurable difference (0.2838 ms without it); it is kept because it
//     costs one instruction per thread per tile.
//
// Up to 128 images it is rung 09 (lab07::FastLeNet's one-block-per-image kernel): this rung is
// about throughput. So is an image pointer that is not 16-byte aligned (the runner's always is).
//
// Knob, for measuring (read by prepare()):
//   COURSE_LADDER_FP32_VARIANT=all|conv2-by-8|no-fc-pipeline   (all, the default, is the rung)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "17_fp32_limit.cuh"
#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "labs/lab07_optimized_cuda.hpp"
#include "ladder.hpp"
#include "rung_support.hpp"

namespace {

namespace fl = ladder::fp32_limit;
using Kernel = void (*)(const float*, int, fl::Weights, float*, int, float*, int*);

constexpr int kSmallBatchMax = 128;  // lab07::FastLeNet's own threshold (kernels.cuh)

Kernel pick_kernel() {
  const char* knob = std::getenv("COURSE_LADDER_FP32_VARIANT");
  const std::string v = knob != nullptr && *knob != '\0' ? knob : "all";
  if (v == "all") return fl::lenet_fp32_limit<fl::kAll>;
  if (v == "conv2-by-8") return fl::lenet_fp32_limit<fl::kConv2By8>;
  if (v == "no-fc-pipeline") return fl::lenet_fp32_limit<fl::kNoFcPipeline>;
  throw course::Error("COURSE_LADDER_FP32_VARIANT must be all, conv2-by-8 or no-fc-pipeline, got '" + v + "'");
}

/// conv1 [6,1,5,5] + [6] and conv2 [16,6,5,5] + [16] in the kernel's order: per tap, the output
/// channels consecutive (conv1's padded to 8), then the biases.
std::vector<float> pack_conv(const lab04::FoldedLeNet& net) {
  std::vector<float> packed(fl::kPackedFloats, 0.0f);
  float* w1 = packed.data();
  float* w2 = packed.data() + fl::kPackConv1;
  for (int k = 0; k < fl::kC1; ++k) {
    for (int tap = 0; tap < fl::kTaps; ++tap) w1[tap * fl::kC1Stride + k] = net.conv1_weight.data()[k * fl::kTaps + tap];
    w1[fl::kPackB1 + k] = net.conv1_bias.data()[k];
  }
  for (int k = 0; k < fl::kC2; ++k) {
    for (int c = 0; c < fl::kC1; ++c)
      for (int tap = 0; tap < fl::kTaps; ++tap)
        w2[(c * fl::kTaps + tap) * fl::kC2 + k] = net.conv2_weight.data()[(k * fl::kC1 + c) * fl::kTaps + tap];
    w2[fl::kPackB2 + k] = net.conv2_bias.data()[k];
  }
  return packed;
}

/// [rows][cols] -> [cols][rows] (input-major, as the fully connected loops read it).
std::vector<float> transposed(const course::Tensor& m, int rows, int cols) {
  std::vector<float> out(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) out[static_cast<std::size_t>(c) * rows + r] = m.data()[static_cast<std::size_t>(r) * cols + c];
  return out;
}

/// n images: as many blocks as the GPU holds (fewer below 8 images per block), each with its share
/// of the images and that share's feature slots rounded up to whole 32-image tiles.
struct Plan {
  int blocks = 0, scratch_images = 0;
};
Plan plan_for(int n, int max_blocks) {
  Plan plan;
  plan.blocks = std::max(1, std::min(max_blocks, (n + fl::kConvTile - 1) / fl::kConvTile));
  const int per_block = (n + plan.blocks - 1) / plan.blocks;
  plan.scratch_images = (per_block + fl::kFcTile - 1) / fl::kFcTile * fl::kFcTile;
  return plan;
}

class Fp32Limit final : public ladder::Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    ladder::support::DeviceWeights::check_shapes(net);
    small_.reset();
    small_ = std::make_unique<lab07::FastLeNet>(net, max_batch);  // any n, for the unaligned case too
    max_batch_ = max_batch;
    kernel_ = pick_kernel();
    conv_ = course::DeviceBuffer<float>(pack_conv(net));
    namespace ln = course::lenet;
    fc1_t_ = course::DeviceBuffer<float>(transposed(net.fc1_weight, ln::kFc1Out, ln::kFlat));
    fc2_t_ = course::DeviceBuffer<float>(transposed(net.fc2_weight, ln::kFc2Out, ln::kFc1Out));
    fc3_t_ = course::DeviceBuffer<float>(transposed(net.fc3_weight, ln::kNumClasses, ln::kFc2Out));
    fc1_b_ = course::DeviceBuffer<float>(net.fc1_bias.values());
    fc2_b_ = course::DeviceBuffer<float>(net.fc2_bias.values());
    fc3_b_ = course::DeviceBuffer<float>(net.fc3_bias.values());

    CUDA_CHECK(cudaFuncSetAttribute(kernel_, cudaFuncAttributeMaxDynamicSharedMemorySize, fl::kSmemBytes));
    int device = 0, sms = 0, per_sm = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_, fl::kThreads, fl::kSmemBytes));
    if (per_sm < 1) throw course::Error("rung 17: the kernel does not fit on this GPU");
    max_blocks_ = sms * per_sm;
    // The plan's footprint grows with n, but not smoothly: the largest is at one of two ends.
    std::size_t most = 0;
    for (int n : {max_batch, std::min(max_batch, max_blocks_ * fl::kConvTile)}) {
      const Plan p = plan_for(n, max_blocks_);
      most = std::max(most, static_cast<std::size_t>(p.blocks) * static_cast<std::size_t>(p.scratch_images) * fl::kFlat);
    }
    // Zeroed: fc1 reads all 32 slots of a partial tile (their results are never written).
    scratch_ = course::DeviceBuffer<float>(most);
    scratch_.fill_bytes(0);
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    ladder::support::check_forward(d_images, n, max_batch_, d_logits, d_labels);
    // The image load reads float4: a pointer not 16-byte aligned takes rung 09's path.
    const bool aligned = reinterpret_cast<std::uintptr_t>(d_images) % 16 == 0;
    if (n <= kSmallBatchMax || !aligned) {
      small_->forward(d_images, n, d_logits, d_labels, stream);
      return;
    }
    const fl::Weights w{conv_.get(), fc1_t_.get(), fc1_b_.get(), fc2_t_.get(), fc2_b_.get(), fc3_t_.get(), fc3_b_.get()};
    const Plan p = plan_for(n, max_blocks_);
    kernel_<<<static_cast<unsigned>(p.blocks), fl::kThreads, fl::kSmemBytes, stream>>>(
        d_images, n, w, scratch_.get(), p.scratch_images, d_logits, d_labels);
    CUDA_CHECK_LAST_LAUNCH();
  }

 private:
  std::unique_ptr<lab07::FastLeNet> small_;
  Kernel kernel_ = nullptr;
  int max_batch_ = 0, max_blocks_ = 0;
  course::DeviceBuffer<float> conv_, fc1_t_, fc2_t_, fc3_t_, fc1_b_, fc2_b_, fc3_b_, scratch_;
};

}  // namespace

COURSE_LADDER_RUNG(17, "fp32_limit",
                   "rung 09's kernel with bank-conflict-free shared-memory layouts (its limit was the shared pipe, not the FMAs)",
                   Fp32Limit);
