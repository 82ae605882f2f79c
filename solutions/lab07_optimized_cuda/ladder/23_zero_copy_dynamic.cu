// Rung 23: pinned host pixels to host labels, zero copy like rung 21, but with no fixed share of
// the batch per block: persistent blocks take 8-image steps from a counter, keep 2 steps in flight,
// and run the fully connected layers per step, so that after the last byte lands only one short
// step is left. A MEASURED NEGATIVE RESULT: before its slot-alignment fix every timed version was
// 1.4-2.5x SLOWER than rung 21; with the fix (timed below) it is ~0.03 ms slower (lecture 07, 15i).
//
// Why (lecture 07, 15h): rung 21 takes ~16.7 us per 1,000 images plus ~30 us whatever the batch.
// Its blocks each own 40 consecutive images (5 steps of 8) and the fully connected layers of a
// 32-image chunk: a block whose bytes come late finishes late, however idle the others are, and
// after its last step's bytes it still runs conv for 8 images, then fc for the chunk.
//
// Measured BEFORE the fix on an H100 SXM (PCIe 5 x16; bench/results/lab07_zero_copy_dynamic_h100_80gb_hbm3.txt),
// 10,000 images in host mode, median ms, each a separate process, three rounds in one call:
//   call 2: rung 20 0.210 0.213 0.212; rung 21 0.201 0.199 0.206; rung 23 0.490 0.492 0.495
//   call 3: rung 20 0.210 0.222 0.207; rung 21 0.213 0.207 0.199; rung 23 0.340 0.302 0.322,
//           blocked order 0.301 0.323 0.299, bulk copies 0.290 0.288 0.292
// What did NOT matter (call 2, one knob at a time): labels per step, at the end or none; reads
// issued before or after the prologue; static or dynamic order; 132 or 264 blocks. Even with no
// network at all (WORK=fetch) the loop took 0.43-0.47 ms: the bytes came at ~18 GB/s.
// Why (Nsight Compute, call 3, 1,000 images): the same 36.7 thousand sysmem sectors, but 18,456
// read requests against rung 21's 9,277 -- two 64-byte requests per 128-byte line. The slots
// started off a 128-byte boundary of shared memory (after the tiles, 77,760 bytes = 607.5 lines,
// and the static variables; rung 21's start at 99,456 = 777 x 128 by luck), and the lines came
// in halves. The offset moved with every change of static shared memory, which is why 3 slots
// were the fastest variant in call 2 (0.32 ms) and, blocked or bulk, the slowest in call 3
// (0.44-0.47). The slots are now 128-byte aligned (kSlotAlign).
// TIMED WITH THE FIX (the same file, last section: the lead's checked run on one H100 80GB HBM3,
// full check passed; 10,000 images, host mode, median ms, 3 rounds, each a separate process):
//   rung 20 0.213 0.211 0.212; rung 21 0.211 0.203 0.200; rung 23 0.235 0.237 0.232;
//   rung 23 with one bulk (TMA) copy per step (FETCH=bulk) 0.216 0.217 0.215
// Nsight Compute, host-mode kernel at 1,000 images: rung 21 9,209 sysmem read requests, 36,596
// sectors, 38.6 us; rung 23 9,383 requests, 37,154 sectors, 40.7 us. So the fix did what it should
// (one request per 128-byte line again, as rung 21) and rung 23 is STILL slower than rung 21:
// ~0.03 ms (bulk: ~0.013). The batch sweep of the same run puts the gap on the way in: 2.5 us at
// 1,000 images, 16 at 2,500, 35 at 5,000 and 7,500, while 5,000 -> 7,500 costs both rungs the same
// 15.5 us per 1,000 images; traced at 10,000, the last bytes land 208.9 us after the first block
// starts (~37.5 GB/s over the call; the trace adds a copy per call). Not explained yet.
// The tail, measured by the trace (%globaltimer): after the last step's bytes land, its stage +
// conv1 + conv2 (one image per warp) take 14-19 us and fc + labels another 4-5 us (with the fix at
// 10,000 images: 19.1 and 5.3 us). Keeping conv2's weights in shared memory (CONV2=shared) did not
// shorten it (13.8 against 14.0 us at 1,000 images, 19.7 against 19.0 at 10,000).
// Why 0.18 ms is out of reach for this design (floors of the checked run): the bytes need 158.4 us
// at the plain zero-copy read's 49.5 GB/s (an H2D copy: 149.9 us, 52.3 GB/s), a host launch + sync
// of an empty kernel costs 10.1 us (steady_clock; cudaPointerGetAttributes 0.22 us), and the last
// step's chain 19-25 us: 0.188-0.193 ms with the bus at full rate throughout.
//
// How (lenet_zero_copy_dynamic below; the layers are rung 12's device functions):
//   - a step is 8 consecutive images (6,272 bytes = 49 whole 128-byte lines, as in rung 21), one
//     per warp, into a 128-byte aligned slot; grid = SMs x 2 blocks, each block starts with steps
//     b, b + G (static, no atomics), and takes every later one from a global counter (atomicAdd
//     by thread 0, one step before it is needed, so the atomic's round trip is hidden); the last
//     block out resets the counter and copies the labels (kept in device memory) to the host;
//   - kSlots steps in flight per block (cp.async groups, waited for oldest first);
//   - per step: stage, conv1, conv2 (one image per warp), then fc1-fc3 for the step (one m-tile
//     of 16 rows, 8 used) and its 8 labels.
//
// Knobs, for measuring (read by prepare()):
//   COURSE_LADDER_ZC_SLOTS=1|2|3        steps in flight per block (default 2)
//   COURSE_LADDER_ZC_ORDER=dynamic|static|blocked   steps from the counter; block b's are b + iG;
//                                       or block b's are one contiguous range (rung 21's shape)
//   COURSE_LADDER_ZC_FETCH=lsu|bulk     16-byte cp.async by every thread; or one cp.async.bulk per
//                                       step by thread 0 (the TMA engine), counted by an mbarrier
//   COURSE_LADDER_ZC_CONV2=l2|shared    conv2's B fragments by __ldg (L2); or from a 5 KB copy in
//                                       shared memory (the last step's chain waits on fewer loads)
//   COURSE_LADDER_ZC_WORK=full|fetch    fetch: the same reads and barriers, no network, labels 0
//                                       (wrong on purpose: the bus and the loop alone)
//   COURSE_LADDER_ZC_START=late|early   the first reads after the prologue (zeroing, weights; as
//                                       rung 21) or before it
//   COURSE_LADDER_ZC_LABELS=end|step|none  labels into a device buffer, copied to the host by the
//                                       last block out; or 8 at a time into host memory per step;
//                                       or not at all (wrong on purpose)
//   COURSE_LADDER_ZC_BLOCKS=N           grid size (default: all that fit at once)
//   COURSE_LADDER_ZC_TRACE=1            %globaltimer stamps per call (first block start, first and
//                                       last bytes landed, first and last block end), printed as
//                                       medians when the rung is destroyed
// Pageable pixels (no kernel may read those) are copied first, then rung 12's kernel runs.
// forward() (device-resident images) and the accuracy cost are rung 12's: reduced precision (FP16).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "12_tensor_cores.cuh"
#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "cuda_owners.cuh"
#include "ladder.hpp"

namespace ladder::zero_copy_dynamic {

namespace tc = ladder::tensor_cores;
constexpr int kStepImages = tc::kWarps;                          // one image per warp
constexpr int kImagePieces = tc::kImagePixels / 16;              // 49 pieces of 16 bytes
constexpr int kImageWords = tc::kImagePixels / 4;                // 196
constexpr int kStepPieces = kStepImages * kImagePieces;          // 392: 49 lines of 128 bytes
constexpr int kStepWords = kStepImages * kImageWords;            // one slot
constexpr int kRows = 16;                                        // fc: one m-tile, 8 rows used
// Flags (the knobs below): steps from the counter; no network; first reads after the prologue;
// labels into a device buffer that the last block out copies to the host; no labels at all.
constexpr int kDynamic = 1, kFetchOnly = 2, kLateStart = 4, kLabelsAtEnd = 8, kNoLabels = 16;
// Block b's steps as one contiguous range (rung 21's shape); a step by one bulk copy (the TMA
// engine) instead of 392 cp.async; conv2's weights from a copy in shared memory instead of L2.
constexpr int kBlocked = 32, kBulk = 64, kSharedConv2 = 128;
constexpr int kConv2Fragments = tc::kConv2NTiles * tc::kConv2KSteps * 32;  // uint2, 5 KB
// Trace stamps (ns): times, then two durations of the block's last step (max over blocks).
enum Stamp { kFirstStart, kFirstLanded, kLastFirstLanded, kLastLanded, kFirstEnd, kLastEnd, kTailConv, kTailFc, kStamps };

/// Rung 12's tiles cut to one step: the conv scratch of 8 warps and the fc tiles for 16 rows.
struct StepTiles {
  tc::WarpScratch warp[tc::kWarps];
  std::uint32_t pool2[kRows * tc::kPool2Stride];
  std::uint32_t fc1_out[kRows * tc::kFc1OutStride];
  std::uint32_t fc2_out[kRows * tc::kFc2OutStride];
  float logits[kStepImages * tc::kClasses];
};
static_assert(sizeof(StepTiles) % sizeof(uint4) == 0, "zeroed with 16-byte stores; slots follow, 16-byte aligned");

// The slots start on a 128-byte boundary of shared memory. Found with Nsight Compute: with the
// slots off that boundary (right after this kernel's tiles, as first written), every 128-byte
// line read from host memory went out as two 64-byte requests (18,456 sysmem read requests for
// 1,000 images against rung 21's 9,277, for the same 36.7 thousand sectors), and the bus delivered
// about half the bytes per second. Rung 21's slots happen to start at byte 99,456 = 777 x 128.
constexpr int kSlotAlign = 128;

template <int kSlots>
constexpr int shared_bytes() {
  return static_cast<int>(sizeof(StepTiles)) + kSlotAlign + kSlots * kStepWords * 4;
}

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// Waits until the bulk copy counted by `barrier` has landed (the barrier's phase `parity` is over).
__device__ __forceinline__ void wait_bulk(const unsigned long long* barrier, int parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // mbarrier waits and bulk copies: Hopper (prepare() checks)
  unsigned done = 0;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(shared_address(barrier)), "r"(parity)
                 : "memory");
  } while (done == 0);
#else
  (void)barrier, (void)parity;
  __trap();
#endif
}

/// Step `step`'s pixels (up to 8 images) on their way into `slot`. Bulk: one copy by the TMA
/// engine, issued by thread 0, counted by `barrier`. Otherwise 16-byte cp.async pieces by every
/// thread, one cp.async group per call even when there is no such step (one group per slot).
__device__ __forceinline__ void issue(const uint4* pixels, int step, int steps, int n, std::uint32_t* slot, bool bulk,
                                      unsigned long long* barrier) {
  if (bulk) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (step < steps && threadIdx.x == 0) {
      const unsigned bytes = static_cast<unsigned>(min(kStepImages, n - step * kStepImages) * tc::kImagePixels);
      const uint4* src = pixels + static_cast<std::size_t>(step) * kStepPieces;
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the slot's earlier reads come first
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(barrier)), "r"(bytes)
                   : "memory");
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                       shared_address(slot)),
                   "l"(src), "r"(bytes), "r"(shared_address(barrier))
                   : "memory");
    }
#else
    __trap();
#endif
    return;
  }
  if (step < steps) {
    const int pieces = min(kStepImages, n - step * kStepImages) * kImagePieces;
    const uint4* src = pixels + static_cast<std::size_t>(step) * kStepPieces;
    for (int p = static_cast<int>(threadIdx.x); p < pieces; p += tc::kThreads)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(slot + 4 * p))),
                   "l"(src + p)
                   : "memory");
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
}

/// Persistent blocks over the batch's steps. counters[0]: the next step to hand out, minus the
/// kSlots * gridDim.x handed out statically; counters[1]: blocks finished (both back to 0 at the end).
template <int kSlots>
__global__ void __launch_bounds__(tc::kThreads, 2)
    lenet_zero_copy_dynamic(const uint4* __restrict__ pixels, int n, tc::Weights weights, int* labels,
                            int* step_labels, unsigned* counters, int flags, unsigned long long* trace) {
  extern __shared__ uint4 shared_raw[];
  __shared__ int slot_step[kSlots];  // the step in flight into each slot, -1: none
  __shared__ int claimed;            // the next step this block will issue (dynamic order)
  __shared__ bool last_out;          // this block finished last
  __shared__ unsigned long long landed_barrier[kSlots];  // bulk copies: one mbarrier per slot
  __shared__ uint2 conv2_frags[kConv2Fragments];         // kSharedConv2
  StepTiles& tiles = *reinterpret_cast<StepTiles*>(shared_raw);
  // The first 128-byte boundary after the tiles (the dynamic part starts after the static one,
  // whose size is the compiler's business): see kSlotAlign.
  const unsigned tiles_end = shared_address(&tiles + 1);
  std::uint32_t* slots = reinterpret_cast<std::uint32_t*>(reinterpret_cast<unsigned char*>(&tiles + 1) +
                                                          ((tiles_end + kSlotAlign - 1) / kSlotAlign * kSlotAlign - tiles_end));
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;
  const int steps = (n + kStepImages - 1) / kStepImages, blocks = static_cast<int>(gridDim.x);
  const int ahead = kSlots * blocks;  // steps handed out before the counter's first
  const bool dynamic = (flags & kDynamic) != 0, compute = (flags & kFetchOnly) == 0;
  const bool at_end = (flags & kLabelsAtEnd) != 0, write_labels = (flags & kNoLabels) == 0;
  const bool blocked = (flags & kBlocked) != 0, bulk = (flags & kBulk) != 0;
  int* const out = at_end ? step_labels : labels;
  const bool stamp = trace != nullptr && tid == 0;
  if (stamp) atomicMin(trace + kFirstStart, now_ns());
  // Blocked: block b's steps are [b * per, min(steps, (b + 1) * per)), kSlots apart in flight.
  const int per = (steps + blocks - 1) / blocks, limit = blocked ? min(steps, (static_cast<int>(blockIdx.x) + 1) * per) : steps;
  const auto first_step = [&](int d) {
    const int s = blocked ? static_cast<int>(blockIdx.x) * per + d : static_cast<int>(blockIdx.x) + d * blocks;
    return s < limit ? s : steps;
  };
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (bulk && tid == 0) {
    for (int d = 0; d < kSlots; ++d)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(landed_barrier + d)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to the copy engine
  }
#endif

  // The block's first steps in flight: before the prologue (early) or after it (late, as rung 21).
  const auto start = [&] {
    for (int d = 0; d < kSlots; ++d) issue(pixels, first_step(d), steps, n, slots + d * kStepWords, bulk, landed_barrier + d);
  };
  if ((flags & kLateStart) == 0) start();
  if (tid == 0) {
    for (int d = 0; d < kSlots; ++d) slot_step[d] = first_step(d) < steps ? first_step(d) : -1;
    claimed = dynamic && ahead < steps ? ahead + static_cast<int>(atomicAdd(counters, 1u)) : steps;
  }
  if ((flags & kSharedConv2) != 0)
    for (int i = tid; i < kConv2Fragments; i += tc::kThreads) conv2_frags[i] = __ldg(weights.conv2 + i);
  // Zeroed once: the pair buffers' padding, fc rows 8..15 and the padded columns are never written.
  for (int i = tid; i < static_cast<int>(sizeof(StepTiles) / sizeof(uint4)); i += tc::kThreads)
    shared_raw[i] = make_uint4(0u, 0u, 0u, 0u);
  const uint2 conv1_b[tc::kConv1KSteps] = {__ldg(weights.conv1 + lane), __ldg(weights.conv1 + 32 + lane)};
  const float conv1_bias_lo = weights.conv1_bias[2 * t], conv1_bias_hi = weights.conv1_bias[2 * t + 1];
  const float conv2_bias[4] = {weights.conv2_bias[2 * t], weights.conv2_bias[2 * t + 1],
                               weights.conv2_bias[8 + 2 * t], weights.conv2_bias[9 + 2 * t]};
  tc::prefetch_to_l2(weights.conv2, tc::fragment_bytes<tc::kConv2KSteps, tc::kConv2NTiles>());
  tc::prefetch_to_l2(weights.fc1, tc::fragment_bytes<tc::kFc1KSteps, tc::kFc1NTiles>());
  tc::prefetch_to_l2(weights.fc2, tc::fragment_bytes<tc::kFc2KSteps, tc::kFc2NTiles>());
  tc::prefetch_to_l2(weights.fc3, tc::fragment_bytes<tc::kFc3KSteps, tc::kFc3NTiles>());
  if ((flags & kLateStart) != 0) start();
  tc::WarpScratch& scratch = tiles.warp[warp];
  const uint2* conv2_weights = (flags & kSharedConv2) != 0 ? conv2_frags : weights.conv2;
  unsigned long long landed = 0, conv_ns = 0, fc_ns = 0;
  __syncthreads();  // slot_step, claimed, the barriers' initialisation and conv2_frags visible

  for (int it = 0;; ++it) {
    std::uint32_t* slot = slots + (it % kSlots) * kStepWords;
    // Read before the wait (a slot with no step has no copy to wait for); thread 0 rewrites it
    // only after the next barrier.
    const int step = slot_step[it % kSlots];
    if (step < 0) break;  // steps are handed out in increasing order: every later slot is empty too
    if (bulk)
      wait_bulk(landed_barrier + it % kSlots, (it / kSlots) & 1);
    else
      asm volatile("cp.async.wait_group %0;" ::"n"(kSlots - 1) : "memory");  // this thread's oldest group
    __syncthreads();  // every thread's pieces of this slot have landed; claimed visible
    const int next = dynamic ? claimed : blocked ? (step + kSlots < limit ? step + kSlots : steps) : step + ahead;
    const int first = step * kStepImages, count = min(kStepImages, n - first);
    if (stamp) {
      landed = now_ns();
      if (it == 0) {
        atomicMin(trace + kFirstLanded, landed);
        atomicMax(trace + kLastFirstLanded, landed);
      }
    }
    if (compute && warp < count)
      tc::stage_rows([&](int s) { return tc::pixels_to_float(slot[warp * kImageWords + 28 * s + lane]); }, scratch.pairs, lane);
    __syncthreads();  // the slot is read (and slot_step, claimed): refill them
    issue(pixels, next, steps, n, slot, bulk, landed_barrier + it % kSlots);
    int mine = steps;
    if (tid == 0) {
      slot_step[it % kSlots] = next < steps ? next : -1;
      if (dynamic && next < steps) mine = ahead + static_cast<int>(atomicAdd(counters, 1u));  // used a step later
    }
    if (compute && warp < count) {
      tc::conv1_relu_pool(scratch.pairs, scratch.pool1, conv1_b, conv1_bias_lo, conv1_bias_hi, g, t);
      __syncwarp();  // pool1 written -> conv2 reads it
      if ((flags & kSharedConv2) != 0)
        tc::conv2_relu_pool(scratch.pool1, tiles.pool2 + warp * tc::kPool2Stride, conv2_weights, conv2_bias, g, t, lane,
                            [](const uint2* p) { return *p; });
      else
        tc::conv2_relu_pool(scratch.pool1, tiles.pool2 + warp * tc::kPool2Stride, conv2_weights, conv2_bias, g, t, lane);
    }
    if (tid == 0 && dynamic && next < steps) claimed = mine;
    __syncthreads();  // pool2 complete (rows past `count`: stale or zero, computed and dropped)
    const unsigned long long conv_done = stamp ? now_ns() : 0;
    if (compute) {
      tc::fully_connected<tc::kFc1KSteps, tc::kFc1NTiles>(
          tiles.pool2, tc::kPool2Stride, weights.fc1, weights.fc1_bias, 1, warp, g, t, lane,
          [&](int row, int col, float lo, float hi) {
            tiles.fc1_out[row * tc::kFc1OutStride + col / 2] = tc::pack_half2(tc::relu(lo), tc::relu(hi));
          });
      __syncthreads();
      tc::fully_connected<tc::kFc2KSteps, tc::kFc2NTiles>(
          tiles.fc1_out, tc::kFc1OutStride, weights.fc2, weights.fc2_bias, 1, warp, g, t, lane,
          [&](int row, int col, float lo, float hi) {
            tiles.fc2_out[row * tc::kFc2OutStride + col / 2] = tc::pack_half2(tc::relu(lo), tc::relu(hi));
          });
      __syncthreads();
      tc::fully_connected<tc::kFc3KSteps, tc::kFc3NTiles>(
          tiles.fc2_out, tc::kFc2OutStride, weights.fc3, weights.fc3_bias, 1, warp, g, t, lane,
          [&](int row, int col, float lo, float hi) {
            if (row < kStepImages && col < tc::kClasses) {  // col is even, so col + 1 < 10 too
              tiles.logits[row * tc::kClasses + col] = lo;
              tiles.logits[row * tc::kClasses + col + 1] = hi;
            }
          });
      __syncthreads();
    }
    // One thread per image: the argmax (lowest index wins a tie, as rung 12), written to host memory.
    // The logits tile is next written two barriers later, after the next step's pool2.
    if (tid < count && write_labels) {
      int best = 0;
      if (compute) {
        const float* row = tiles.logits + tid * tc::kClasses;
        for (int c = 1; c < tc::kClasses; ++c)
          if (row[c] > row[best]) best = c;
      }
      out[first + tid] = best;
    }
    if (stamp) {
      conv_ns = conv_done - landed;
      fc_ns = now_ns() - conv_done;
    }
  }
  if (dynamic || at_end) {
    // The last block out resets the counters for the next launch (every claim has returned by
    // then: no fence needed for that) and, with labels at the end, copies them all to the host.
    __syncthreads();  // every thread's labels are written
    if (tid == 0) {
      if (at_end) __threadfence();  // ours visible before we count ourselves out
      last_out = atomicAdd(counters + 1, 1u) == static_cast<unsigned>(blocks) - 1u;
      if (last_out) {
        atomicExch(counters, 0u);
        atomicExch(counters + 1, 0u);
      }
    }
    __syncthreads();
    if (last_out && at_end && write_labels) {
      __threadfence();
      for (int i = tid; i < n; i += tc::kThreads) labels[i] = __ldcg(step_labels + i);
    }
  }
  if (stamp) {
    const unsigned long long end = now_ns();
    atomicMax(trace + kLastLanded, landed);
    atomicMin(trace + kFirstEnd, end);
    atomicMax(trace + kLastEnd, end);
    atomicMax(trace + kTailConv, conv_ns);
    atomicMax(trace + kTailFc, fc_ns);
  }
}

}  // namespace ladder::zero_copy_dynamic

namespace {

using ladder::support::env_or;

namespace zd = ladder::zero_copy_dynamic;

class ZeroCopyDynamic final : public TensorCoreLeNet {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    TensorCoreLeNet::prepare(net, max_batch);
    using ladder::support::knob;
    slots_ = std::stoi(knob("COURSE_LADDER_ZC_SLOTS", "2", {"1", "2", "3"}));
    const std::string order = knob("COURSE_LADDER_ZC_ORDER", "dynamic", {"dynamic", "static", "blocked"});
    const std::string work = knob("COURSE_LADDER_ZC_WORK", "full", {"full", "fetch"});
    const std::string start = knob("COURSE_LADDER_ZC_START", "late", {"late", "early"});
    const std::string labels = knob("COURSE_LADDER_ZC_LABELS", "end", {"end", "step", "none"});
    const std::string fetch = knob("COURSE_LADDER_ZC_FETCH", "lsu", {"lsu", "bulk"});
    const std::string conv2 = knob("COURSE_LADDER_ZC_CONV2", "l2", {"l2", "shared"});
    flags_ = (order == "dynamic" ? zd::kDynamic : 0) | (work == "fetch" ? zd::kFetchOnly : 0) |
             (start == "late" ? zd::kLateStart : 0) | (labels == "end" ? zd::kLabelsAtEnd : 0) |
             (labels == "none" ? zd::kNoLabels : 0) | (order == "blocked" ? zd::kBlocked : 0) |
             (fetch == "bulk" ? zd::kBulk : 0) | (conv2 == "shared" ? zd::kSharedConv2 : 0);
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    int major = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (fetch == "bulk" && major < 9) throw course::Error("COURSE_LADDER_ZC_FETCH=bulk needs compute capability 9.0");
    const int per_sm = slots_ == 1 ? allow<1>() : slots_ == 2 ? allow<2>() : allow<3>();
    if (per_sm < 1) throw course::Error("rung 23: the kernel does not fit on this GPU (shared memory per block)");
    max_blocks_ = sms * per_sm;
    if (const int asked = std::atoi(env_or("COURSE_LADDER_ZC_BLOCKS", "0").c_str()); asked > 0)
      max_blocks_ = std::min(asked, max_blocks_);
    counters_ = course::DeviceBuffer<unsigned>(2);
    CUDA_CHECK(cudaMemset(counters_.get(), 0, counters_.bytes()));
    const auto batch = static_cast<std::size_t>(max_batch);
    pixels_ = course::DeviceBuffer<std::uint8_t>(batch * tc::kImagePixels);
    logits_ = course::DeviceBuffer<float>(batch * tc::kClasses);
    step_labels_ = course::DeviceBuffer<int>(batch);
    own_labels_ = make_pinned<int>(batch);
    own_labels_mapped_ = mapped(own_labels_.get());  // our own buffer: looked up once
    if (!env_or("COURSE_LADDER_ZC_TRACE", "").empty()) trace_ = course::DeviceBuffer<unsigned long long>(zd::kStamps);
    static bool told = false;
    if (!told) {
      told = true;
      std::printf("  rung 23: %d steps in flight, %s order, %s start, %s fetch, conv2 weights from %s, labels %s, %s, %d blocks (%d per SM)%s\n",
                  slots_, order.c_str(), start.c_str(), fetch.c_str(), conv2.c_str(), labels.c_str(),
                  work == "fetch" ? "FETCH ONLY (labels wrong)" : "full network", max_blocks_, per_sm,
                  trace_.get() != nullptr ? ", tracing" : "");
    }
  }

  ~ZeroCopyDynamic() override { print_trace(); }

  void classify_from_host(const std::uint8_t* h_pixels, int n, int* h_labels, cudaStream_t stream) override {
    if (h_pixels == nullptr) throw course::Error("rung 23: h_pixels is null");
    if (h_labels == nullptr) throw course::Error("rung 23: h_labels is null");
    if (n < 1 || n > max_batch())
      throw course::Error("rung 23: n = " + std::to_string(n) + " is not in [1, " + std::to_string(max_batch()) + "]");
    // Two lookups per call, never remembered: the caller may pass pageable memory at an address
    // that was pinned last time, and a kernel must never touch pageable memory.
    int* labels = mapped(h_labels);
    const bool own_labels = labels == nullptr;  // pageable labels: the kernel writes ours, copied below
    if (own_labels) labels = own_labels_mapped_;
    const std::uint8_t* pixels = mapped(h_pixels);
    if (pixels == nullptr || reinterpret_cast<std::uintptr_t>(pixels) % alignof(uint4) != 0) {
      // No kernel may read pageable memory, and cp.async needs 16-byte pieces: one copy, rung 12's kernel.
      CUDA_CHECK(cudaMemcpyAsync(pixels_.get(), h_pixels, static_cast<std::size_t>(n) * tc::kImagePixels,
                                 cudaMemcpyHostToDevice, stream));
      forward_pixels(pixels_.get(), n, logits_.get(), labels, stream);
    } else {
      launch(reinterpret_cast<const uint4*>(pixels), n, labels, stream);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));  // the one wait of the call: labels are in host memory
    if (own_labels) std::memcpy(h_labels, own_labels_.get(), static_cast<std::size_t>(n) * sizeof(int));
    if (trace_.get() != nullptr) keep_trace();
  }

 private:
  template <int kSlots>
  static int allow() {
    return allow_shared_memory(zd::lenet_zero_copy_dynamic<kSlots>, zd::shared_bytes<kSlots>());
  }

  template <int kSlots>
  void launch_slots(const uint4* pixels, int n, int* labels, cudaStream_t stream) {
    const int steps = (n + zd::kStepImages - 1) / zd::kStepImages;
    zd::lenet_zero_copy_dynamic<kSlots><<<std::min(steps, max_blocks_), tc::kThreads, zd::shared_bytes<kSlots>(), stream>>>(
        pixels, n, weights(), labels, step_labels_.get(), counters_.get(), flags_, trace_.get());
    CUDA_CHECK_LAST_LAUNCH();
  }

  void launch(const uint4* pixels, int n, int* labels, cudaStream_t stream) {
    if (trace_.get() != nullptr) {
      const unsigned long long start[zd::kStamps] = {~0ull, ~0ull, 0, 0, ~0ull, 0, 0, 0};
      CUDA_CHECK(cudaMemcpyAsync(trace_.get(), start, sizeof(start), cudaMemcpyHostToDevice, stream));
    }
    if (slots_ == 1) launch_slots<1>(pixels, n, labels, stream);
    else if (slots_ == 2) launch_slots<2>(pixels, n, labels, stream);
    else launch_slots<3>(pixels, n, labels, stream);
  }

  void keep_trace() {
    unsigned long long t[zd::kStamps];
    trace_.download(t, zd::kStamps);
    if (t[zd::kFirstStart] == ~0ull) return;  // the pageable path: no stamps
    std::vector<double> us;
    for (int s = 1; s < zd::kStamps; ++s)
      us.push_back(1e-3 * static_cast<double>(s < zd::kTailConv ? t[s] - t[zd::kFirstStart] : t[s]));
    traces_.push_back(us);
  }

  void print_trace() const {
    if (traces_.empty()) return;
    const char* names[] = {"first bytes landed", "last block's first bytes", "last bytes landed", "first block done",
                           "last block done", "last step's landing to pool2 (max)", "its fc and labels (max)"};
    std::printf("  rung 23 trace, median of %zu calls, us (times after the first block started):", traces_.size());
    for (std::size_t s = 0; s + 1 < zd::kStamps; ++s) {
      std::vector<double> v;
      for (const auto& call : traces_) v.push_back(call[s]);
      std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
      std::printf("%s %s %.1f", s == 0 ? "" : ";", names[s], v[v.size() / 2]);
    }
    std::printf("\n");
  }

  int slots_ = 2, flags_ = 0, max_blocks_ = 0;
  course::DeviceBuffer<unsigned> counters_;
  course::DeviceBuffer<std::uint8_t> pixels_;
  course::DeviceBuffer<float> logits_;
  course::DeviceBuffer<int> step_labels_;  // labels at the end: the kernel's, before the last block copies them out
  std::unique_ptr<int, PinnedDeleter> own_labels_;
  int* own_labels_mapped_ = nullptr;
  course::DeviceBuffer<unsigned long long> trace_;
  std::vector<std::vector<double>> traces_;
};

}  // namespace

COURSE_LADDER_RUNG(23, "zero_copy_dynamic",
                   "zero copy with steps of 8 images handed out by a counter, 2 in flight per block, fc per step",
                   ZeroCopyDynamic);
