// The Hopper-only instructions rung 18 is built on, each wrapped once so that the kernel and its
// self-test (tools/wgmma_selftest.cu) use the same code:
//   wgmma.mma_async  a warpgroup (4 consecutive warps, 128 threads) multiplies a 64 x 16 FP16 tile
//                    of A by a 16 x N tile of B into FP32 accumulators held in registers; B (and
//                    optionally A; here A is in registers) is read by the tensor cores straight
//                    from shared memory, found through a 64-bit "matrix descriptor" (start
//                    address, two strides, swizzle)
//   wgmma.fence / commit_group / wait_group   the instruction is asynchronous: issue several, then
//                    wait for the group before the accumulators are read
//   cp.async.bulk    the copy engine moves a contiguous block from global to shared memory and
//                    signals an mbarrier with the bytes it delivered (transaction count)
//   mbarrier         a barrier object in shared memory: one thread says how many bytes to expect,
//                    every consumer waits on the barrier's phase
// wgmma exists only in code compiled for sm_90a (the "a" = architecture-specific features, which
// run on compute capability 9.0 and nowhere else). The bodies are guarded by
// __CUDA_ARCH_FEAT_SM90_ALL so that this header also compiles in any other device pass; there
// they do nothing, and the rung's probe kernel reports that the loaded code is not sm_90a.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define COURSE_WGMMA_DEVICE 1
#else
#define COURSE_WGMMA_DEVICE 0
#endif

namespace ladder::wgmma {

/// A shared-memory operand without swizzle is a grid of "core matrices": 8 rows of 16 bytes
/// (8 FP16 values along K), 128 contiguous bytes each. The descriptor gives the start of the
/// first core matrix and two byte strides: from one core matrix to the next along K (the
/// "leading dimension byte offset", bits 16-29) and to the next 8 rows along M or N (the "stride
/// dimension byte offset", bits 32-45); addresses and strides are stored divided by 16.
/// So element (row, k) of one k16 step sits at
///   start + (k / 8) * k_stride + (row / 8) * row_stride + (row % 8) * 16 + (k % 8) * 2.
/// The self-test checks exactly this formula, also with the two strides swapped (swap = true)
/// so that a misreading of the PTX manual shows up as "the swapped order matches".
__host__ __device__ constexpr std::uint64_t descriptor(std::uint32_t smem_address, std::uint32_t k_stride,
                                                       std::uint32_t row_stride, bool swap = false) {
  const std::uint64_t leading = swap ? row_stride : k_stride, stride = swap ? k_stride : row_stride;
  return static_cast<std::uint64_t>((smem_address & 0x3FFFFu) >> 4) | (((leading >> 4) & 0x3FFFu) << 16) |
         (((stride >> 4) & 0x3FFFu) << 32);  // bits 62-63 = 0: no swizzle; base offset 0
}

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// Shared memory written by ordinary stores and read next by the tensor cores or the copy engine
/// (the "async proxy") needs this fence in each writing thread before the barrier.
__device__ __forceinline__ void fence_proxy_async() {
#if COURSE_WGMMA_DEVICE
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/// Orders this thread's register and shared-memory accesses before the wgmma that follow.
__device__ __forceinline__ void wgmma_fence() {
#if COURSE_WGMMA_DEVICE
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if COURSE_WGMMA_DEVICE
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
/// Waits until at most `Pending` committed groups are still running.
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
#if COURSE_WGMMA_DEVICE
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(Pending) : "memory");
#endif
}

/// Tells the compiler that the accumulators may change under it (they do, asynchronously):
/// without this it could read them between the issue and the wait.
template <int N>
__device__ __forceinline__ void fence_registers(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// Accumulators per thread of one m64n88k16: 64 x 88 FP32 over 128 threads.
constexpr int kAccumulators = 44;

/// D[64 x 88] (+)= A[64 x 16] * B[16 x 88], FP16 in, FP32 accumulate. A comes from registers,
/// four 32-bit registers per thread in the A-fragment layout of mma.sync m16n8k16, per warp w of
/// the warpgroup and lane (g = lane / 4, t = lane % 4), {lo, hi} halves:
///   a[0] = A[16w + g][2t, 2t+1]      a[1] = A[16w + g + 8][2t, 2t+1]
///   a[2] = A[16w + g][2t+8, 2t+9]    a[3] = A[16w + g + 8][2t+8, 2t+9]
/// B is K-major in shared memory, found through the descriptor b. accumulate = false ignores the
/// old D (the scale-d operand is 0), so the first product of a chain needs no zeroed registers.
/// Each thread holds 44 accumulators, column chunk j = 0..10:
///   d[4j + 0], d[4j + 1] = D[16w + g][8j + 2t, 8j + 2t + 1]
///   d[4j + 2], d[4j + 3] = D[16w + g + 8][8j + 2t, 8j + 2t + 1]
/// Why N = 88: both convolutions of rung 18 are chains of 11 pixel positions x 8 images.
__device__ __forceinline__ void mma_64x88x16(float (&d)[kAccumulators], const std::uint32_t (&a)[4], std::uint64_t b,
                                             bool accumulate) {
#if COURSE_WGMMA_DEVICE
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %49, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n88k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43}, "
      "{%44, %45, %46, %47}, %48, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(static_cast<int>(accumulate)));
#else
  (void)d, (void)a, (void)b, (void)accumulate;
#endif
}

// ---- mbarrier + bulk copy -------------------------------------------------------------------

__device__ __forceinline__ void barrier_init(std::uint64_t* bar, unsigned count) {
#if COURSE_WGMMA_DEVICE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(count) : "memory");
#endif
}

/// One arrival that also announces `bytes` of copies that will complete on this barrier.
__device__ __forceinline__ void barrier_expect_bytes(std::uint64_t* bar, unsigned bytes) {
#if COURSE_WGMMA_DEVICE
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
#endif
}

/// Spins until the barrier's phase with this parity has completed.
__device__ __forceinline__ void barrier_wait(std::uint64_t* bar, unsigned parity) {
#if COURSE_WGMMA_DEVICE
  asm volatile(
      "{\n.reg .pred done;\nwait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
#endif
}

/// Global -> shared by the copy engine, `bytes` a multiple of 16, both addresses 16-byte aligned;
/// completion is counted on `bar`.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
#if COURSE_WGMMA_DEVICE
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          smem_address(dst)),
      "l"(src), "r"(bytes), "r"(smem_address(bar))
      : "memory");
#endif
}

/// Barrier for the 128 threads of one warpgroup only (ids 1.. ; 0 is __syncthreads).
__device__ __forceinline__ void group_sync(int group) {
  asm volatile("bar.sync %0, 128;" ::"r"(group + 1) : "memory");
}

/// 1 when the code that runs is the sm_90a build (so wgmma exists), 0 otherwise.
__global__ void probe_sm90a(int* out) { *out = COURSE_WGMMA_DEVICE; }

}  // namespace ladder::wgmma
