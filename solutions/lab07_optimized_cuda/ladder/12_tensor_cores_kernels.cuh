// Rung 12's kernel: the whole LeNet for a range of images per block, every layer a GEMM on the
// tensor cores (mma.sync m16n8k16: FP16 inputs, FP32 accumulation), the convolutions as implicit
// GEMMs whose A fragments are read straight from the image tile in shared memory. Rung 14 runs the
// same kernel on uint8 pixels, rung 21 on pixels it fetches ahead over PCIe (the Source template parameter).
// Why it is faster: one mma.sync does 2,048 multiply-adds; a CUDA core does one FMA per instruction.
//
// The fragment layouts of m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16"), per lane with
// g = lane / 4 (the "group") and t = lane % 4, each register holding two halves {lo, hi}:
//   A (16 x 16, rows m, columns k)  a0 = A[g][2t, 2t+1]    a1 = A[g+8][2t, 2t+1]
//                                   a2 = A[g][2t+8, 2t+9]  a3 = A[g+8][2t+8, 2t+9]
//   B (16 x 8, k x n)               b0 = B[2t, 2t+1][g]    b1 = B[2t+8, 2t+9][g]
//   C (16 x 8, FP32)                c0, c1 = C[g][2t, 2t+1]   c2, c3 = C[g+8][2t, 2t+1]
// Each A register is two neighbouring k of one row. The whole design follows from that: the
// order of k inside a GEMM is ours to choose (the weights are permuted to match in prepare()),
// so every activation buffer below is laid out so that those two k are one aligned 32-bit word,
// and a fragment register is a single shared-memory load.
//
//   conv1  per image  [784 pixels (as 896) x 25 taps (as 32)] x [32 x 8 channels (6 used)]
//   conv2  per image  [100 pixels (as 128) x 150 (as 160)]    x [160 x 16]
//   fc1    per chunk  [32 images x 400] x [400 x 120]
//   fc2               [32 x 120 (as 128)] x [128 x 88 (84 used)]
//   fc3               [32 x 84 (as 96)]   x [96 x 16 (10 used)]
// Bias, ReLU and max-pooling are applied to the FP32 accumulators (the epilogues); activations are
// stored as FP16 only because the next GEMM takes FP16. The logits stay FP32.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ladder::tensor_cores {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kChunk = 32;  ///< images per pass of the fully connected layers (two m-tiles of 16)
constexpr int kImageSide = 28, kImagePixels = kImageSide * kImageSide, kClasses = 10;

// conv1 input, one per warp: the zero-padded 32 x 32 image as "pairs". Word (y, x) holds the
// halves {X[y][x], X[y][x+1]}, i.e. two horizontally neighbouring taps, one A register.
// 37 words per row (36 are read): the stride is odd so that the loads of one instruction, which
// are 2 words apart per group and up to 4 rows apart per lane of a group, fall in distinct banks.
constexpr int kPairRows = 32, kPairStride = 37, kPad = 2;
// pool1, one per warp: [14 x 14 pixels][3 words]; word c holds channels {2c, 2c+1}.
constexpr int kPool1Side = 14, kPool1Words = 3;
// Row strides (in 32-bit words) of the activation tiles of the fully connected layers: a
// fragment load reads 8 rows x 4 consecutive words, and stride mod 32 = 12, 4 or 20 puts those
// 32 words in 32 different banks.
constexpr int kPool2Stride = 204;   // 400 halves used
constexpr int kFc1OutStride = 68;   // 120 used, 128 read (the last 8 stay zero)
constexpr int kFc2OutStride = 52;   // 88 written, 96 read (the last 8 stay zero)

// GEMM extents in mma steps: k-steps of 16, n-tiles of 8.
constexpr int kConv1KSteps = 2;     // 16 pairs: (r, u) -> taps (r, 2u), (r, 2u+1), 15 used
constexpr int kConv1TapPairs = 15;
constexpr int kConv2KSteps = 10, kConv2NTiles = 2;  // 80 pairs: (r, s, channel pair), 75 used
constexpr int kConv2TapPairs = 75;
constexpr int kFc1KSteps = 25, kFc1NTiles = 15;
constexpr int kFc2KSteps = 8, kFc2NTiles = 11;
constexpr int kFc3KSteps = 6, kFc3NTiles = 2;

/// Weights as B fragments, prepared once: fragment (n-tile, k-step) is 32 uint2, one per lane,
/// stored at [(ntile * ksteps + kstep) * 32 + lane], so a warp fetches one with a single
/// coalesced 256-byte load. Biases are FP32, zero-padded to the padded N.
struct Weights {
  const uint2* conv1;  const float* conv1_bias;  // [2 k-steps],        bias [8]
  const uint2* conv2;  const float* conv2_bias;  // [2 n-tiles][10],    bias [16]
  const uint2* fc1;    const float* fc1_bias;    // [15][25],           bias [120]
  const uint2* fc2;    const float* fc2_bias;    // [11][8],            bias [88]
  const uint2* fc3;    const float* fc3_bias;    // [2][6],             bias [16]
};

struct WarpScratch {
  std::uint32_t pairs[kPairRows * kPairStride];
  std::uint32_t pool1[kPool1Side * kPool1Side * kPool1Words];
};

struct SharedTiles {
  WarpScratch warp[kWarps];                   // the convolutions: each warp works on its own image
  std::uint32_t pool2[kChunk * kPool2Stride];  // fc1's A: [image][pixel p][16 channels], k = 16p + c
  std::uint32_t fc1_out[kChunk * kFc1OutStride];
  std::uint32_t fc2_out[kChunk * kFc2OutStride];
  float logits[kChunk * kClasses];
};
static_assert(sizeof(SharedTiles) % sizeof(uint4) == 0, "zeroed with 16-byte stores");

/// Two floats rounded to FP16 and packed as one A register: lo in bits 0-15, hi in bits 16-31.
__device__ __forceinline__ std::uint32_t pack_half2(float lo, float hi) {
  std::uint32_t packed;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));  // first source -> upper half
  return packed;
}

/// D += A * B on the tensor cores, one warp: A 16x16 FP16, B 16x8 FP16, D 16x8 FP32.
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], const std::uint32_t (&a)[4], uint2 b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
}

__device__ __forceinline__ float relu(float x) { return fmaxf(x, 0.0f); }

/// Four neighbouring pixels of one row as floats in [0,1]. Read once: a streaming load, so the
/// images do not push the weights out of the caches. From uint8 pixels (rung 14) the conversion is
/// the CPU's float(pixel) / 255.0f (IEEE division without -use_fast_math), so both inputs give the
/// same FP16 values and the same labels.
__device__ __forceinline__ float4 load_four(const float* row, int quad) {
  return __ldcs(reinterpret_cast<const float4*>(row) + quad);
}
/// Four uint8 pixels (one 32-bit word, lowest byte first) as floats in [0,1].
__device__ __forceinline__ float4 pixels_to_float(std::uint32_t four) {
  return make_float4(static_cast<float>(four & 0xFFu) / 255.0f, static_cast<float>((four >> 8) & 0xFFu) / 255.0f,
                     static_cast<float>((four >> 16) & 0xFFu) / 255.0f, static_cast<float>(four >> 24) / 255.0f);
}
__device__ __forceinline__ float4 load_four(const std::uint8_t* row, int quad) {
  return pixels_to_float(__ldcs(reinterpret_cast<const unsigned int*>(row) + quad));
}

/// One image into the warp's pair buffer (its zero border was written once). Lanes 0..27 each take
/// 4 pixels of rows 4*step .. 4*step+3 (28 rows x 7 quads): four(step) gives this lane's four,
/// pixels 4 * (28 * step + lane) .. +3 of the image (row 4 * step + lane / 7, quad lane % 7).
template <typename FourPixels>
__device__ __forceinline__ void stage_rows(FourPixels four, std::uint32_t* pairs, int lane) {
  const int row_in_step = lane / 7, quad = lane % 7;
#pragma unroll
  for (int step = 0; step < kImageSide / 4; ++step) {
    const int y = 4 * step + row_in_step;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (lane < 28) v = four(step);
    // The last pair of this float4 needs the next pixel: the first one of the next lane's float4.
    float next = __shfl_down_sync(0xffffffffu, v.x, 1);
    if (quad == 6) next = 0.0f;  // column 28 is padding
    if (lane < 28) {
      std::uint32_t* dst = pairs + (y + kPad) * kPairStride + 4 * quad + kPad;
      dst[0] = pack_half2(v.x, v.y);
      dst[1] = pack_half2(v.y, v.z);
      dst[2] = pack_half2(v.z, v.w);
      dst[3] = pack_half2(v.w, next);
      if (quad == 0) dst[-1] = pack_half2(0.0f, v.x);  // the pair that starts in the left padding
    }
  }
}

/// One image from global memory (float, or uint8 pixels), read as it is staged.
template <typename Pixel>
__device__ __forceinline__ void stage_image(const Pixel* image, std::uint32_t* pairs, int lane) {
  const int row_in_step = lane / 7, quad = lane % 7;
  stage_rows([&](int step) { return load_four(image + (4 * step + row_in_step) * kImageSide, quad); }, pairs, lane);
}

/// conv1 (5x5, pad 2) + bias + ReLU + 2x2 max-pool for one image: pairs -> pool1.
/// A job is two m-tiles: output rows 2py and 2py+1, 16 columns from 16*half. Row g of an m-tile is
/// column 2g, row g+8 is column 2g+1, so each lane ends up holding a whole 2x2 pooling window
/// (its c0/c2 of both tiles) and pools without talking to other lanes.
__device__ __forceinline__ void conv1_relu_pool(const std::uint32_t* pairs, std::uint32_t* pool1, const uint2 (&b)[2],
                                                float bias_lo, float bias_hi, int g, int t) {
  // Pair index j = 8*kstep + 4*h + t of this lane's A registers -> its word offset r*stride + 2u.
  // The padding pair (j = 15, zero weights) re-reads pair 14: same word as a neighbour, no conflict.
  int tap[kConv1KSteps][2];
#pragma unroll
  for (int ks = 0; ks < kConv1KSteps; ++ks)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int j = min(8 * ks + 4 * h + t, kConv1TapPairs - 1);
      tap[ks][h] = (j / 3) * kPairStride + 2 * (j % 3);
    }
#pragma unroll 2  // two jobs interleaved: more loads in flight for a warp that works alone
  for (int job = 0; job < kPool1Side * 2; ++job) {
    const int py = job / 2, half = job % 2;
    const std::uint32_t* top_row = pairs + (2 * py) * kPairStride + 16 * half + 2 * g;
    const std::uint32_t* bottom_row = top_row + kPairStride;
    float top[4] = {0.0f, 0.0f, 0.0f, 0.0f}, bottom[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int ks = 0; ks < kConv1KSteps; ++ks) {
      const int k0 = tap[ks][0], k8 = tap[ks][1];
      const std::uint32_t a_top[4] = {top_row[k0], top_row[k0 + 1], top_row[k8], top_row[k8 + 1]};
      const std::uint32_t a_bottom[4] = {bottom_row[k0], bottom_row[k0 + 1], bottom_row[k8], bottom_row[k8 + 1]};
      mma_16x8x16(top, a_top, b[ks]);
      mma_16x8x16(bottom, a_bottom, b[ks]);
    }
    // max(relu(x + b)) == relu(max(x) + b): pool first, then one bias and one ReLU.
    const int px = 8 * half + g;
    if (px < kPool1Side && t < kPool1Words) {  // t == 3 holds channels 6 and 7: padding
      const float lo = fmaxf(fmaxf(top[0], top[2]), fmaxf(bottom[0], bottom[2]));
      const float hi = fmaxf(fmaxf(top[1], top[3]), fmaxf(bottom[1], bottom[3]));
      pool1[(py * kPool1Side + px) * kPool1Words + t] = pack_half2(relu(lo + bias_lo), relu(hi + bias_hi));
    }
  }
}

/// How conv2 reads its B fragments: from global memory through the read-only path (rung 12; L2
/// after the first image). Rung 23 passes a plain load from a copy in shared memory instead.
struct FragmentsViaLdg {
  __device__ __forceinline__ uint2 operator()(const uint2* p) const { return __ldg(p); }
};

/// conv2 (5x5, 6 -> 16) + bias + ReLU + 2x2 max-pool for one image: pool1 -> this image's row of
/// pool2. The 25 pooled pixels are the rows of two groups of 16 (rows past 24 repeat pixel 24 and
/// are dropped); each group is computed as four m-tiles, one per position in the pooling window,
/// so pooling is a max over four accumulators of the same lane.
template <typename LoadFragment = FragmentsViaLdg>
__device__ __forceinline__ void conv2_relu_pool(const std::uint32_t* pool1, std::uint32_t* pool2_row,
                                                const uint2* frags, const float (&bias)[4], int g, int t,
                                                int lane, LoadFragment load = {}) {
  // Pair j = (5r + s) * 3 + channel pair -> word ((r * 14) + s) * 3 + channel pair.
  int tap[kConv2KSteps][2];
#pragma unroll
  for (int ks = 0; ks < kConv2KSteps; ++ks)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int j = min(8 * ks + 4 * h + t, kConv2TapPairs - 1);  // padding re-reads the last pair
      const int r = j / 15, s = (j / 3) % 5;
      tap[ks][h] = (r * kPool1Side + s) * kPool1Words + j % 3;
    }
#pragma unroll 1
  for (int group = 0; group < 2; ++group) {
    int base[2];  // word of the window's top-left input pixel for rows g and g+8
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int p = min(16 * group + 8 * h + g, 24);
      base[h] = ((p / 5) * 2 * kPool1Side + (p % 5) * 2) * kPool1Words;
    }
    float acc[4][kConv2NTiles][4] = {};
#pragma unroll
    for (int ks = 0; ks < kConv2KSteps; ++ks) {
      const uint2 b0 = load(frags + (0 * kConv2KSteps + ks) * 32 + lane);
      const uint2 b1 = load(frags + (1 * kConv2KSteps + ks) * 32 + lane);
#pragma unroll
      for (int w = 0; w < 4; ++w) {  // window position (dy, dx) = (w / 2, w % 2)
        const int shift = ((w / 2) * kPool1Side + w % 2) * kPool1Words;
        const std::uint32_t* lo = pool1 + base[0] + shift;
        const std::uint32_t* hi = pool1 + base[1] + shift;
        const std::uint32_t a[4] = {lo[tap[ks][0]], hi[tap[ks][0]], lo[tap[ks][1]], hi[tap[ks][1]]};
        mma_16x8x16(acc[w][0], a, b0);
        mma_16x8x16(acc[w][1], a, b1);
      }
    }
#pragma unroll
    for (int nt = 0; nt < kConv2NTiles; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int p = 16 * group + 8 * h + g;
        if (p >= 25) continue;
        float lo = acc[0][nt][2 * h], hi = acc[0][nt][2 * h + 1];
#pragma unroll
        for (int w = 1; w < 4; ++w) {
          lo = fmaxf(lo, acc[w][nt][2 * h]);
          hi = fmaxf(hi, acc[w][nt][2 * h + 1]);
        }
        // fc1's k = 16 * pixel + channel: channels 8nt + 2t, +1 are word 8p + 4nt + t.
        pool2_row[8 * p + 4 * nt + t] = pack_half2(relu(lo + bias[2 * nt]), relu(hi + bias[2 * nt + 1]));
      }
  }
}

/// One fully connected layer for the chunk: C[rows x 8*NTILES] = A[rows x 16*KSTEPS] * B + bias, the
/// (m-tile, n-tile) pairs shared out over the warps. epilogue(row, column, c_lo, c_hi) receives two
/// neighbouring columns of one row, bias added. The k-loop is unrolled completely so that all of
/// a job's weight loads are in flight at once: at small batches this phase is a chain of
/// round trips to L2, not arithmetic.
template <int KSTEPS, int NTILES, typename Epilogue>
__device__ __forceinline__ void fully_connected(const std::uint32_t* in, int in_stride, const uint2* frags,
                                                const float* bias, int mtiles, int warp, int g, int t, int lane,
                                                Epilogue epilogue) {
  for (int job = warp; job < mtiles * NTILES; job += kWarps) {
    const int nt = job / mtiles, mt = job % mtiles;  // neighbouring warps share an n-tile's weights
    const int col = 8 * nt + 2 * t;
    const float bias_lo = __ldg(bias + col), bias_hi = __ldg(bias + col + 1);
    const std::uint32_t* row_lo = in + (16 * mt + g) * in_stride + t;
    const std::uint32_t* row_hi = row_lo + 8 * in_stride;
    const uint2* b = frags + nt * KSTEPS * 32 + lane;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      const std::uint32_t a[4] = {row_lo[8 * ks], row_hi[8 * ks], row_lo[8 * ks + 4], row_hi[8 * ks + 4]};
      mma_16x8x16(acc, a, __ldg(b + ks * 32));
    }
    epilogue(16 * mt + g, col, acc[0] + bias_lo, acc[1] + bias_hi);
    epilogue(16 * mt + g + 8, col, acc[2] + bias_lo, acc[3] + bias_hi);
  }
}

/// Asks L2 to fetch [p, p + bytes), one 128-byte line per thread of the grid: the benchmark starts
/// every run with a cold L2, and the fully connected weights are needed only after the
/// convolutions, so their trip from HBM overlaps the convolutions instead of waiting in fc1.
__device__ __forceinline__ void prefetch_to_l2(const void* p, int bytes) {
  const char* base = static_cast<const char*>(p);
  const int stride = static_cast<int>(gridDim.x) * kThreads * 128;
  for (int offset = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * 128; offset < bytes; offset += stride)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(base + offset));
}

template <int KSTEPS, int NTILES>
__host__ __device__ constexpr int fragment_bytes() {
  return KSTEPS * NTILES * 32 * static_cast<int>(sizeof(uint2));
}

/// One warp's step, for the image source: its image now (-1 in start()) and its next one (-1:
/// none, else image + 8); warps 0 .. warps_now - 1 of the block have an image in this step and
/// warps 0 .. warps_next - 1 in the next one (the 8 images of a step are consecutive: warp w's
/// is image - warp + w).
struct Step {
  int image, next, warps_now, warps_next;
};

/// Where the kernel gets its images. start(step, own, lane) is called once per warp with its first
/// image as step.next before anything else; stage(step, pairs, own, lane) puts step.image into the
/// warp's pair buffer. `own`: kWarpBytes of shared memory per warp for the source alone, after
/// SharedTiles. This source reads each image as it stages it: float images in [0,1] (rung 12), or
/// uint8 pixels (rung 14: no conversion pass). Rung 21's load the next step while the warps compute.
template <typename Pixel>
struct ImagesIn {
  static constexpr int kWarpBytes = 0;
  const Pixel* images;
  __device__ __forceinline__ void start(const Step&, std::uint32_t*, int) {}
  __device__ __forceinline__ void stage(const Step& step, std::uint32_t* pairs, std::uint32_t*, int lane) {
    stage_image(images + static_cast<std::size_t>(step.image) * kImagePixels, pairs, lane);
  }
};

/// Dynamic shared memory of the kernel below with images from `Source`.
template <typename Source>
constexpr int shared_bytes() {
  return static_cast<int>(sizeof(SharedTiles)) + kWarps * Source::kWarpBytes;
}

/// The whole network. Block b classifies images [b * per_block, min(n, (b + 1) * per_block)) in
/// chunks of up to 32: each warp runs the convolutions of every 8th image of the chunk, then all
/// warps share the three fully connected layers of the chunk. So warp w's images are
/// b * per_block + w + 8j, in that order (per_block is a multiple of 8). Source: where the images
/// come from, ImagesIn<float or uint8> or rung 21's prefetching ones.
template <typename Source>
__global__ void __launch_bounds__(kThreads, 2)
    lenet_tensor_cores(Source source, int n, int per_block, Weights weights, float* __restrict__ logits,
                       int* __restrict__ labels) {
  extern __shared__ uint4 shared_raw[];
  SharedTiles& tiles = *reinterpret_cast<SharedTiles*>(shared_raw);
  // All zero first: the pair buffers' padding and the padded columns of the fc tiles are never
  // written again, and rows of a partial chunk (never written) must hold finite numbers.
  for (int i = static_cast<int>(threadIdx.x); i < static_cast<int>(sizeof(SharedTiles) / sizeof(uint4)); i += kThreads)
    shared_raw[i] = make_uint4(0u, 0u, 0u, 0u);
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int g = lane / 4, t = lane % 4;
  const int first = static_cast<int>(blockIdx.x) * per_block;
  const int end = min(n, first + per_block);
  std::uint32_t* own = reinterpret_cast<std::uint32_t*>(&tiles + 1) + warp * (Source::kWarpBytes / 4);
  // (Before the zeroing, the first reads would leave < 1 us earlier, but rung 12's register
  // allocation would change: lecture 04a quotes its ptxas report.)
  if (first + warp < end) source.start(Step{-1, first + warp, 0, min(kWarps, end - first)}, own, lane);

  // The conv weights and biases this lane needs, kept in registers for the whole kernel.
  const uint2 conv1_b[kConv1KSteps] = {__ldg(weights.conv1 + lane), __ldg(weights.conv1 + 32 + lane)};
  const float conv1_bias_lo = weights.conv1_bias[2 * t], conv1_bias_hi = weights.conv1_bias[2 * t + 1];
  const float conv2_bias[4] = {weights.conv2_bias[2 * t], weights.conv2_bias[2 * t + 1],
                               weights.conv2_bias[8 + 2 * t], weights.conv2_bias[9 + 2 * t]};
  WarpScratch& scratch = tiles.warp[warp];
  prefetch_to_l2(weights.conv2, fragment_bytes<kConv2KSteps, kConv2NTiles>());
  prefetch_to_l2(weights.fc1, fragment_bytes<kFc1KSteps, kFc1NTiles>());
  prefetch_to_l2(weights.fc2, fragment_bytes<kFc2KSteps, kFc2NTiles>());
  prefetch_to_l2(weights.fc3, fragment_bytes<kFc3KSteps, kFc3NTiles>());
  __syncthreads();

  for (int chunk = first; chunk < end; chunk += kChunk) {
    const int count = min(kChunk, end - chunk);
    for (int i = warp; i < count; i += kWarps) {
      const int image = chunk + i, step_first = image - warp;
      const Step step{image, image + kWarps < end ? image + kWarps : -1, min(kWarps, end - step_first),
                      max(0, min(kWarps, end - step_first - kWarps))};
      source.stage(step, scratch.pairs, own, lane);
      __syncwarp();  // pairs written -> conv1 reads them; also: conv2 of the last image done with pool1
      conv1_relu_pool(scratch.pairs, scratch.pool1, conv1_b, conv1_bias_lo, conv1_bias_hi, g, t);
      __syncwarp();  // pool1 written -> conv2 reads it; also: conv1 done with pairs before the next image
      conv2_relu_pool(scratch.pool1, tiles.pool2 + i * kPool2Stride, weights.conv2, conv2_bias, g, t, lane);
    }
    __syncthreads();  // pool2 complete

    const int mtiles = (count + 15) / 16;  // rows past `count` are computed from stale rows and dropped
    fully_connected<kFc1KSteps, kFc1NTiles>(
        tiles.pool2, kPool2Stride, weights.fc1, weights.fc1_bias, mtiles, warp, g, t, lane,
        [&](int row, int col, float lo, float hi) {
          tiles.fc1_out[row * kFc1OutStride + col / 2] = pack_half2(relu(lo), relu(hi));
        });
    __syncthreads();
    fully_connected<kFc2KSteps, kFc2NTiles>(
        tiles.fc1_out, kFc1OutStride, weights.fc2, weights.fc2_bias, mtiles, warp, g, t, lane,
        [&](int row, int col, float lo, float hi) {
          tiles.fc2_out[row * kFc2OutStride + col / 2] = pack_half2(relu(lo), relu(hi));
        });
    __syncthreads();
    fully_connected<kFc3KSteps, kFc3NTiles>(
        tiles.fc2_out, kFc2OutStride, weights.fc3, weights.fc3_bias, mtiles, warp, g, t, lane,
        [&](int row, int col, float lo, float hi) {
          if (col < kClasses) {  // col is even, so col + 1 < 10 too
            tiles.logits[row * kClasses + col] = lo;
            tiles.logits[row * kClasses + col + 1] = hi;
          }
        });
    __syncthreads();

    // Logits out coalesced, then one thread per image for the argmax (lowest index wins a tie).
    for (int i = static_cast<int>(threadIdx.x); i < count * kClasses; i += kThreads)
      logits[static_cast<std::size_t>(chunk) * kClasses + i] = tiles.logits[i];
    if (static_cast<int>(threadIdx.x) < count) {
      const float* row = tiles.logits + threadIdx.x * kClasses;
      int best = 0;
      for (int c = 1; c < kClasses; ++c)
        if (row[c] > row[best]) best = c;
      labels[chunk + static_cast<int>(threadIdx.x)] = best;
    }
    // The next chunk rewrites pool2 (fc1 is done with it) and the logits tile only after three
    // more __syncthreads, so no barrier is needed here.
  }
}

}  // namespace ladder::tensor_cores
