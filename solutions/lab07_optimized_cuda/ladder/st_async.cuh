// Counted stores into another CTA's shared memory (sm_90 thread-block clusters): st.async adds the
// bytes it delivers to an mbarrier in the receiving CTA, which waits until all it expects are there.
// Rungs 19 and 22 and lab07_latency_floors share these (lecture 07, sections 15f and 15f2).
#pragma once

#include <cuda_runtime.h>

namespace ladder::one_image_fast {

__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// The address of the same shared-memory variable in CTA `rank` of the cluster.
__device__ __forceinline__ unsigned remote_address(unsigned local, int rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}

/// One float into another CTA's shared memory, counted (4 bytes) by the mbarrier there.
__device__ __forceinline__ void store_counted(unsigned remote, float value, unsigned remote_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];"
               :: "r"(remote), "r"(__float_as_uint(value)), "r"(remote_bar) : "memory");
}

/// An mbarrier that completes once `bytes` have arrived (one thread calls this, before phase 0).
__device__ __forceinline__ void expect_bytes(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}

/// Spins until the mbarrier's first phase completes; its bytes are then visible to this thread.
__device__ __forceinline__ void wait_bytes(unsigned bar) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0;\n"
        " selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done) : "r"(bar) : "memory");
  } while (done == 0);
}

/// Four floats (16 bytes, remote 16-byte aligned) into another CTA's shared memory, counted there.
__device__ __forceinline__ void store_counted_v4(unsigned remote, float4 v, unsigned remote_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];"
               :: "r"(remote), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(remote_bar) : "memory");
}

}  // namespace ladder::one_image_fast
