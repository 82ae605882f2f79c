// Lab 08 solution, part C1: MobileNetV2's inverted residual block, fully fused.
// The contract is documented in common/include/labs/lab08_conv_algorithms.hpp; the lecture is
// lectures/08-conv-algorithms.md (sections 7-8).
//
// Unfused, a block writes its expanded tensor [N,hidden,H,W] (6x the input) to global memory,
// reads it back for the depthwise step, writes the depthwise output and reads it back for the
// projection. Here ONE kernel does the whole block and neither intermediate leaves the SM.
//
// The design, and why:
//   - A CTA owns a TILE of output pixels: several whole images when the images are small (7x7,
//     14x14: no halo at all, and enough pixels to keep 256 threads busy), or a band of output
//     rows of one image when they are large (each band's input window has a one-row halo that
//     the neighbouring band computes too). The host picks the tile per block shape with a small
//     cost model (choose_tiling): pixels per CTA, halo, shared memory per CTA (two CTAs per SM
//     when possible) and how evenly the CTAs fill the GPU.
//   - The tile's input window, all input channels, is staged in shared memory ONCE, with cp.async
//     (a thread issues all its copies without waiting for each: one memory latency per stage, not
//     one per element); a thread keeps one window pixel and walks the channels, so its address
//     arithmetic is done once per pixel.
//   - Each chunk's weights are staged WHILE an earlier step computes, each into its one buffer as
//     soon as the step that reads it is done: the projection's at the top of the chunk (overlapping
//     the expansion and the depthwise step), the next chunk's expansion weights after this
//     chunk's expansion, its depthwise weights after this chunk's depthwise step (cp.async
//     groups; no buffer doubled, no extra shared memory). The 1x1 weights go 16 bytes per copy
//     (a quarter of the copy instructions and their index arithmetic). Before, every chunk began
//     by copying all of its weights and waiting for them at a barrier.
//   - The hidden channels go through in chunks of 32. Per chunk: (1) the expansion is a small
//     GEMM, [32 x in] weights times the [in x window pixels] input, each thread computing an
//     8-channel x 4-pixel micro-tile from float4 shared-memory loads (12 loads per 128
//     multiply-adds; 4 or 2 channels when the window is too small to give all 256 threads 8),
//     + bias, ReLU6, into shared memory; (2) the depthwise 3x3 + bias + ReLU6 of
//     the chunk from there into a second shared array (zero padding = positions outside the
//     image count as 0, NOT relu6(expand bias); a per-pixel table of window offset and tap mask,
//     built once per CTA, spares the integer arithmetic); (3) the projection is a second GEMM, [out x 32]
//     times [32 x tile pixels], accumulated across chunks in registers (up to 64 per thread).
//   - The weights of the chunk are staged in shared memory with row strides of 4 (mod 8) floats,
//     so that the micro-tiles' float4 loads of different rows hit different banks.
//   - At the end: + projection bias, + the input pixel when the block is residual, one write.
//   - A CTA covers up to 256 output channels (64 accumulators per thread: 256 channels x 64
//     pixels or 128 x 128, ...; the rows of a tile past the block's channels are skipped, so a
//     160-channel block is one CTA of 256 and does not compute its expansion twice). Wider blocks
//     use several CTAs per tile (blockIdx.y), each recomputing the expansion.
//   - Split over the hidden channels (sm_90+): when the tiles alone are too few to fill the GPU
//     (wide blocks at batch 32, any block at batch 1), a cluster of 2 to 8 CTAs shares a tile,
//     each expanding, filtering and projecting its own slice of the hidden chunks (blockIdx.z);
//     at the end each CTA puts its partial projection in its shared memory and each sums a part
//     of the outputs over the cluster's CTAs through distributed shared memory, in a fixed order
//     (deterministic), then writes it. Nothing goes through global memory, no atomics, no second
//     kernel. The cost model weighs this against the window each CTA stages again, and counts
//     the clusters the GPU runs at ONCE (cudaOccupancyMaxActiveClusters): a cluster must fit in
//     one GPC, so an H100 with room for 264 CTAs (2 per SM) runs only 30 clusters of 8 (240) or
//     62 of 4 (248). 32 clusters of 8 or 64 of 4 ran as two waves, the second almost empty, and
//     took twice the time of one (Nsight Compute: SMs active 60 % of the kernel); 6 or 3 CTAs
//     per cluster fit in one wave.
//   - A block whose window cannot fit in shared memory even for one output pixel (thousands of
//     input channels; never MobileNetV2) runs a simple fused kernel instead (one thread per
//     expanded value), kept as the fallback.
// The workspace is 0 bytes.
//
// Measured (NVIDIA H100 80GB HBM3, bench/results/lab08_mobilenet_h100_80gb_hbm3.csv, cuDNN +
// cuBLAS's time / ours, one run): the course's 7 blocks at batch 10,000 2.03-3.28x;
// MobileNetV2@224's blocks at batch 256 1.24-2.82x, at batch 32 2.30-2.57x (narrow), 1.69x
// (64-384-64), 1.32x (96-576-96: 0.1168 against 0.1540 ms) and 1.22x (160-960-160: 0.0862 against
// 0.1053 ms): all 19 rows faster; the whole network 15.86 against 42.23 ms on 10,000 images,
// 0.128 against 0.479 ms on one image. The previous version's run: 1.62-2.89x, 0.82x and 0.76x
// (96-576-96 and 160-960-160 at batch 32, the clusters in two waves), 17.67 against 42.42 ms.
// In scratch runs on the same H100 (`lab08_mobilenet --only`, cuDNN + cuBLAS in the same run):
// the staging overlap alone, clusters still in two waves, 0.90x and 0.85x on those two rows; with
// 4-byte copies instead of 16-byte ones 0.1830 / 0.1401 ms instead of 0.1726 / 0.1260. Tried and
// dropped: warps of 8 x 4 micro-tiles instead of 32 x 1 in the projection and the 2-row
// expansion (fewer shared-memory wavefronts on paper): 2-4 % slower on both rows (0.1225 against
// 0.1204 ms, 0.0914 against 0.0883 ms).
#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "course/cuda_check.hpp"
#include "course/error.hpp"
#include "labs/lab08_conv_algorithms.hpp"

namespace lab08 {
namespace {

constexpr int kThreads = 256;
constexpr int kChunk = 32;                             // hidden channels per pass through shared memory
constexpr int kMicroRows = 8, kMicroCols = 4;          // a thread's micro-tile: 8 channels x 4 pixels
constexpr int kProjectPasses = 2;                      // micro-tiles of accumulators per thread
constexpr int kProjectWeightStride = kChunk + 4;       // 36 floats: rows 4 banks apart
constexpr int kMaxOutTile = 256;                       // output channels per CTA, at most
constexpr int kMaxSplit = 8;                           // CTAs per cluster sharing a tile (portable maximum)
constexpr int kCtasPerSm = 2;                          // the register budget (__launch_bounds__)

// The fallback kernel (see the top): one image and an 8x8 output tile per CTA.
constexpr int kFallbackTile = 8;
constexpr int kFallbackTilePixels = kFallbackTile * kFallbackTile;
constexpr int kFallbackOutGroup = 64;
constexpr int kFallbackAccumulators = kFallbackOutGroup * kFallbackTilePixels / kThreads;  // 16

__host__ __device__ constexpr int round_up(int v, int m) { return (v + m - 1) / m * m; }
// Output pixels one CTA covers with its accumulators, for a tile of out_tile output channels:
// out_tile / 8 threads share a pixel column, each with kProjectPasses micro-tiles of 4 pixels.
constexpr int tile_pixel_capacity(int out_tile) {
  return kProjectPasses * (kThreads / (out_tile / kMicroRows)) * kMicroCols;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw course::Error("lab08::inverted_residual_block: " + message);
}

void validate_sizes(int N, int in, int hidden, int out, int H, int W, int stride) {
  const int sizes[] = {N, in, hidden, out, H, W};
  const char* names[] = {"N", "in", "hidden", "out", "H", "W"};
  for (int d = 0; d < 6; ++d)
    require(sizes[d] >= 1, std::string(names[d]) + " must be >= 1, got " + std::to_string(sizes[d]));
  require(stride == 1 || stride == 2, "stride must be 1 or 2, got " + std::to_string(stride));
  const std::int64_t plane = std::int64_t{H} * W;
  const std::int64_t P = (H - 1) / stride + 1, Q = (W - 1) / stride + 1;
  const std::int64_t counts[] = {N * in * plane, N * hidden * plane, N * out * P * Q, std::int64_t{hidden} * in,
                                 std::int64_t{out} * hidden};
  const char* what[] = {"input", "expanded tensor", "output", "expand weight", "project weight"};
  for (int i = 0; i < 5; ++i)
    require(counts[i] <= INT_MAX,
            std::string(what[i]) + " too large for int indexing (" + std::to_string(counts[i]) + " elements)");
  require((out + kFallbackOutGroup - 1) / kFallbackOutGroup <= 65535,
          "out too large: more output channels than the grid covers");
}

/// How the tiled kernel cuts the block: `images` whole images x a `rows` x `cols` tile of output
/// pixels per CTA, and the shared-memory strides that follow from it.
struct Tiling {
  int images = 1, rows = 1, cols = 1;
  int tiles_p = 1, tiles_q = 1;  // output tiles per image, down and across
  int window_stride = 0;         // floats per channel of the staged input window (max over CTAs, % 4 == 0)
  int tile_stride = 0;           // floats per channel of the depthwise output (% 4 == 0)
  int in_rows = 0;               // input channels rounded up to 4 (the expansion's K; extra rows are 0)
  int expand_stride = 0;         // floats per row of the staged expand weights: >= in_rows, 4 (mod 8)
  int out_tile = 16;             // output channels per CTA (the kernel's kOutTile)
  int split = 1;                 // CTAs (one cluster) sharing the tile's hidden channels (gridDim.z)
  int expand_rows = 8;           // channels per micro-tile of the expansion: 8, 4 or 2 (expand_chunk)
  bool wide_copies = false;      // the 1x1 weights staged 16 bytes per copy (rows a multiple of 4 floats, aligned)
  std::int64_t smem_bytes = 0;
};

struct BlockArgs {
  InvertedResidualWeights wt;
  const float* x;
  float* y;
  int N, in, hidden, out, H, W, P, Q;
  bool residual;
  Tiling tiling;
};

}  // namespace

static __device__ __forceinline__ float relu6(float v) { return fminf(fmaxf(v, 0.0f), 6.0f); }

/// *dst = valid ? *src : 0, as an asynchronous copy (cp.async, sm_80+): a thread issues all its
/// copies back to back without waiting for each load, so staging costs one memory latency, not
/// one per element. `src` must be a valid address even when !valid (nothing is read then).
static __device__ __forceinline__ void copy_async(float* dst, const float* src, bool valid) {
  const unsigned shared_address = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address), "l"(src),
               "r"(valid ? 4 : 0));
}
/// The same for 4 floats at once (16-byte aligned `dst` and `src`): a quarter of the copy
/// instructions and of their index arithmetic. .cg: through L2 only (each CTA reads a weight once).
static __device__ __forceinline__ void copy_async4(float* dst, const float* src, bool valid) {
  const unsigned shared_address = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address), "l"(src),
               "r"(valid ? 16 : 0));
}
/// The copies a thread issued since its last commit form one group; wait_async_groups<n> waits
/// until at most the n newest of its groups are still in flight.
static __device__ __forceinline__ void commit_async_copies() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kInFlight>
static __device__ __forceinline__ void wait_async_groups() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kInFlight));
}

/// acc[i][j] += sum_{k < k_end} a[i * a_row_step + k] * b[k * b_row_step + j] for the thread's
/// kRows rows (i) and 4 columns (j), k_end a multiple of 4: per 4 values of k, kRows float4 loads
/// of the weights (one per row) and 4 float4 loads of the pixels feed 16 kRows multiply-adds (128
/// for 8 rows). With kGuard, rows i >= `rows` are skipped (a tile wider than the block's output
/// channels: their weights would be zeros); a separate instantiation, because the test inside the
/// unrolled loop cost the unguarded case 3-8 % on the Fashion blocks (H100).
template <int kRows, bool kGuard>
static __device__ __forceinline__ void micro_tile_product(float (&acc)[kRows][kMicroCols],
                                                          const float* __restrict__ a, int a_row_step,
                                                          const float* __restrict__ b, int b_row_step, int k_end,
                                                          int rows) {
#pragma unroll 1
  for (int k = 0; k < k_end; k += 4) {
    float4 pixels[4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) pixels[kk] = *reinterpret_cast<const float4*>(b + (k + kk) * b_row_step);
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      if (kGuard && i >= rows) break;
      const float4 w = *reinterpret_cast<const float4*>(a + i * a_row_step + k);
      const float wk[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        acc[i][0] = fmaf(wk[kk], pixels[kk].x, acc[i][0]);
        acc[i][1] = fmaf(wk[kk], pixels[kk].y, acc[i][1]);
        acc[i][2] = fmaf(wk[kk], pixels[kk].z, acc[i][2]);
        acc[i][3] = fmaf(wk[kk], pixels[kk].w, acc[i][3]);
      }
    }
  }
}

/// The expansion of one chunk: [kChunk x in] weights x [in x window pixels] + bias, ReLU6 ->
/// `expanded`, in micro-tiles of kRows channels x 4 pixels. 8 rows make the fewest loads per
/// multiply-add, but a small window (one 7 x 7 image: 13 columns of 4 pixels) then gives only 52
/// micro-tiles for 256 threads; the host picks fewer rows per thread there (Tiling::expand_rows).
template <int kRows>
static __device__ __forceinline__ void expand_chunk(const Tiling& t, const float* __restrict__ w_expand,
                                                    const float* __restrict__ b_expand, const float* __restrict__ window,
                                                    float* __restrict__ expanded, int window_pixels, int tid) {
  constexpr int kGroups = kChunk / kRows;  // threads sharing a column of 4 pixels
  const int row = tid % kGroups;           // expanded channels row + kGroups i
  const int items = kGroups * (round_up(window_pixels, 4) / 4);
  for (int item = tid; item < items; item += kThreads) {
    const int col = (item / kGroups) * kMicroCols;
    float e[kRows][kMicroCols] = {};
    micro_tile_product<kRows, false>(e, w_expand + row * t.expand_stride, kGroups * t.expand_stride, window + col,
                                     t.window_stride, t.in_rows, kRows);
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int c = row + kGroups * i;
      const float bias = b_expand[c];
      *reinterpret_cast<float4*>(expanded + c * t.window_stride + col) =
          make_float4(relu6(e[i][0] + bias), relu6(e[i][1] + bias), relu6(e[i][2] + bias), relu6(e[i][3] + bias));
    }
  }
}

/// The one write of output channel o at the tile's pixel j: the projection sum + bias, + the input
/// pixel when the block is residual. `x` is the CTA's first image of the input.
static __device__ __forceinline__ void store_output(const BlockArgs& a, const float* __restrict__ x, int n0, int o,
                                                    int j, int tile_plane, int p0, int q0, int cols, float v) {
  const int plane = a.H * a.W;
  const int g = j / tile_plane, r = j % tile_plane;
  const int p = p0 + r / cols, q = q0 + r % cols;
  v += a.wt.project_bias[o];
  if (a.residual) v += x[(g * a.in + o) * plane + p * a.W + q];  // stride 1, in == out: (p, q) is an input pixel
  a.y[((n0 + g) * a.out + o) * (a.P * a.Q) + p * a.Q + q] = v;
}

/// Stages chunk c0's expansion weights [chunk x in] (rows expand_stride apart, zero past the chunk
/// and past `in`) and biases.
static __device__ __forceinline__ void stage_expand_weights(const BlockArgs& a, float* w_expand, float* b_expand, int c0,
                                                            int tid) {
  const Tiling& t = a.tiling;
  const int chunk = min(kChunk, a.hidden - c0);
  if (t.wide_copies) {
    const int quads = t.expand_stride / 4;
    for (int i = tid; i < kChunk * quads; i += kThreads) {
      const int c = i / quads, k = (i % quads) * 4;
      const bool valid = c < chunk && k < a.in;
      copy_async4(w_expand + c * t.expand_stride + k, a.wt.expand_weight + (valid ? (c0 + c) * a.in + k : 0), valid);
    }
  } else {
    for (int i = tid; i < kChunk * t.expand_stride; i += kThreads) {
      const int c = i / t.expand_stride, k = i % t.expand_stride;
      const bool valid = c < chunk && k < a.in;
      copy_async(w_expand + i, a.wt.expand_weight + (valid ? (c0 + c) * a.in + k : 0), valid);
    }
  }
  if (tid < kChunk) copy_async(b_expand + tid, a.wt.expand_bias + (tid < chunk ? c0 + tid : 0), tid < chunk);
}

/// Stages chunk c0's depthwise weights [chunk x 9] and biases (zero past the chunk).
static __device__ __forceinline__ void stage_depthwise_weights(const BlockArgs& a, float* w_depthwise,
                                                               float* b_depthwise, int c0, int tid) {
  const int chunk = min(kChunk, a.hidden - c0);
  for (int i = tid; i < kChunk * 9; i += kThreads)
    copy_async(w_depthwise + i, a.wt.depthwise_weight + (i < chunk * 9 ? c0 * 9 + i : 0), i < chunk * 9);
  if (tid < kChunk) copy_async(b_depthwise + tid, a.wt.depthwise_bias + (tid < chunk ? c0 + tid : 0), tid < chunk);
}

/// Stages the projection weights of chunk c0 for output channels o0 .. o0+out_rows-1: [out_rows x
/// kChunk] in rows of kProjectWeightStride (zero past the chunk; rows past out_rows are never read).
static __device__ __forceinline__ void stage_project_weights(const BlockArgs& a, float* w_project, int o0, int out_rows,
                                                             int c0, int tid) {
  const int chunk = min(kChunk, a.hidden - c0);
  if (a.tiling.wide_copies) {
    constexpr int kQuads = kProjectWeightStride / 4;
    for (int i = tid; i < out_rows * kQuads; i += kThreads) {
      const int o = i / kQuads, c = (i % kQuads) * 4;
      const bool valid = c < chunk;
      copy_async4(w_project + o * kProjectWeightStride + c,
                  a.wt.project_weight + (valid ? (o0 + o) * a.hidden + c0 + c : 0), valid);
    }
  } else {
    for (int i = tid; i < out_rows * kProjectWeightStride; i += kThreads) {
      const int o = i / kProjectWeightStride, c = i % kProjectWeightStride;
      const bool valid = c < chunk;
      copy_async(w_project + i, a.wt.project_weight + (valid ? (o0 + o) * a.hidden + c0 + c : 0), valid);
    }
  }
}

template <int kStride, int kOutTile>
static __global__ void __launch_bounds__(kThreads, kCtasPerSm) tiled_block_kernel(const BlockArgs a) {
  constexpr int kProjectRowGroups = kOutTile / kMicroRows;  // threads sharing a pixel column
  constexpr int kProjectColStep = kThreads / kProjectRowGroups * kMicroCols;
  const Tiling& t = a.tiling;
  const bool expand = a.wt.expand_weight != nullptr;
  const int tid = threadIdx.x;

  // Shared memory, every array starting at a multiple of 4 floats (float4 loads).
  extern __shared__ float4 smem_float4[];
  float* window = reinterpret_cast<float*>(smem_float4);                   // [in_rows][window_stride]
  float* expanded = window + t.in_rows * t.window_stride;                  // [kChunk][window_stride]
  float* depthwise = expanded + (expand ? kChunk * t.window_stride : 0);   // [kChunk][tile_stride]
  float* w_expand = depthwise + kChunk * t.tile_stride;                    // [kChunk][expand_stride]
  float* w_project = w_expand + (expand ? kChunk * t.expand_stride : 0);   // [kOutTile][36]
  float* w_depthwise = w_project + kOutTile * kProjectWeightStride;        // [kChunk][9]
  float* b_depthwise = w_depthwise + kChunk * 9;                           // [kChunk]
  float* b_expand = b_depthwise + kChunk;                                  // [kChunk]
  int2* pixel_taps = reinterpret_cast<int2*>(b_expand + kChunk);           // [tile_stride]

  // This CTA's tile: images n0 .. n0+images-1, output rows p0.., columns q0.., channels o0...
  const int tiles = t.tiles_p * t.tiles_q;
  const int n0 = (blockIdx.x / tiles) * t.images, tile = blockIdx.x % tiles;
  const int images = min(t.images, a.N - n0);
  const int p0 = (tile / t.tiles_q) * t.rows, q0 = (tile % t.tiles_q) * t.cols;
  const int rows = min(t.rows, a.P - p0), cols = min(t.cols, a.Q - q0);
  const int o0 = blockIdx.y * kOutTile;
  // Its input window: the rows and columns the tile's 3x3 windows touch, clipped to the image
  // (what lies outside is the depthwise step's zero padding and is never stored).
  const int h_lo = max(0, p0 * kStride - 1), h_hi = min(a.H - 1, (p0 + rows - 1) * kStride + 1);
  const int w_lo = max(0, q0 * kStride - 1), w_hi = min(a.W - 1, (q0 + cols - 1) * kStride + 1);
  const int win_cols = w_hi - w_lo + 1, win_plane = (h_hi - h_lo + 1) * win_cols;
  const int window_pixels = images * win_plane;
  const int tile_plane = rows * cols, tile_pixels = images * tile_plane;
  const int plane = a.H * a.W;
  const float* __restrict__ x = a.x + n0 * a.in * plane;

  // 0. The input window, every input channel, once (0 past the last channel and pixel, so that
  //    the micro-tiles may read whole float4s). A thread keeps a window pixel and walks the
  //    channels (`lanes` consecutive threads read consecutive pixels: coalesced), so the pixel's
  //    address is worked out once, not once per channel.
  {
    const int lanes = min(t.window_stride, kThreads), groups = kThreads / lanes;
    if (tid < lanes * groups)
      for (int j = tid % lanes; j < t.window_stride; j += lanes) {
        const bool pixel = j < window_pixels;
        const int g = pixel ? j / win_plane : 0, r = pixel ? j % win_plane : 0;
        const int offset = g * a.in * plane + (h_lo + r / win_cols) * a.W + w_lo + r % win_cols;
        for (int k = tid / lanes; k < t.in_rows; k += groups) {
          const bool valid = pixel && k < a.in;
          copy_async(window + k * t.window_stride + j, x + (valid ? offset + k * plane : 0), valid);
        }
      }
  }
  // This CTA's share of the hidden channels: all of them, or with a split (a cluster of
  // gridDim.z CTAs on the same tile) the chunks of slice blockIdx.z; the slices' partial
  // projections are summed through distributed shared memory at the end.
  const int chunks = (a.hidden + kChunk - 1) / kChunk;
  const int c_begin = static_cast<int>(blockIdx.z) * chunks / static_cast<int>(gridDim.z) * kChunk;
  const int c_end = min(a.hidden, (static_cast<int>(blockIdx.z) + 1) * chunks / static_cast<int>(gridDim.z) * kChunk);
  // The first chunk's expansion and depthwise weights join the window's copies (one group).
  if (c_begin < c_end) {
    if (expand) stage_expand_weights(a, w_expand, b_expand, c_begin, tid);
    stage_depthwise_weights(a, w_depthwise, b_depthwise, c_begin, tid);
  }
  commit_async_copies();

  // Per output pixel of the tile, once: the window offset of its top-left tap (which may lie in
  // the padding) and a 9-bit mask of the taps inside the image, so that the depthwise step of
  // every chunk does no index arithmetic.
  for (int j = tid; j < t.tile_stride; j += kThreads) {
    int base = 0, inside = 0;
    if (j < tile_pixels) {
      const int g = j / tile_plane, r = j % tile_plane;
      const int h0 = (p0 + r / cols) * kStride - 1, w0 = (q0 + r % cols) * kStride - 1;
      base = g * win_plane + (h0 - h_lo) * win_cols + (w0 - w_lo);
      for (int tap = 0; tap < 9; ++tap) {
        const int h = h0 + tap / 3, w = w0 + tap % 3;
        if (h >= 0 && h < a.H && w >= 0 && w < a.W) inside |= 1 << tap;
      }
    }
    pixel_taps[j] = make_int2(base, inside);
  }

  const int project_row = tid % kProjectRowGroups;  // output channels o0 + project_row + kProjectRowGroups i
  const int project_col = (tid / kProjectRowGroups) * kMicroCols;
  // The thread's output channels that exist (a tile wider than the block skips the others): the
  // same count for every thread when out - o0 is a multiple of kProjectRowGroups.
  const int out_rows = min(kOutTile, a.out - o0);
  const int project_rows = min(kMicroRows, max(0, (out_rows - project_row + kProjectRowGroups - 1) / kProjectRowGroups));
  float acc[kProjectPasses][kMicroRows][kMicroCols];
#pragma unroll
  for (int pass = 0; pass < kProjectPasses; ++pass)
#pragma unroll
    for (int i = 0; i < kMicroRows; ++i)
#pragma unroll
      for (int j = 0; j < kMicroCols; ++j) acc[pass][i][j] = 0.0f;

  // 1. The weights of every step are copied while an earlier step computes, each into the one
  //    buffer it has, as soon as the step that read that buffer is done: the projection's at the
  //    top of the chunk (the last chunk's projection is over), the next chunk's expansion
  //    weights after this chunk's expansion, its depthwise weights after this chunk's depthwise
  //    step. No step waits for a copy issued just before it, and no buffer is doubled.
  for (int c0 = c_begin; c0 < c_end; c0 += kChunk) {
    const int chunk = min(kChunk, a.hidden - c0);
    const int chunk_rows = round_up(chunk, 4);  // the projection's K (rows past `chunk` are 0)
    const int next = c0 + kChunk;               // the next chunk, if < c_end

    wait_async_groups<0>();  // this chunk's expansion and depthwise weights (and at first the window)
    __syncthreads();         // ... everyone's; and the last chunk's projection is over
    stage_project_weights(a, w_project, o0, out_rows, c0, tid);
    commit_async_copies();

    // 2. Expansion: [kChunk x in] x [in x window pixels] + bias, ReLU6 -> expanded.
    if (expand) {
      switch (t.expand_rows) {
        case 8: expand_chunk<8>(t, w_expand, b_expand, window, expanded, window_pixels, tid); break;
        case 4: expand_chunk<4>(t, w_expand, b_expand, window, expanded, window_pixels, tid); break;
        default: expand_chunk<2>(t, w_expand, b_expand, window, expanded, window_pixels, tid); break;
      }
      __syncthreads();
      if (next < c_end) stage_expand_weights(a, w_expand, b_expand, next, tid);
    }
    commit_async_copies();  // (maybe empty)

    // 3. Depthwise 3x3 + bias + ReLU6 -> depthwise, one (channel, pixel) per thread and step;
    //    rows chunk .. chunk_rows-1 and the pixels past the tile are written as 0 (the
    //    projection reads them, times zero weights: they must not hold NaN).
    const float* source = expand ? expanded : window + c0 * t.window_stride;  // t = 1: the input itself
    int c = tid / t.tile_stride, j = tid % t.tile_stride;  // item tid + k * kThreads, walked incrementally
    for (int i = tid; i < chunk_rows * t.tile_stride; i += kThreads) {
      const int2 taps = pixel_taps[j];  // padding pixels past the tile have no taps inside
      float v = 0.0f;
      if (c < chunk && taps.y != 0) {
        const float* e = source + c * t.window_stride + taps.x;
        float sum = b_depthwise[c];
#pragma unroll
        for (int tap = 0; tap < 9; ++tap)
          if (taps.y & (1 << tap)) sum = fmaf(w_depthwise[c * 9 + tap], e[(tap / 3) * win_cols + tap % 3], sum);
        v = relu6(sum);
      }
      depthwise[i] = v;
      for (j += kThreads; j >= t.tile_stride; j -= t.tile_stride) ++c;
    }
    wait_async_groups<1>();  // this chunk's projection weights (the next expansion's may still fly)
    __syncthreads();
    if (next < c_end) stage_depthwise_weights(a, w_depthwise, b_depthwise, next, tid);
    commit_async_copies();

    // 4. Projection: [kOutTile x chunk] x [chunk x tile pixels], accumulated in registers.
#pragma unroll
    for (int pass = 0; pass < kProjectPasses; ++pass) {
      const int col = project_col + pass * kProjectColStep;
      if (col >= tile_pixels) continue;
      const float* w = w_project + project_row * kProjectWeightStride;
      if (project_rows == kMicroRows)
        micro_tile_product<kMicroRows, false>(acc[pass], w, kProjectRowGroups * kProjectWeightStride, depthwise + col,
                                              t.tile_stride, chunk_rows, kMicroRows);
      else
        micro_tile_product<kMicroRows, true>(acc[pass], w, kProjectRowGroups * kProjectWeightStride, depthwise + col,
                                             t.tile_stride, chunk_rows, project_rows);
    }
  }
  wait_async_groups<0>();  // (empty groups only: nothing was staged past the last chunk)

  // 5. Bias, residual, one write per output.
  if (gridDim.z == 1) {
#pragma unroll
    for (int pass = 0; pass < kProjectPasses; ++pass)
#pragma unroll
      for (int i = 0; i < kMicroRows; ++i) {
        if (i >= project_rows) break;
#pragma unroll
        for (int jj = 0; jj < kMicroCols; ++jj) {
          const int j = project_col + pass * kProjectColStep + jj;
          if (j < tile_pixels)
            store_output(a, x, n0, o0 + project_row + kProjectRowGroups * i, j, tile_plane, p0, q0, cols, acc[pass][i][jj]);
        }
      }
    return;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // A split: every CTA of the cluster holds a partial sum over its slice of the hidden channels.
  // Each puts its partials in its own shared memory (free now: the loop ended with a barrier),
  // then each sums 1/gridDim.z of the outputs over the cluster's CTAs in a fixed order (the
  // result does not depend on which CTA finished first) and writes them.
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  float* partial = window;  // [out_rows][tile_stride]; make_tiling reserves room for it
  __syncthreads();          // it may cover arrays the last projection still reads
#pragma unroll
  for (int pass = 0; pass < kProjectPasses; ++pass) {
    const int col = project_col + pass * kProjectColStep;
    if (col >= tile_pixels) continue;
#pragma unroll
    for (int i = 0; i < kMicroRows; ++i) {
      if (i >= project_rows) break;
      *reinterpret_cast<float4*>(partial + (project_row + kProjectRowGroups * i) * t.tile_stride + col) =
          make_float4(acc[pass][i][0], acc[pass][i][1], acc[pass][i][2], acc[pass][i][3]);
    }
  }
  cluster.sync();
  const int ranks = static_cast<int>(cluster.num_blocks()), rank = static_cast<int>(cluster.block_rank());
  const int quads_per_row = t.tile_stride / 4;
  for (int q4 = rank * kThreads + tid; q4 < out_rows * quads_per_row; q4 += ranks * kThreads) {
    const int o = o0 + q4 / quads_per_row, j0 = (q4 % quads_per_row) * 4;
    if (j0 >= tile_pixels) continue;  // never written: a partial tile (the last band, the last images)
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int r = 0; r < ranks; ++r) {
      const float4 v = *reinterpret_cast<const float4*>(cluster.map_shared_rank(partial, r) + q4 * 4);
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    const float s4[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
    for (int jj = 0; jj < 4; ++jj)
      if (j0 + jj < tile_pixels) store_output(a, x, n0, o, j0 + jj, tile_plane, p0, q0, cols, s4[jj]);
  }
  cluster.sync();  // no CTA leaves while another still reads its shared memory
#else
  __trap();  // the host splits only on sm_90+
#endif
}

/// The fallback (see the top of the file): one image and an 8x8 output tile per CTA, 64 output
/// channels per blockIdx.y; every thread computes expanded values with a serial loop over the
/// input channels, reading the input through L1.
template <int kStride>
static __global__ void __launch_bounds__(kThreads)
    fallback_block_kernel(InvertedResidualWeights wt, const float* __restrict__ x, float* __restrict__ y, int in,
                          int hidden, int out, int H, int W, int P, int Q, int tiles_q, int tiles_per_image,
                          bool residual) {
  constexpr int kWindow = (kFallbackTile - 1) * kStride + 3;
  constexpr int kWindowPixels = kWindow * kWindow;
  __shared__ float expanded[kChunk * kWindowPixels];
  __shared__ float depthwise[kChunk * kFallbackTilePixels];

  const int image = blockIdx.x / tiles_per_image;
  const int tile = blockIdx.x % tiles_per_image;
  const int p0 = (tile / tiles_q) * kFallbackTile, q0 = (tile % tiles_q) * kFallbackTile;
  const int h0 = p0 * kStride - 1, w0 = q0 * kStride - 1;
  const int o0 = blockIdx.y * kFallbackOutGroup;
  const int plane = H * W;
  const float* xn = x + image * in * plane;
  const int my_pixel = threadIdx.x % kFallbackTilePixels;
  const int my_out = threadIdx.x / kFallbackTilePixels;
  float acc[kFallbackAccumulators];
#pragma unroll
  for (int j = 0; j < kFallbackAccumulators; ++j) acc[j] = 0.0f;

  const bool expand = wt.expand_weight != nullptr;
  for (int c0 = 0; c0 < hidden; c0 += kChunk) {
    const int chunk = min(kChunk, hidden - c0);
    for (int i = threadIdx.x; i < chunk * kWindowPixels; i += kThreads) {
      const int c = i / kWindowPixels, pix = i % kWindowPixels;
      const int h = h0 + pix / kWindow, w = w0 + pix % kWindow;
      float v = 0.0f;
      if (h >= 0 && h < H && w >= 0 && w < W) {
        const int offset = h * W + w;
        if (expand) {
          const float* we = wt.expand_weight + (c0 + c) * in;
          float sum = wt.expand_bias[c0 + c];
          for (int k = 0; k < in; ++k) sum = fmaf(we[k], xn[k * plane + offset], sum);
          v = relu6(sum);
        } else {
          v = xn[(c0 + c) * plane + offset];
        }
      }
      expanded[i] = v;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < chunk * kFallbackTilePixels; i += kThreads) {
      const int c = i / kFallbackTilePixels, pix = i % kFallbackTilePixels;
      const int lp = pix / kFallbackTile, lq = pix % kFallbackTile;
      const float* wd = wt.depthwise_weight + (c0 + c) * 9;
      const float* e = expanded + c * kWindowPixels + (lp * kStride) * kWindow + lq * kStride;
      float sum = wt.depthwise_bias[c0 + c];
#pragma unroll
      for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int s = 0; s < 3; ++s) sum = fmaf(wd[r * 3 + s], e[r * kWindow + s], sum);
      depthwise[i] = relu6(sum);
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kFallbackAccumulators; ++j) {
      const int o = o0 + my_out + j * (kThreads / kFallbackTilePixels);
      if (o < out) {
        const float* wp = wt.project_weight + o * hidden + c0;
        float sum = acc[j];
        for (int c = 0; c < chunk; ++c) sum = fmaf(wp[c], depthwise[c * kFallbackTilePixels + my_pixel], sum);
        acc[j] = sum;
      }
    }
    __syncthreads();  // the next chunk overwrites `expanded` and `depthwise`
  }

  const int p = p0 + my_pixel / kFallbackTile, q = q0 + my_pixel % kFallbackTile;
  if (p >= P || q >= Q) return;
#pragma unroll
  for (int j = 0; j < kFallbackAccumulators; ++j) {
    const int o = o0 + my_out + j * (kThreads / kFallbackTilePixels);
    if (o < out) {
      float v = acc[j] + wt.project_bias[o];
      if (residual) v += xn[o * plane + p * W + q];
      y[(image * out + o) * P * Q + p * Q + q] = v;
    }
  }
}

namespace {

/// The GPU's numbers the tiling needs, read once; also lifts the tiled kernels' shared-memory
/// limit to the device's maximum (a launch setting, so it is done before any capture needs it).
struct DeviceLimits {
  int sms = 0;
  int smem_per_cta = 0;  // the opt-in maximum per CTA
  int smem_per_sm = 0;
  bool clusters = false;  // sm_90+: thread-block clusters and distributed shared memory (the split)
  // Clusters of `split` CTAs the GPU runs at once, with 1 or 2 CTAs per SM: [resident][split], 0
  // where that size cannot launch. A cluster must fit in one GPC, so this is less than
  // sms * resident / split: on an H100 (132 SMs, 2 per SM) 30 clusters of 8, not 33, and 62 of 4.
  int max_clusters[kCtasPerSm + 1][kMaxSplit + 1] = {};
};

template <int kStride, int kOutTile>
void allow_smem(int bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(tiled_block_kernel<kStride, kOutTile>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  bytes));
}

template <int kStride>
void allow_smem_all(int bytes) {
  allow_smem<kStride, 16>(bytes);
  allow_smem<kStride, 32>(bytes);
  allow_smem<kStride, 64>(bytes);
  allow_smem<kStride, 128>(bytes);
  allow_smem<kStride, 256>(bytes);
}

const DeviceLimits& device_limits() {
  static const DeviceLimits limits = [] {
    DeviceLimits l;
    int device = 0, major = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&l.sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&l.smem_per_cta, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&l.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    l.clusters = major >= 9;
    allow_smem_all<1>(l.smem_per_cta);
    allow_smem_all<2>(l.smem_per_cta);
    // Every tiled kernel has 256 threads and the same register budget, so shared memory alone
    // sets the CTAs per SM: ask once per cluster size, with enough of it for 1 or for 2 per SM.
    for (int resident = 1; l.clusters && resident <= kCtasPerSm; ++resident)
      for (int split = 2; split <= kMaxSplit; ++split) {
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(1, 1, static_cast<unsigned>(split));
        config.blockDim = dim3(kThreads);
        config.dynamicSmemBytes = static_cast<std::size_t>(
            std::min(l.smem_per_cta, resident == 1 ? l.smem_per_sm / 2 + 4096 : l.smem_per_sm / 2 - 4096));
        cudaLaunchAttribute cluster[1];
        cluster[0].id = cudaLaunchAttributeClusterDimension;
        cluster[0].val.clusterDim.x = 1;
        cluster[0].val.clusterDim.y = 1;
        cluster[0].val.clusterDim.z = static_cast<unsigned>(split);
        config.attrs = cluster;
        config.numAttrs = 1;
        int count = 0;
        if (cudaOccupancyMaxActiveClusters(&count, tiled_block_kernel<1, kMaxOutTile>, &config) != cudaSuccess) {
          (void)cudaGetLastError();  // a size this GPU cannot run: never chosen
          count = 0;
        }
        l.max_clusters[resident][split] = count;
      }
    return l;
  }();
  return limits;
}

/// Output channels per CTA: the smallest of 16, 32, 64, 128, 256 that holds `out` (256 beyond).
int out_tile_for(int out) {
  int tile = 16;
  while (tile < out && tile < kMaxOutTile) tile *= 2;
  return tile;
}

struct Shape {
  int N, in, hidden, out, H, W, P, Q, stride;
  bool expand;
};

/// The expansion's micro-tile height for a window of `window` pixels (a multiple of 4), and its
/// time per input channel in thread-steps: per 4 channels of K a micro-tile of R rows issues 16 R
/// multiply-adds and R + 4 float4 loads (counted twice: they also wait on shared memory), and
/// the CTA runs ceil(items / 256) rounds of them; scaled so that 8 rows cost 32 per channel, the
/// unit of estimated_cost. Fewer rows win when the window is too small to give every thread an
/// 8-row micro-tile.
int expand_rows_for(int window, double* cost_per_k) {
  int best = 8;
  double best_cost = 0.0;
  for (int rows : {8, 4, 2}) {
    const double items = (kChunk / rows) * (window / 4.0);
    const double cost = std::ceil(items / kThreads) * (16.0 * rows + 2.0 * (rows + 4)) * (32.0 / 152.0);
    if (rows == 8 || cost < best_cost) {
      best = rows;
      best_cost = cost;
    }
  }
  if (cost_per_k) *cost_per_k = best_cost;
  return best;
}

Tiling make_tiling(const Shape& s, int out_tile, int split, int images, int rows, int cols) {
  Tiling t;
  t.images = images;
  t.rows = rows;
  t.cols = cols;
  t.out_tile = out_tile;
  t.split = split;
  t.tiles_p = (s.P + rows - 1) / rows;
  t.tiles_q = (s.Q + cols - 1) / cols;
  const int win_rows = std::min(s.H, (rows - 1) * s.stride + 3), win_cols = std::min(s.W, (cols - 1) * s.stride + 3);
  t.window_stride = round_up(images * win_rows * win_cols, 4);
  t.tile_stride = round_up(images * rows * cols, 4);
  t.in_rows = round_up(s.in, 4);
  t.expand_stride = round_up(s.in + 4, 8) - 4;
  t.expand_rows = expand_rows_for(t.window_stride, nullptr);
  std::int64_t floats = std::int64_t{t.in_rows} * t.window_stride +
                        (s.expand ? std::int64_t{kChunk} * (t.window_stride + t.expand_stride) : 0) +
                        std::int64_t{kChunk} * t.tile_stride + out_tile * kProjectWeightStride + kChunk * 11 +
                        2 * std::int64_t{t.tile_stride};  // + pixel_taps
  // A split sums its partial projections in the shared memory of the whole loop, reused.
  if (split > 1) floats = std::max<std::int64_t>(floats, std::int64_t{out_tile} * t.tile_stride);
  t.smem_bytes = floats * 4;
  return t;
}

/// A rough time for the block with this tiling, in thread-steps of one SM: the work of one CTA
/// (per chunk of its slice: the expansion's and projection's micro-tile steps, the depthwise
/// step, a fixed cost for the barriers and the weight staging; with a split, the sum of the
/// partials), times the CTAs each SM runs in turn.
double estimated_cost(const Shape& s, const Tiling& t, const DeviceLimits& d) {
  const double window = t.window_stride, tile = t.tile_stride;
  const auto steps = [](double items) { return std::ceil(items / kThreads); };
  const double chunks = std::ceil(std::ceil(s.hidden / static_cast<double>(kChunk)) / t.split);
  double expand_per_k = 0.0;
  expand_rows_for(t.window_stride, &expand_per_k);
  const double expand = s.expand ? expand_per_k * round_up(s.in, 4) : 0.0;
  const double depthwise = steps(tile * kChunk) * 30.0;
  // Rows of the tile past the block's output channels are skipped.
  const double rows_used = std::min(1.0, s.out / static_cast<double>(t.out_tile));
  const double project = steps(t.out_tile / kMicroRows * tile / 4) * kChunk * 32.0 * rows_used;
  const double reduce = t.split > 1 ? steps(t.out_tile * rows_used * tile / 4 / t.split) * t.split * 40.0 + 1500.0 : 0.0;
  const double per_cta = chunks * (expand + depthwise + project + 600.0) + steps(t.in_rows * window) * 20.0 + reduce;
  // Up to `resident` CTAs share an SM; two of them overlap well (one CTA of 8 warps leaves the
  // FP32 pipes idle much of the time), so an SM finishes a pair in ~1.2 times one CTA's time.
  const int resident = static_cast<int>(std::min<std::int64_t>(kCtasPerSm, d.smem_per_sm / (t.smem_bytes + 1024)));
  if (resident < 1) return 1e30;
  const double ctas = std::ceil(s.N / static_cast<double>(t.images)) * t.tiles_p * t.tiles_q *
                      std::ceil(s.out / static_cast<double>(t.out_tile)) * t.split;
  // CTAs the GPU runs at once: with a split, whole clusters, fewer than the SMs' slots (a cluster
  // stays in one GPC). One cluster too many is a second wave that costs as much as the first.
  const double at_once = t.split == 1 ? static_cast<double>(d.sms) * resident
                                       : static_cast<double>(d.max_clusters[resident][t.split]) * t.split;
  if (at_once < 1) return 1e30;
  const double waves = std::ceil(ctas / at_once);
  const double per_sm = std::ceil(std::min(ctas, at_once) / d.sms);  // CTAs the busiest SM runs together
  return waves * per_cta * (per_sm > 1 ? 1.2 : 1.0);
}

/// The cheapest tiling by estimated_cost among: output tiles of out_tile_for(out) channels or 128
/// (wide blocks: more pixels per CTA, several CTAs on the channels); g whole images per CTA
/// (small images) or bands of `rows` output rows of one image (as wide as the image when the
/// accumulators allow); and the hidden channels in 1 to 8 slices (a cluster per tile, sm_90+).
/// Returns false when no tile fits in shared memory.
bool choose_tiling(const Shape& s, const DeviceLimits& d, Tiling& best) {
  double best_cost = 0.0;
  bool found = false;
  const int chunks = (s.hidden + kChunk - 1) / kChunk;
  const int widest = out_tile_for(s.out);
  const int candidates[2] = {widest, 128};  // the second only for blocks wider than 128
  for (int ci = 0; ci < (widest > 128 ? 2 : 1); ++ci) {
    const int out_tile = candidates[ci];
    const int capacity = tile_pixel_capacity(out_tile);
    for (int split = 1; split <= kMaxSplit && split <= chunks; ++split) {
      if (split > 1 && !d.clusters) break;
      const auto consider = [&](int images, int rows, int cols) {
        const Tiling t = make_tiling(s, out_tile, split, images, rows, cols);
        if (t.smem_bytes > d.smem_per_cta) return;
        const double cost = estimated_cost(s, t, d);
        if (!found || cost < best_cost) {
          best = t;
          best_cost = cost;
          found = true;
        }
      };
      const std::int64_t image_pixels = std::int64_t{s.P} * s.Q;
      if (image_pixels <= capacity)
        for (int g = 1; g <= s.N && g * image_pixels <= capacity; ++g) consider(g, s.P, s.Q);
      const int cols = std::min(s.Q, capacity);
      for (int rows = 1; rows <= s.P && rows * cols <= capacity; ++rows) consider(1, rows, cols);
    }
  }
  return found;
}

template <int kStride, int kOutTile>
void launch_tiled_as(const BlockArgs& args, cudaStream_t stream) {
  const Tiling& t = args.tiling;
  const std::int64_t ctas = (args.N + t.images - 1) / t.images * std::int64_t{t.tiles_p} * t.tiles_q;  // <= N*P*Q
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(ctas), static_cast<unsigned>((args.out + kOutTile - 1) / kOutTile),
                        static_cast<unsigned>(t.split));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = static_cast<std::size_t>(t.smem_bytes);
  config.stream = stream;
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = 1;
  cluster[0].val.clusterDim.y = 1;
  cluster[0].val.clusterDim.z = static_cast<unsigned>(t.split);  // the slices of one tile: one cluster
  config.attrs = cluster;
  config.numAttrs = t.split > 1 ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&config, tiled_block_kernel<kStride, kOutTile>, args));
}

template <int kStride>
void launch_tiled(const BlockArgs& args, cudaStream_t stream) {
  switch (args.tiling.out_tile) {
    case 16: launch_tiled_as<kStride, 16>(args, stream); break;
    case 32: launch_tiled_as<kStride, 32>(args, stream); break;
    case 64: launch_tiled_as<kStride, 64>(args, stream); break;
    case 128: launch_tiled_as<kStride, 128>(args, stream); break;
    default: launch_tiled_as<kStride, 256>(args, stream); break;
  }
}

}  // namespace

std::size_t inverted_residual_workspace(int N, int in, int hidden, int out, int H, int W, int stride) {
  validate_sizes(N, in, hidden, out, H, W, stride);
  // Not needed for the size, but asked here, before any CUDA-graph capture of the block (a network
  // sizes its workspace when it is built): the first call queries the GPU (device_limits).
  (void)device_limits();
  return 0;  // fully fused: nothing leaves the SM between the three steps
}

void inverted_residual_block(const InvertedResidualWeights& weights, const float* d_input, float* d_output, int N,
                             int in, int hidden, int out, int H, int W, int stride, void* d_workspace,
                             std::size_t workspace_bytes, cudaStream_t stream) {
  (void)d_workspace;  // needs none, so any (even null) is fine
  (void)workspace_bytes;
  require(d_input != nullptr, "d_input is null");
  require(d_output != nullptr, "d_output is null");
  validate_sizes(N, in, hidden, out, H, W, stride);
  const bool expand = hidden != in;
  if (expand) {
    require(weights.expand_weight != nullptr, "expand_weight is null (hidden != in: the block expands)");
    require(weights.expand_bias != nullptr, "expand_bias is null (hidden != in: the block expands)");
  } else {
    require(weights.expand_weight == nullptr, "expand_weight given although hidden == in (a t = 1 block has none)");
    require(weights.expand_bias == nullptr, "expand_bias given although hidden == in (a t = 1 block has none)");
  }
  require(weights.depthwise_weight != nullptr, "depthwise_weight is null");
  require(weights.depthwise_bias != nullptr, "depthwise_bias is null");
  require(weights.project_weight != nullptr, "project_weight is null");
  require(weights.project_bias != nullptr, "project_bias is null");

  const int P = (H - 1) / stride + 1, Q = (W - 1) / stride + 1;
  const bool residual = stride == 1 && in == out;
  const Shape shape{N, in, hidden, out, H, W, P, Q, stride, expand};
  BlockArgs args{weights, d_input, d_output, N, in, hidden, out, H, W, P, Q, residual, Tiling{}};
  if (choose_tiling(shape, device_limits(), args.tiling)) {
    // 16-byte weight copies need rows of a multiple of 4 floats and 16-byte aligned tensors.
    const auto aligned = [](const float* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    args.tiling.wide_copies = in % 4 == 0 && hidden % 4 == 0 && aligned(weights.expand_weight) &&
                              aligned(weights.project_weight);
    if (stride == 1)
      launch_tiled<1>(args, stream);
    else
      launch_tiled<2>(args, stream);
  } else {
    const int tiles_p = (P + kFallbackTile - 1) / kFallbackTile, tiles_q = (Q + kFallbackTile - 1) / kFallbackTile;
    const std::int64_t ctas = std::int64_t{N} * tiles_p * tiles_q;  // <= N*P*Q <= INT_MAX
    const dim3 grid(static_cast<unsigned>(ctas), static_cast<unsigned>((out + kFallbackOutGroup - 1) / kFallbackOutGroup));
    if (stride == 1)
      fallback_block_kernel<1><<<grid, kThreads, 0, stream>>>(weights, d_input, d_output, in, hidden, out, H, W, P, Q,
                                                               tiles_q, tiles_p * tiles_q, residual);
    else
      fallback_block_kernel<2><<<grid, kThreads, 0, stream>>>(weights, d_input, d_output, in, hidden, out, H, W, P, Q,
                                                               tiles_q, tiles_p * tiles_q, residual);
  }
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace lab08
