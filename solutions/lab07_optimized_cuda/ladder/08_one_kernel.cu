// Rung 08: the whole network in one kernel; a block takes a tile of 8 images from pixels to labels.
// Why faster: every activation stays in shared memory (only pixels come in, logits and labels go
// out), one launch replaces five, and no kernel waits for the previous one to drain the GPU.
// Each stage is still one output per thread (rung 09 adds register blocking); the fully connected
// weights come from global memory (L2) for every tile, which is what rung 09's larger FC tile fixes.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/lenet.hpp"
#include "ladder.hpp"

namespace ladder {
namespace {

constexpr int kImage = 28, kImagePixels = kImage * kImage, kK = 5;
constexpr int kPadded = 32, kPaddedPixels = kPadded * kPadded;  // zero border of 2: no bounds checks
constexpr int kC1 = 6, kP1 = 14, kP1Pixels = kP1 * kP1, kP1Floats = kC1 * kP1Pixels;
constexpr int kC2 = 16, kP2 = 5, kP2Pixels = kP2 * kP2;
constexpr int kFlat = 400, kFc1 = 120, kFc2 = 84, kClasses = 10;

constexpr int kTile = 8, kThreads = 256;
// Shared memory, in floats: the padded images, later reused for pool2 / fc1 / fc2 / logits
// (the images are dead once conv1 is done), then pool1.
constexpr int kInFloats = kTile * kPaddedPixels;
constexpr int kFeat = 0, kH1 = kFeat + kTile * kFlat, kH2 = kH1 + kTile * kFc1, kLogits = kH2 + kTile * kFc2;
static_assert(kLogits + kTile * kClasses <= kInFloats, "the later activations fit where the images were");
constexpr int kSmemBytes = (kInFloats + kTile * kP1Floats) * static_cast<int>(sizeof(float));

__constant__ float c08_conv1_w[kC1 * kK * kK];
__constant__ float c08_conv1_b[kC1];
__constant__ float c08_conv2_w[kC2 * kC1 * kK * kK];
__constant__ float c08_conv2_b[kC2];

struct FcWeights {
  const float *fc1_wt, *fc1_b, *fc2_wt, *fc2_b, *fc3_wt, *fc3_b;  // weights transposed: [in][out]
};

/// out[img][o] = (ReLU) b[o] + sum_i in[img][i] * w_t[i][o] for the tile, one output per thread;
/// consecutive threads take consecutive outputs: coalesced weights, broadcast inputs.
__device__ void linear_tile(const float* in, int count, int inputs, const float* __restrict__ w_t,
                            const float* __restrict__ b, int outputs, bool relu, float* out) {
  for (int item = static_cast<int>(threadIdx.x); item < count * outputs; item += kThreads) {
    const int img = item / outputs, o = item % outputs;
    float sum = __ldg(b + o);
    for (int i = 0; i < inputs; ++i) sum += in[img * inputs + i] * __ldg(w_t + i * outputs + o);
    out[item] = relu ? fmaxf(sum, 0.0f) : sum;
  }
}

__global__ void __launch_bounds__(kThreads) lenet_tile_kernel(const float* __restrict__ images, int n, FcWeights w,
                                                              float* __restrict__ logits, int* __restrict__ labels) {
  extern __shared__ float4 smem4[];
  float* s_in = reinterpret_cast<float*>(smem4);
  float* s_pool1 = s_in + kInFloats;
  const int t = static_cast<int>(threadIdx.x);
  const int first = static_cast<int>(blockIdx.x) * kTile, count = min(kTile, n - first);

  // 1. The tile's images into shared memory, zero-padded.
  for (int i = t; i < kInFloats; i += kThreads) s_in[i] = 0.0f;
  __syncthreads();
  const float* src = images + static_cast<std::size_t>(first) * kImagePixels;
  for (int e = t; e < count * kImagePixels; e += kThreads) {
    const int img = e / kImagePixels, y = (e % kImagePixels) / kImage, x = e % kImage;
    s_in[img * kPaddedPixels + (y + 2) * kPadded + x + 2] = src[e];
  }
  __syncthreads();

  // 2. conv1 + bias + ReLU + pool (fused as in rung 07). The channel is the slowest index of the
  // item, so nearly every warp reads one weight at a time (a constant-memory broadcast).
  for (int item = t; item < kC1 * count * kP1Pixels; item += kThreads) {
    const int k = item / (count * kP1Pixels), img = (item / kP1Pixels) % count, p = item % kP1Pixels;
    const float* in = s_in + img * kPaddedPixels + 2 * (p / kP1) * kPadded + 2 * (p % kP1);
    float acc[2][2] = {};
    for (int r = 0; r < kK; ++r)
      for (int s = 0; s < kK; ++s) {
        const float wk = c08_conv1_w[(k * kK + r) * kK + s];
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx) acc[dy][dx] += wk * in[(dy + r) * kPadded + dx + s];
      }
    const float m = fmaxf(fmaxf(acc[0][0], acc[0][1]), fmaxf(acc[1][0], acc[1][1]));
    s_pool1[img * kP1Floats + k * kP1Pixels + p] = fmaxf(m + c08_conv1_b[k], 0.0f);
  }
  __syncthreads();  // pool1 complete; the images are no longer needed

  // 3. conv2 + bias + ReLU + pool -> the 400 features per image, in PyTorch's flatten order.
  float* s_feat = s_in + kFeat;
  for (int item = t; item < kC2 * count * kP2Pixels; item += kThreads) {
    const int k = item / (count * kP2Pixels), img = (item / kP2Pixels) % count, p = item % kP2Pixels;
    const float* in = s_pool1 + img * kP1Floats + 2 * (p / kP2) * kP1 + 2 * (p % kP2);
    float acc[2][2] = {};
    for (int c = 0; c < kC1; ++c)
      for (int r = 0; r < kK; ++r)
        for (int s = 0; s < kK; ++s) {
          const float wk = c08_conv2_w[((k * kC1 + c) * kK + r) * kK + s];
          for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx) acc[dy][dx] += wk * in[c * kP1Pixels + (dy + r) * kP1 + dx + s];
        }
    const float m = fmaxf(fmaxf(acc[0][0], acc[0][1]), fmaxf(acc[1][0], acc[1][1]));
    s_feat[img * kFlat + k * kP2Pixels + p] = fmaxf(m + c08_conv2_b[k], 0.0f);
  }
  __syncthreads();

  // 4. The fully connected layers, each reading the previous one's output from shared memory.
  linear_tile(s_feat, count, kFlat, w.fc1_wt, w.fc1_b, kFc1, true, s_in + kH1);
  __syncthreads();
  linear_tile(s_in + kH1, count, kFc1, w.fc2_wt, w.fc2_b, kFc2, true, s_in + kH2);
  __syncthreads();
  linear_tile(s_in + kH2, count, kFc2, w.fc3_wt, w.fc3_b, kClasses, false, s_in + kLogits);
  __syncthreads();

  // 5. Logits out, and the argmax (lowest index on a tie), one thread per image.
  const float* s_logits = s_in + kLogits;
  for (int i = t; i < count * kClasses; i += kThreads) logits[static_cast<std::size_t>(first) * kClasses + i] = s_logits[i];
  if (t < count) {
    int best = 0;
    for (int o = 1; o < kClasses; ++o)
      if (s_logits[t * kClasses + o] > s_logits[t * kClasses + best]) best = o;
    labels[first + t] = best;
  }
}

std::vector<float> transposed(const course::Tensor& m, int rows, int cols) {
  std::vector<float> t(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) t[static_cast<std::size_t>(c) * rows + r] = m.data()[static_cast<std::size_t>(r) * cols + c];
  return t;
}

class OneKernel final : public Rung {
 public:
  void prepare(const lab04::FoldedLeNet& net, int /*max_batch*/) override {
    CUDA_CHECK(cudaMemcpyToSymbol(c08_conv1_w, net.conv1_weight.data(), sizeof(c08_conv1_w)));
    CUDA_CHECK(cudaMemcpyToSymbol(c08_conv1_b, net.conv1_bias.data(), sizeof(c08_conv1_b)));
    CUDA_CHECK(cudaMemcpyToSymbol(c08_conv2_w, net.conv2_weight.data(), sizeof(c08_conv2_w)));
    CUDA_CHECK(cudaMemcpyToSymbol(c08_conv2_b, net.conv2_bias.data(), sizeof(c08_conv2_b)));
    fc1_wt_ = course::DeviceBuffer<float>(transposed(net.fc1_weight, kFc1, kFlat));
    fc2_wt_ = course::DeviceBuffer<float>(transposed(net.fc2_weight, kFc2, kFc1));
    fc3_wt_ = course::DeviceBuffer<float>(transposed(net.fc3_weight, kClasses, kFc2));
    fc1_b_ = course::DeviceBuffer<float>(net.fc1_bias.values());
    fc2_b_ = course::DeviceBuffer<float>(net.fc2_bias.values());
    fc3_b_ = course::DeviceBuffer<float>(net.fc3_bias.values());
    // 70 KB of shared memory per block: more than the default 48 KB, so ask once, here.
    CUDA_CHECK(cudaFuncSetAttribute(lenet_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  }

  void forward(const float* d_images, int n, float* d_logits, int* d_labels, cudaStream_t stream) override {
    const FcWeights w{fc1_wt_.get(), fc1_b_.get(), fc2_wt_.get(), fc2_b_.get(), fc3_wt_.get(), fc3_b_.get()};
    lenet_tile_kernel<<<(n + kTile - 1) / kTile, kThreads, kSmemBytes, stream>>>(d_images, n, w, d_logits, d_labels);
    CUDA_CHECK_LAST_LAUNCH();
  }

 private:
  course::DeviceBuffer<float> fc1_wt_, fc2_wt_, fc3_wt_, fc1_b_, fc2_b_, fc3_b_;
};

}  // namespace
}  // namespace ladder

COURSE_LADDER_RUNG(8, "one_kernel", "the whole network in one kernel per tile of 8 images: activations never leave shared memory",
                   ladder::OneKernel);
