// Rung 18's kernel: rung 12's network with both convolutions moved from mma.sync to wgmma, the
// warpgroup MMA of Hopper (18_wgmma_primitives.cuh), and every tile loaded by the copy engine.
//
// Why it is faster than rung 12 (0.0695 against 0.0863 ms for 10,000 images on an H100): there,
// each lane loads its A fragments from shared memory with 32-bit loads (4 per mma.sync), and the
// L1/shared pipe was the limiter; wgmma reads A and B itself, 16-byte rows straight from shared
// memory, with no trip through the register file; the warps only stage data and run epilogues.
// The limiter is still shared memory (ncu: L1/shared 80 % busy); by our count most of its bytes
// are now the tensor cores' own operand reads, ~96 KB per image, half of them weights
// (see 18_wgmma.cu).
//
// The whole difficulty is to put an implicit GEMM (a convolution) into the operand shape wgmma
// reads. Without swizzle an operand is a grid of 8-row x 16-byte core matrices: 8 rows at a
// 16-byte stride, the core matrices at a constant stride along K and another along M. Nothing
// forbids those strides from overlapping, and that is the trick used twice here: consecutive
// GEMM rows are consecutive 16-byte entries of the activation tile, and the shift from one tap
// to the next is only a different start address or K stride. No im2col copy is made.
//
// Both convolutions put the whole 2x2 pooling window into N, (dy, dx, channel), so that one
// lane holds the four outputs it pools, and every GEMM is m64n64k16:
// conv1 (1 -> 6 channels, 5x5, pad 2) as [128 x 48] x [48 x 64] per image:
//   x1[y][q] (16 bytes) = padded image row y, columns 4q .. 4q+7 (FP16); GEMM row m = 8py + q.
//   K = (r, j): input row 2py + r, column 4q + j (r = 0..5, j = 0..7).
//   N = (dy, dx, c): the output at row 2py + dy, column 4q + dx (dx = 0..3), channel c (8, 6 used).
//   B[(r, j)][(dy, dx, c)] = w1[c][r - dy][j - dx] where both lie in 0..4: a Toeplitz matrix, so
//   one 16-byte row of input serves eight outputs. K step s takes r = 2s, 2s+1: start = x1 +
//   (16 mtile + 2s) rows, K stride = one y row (128 bytes), row stride = two y rows (256 bytes).
//   Two 64-row m-tiles (py 0..15, 14 used).
// conv2 (6 -> 16, 5x5) as [64 x 288] x [288 x 64] per image:
//   pool1 is stored as four planes by row and column parity, 16-byte pixels (8 channels, 6
//   used): P[a][b][u][v] = pool1[2u + a][2v + b], 7 per row. GEMM row m = 7py + px is the pooled
//   output (py, px); K step (r, jp) = input row 2py + r, columns 2px + 2jp (plane b = 0) and
//   2px + 2jp + 1 (b = 1): start = P[r % 2][0] + (7 (r / 2) + jp) entries, K stride = one plane.
//   N = (dy, dx, 16 channels), B again Toeplitz. One m-tile: 35 of 64 rows used.
// Pooling, bias and ReLU are the epilogue in registers: max over the four (dy, dx) chunks.
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

constexpr int kN = 64;  ///< both convolutions are m64n64k16 GEMMs
constexpr int kBRowBytes = 16, kCoreBytes = 128;
constexpr int kBKStride = (kN / 8) * kCoreBytes;  ///< B: the N core matrices of one K block side by side

constexpr int kX1Quads = 8, kX1Rows = 40;  ///< 32 padded rows + the rows the padding tiles read
constexpr int kConv1KSteps = 3, kConv1MTiles = 2;
constexpr int kPlanePitch = 7, kPlaneEntries = 80;  ///< 7 x 7 used; row 63 reads up to entry 79
constexpr int kPlaneBytes = kPlaneEntries * 16;
constexpr int kConv2KSteps = 18;

constexpr int kB1Bytes = kConv1KSteps * 2 * kBKStride;  // 6,144
constexpr int kB2Bytes = kConv2KSteps * 2 * kBKStride;  // 36,864
constexpr int kImageBytes = tc::kImagePixels * 4;       // 3,136: a multiple of 16, as bulk copies need

/// Byte offset of B element (k, n) in the packed conv weights (host side, 18_wgmma.cu).
constexpr int b_offset(int k, int n) { return (k / 8) * kBKStride + (n / 8) * kCoreBytes + (n % 8) * kBRowBytes + (k % 8) * 2; }

struct GroupTiles {
  float raw[2][tc::kImagePixels];  ///< two images in flight (the copy engine writes them)
  uint4 x1[kX1Rows * kX1Quads];    ///< conv1's A
  uint4 planes[4 * kPlaneEntries]; ///< conv2's A: P[0][0], P[0][1], P[1][0], P[1][1]
};

struct Tiles {
  uint4 b[(kB1Bytes + kB2Bytes) / 16];  ///< conv1's then conv2's B, loaded once per block
  GroupTiles group[kGroups];
  // From here on rung 12's fc tiles. fc2_out and the logits reuse pool2's space, dead once fc1 is
  // done, so that two blocks still fit on an SM. (Not fc1_out's: fc2 reads its zero padding
  // columns, and a float's bits read as FP16 can be infinite, and 0 * inf is NaN.)
  union {
    std::uint32_t pool2[tc::kChunk * tc::kPool2Stride];
    struct {
      std::uint32_t fc2_out[tc::kChunk * tc::kFc2OutStride];
      float logits[tc::kChunk * tc::kClasses];
    } late;
  };
  std::uint32_t fc1_out[tc::kChunk * tc::kFc1OutStride];
  std::uint64_t bars[1 + 2 * kGroups];  ///< weights; then per group, one per image buffer
};

/// conv1 + bias + ReLU + pool for the image in gt.x1 -> gt.planes.
__device__ __forceinline__ void conv1_relu_pool(GroupTiles& gt, std::uint32_t b1, float bias_lo, float bias_hi,
                                                int warp, int g, int t) {
  const std::uint32_t x1 = smem_address(gt.x1);
  std::uint32_t* planes = reinterpret_cast<std::uint32_t*>(gt.planes);
#pragma unroll 1
  for (int mt = 0; mt < kConv1MTiles; ++mt) {
    float d[32] = {};
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < kConv1KSteps; ++s)
      mma_64x64x16(d, descriptor(x1 + (16 * mt + 2 * s) * kCoreBytes, kCoreBytes, 2 * kCoreBytes),
                   descriptor(b1 + 2 * s * kBKStride, kBKStride, kCoreBytes), s > 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(d);
    // Row g + 8 * half of warp w is pooled row py = 8 mt + 2w + half, pooled columns 2g and 2g + 1
    // (h), each the max of chunks (dy, dx) = (0 or 1, 2h or 2h + 1), chunk index 4dy + dx.
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int py = 8 * mt + 2 * warp + half;
      if (py >= tc::kPool1Side || g >= kPlanePitch) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float v[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int at = 2 * half + e;
          v[e] = fmaxf(fmaxf(d[4 * (2 * h) + at], d[4 * (2 * h + 1) + at]),
                       fmaxf(d[4 * (4 + 2 * h) + at], d[4 * (5 + 2 * h) + at]));
        }
        // pool1 pixel (py, 2g + h) -> plane (py % 2, h), entry (py / 2) * 7 + g, word t.
        planes[(((py % 2) * 2 + h) * kPlaneEntries + (py / 2) * kPlanePitch + g) * 4 + t] =
            tc::pack_half2(tc::relu(v[0] + bias_lo), tc::relu(v[1] + bias_hi));
      }
    }
  }
}

/// conv2 + bias + ReLU + pool for gt.planes -> one image's row of pool2 (rung 12's layout:
/// word 8p + channel / 2 for pooled pixel p).
__device__ __forceinline__ void conv2_relu_pool(GroupTiles& gt, std::uint32_t b2, const float (&bias)[4],
                                                std::uint32_t* pool2_row, int warp, int g, int t) {
  const std::uint32_t planes = smem_address(gt.planes);
  float d[32] = {};
  wgmma_fence();
#pragma unroll
  for (int s = 0; s < kConv2KSteps; ++s) {
    const int r = s / 3, jp = s % 3;
    mma_64x64x16(d,
                 descriptor(planes + (r % 2) * 2 * kPlaneBytes + (kPlanePitch * (r / 2) + jp) * 16, kPlaneBytes,
                            kCoreBytes),
                 descriptor(b2 + 2 * s * kBKStride, kBKStride, kCoreBytes), s > 0);
  }
  wgmma_commit();
  wgmma_wait<0>();
  fence_registers(d);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int m = 16 * warp + g + 8 * half, py = m / kPlanePitch, px = m % kPlanePitch;
    if (py >= 5 || px >= 5) continue;
#pragma unroll
    for (int cb = 0; cb < 2; ++cb) {  // channels 8cb + 2t, +1; chunk 4dy + 2dx + cb
      float v[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int at = 2 * half + e;
        v[e] = fmaxf(fmaxf(d[4 * cb + at], d[4 * (2 + cb) + at]), fmaxf(d[4 * (4 + cb) + at], d[4 * (6 + cb) + at]));
      }
      pool2_row[8 * (5 * py + px) + 4 * cb + t] =
          tc::pack_half2(tc::relu(v[0] + bias[2 * cb]), tc::relu(v[1] + bias[2 * cb + 1]));
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
  const float conv2_bias[4] = {fc.conv2_bias[2 * t], fc.conv2_bias[2 * t + 1], fc.conv2_bias[8 + 2 * t],
                               fc.conv2_bias[9 + 2 * t]};
  const std::uint32_t b1 = smem_address(tiles.b), b2 = b1 + kB1Bytes;
  barrier_wait(weights_bar, 0);

  int k = 0;  // images this group has done
  for (int chunk = first; chunk < end; chunk += tc::kChunk) {
    const int count = min(tc::kChunk, end - chunk);
    for (int i = group; i < count; i += kGroups, ++k) {
      const int buf = k & 1;
      barrier_wait(&image_bar[buf], (k >> 1) & 1);
      // conv1's A: padded row y = image row y - 2, 16 bytes = padded columns 4q .. 4q+7.
      // Three loads per entry (float2, float4, float2: columns 4q-2 .. 4q+5) rather than eight
      // scalar ones: the shared-memory pipe is this kernel's limiter.
      for (int e = in_group; e < tc::kImageSide * kX1Quads; e += 128) {
        const int row = e / kX1Quads, q = e % kX1Quads;
        const float* src = mine.raw[buf] + row * tc::kImageSide + 4 * q;
        const float2 left = q > 0 ? *reinterpret_cast<const float2*>(src - 2) : make_float2(0.0f, 0.0f);
        const float4 mid = q < 7 ? *reinterpret_cast<const float4*>(src) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        const float2 right = q < 6 ? *reinterpret_cast<const float2*>(src + 4) : make_float2(0.0f, 0.0f);
        mine.x1[(row + 2) * kX1Quads + q] = make_uint4(tc::pack_half2(left.x, left.y), tc::pack_half2(mid.x, mid.y),
                                                       tc::pack_half2(mid.z, mid.w), tc::pack_half2(right.x, right.y));
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
      conv2_relu_pool(mine, b2, conv2_bias, tiles.pool2 + i * tc::kPool2Stride, warp, g, t);
      // The next image's conv1 rewrites the planes only after the next group barrier.
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
          tiles.late.fc2_out[row * tc::kFc2OutStride + col / 2] = tc::pack_half2(tc::relu(lo), tc::relu(hi));
        });
    __syncthreads();
    tc::fully_connected<tc::kFc3KSteps, tc::kFc3NTiles>(
        tiles.late.fc2_out, tc::kFc2OutStride, fc.fc3, fc.fc3_bias, mtiles, fwarp, g, t, lane,
        [&](int row, int col, float lo, float hi) {
          if (col < tc::kClasses) {
            tiles.late.logits[row * tc::kClasses + col] = lo;
            tiles.late.logits[row * tc::kClasses + col + 1] = hi;
          }
        });
    __syncthreads();
    for (int i = tid; i < count * tc::kClasses; i += kThreads)
      logits[static_cast<std::size_t>(chunk) * tc::kClasses + i] = tiles.late.logits[i];
    if (tid < count) {
      const float* row = tiles.late.logits + tid * tc::kClasses;
      int best = 0;
      for (int c = 1; c < tc::kClasses; ++c)
        if (row[c] > row[best]) best = c;
      labels[chunk + tid] = best;
    }
    __syncthreads();  // the logits live in pool2's space, which the next chunk's convolutions rewrite
  }
#else
  (void)images, (void)n, (void)per_block, (void)conv_b, (void)fc, (void)logits, (void)labels;
  __trap();  // not the sm_90a build: the rung refuses to run before it gets here
#endif
}

}  // namespace ladder::wgmma
