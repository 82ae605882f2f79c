// Rung 18's kernel: rung 12's network with both convolutions moved from mma.sync to wgmma, the
// warpgroup MMA of Hopper (18_wgmma_primitives.cuh), and every tile loaded by the copy engine.
//
// Why this could be faster than rung 12: there, each lane loads its A fragments from shared
// memory with 32-bit loads (4 per mma.sync), and ncu showed the L1/shared pipe ~78% busy -- the
// tensor cores waited on those loads. wgmma reads A and B itself, 16-byte rows straight from
// shared memory, with no register file round trip; the warps only stage data and run epilogues.
//
// The whole difficulty is to put an implicit GEMM (a convolution) into the operand shape wgmma
// reads. Without swizzle an operand is a grid of 8-row x 16-byte core matrices: 8 rows at a
// 16-byte stride, the core matrices at a constant stride along K and another along M. Nothing
// forbids those strides from overlapping, and that is the trick used twice here: consecutive
// GEMM rows are consecutive 16-byte entries of the activation tile, and the shift from one tap
// to the next is only a different start address or K stride. No im2col copy is made.
//
// conv1 (1 -> 6 channels, 5x5, pad 2) as [256 x 48] x [48 x 32] per image:
//   x1[y][q] (16 bytes) = padded image row y, columns 4q .. 4q+7 (FP16); GEMM row m = 8y + q.
//   K = (r, j): input row y + r, column 4q + j (j = 0..7, r = 0..5, r = 5 zero weights).
//   N = (dx, c): the output at column 4q + dx (dx = 0..3), channel c (8, 6 used).
//   B[(r, j)][(dx, c)] = w1[c][r][j - dx] where 0 <= j - dx <= 4: a Toeplitz matrix, so one
//   16-byte row of input serves four output columns. K step s takes rows r = 2s, 2s+1: start =
//   x1 + (8 * mtile + 2s) rows, K stride = SBO = one y row (128 bytes).
//   Four 64-row m-tiles (y 0..31, 28 used). In the accumulators, warp w holds y = 8 mt + 2w and
//   y + 1 for q = g: with dx in N, the whole 2x2 pooling window is in one lane's registers.
// conv2 (6 -> 16, 5x5) as [128 x 240] x [240 x 32] per image:
//   pool1 is stored as two planes of 16-byte pixels (8 channels, 6 used): E[y][i] = pool1[y][2i],
//   O[y][i] = pool1[y][2i + 1], 7 per row. GEMM row m = 7y + i is output (y, x = 2i + dx).
//   K step (r, jp) = columns j = 2jp (E) and 2jp + 1 (O) of input row y + r: start = E + (7r +
//   jp) entries, K stride = O - E. N = (dx = 0..1, 16 channels), B again Toeplitz in (j, dx).
//   Horizontal pooling is in-lane (dx); vertical (rows 7 apart) goes through shared memory.
// fc1-fc3 are rung 12's mma.sync code, unchanged (12_tensor_cores_kernels.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "12_tensor_cores_kernels.cuh"
#include "18_wgmma_primitives.cuh"

namespace ladder::wgmma {

namespace tc = ladder::tensor_cores;

constexpr int kGroups = 2;  ///< warpgroups per block; each runs the convolutions of its own images
constexpr int kThreads = 128 * kGroups;
static_assert(kThreads == tc::kThreads, "the fully connected layers are rung 12's, written for 8 warps");

constexpr int kN = 32;  ///< both convolutions are m64n32k16 GEMMs
constexpr int kBRowBytes = 16, kCoreBytes = 128;
constexpr int kBKStride = (kN / 8) * kCoreBytes;  ///< B: the N core matrices of one K block side by side

constexpr int kX1Quads = 8, kX1Rows = 40;  ///< 32 padded rows + the rows the padding tiles read
constexpr int kConv1KSteps = 3, kConv1MTiles = 4;
constexpr int kPlanePitch = 7, kPlaneEntries = 160;  ///< 14 rows x 7 used; m-tile 2 reads up to 157
constexpr int kConv2KSteps = 15, kConv2MTiles = 2;
constexpr int kConv2Rows = 70;  ///< GEMM rows 7y + i that hold outputs (y <= 9)

constexpr int kB1Bytes = kConv1KSteps * 2 * kBKStride;  // 3,072
constexpr int kB2Bytes = kConv2KSteps * 2 * kBKStride;  // 15,360
constexpr int kImageBytes = tc::kImagePixels * 4;       // 3,136: a multiple of 16, as bulk copies need

/// Byte offset of B element (k, n) in the packed conv weights (host side, 18_wgmma.cu).
constexpr int b_offset(int k, int n) { return (k / 8) * kBKStride + (n / 8) * kCoreBytes + (n % 8) * kBRowBytes + (k % 8) * 2; }

struct GroupTiles {
  float raw[2][tc::kImagePixels];      ///< two images in flight (the copy engine writes them)
  uint4 x1[kX1Rows * kX1Quads];        ///< conv1's A
  uint4 planes[2 * kPlaneEntries];     ///< conv2's A: E then O
  float row_max[kConv2Rows * 16];      ///< conv2 output after the horizontal max, for the vertical one
};

struct Tiles {
  uint4 b[(kB1Bytes + kB2Bytes) / 16];  ///< conv1's then conv2's B, loaded once per block
  GroupTiles group[kGroups];
  std::uint32_t pool2[tc::kChunk * tc::kPool2Stride];  ///< from here on: rung 12's fc tiles
  std::uint32_t fc1_out[tc::kChunk * tc::kFc1OutStride];
  std::uint32_t fc2_out[tc::kChunk * tc::kFc2OutStride];
  float logits[tc::kChunk * tc::kClasses];
  std::uint64_t bars[1 + 2 * kGroups];  ///< weights; then per group, one per image buffer
};

/// conv1 + bias + ReLU + pool for the image in g.x1 -> g.planes.
__device__ __forceinline__ void conv1_relu_pool(GroupTiles& gt, std::uint32_t b1, float bias_lo, float bias_hi,
                                                int warp, int g, int t) {
  const std::uint32_t x1 = smem_address(gt.x1);
  std::uint32_t* planes = reinterpret_cast<std::uint32_t*>(gt.planes);
#pragma unroll 1
  for (int mt = 0; mt < kConv1MTiles; ++mt) {
    float d[16] = {};
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < kConv1KSteps; ++s)
      mma_64x32x16(d, descriptor(x1 + (8 * mt + 2 * s) * kCoreBytes, kCoreBytes, kCoreBytes),
                   descriptor(b1 + 2 * s * kBKStride, kBKStride, kCoreBytes), s > 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(d);
    const int py = 4 * mt + warp;  // rows y = 2py, 2py + 1
    if (py >= tc::kPool1Side) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // pooled column 2g + h from output columns 4g + 2h, +1
      const float lo = fmaxf(fmaxf(d[8 * h], d[8 * h + 2]), fmaxf(d[8 * h + 4], d[8 * h + 6]));
      const float hi = fmaxf(fmaxf(d[8 * h + 1], d[8 * h + 3]), fmaxf(d[8 * h + 5], d[8 * h + 7]));
      if (2 * g + h < tc::kPool1Side)  // column 2g + h is even (h = 0) -> plane E, odd -> O
        planes[(h * kPlaneEntries + py * kPlanePitch + g) * 4 + t] =
            tc::pack_half2(tc::relu(lo + bias_lo), tc::relu(hi + bias_hi));
    }
  }
}

/// conv2 for the planes -> horizontal max per row into gt.row_max (bias and ReLU come after the
/// vertical max).
__device__ __forceinline__ void conv2_row_max(GroupTiles& gt, std::uint32_t b2, int warp, int g, int t) {
  const std::uint32_t e = smem_address(gt.planes);
#pragma unroll 1
  for (int mt = 0; mt < kConv2MTiles; ++mt) {
    float d[16] = {};
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < kConv2KSteps; ++s) {
      const int r = s / 3, jp = s % 3;
      mma_64x32x16(d, descriptor(e + (64 * mt + kPlanePitch * r + jp) * 16, kPlaneEntries * 16, kCoreBytes),
                   descriptor(b2 + 2 * s * kBKStride, kBKStride, kCoreBytes), s > 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(d);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = 64 * mt + 16 * warp + g + 8 * half;
      if (m >= kConv2Rows) continue;
#pragma unroll
      for (int cb = 0; cb < 2; ++cb) {  // channel 8cb + 2t (+1); chunk 2dx + cb
        const float lo = fmaxf(d[4 * cb + 2 * half], d[4 * (2 + cb) + 2 * half]);
        const float hi = fmaxf(d[4 * cb + 2 * half + 1], d[4 * (2 + cb) + 2 * half + 1]);
        *reinterpret_cast<float2*>(&gt.row_max[m * 16 + 8 * cb + 2 * t]) = make_float2(lo, hi);
      }
    }
  }
}

/// The whole network; block b classifies images [b * per_block, min(n, (b + 1) * per_block)) in
/// chunks of 32. Warpgroup G takes images G, G + 2, ... of the block's range in order (the same
/// images as chunk slots G, G + 2, ...), two of them always on their way in by bulk copy.
/// conv_b: conv1's then conv2's B in the layout of b_offset(); fc: rung 12's fragments and biases.
__global__ void __launch_bounds__(kThreads, 2)
    lenet_wgmma(const float* __restrict__ images, int n, int per_block, const uint4* __restrict__ conv_b,
                tc::Weights fc, float* __restrict__ logits, int* __restrict__ labels) {
#if COURSE_WGMMA_DEVICE
  extern __shared__ uint4 shared_raw[];
  Tiles& tiles = *reinterpret_cast<Tiles*>(shared_raw);
  for (int i = static_cast<int>(threadIdx.x); i < static_cast<int>(sizeof(Tiles) / sizeof(uint4)); i += kThreads)
    shared_raw[i] = make_uint4(0u, 0u, 0u, 0u);
  const int tid = static_cast<int>(threadIdx.x);
  const int group = tid / 128, in_group = tid % 128, warp = in_group / 32;
  const int lane = tid % 32, g = lane / 4, t = lane % 4;
  GroupTiles& mine = tiles.group[group];
  std::uint64_t* weights_bar = &tiles.bars[0];
  std::uint64_t* image_bar = &tiles.bars[1 + 2 * group];
  if (tid == 0)
    for (int i = 0; i < 1 + 2 * kGroups; ++i) barrier_init(&tiles.bars[i], 1);
  fence_proxy_async();  // the zeros and the barriers, before the copy engine and the tensor cores see them
  __syncthreads();

  const int first = static_cast<int>(blockIdx.x) * per_block;
  const int end = min(n, first + per_block);
  const auto image = [&](int k) { return first + group + 2 * k; };  // this group's k-th image
  if (tid == 0) {
    barrier_expect_bytes(weights_bar, kB1Bytes + kB2Bytes);
    bulk_copy(tiles.b, conv_b, kB1Bytes + kB2Bytes, weights_bar);
  }
  if (in_group == 0)
    for (int k = 0; k < 2; ++k)
      if (image(k) < end) {
        barrier_expect_bytes(&image_bar[k], kImageBytes);
        bulk_copy(mine.raw[k], images + static_cast<std::size_t>(image(k)) * tc::kImagePixels, kImageBytes,
                  &image_bar[k]);
      }
  tc::prefetch_to_l2(fc.fc1, tc::fragment_bytes<tc::kFc1KSteps, tc::kFc1NTiles>());
  tc::prefetch_to_l2(fc.fc2, tc::fragment_bytes<tc::kFc2KSteps, tc::kFc2NTiles>());
  tc::prefetch_to_l2(fc.fc3, tc::fragment_bytes<tc::kFc3KSteps, tc::kFc3NTiles>());
  const float conv1_bias_lo = fc.conv1_bias[2 * t], conv1_bias_hi = fc.conv1_bias[2 * t + 1];
  const std::uint32_t b1 = smem_address(tiles.b), b2 = b1 + kB1Bytes;
  barrier_wait(weights_bar, 0);

  int k = 0;  // images this group has done
  for (int chunk = first; chunk < end; chunk += tc::kChunk) {
    const int count = min(tc::kChunk, end - chunk);
    for (int i = group; i < count; i += kGroups, ++k) {
      const int buf = k & 1;
      barrier_wait(&image_bar[buf], (k >> 1) & 1);
      // conv1's A: padded row y = image row y - 2, 16 bytes = padded columns 4q .. 4q+7.
      for (int e = in_group; e < tc::kImageSide * kX1Quads; e += 128) {
        const int row = e / kX1Quads, q = e % kX1Quads;
        const float* src = mine.raw[buf] + row * tc::kImageSide;
        float v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const int col = 4 * q + j - 2;
          v[j] = (col >= 0 && col < tc::kImageSide) ? src[col] : 0.0f;
        }
        mine.x1[(row + 2) * kX1Quads + q] = make_uint4(tc::pack_half2(v[0], v[1]), tc::pack_half2(v[2], v[3]),
                                                       tc::pack_half2(v[4], v[5]), tc::pack_half2(v[6], v[7]));
      }
      fence_proxy_async();
      group_sync(group);  // x1 complete; raw[buf] read by everyone
      if (in_group == 0 && image(k + 2) < end) {
        barrier_expect_bytes(&image_bar[buf], kImageBytes);
        bulk_copy(mine.raw[buf], images + static_cast<std::size_t>(image(k + 2)) * tc::kImagePixels, kImageBytes,
                  &image_bar[buf]);
      }
      conv1_relu_pool(mine, b1, conv1_bias_lo, conv1_bias_hi, warp, g, t);
      fence_proxy_async();
      group_sync(group);  // planes complete (and conv1's wgmma are done with x1)
      conv2_row_max(mine, b2, warp, g, t);
      group_sync(group);  // row_max complete
      std::uint32_t* pool2_row = tiles.pool2 + i * tc::kPool2Stride;
      for (int job = in_group; job < 25 * 8; job += 128) {
        const int p = job / 8, pair = job % 8, py = p / 5, px = p % 5;
        const float* top = mine.row_max + (2 * py * kPlanePitch + px) * 16 + 2 * pair;
        const float* bottom = top + kPlanePitch * 16;
        const float lo = fmaxf(top[0], bottom[0]) + __ldg(fc.conv2_bias + 2 * pair);
        const float hi = fmaxf(top[1], bottom[1]) + __ldg(fc.conv2_bias + 2 * pair + 1);
        pool2_row[8 * p + pair] = tc::pack_half2(tc::relu(lo), tc::relu(hi));
      }
      // The next image's first write to row_max comes after two more group barriers.
    }
    __syncthreads();  // pool2 complete

    const int mtiles = (count + 15) / 16;
    const int fwarp = tid / 32;
    tc::fully_connected<tc::kFc1KSteps, tc::kFc1NTiles>(
        tiles.pool2, tc::kPool2Stride, fc.fc1, fc.fc1_bias, mtiles, fwarp, g, t, lane,
        [&](int row, int col, float lo, float hi) {
          tiles.fc1_out[row * tc::kFc1OutStride + col / 2] = tc::pack_half2(tc::relu(lo), tc::relu(hi));
        });
    __syncthreads();
    tc::fully_connected<tc::kFc2KSteps, tc::kFc2NTiles>(
        tiles.fc1_out, tc::kFc1OutStride, fc.fc2, fc.fc2_bias, mtiles, fwarp, g, t, lane,
        [&](int row, int col, float lo, float hi) {
          tiles.fc2_out[row * tc::kFc2OutStride + col / 2] = tc::pack_half2(tc::relu(lo), tc::relu(hi));
        });
    __syncthreads();
    tc::fully_connected<tc::kFc3KSteps, tc::kFc3NTiles>(
        tiles.fc2_out, tc::kFc2OutStride, fc.fc3, fc.fc3_bias, mtiles, fwarp, g, t, lane,
        [&](int row, int col, float lo, float hi) {
          if (col < tc::kClasses) {
            tiles.logits[row * tc::kClasses + col] = lo;
            tiles.logits[row * tc::kClasses + col + 1] = hi;
          }
        });
    __syncthreads();
    for (int i = tid; i < count * tc::kClasses; i += kThreads)
      logits[static_cast<std::size_t>(chunk) * tc::kClasses + i] = tiles.logits[i];
    if (tid < count) {
      const float* row = tiles.logits + tid * tc::kClasses;
      int best = 0;
      for (int c = 1; c < tc::kClasses; ++c)
        if (row[c] > row[best]) best = c;
      labels[chunk + tid] = best;
    }
  }
#else
  (void)images, (void)n, (void)per_block, (void)conv_b, (void)fc, (void)logits, (void)labels;
  __trap();  // not the sm_90a build: the rung refuses to run before it gets here
#endif
}

}  // namespace ladder::wgmma
