// Version 7 of lab08_conv3x3: version 6's implicit GEMM on TF32 tensor cores, rewritten the way a
// tuned GEMM is (the ideas of SGEMM_CUDA's later kernels and of CUTLASS's multistage mainloop).
//
// Version 6 loses most of its time outside the tensor cores. Every k slice it (1) loads W and
// gathers B with ordinary loads into registers, (2) stores them to shared memory, (3) waits at a
// barrier, (4) multiplies, (5) waits again before the next slice may overwrite the tiles: the
// memory latency of step 1 is exposed once per slice, and the only thing hiding it is other blocks.
// Its results also take a detour through a shared scratch tile because a WMMA fragment's layout is
// opaque. Version 7 changes five things:
//
//   1. cp.async (sm_80+): global -> shared copies that bypass the registers and do not block the
//      thread. Three shared-memory stages form a ring: while the warps multiply slice kt, the
//      copies of slices kt+1 and kt+2 are in flight. cp.async.commit_group closes the copies issued
//      for one slice into a group; cp.async.wait_group<S-2> waits until only the newest S-2 groups
//      may still be pending, i.e. until slice kt has landed. One __syncthreads per slice.
//      W (row-major [K, C*9], rows 16-byte aligned since C % 4 == 0) is copied 16 bytes at a time
//      (cp.async.cg: cached in L2 only); the B gather is 4 bytes per element (cp.async.ca, the only
//      size below 16 bytes that exists: neighbouring taps of one pixel share L1 lines). Elements in
//      the padding, past the last column or past the last channel are "copied" with source size 0,
//      which makes cp.async write zeros: no branch around the copy, no stale data in a reused stage.
//   2. mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 in inline PTX instead of WMMA. Its
//      fragment layouts are documented (PTX ISA, "Matrix fragments for mma.m16n8k8"), with
//      g = lane / 4 (groupID) and t = lane % 4 (threadID_in_group):
//        A (16 x 8, row-major):  a0 = A[g][t]   a1 = A[g+8][t]   a2 = A[g][t+4]   a3 = A[g+8][t+4]
//        B ( 8 x 8, "col"):      b0 = B[t][g]   b1 = B[t+4][g]
//        C (16 x 8, FP32):       c0 = C[g][2t]  c1 = C[g][2t+1]  c2 = C[g+8][2t]  c3 = C[g+8][2t+1]
//      so each thread reads its operands straight from the shared tiles, rounds them to TF32 (see
//      to_tf32), accumulates in registers, and at the end writes its C elements directly to their
//      NCHW addresses. The program's start-up self-test checks these formulas against the CPU.
//   3. k slices of whole input channels: 4 channels x 9 taps = 36 rows, done as four m16n8k8 steps
//      and one m16n8k4. A thread of the gather owns one output pixel and whole channels, so every
//      tap (r, s) it copies is a compile-time constant: the address is the channel's pointer plus
//      r*W + s and the padding test one bit of a 9-bit mask computed once before the loop. (A first
//      version with 32-row slices decoded kk -> (c, r, s) per element and stepped with carries: its
//      main loop issued about 900 instructions per warp and slice for 64 mma, and ran at 93 TFLOP/s
//      at most.)
//   4. Bank-conflict-free fragment loads by padding: As is [BM][36], so a0's 32 addresses
//      g*36 + t fall on banks 4g + t, all different; Bs is [36][BN+8], so b0's addresses
//      t*(BN+8) + g fall on banks 8t + g, all different (a pad of 4 would make lanes collide).
//   5. Warp tiles: a block of 256 threads (8 warps, 2 x 4) owns a 128 x 128 tile of Y, each warp a
//      64 x 32 piece (4 x 4 mma tiles of 16 x 8, 64 accumulators per thread): per k step a warp
//      loads 16 + 8 operand registers for 16 mma. Where 128 x 128 blocks would leave SMs idle
//      (as for versions 2, 4 and 6) 64 x 64 blocks run, 8 warps of 32 x 16. (4 warps of 32 x 32,
//      half the shared-memory reads per mma, measured the same on the H100: within 4 %.)
//
// Shared memory: 3 stages x (128 x 36 + 36 x 136) floats = 111.4 KiB for 128 x 128 tiles, so it is
// dynamic shared memory (the static limit is 48 KiB), and two blocks fit on an H100 SM (228 KiB
// less 1 KiB reserved per block): 16 warps per SM, each of the two blocks' barriers hidden by the
// other's work.
#pragma once

#include <cstdint>

#include "conv3x3_common.cuh"

namespace lab08 {

// ---- PTX wrappers -------------------------------------------------------------------------------
// Each needs sm_80; the callers are compiled only there (see the __CUDA_ARCH__ guards).

/// Rounds a finite FP32 value to TF32 (10 mantissa bits, round to nearest, ties away from zero).
/// PTX has an instruction for it, cvt.rna.tf32.f32, but on sm_90 ptxas lowers it to two: a test
/// |f| < inf (FSETP) and, if so, an integer add of 0x1000, half a TF32 unit in the last place, to
/// the bit pattern; the low 13 bits are left as they are, because the tensor core ignores them.
/// This kernel rounds 108 operands per thread and k slice, so the test alone would cost a sixth of
/// the main loop's instructions: we do the add only. The bits are the same as cvt.rna's for every
/// finite input (activations and weights are); an infinity would become a NaN here. (The start-up
/// self-test relies on the same fact: its operands are exact TF32 values, so the added bit lands
/// in the ignored part, and a tensor core that used it would fail the exact comparison.)
__device__ __forceinline__ uint32_t to_tf32(float f) { return __float_as_uint(f) + 0x1000u; }

/// d += a x b on one 16 x 8 x 8 tile, TF32 operands, FP32 accumulators (in place).
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)d, (void)a, (void)b;
#endif
}

/// d += a x b on one 16 x 8 x 4 tile (the k = 4 tail of a 36-row slice).
__device__ __forceinline__ void mma_m16n8k4_tf32(float (&d)[4], const uint32_t (&a)[2], const uint32_t (&b)[1]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b[0]));
#else
  (void)d, (void)a, (void)b;
#endif
}

/// 16-byte asynchronous copy global -> shared; src_bytes = 0 writes 16 zero bytes (reads nothing).
__device__ __forceinline__ void cp_async_16(float* smem, const float* gmem, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = unsigned(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
#else
  (void)smem, (void)gmem, (void)valid;
#endif
}

/// 4-byte asynchronous copy (cp.async.cg allows 16 bytes only, hence .ca); zero-fills if !valid.
__device__ __forceinline__ void cp_async_4(float* smem, const float* gmem, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = unsigned(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
#else
  (void)smem, (void)gmem, (void)valid;
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// ---- fragments (shared by the kernel and the self-test, so that the test checks these very lines) --

/// A fragment of the 16 x 8 tile at `a` (row-major, row stride lda), rounded to TF32.
__device__ __forceinline__ void load_a_frag(uint32_t (&frag)[4], const float* a, int lda, int lane) {
  const int g = lane / 4, t = lane % 4;
  frag[0] = to_tf32(a[g * lda + t]);
  frag[1] = to_tf32(a[(g + 8) * lda + t]);
  frag[2] = to_tf32(a[g * lda + t + 4]);
  frag[3] = to_tf32(a[(g + 8) * lda + t + 4]);
}

/// B fragment of the 8 x 8 tile at `b`, stored k-major (b[k * ldb + n]), rounded to TF32.
__device__ __forceinline__ void load_b_frag(uint32_t (&frag)[2], const float* b, int ldb, int lane) {
  const int g = lane / 4, t = lane % 4;
  frag[0] = to_tf32(b[t * ldb + g]);
  frag[1] = to_tf32(b[(t + 4) * ldb + g]);
}

/// The k = 4 fragments: A (16 x 4) a0 = A[g][t], a1 = A[g+8][t]; B (4 x 8) b0 = B[t][g].
__device__ __forceinline__ void load_a_frag_k4(uint32_t (&frag)[2], const float* a, int lda, int lane) {
  const int g = lane / 4, t = lane % 4;
  frag[0] = to_tf32(a[g * lda + t]);
  frag[1] = to_tf32(a[(g + 8) * lda + t]);
}
__device__ __forceinline__ void load_b_frag_k4(uint32_t (&frag)[1], const float* b, int ldb, int lane) {
  frag[0] = to_tf32(b[(lane % 4) * ldb + lane / 4]);
}

/// Where accumulator element e (0..3) of a 16 x 8 C tile lives: its row and column in the tile.
__device__ __forceinline__ int c_frag_row(int lane, int e) { return lane / 4 + (e >= 2 ? 8 : 0); }
__device__ __forceinline__ int c_frag_col(int lane, int e) { return 2 * (lane % 4) + (e & 1); }

/// The self-test: one warp multiplies A (16 x 12, row-major) by B (12 x 8, k-major) into D (16 x 8,
/// row-major) through the helpers above, as the kernel does a slice: k = 0..7 with m16n8k8, then
/// k = 8..11 with m16n8k4 into the same accumulators. The host compares with its own product.
__global__ void mma_selftest(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ d) {
  const int lane = threadIdx.x;
  uint32_t fa[4], fb[2], fa4[2], fb4[1];
  load_a_frag(fa, a, 12, lane);
  load_b_frag(fb, b, 8, lane);
  load_a_frag_k4(fa4, a + 8, 12, lane);
  load_b_frag_k4(fb4, b + 8 * 8, 8, lane);
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  mma_m16n8k8_tf32(acc, fa, fb);
  mma_m16n8k4_tf32(acc, fa4, fb4);
#pragma unroll
  for (int e = 0; e < 4; ++e) d[c_frag_row(lane, e) * 8 + c_frag_col(lane, e)] = acc[e];
}

/// The tensor cores' own limit through mma.sync: each warp issues `iters` rounds of 8 independent
/// m16n8k8 TF32 products on register operands (no memory traffic at all), so the time is the rate
/// at which the SMs retire them. `sink` keeps the compiler from dropping the work.
__global__ void mma_peak(int iters, float* __restrict__ sink) {
  uint32_t a[4], b[2];
#pragma unroll
  for (int e = 0; e < 4; ++e) a[e] = to_tf32(1.0f + 0.001f * float(threadIdx.x + e));
  b[0] = to_tf32(0.5f), b[1] = to_tf32(0.25f);
  float acc[8][4] = {};
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int c = 0; c < 8; ++c) mma_m16n8k8_tf32(acc[c], a, b);
  float total = 0.0f;
#pragma unroll
  for (int c = 0; c < 8; ++c) total += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  if (total == 12345.0f) sink[0] = total;  // practically never true, but the compiler cannot know
}

// ---- the convolution ----------------------------------------------------------------------------

// A k slice is whole input channels: 4 channels x 9 taps = 36 rows of W's columns and of B. The
// tensor cores take it as four k = 8 steps and one k = 4 step (m16n8k4 has the same TF32 fragments,
// halved along k). Whole channels make the gather's addresses simple (see the kernel).
constexpr int kV7Threads = 256, kV7Stages = 3, kV7ChannelsPerSlice = 4, kV7BK = kV7ChannelsPerSlice * 9;

/// Padded leading dimensions of the two shared tiles, and the dynamic shared memory one block needs.
template <int BM, int BN>
struct V7Smem {
  static constexpr int LDA = kV7BK;   // 36: a0's banks are 4g + t, all different; rows stay 16-byte aligned
  static constexpr int LDB = BN + 8;  // banks 8t + g: conflict-free B fragments (a pad of 4 would collide)
  static constexpr int A_STAGE = BM * LDA, B_STAGE = kV7BK * LDB;
  static constexpr int BYTES = kV7Stages * (A_STAGE + B_STAGE) * int(sizeof(float));
};

/// 8 warps in a 2 x 4 grid; at most 128 registers per thread, so that two blocks share an SM.
template <int BM, int BN>
__global__ void __launch_bounds__(kV7Threads, 2)
    conv_tf32_mma_pipelined(const float* __restrict__ w, const float* __restrict__ x, float* __restrict__ y, Shape s) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int BK = kV7BK, CPS = kV7ChannelsPerSlice, STAGES = kV7Stages, THREADS = kV7Threads;
  constexpr int WARPS_M = 2, WARPS_N = 4;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // one warp's piece of the block tile
  constexpr int MT = WM / 16, NT = WN / 8;             // mma tiles per warp
  static_assert(WM % 16 == 0 && WN % 8 == 0, "whole m16n8 tiles per warp");
  using L = V7Smem<BM, BN>;
  constexpr int LDA = L::LDA, LDB = L::LDB;

  extern __shared__ __align__(16) float smem[];
  float* const As = smem;                        // STAGES x [BM][LDA]
  float* const Bs = smem + STAGES * L::A_STAGE;  // STAGES x [BK][LDB]

  const int M = s.K, kdim = s.gemm_k();
  const long long ncols = s.gemm_n();
  const int m0 = blockIdx.y * BM;
  const long long j0 = (long long)blockIdx.x * BN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int num_slices = (s.C + CPS - 1) / CPS;

  // ---- W loader: a slice of a row of W is 36 floats, 9 chunks of 16 bytes (rows of W start 16-byte
  // aligned because C % 4 == 0, which the host checks). A_TPR threads share a row: thread h of the
  // row copies chunks h, h + A_TPR, ... Neighbouring threads copy neighbouring chunks of one row, so
  // each warp-wide copy reads whole 32-byte sectors; the row pointer is computed once.
  static_assert(THREADS % BM == 0, "whole threads per row of W");
  constexpr int A_CHUNKS_PER_ROW = BK / 4, A_TPR = THREADS / BM;
  constexpr int A_ITERS = (A_CHUNKS_PER_ROW + A_TPR - 1) / A_TPR;
  const int a_row = tid / A_TPR, a_first = tid % A_TPR;  // row in the tile, first chunk
  const bool a_row_ok = m0 + a_row < M;
  const float* const a_src = w + (long long)(a_row_ok ? m0 + a_row : 0) * kdim + a_first * 4;
  const int a_dst_off = a_row * LDA + a_first * 4;

  // ---- B gather: a thread owns column b_col and B_CH whole channels (9 rows each) of every slice ----
  static_assert(CPS * BN % THREADS == 0 && THREADS % BN == 0, "whole channels per thread");
  constexpr int B_CH = CPS * BN / THREADS;
  const int b_col = tid % BN, b_c0 = (tid / BN) * B_CH;
  const int HW = s.H * s.W;
  const float* pix = x;   // input address of tap (0, 0) of channel 0 for this pixel (may lie in the padding)
  unsigned tap_mask = 0;  // bit r*3+t set: tap (r, t) lies inside the image; 0 past the last column
  {
    const long long j = j0 + b_col;
    if (j < ncols) {
      const int P = s.P(), Q = s.Q();
      const long long pq = (long long)P * Q, n = j / pq;
      const int rest = int(j - n * pq), p = rest / Q, q = rest - p * Q;
      const int h0 = p * s.stride - 1, w0 = q * s.stride - 1;
      pix = x + n * s.C * (long long)HW + (long long)h0 * s.W + w0;
#pragma unroll
      for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int t = 0; t < 3; ++t)
          if (h0 + r >= 0 && h0 + r < s.H && w0 + t >= 0 && w0 + t < s.W) tap_mask |= 1u << (r * 3 + t);
    }
  }

  // Issues the copies of slice `slice` into ring stage `stage` (no commit).
  auto load_slice = [&](int slice, int stage) {
    const int k0 = slice * BK;
    float* const a_dst = As + stage * L::A_STAGE + a_dst_off;
#pragma unroll
    for (int i = 0; i < A_ITERS; ++i) {
      const int chunk = a_first + i * A_TPR;  // this thread's chunk of the row
      if (A_CHUNKS_PER_ROW % A_TPR != 0 && chunk >= A_CHUNKS_PER_ROW) break;
      // Rows past K and channels past C (a last, partial slice) are zero-filled.
      const bool ok = a_row_ok && k0 + chunk * 4 < kdim;
      cp_async_16(a_dst + i * A_TPR * 4, a_src + k0 + i * A_TPR * 4, ok);
    }
    // B: row (cl*9 + r*3 + t) of the slice is channel slice*CPS + cl, tap (r, t). Since the tap is a
    // compile-time constant here, its address is the channel's pointer plus r*W + t and its
    // validity one bit of tap_mask: no division, no branch per element. A copy marked invalid
    // reads nothing (source size 0), so its source pointer may point anywhere, padding included.
    float* b_dst = Bs + stage * L::B_STAGE + b_c0 * 9 * LDB + b_col;
#pragma unroll
    for (int cc = 0; cc < B_CH; ++cc) {
      const int c = slice * CPS + b_c0 + cc;
      const unsigned mask = c < s.C ? tap_mask : 0u;  // channels past C (last slice): zeros
      const float* chan = pix + (long long)c * HW;
#pragma unroll
      for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int t = 0; t < 3; ++t)
          cp_async_4(b_dst + (cc * 9 + r * 3 + t) * LDB, chan + r * s.W + t, (mask >> (r * 3 + t)) & 1u);
    }
  };

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // Prologue: slices 0 .. STAGES-2 in flight. A group is committed even when empty (fewer slices
  // than stages), so that "group number = slice number" holds for the waits below.
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < num_slices) load_slice(st, st);
    cp_async_commit();
  }

  for (int kt = 0; kt < num_slices; ++kt) {
    // Groups committed so far: STAGES-1 + kt. Allowing STAGES-2 pending means group kt is done;
    // the barrier makes every thread's copies of slice kt visible, and also tells us that every
    // warp has finished multiplying slice kt-1, whose stage the prefetch below overwrites.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = kt + STAGES - 1;
    if (next < num_slices) load_slice(next, next % STAGES);
    cp_async_commit();

    const float* a_tile = As + (kt % STAGES) * L::A_STAGE + (wm * WM) * LDA;
    const float* b_tile = Bs + (kt % STAGES) * L::B_STAGE + wn * WN;
#pragma unroll
    for (int kf = 0; kf < BK - 4; kf += 8) {  // rows 0..31: four k = 8 steps
      uint32_t fa[MT][4], fb[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) load_a_frag(fa[i], a_tile + i * 16 * LDA + kf, LDA, lane);
#pragma unroll
      for (int j = 0; j < NT; ++j) load_b_frag(fb[j], b_tile + kf * LDB + j * 8, LDB, lane);
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_m16n8k8_tf32(acc[i][j], fa[i], fb[j]);
    }
    {  // rows 32..35: one k = 4 step
      constexpr int kf = BK - 4;
      uint32_t fa[MT][2], fb[NT][1];
#pragma unroll
      for (int i = 0; i < MT; ++i) load_a_frag_k4(fa[i], a_tile + i * 16 * LDA + kf, LDA, lane);
#pragma unroll
      for (int j = 0; j < NT; ++j) load_b_frag_k4(fb[j], b_tile + kf * LDB + j * 8, LDB, lane);
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_m16n8k4_tf32(acc[i][j], fa[i], fb[j]);
    }
  }
  cp_async_wait<0>();  // nothing real is pending (only empty groups), but leave no copy behind

  // Epilogue: each accumulator goes straight to y[n][m][p][q]. The column decode (n, pixel) is done
  // once per column a thread owns (2 per mma tile), not per element.
  const long long pq = (long long)s.P() * s.Q();
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const long long col = j0 + wn * WN + j * 8 + c_frag_col(lane, half);
      if (col >= ncols) continue;
      const long long n = col / pq, pixel = col - n * pq;
      float* out = y + n * s.K * pq + pixel;
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int e = half; e < 4; e += 2) {  // e = half: row g, e = half + 2: row g + 8
          const int m = m0 + wm * WM + i * 16 + c_frag_row(lane, e);
          if (m < M) out[m * pq] = acc[i][j][e];
        }
    }
#else
  (void)w, (void)x, (void)y, (void)s;  // cp.async and TF32 mma need sm_80 or newer
#endif
}

}  // namespace lab08
