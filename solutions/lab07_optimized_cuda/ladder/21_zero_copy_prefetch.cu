// Rung 21: pinned host pixels to host labels with no copies at all -- one launch of rung 12's
// kernel that reads the pixels over PCIe itself, each warp fetching its next image while it
// computes the current one, and writes the labels straight into the caller's pinned buffer.
// MEASURED: (filled in from the H100 run)
//
// Why (lecture 07, 15g): a pinned copy of the 7.84 MB takes 0.153 ms, and a plain coalesced
// kernel reading the same bytes over PCIe (zero copy) gets 49.5 GB/s, almost the copy engine's
// rate. Rung 20's chunked copies cannot get near that: every chunk boundary loses time and the
// last chunk still needs a whole kernel after its last byte. Zero copy with rung 12's kernel as it
// is measured 0.239 ms, though: each warp reads an image, waits a PCIe round trip for it, computes,
// and only then asks for the next one, so the bus idles while the SMs compute and the other way
// round. Here the read of the warp's next image is issued before the current one is computed, so
// the reads stay in flight under the compute (each warp's next image is the one 8 further: rung 12's
// kernel gives warp w of a block images first + w + 8j). With ~2,000 warps each holding one image
// in flight (1.5 MB) the bus never runs dry; the time should approach one PCIe pass plus the
// compute of the last images to arrive.
//
// Knob, for measuring (read by prepare()): COURSE_LADDER_PREFETCH=
//   async      (default) cp.async: each lane copies 16-byte pieces of the next image into a 784-byte
//              slot of shared memory per warp, no registers held while they fly
//   registers  lanes 0..27 load the next image's 7 words each into registers, exactly the words
//              stage_rows will want (rung 12's kernel is at 128 registers already: costs spills)
//   none       rung 12's kernel reading host memory as it stages (rung 20's zero-copy path)
//
// forward() (device-resident images) and the accuracy cost are rung 12's: reduced precision (FP16).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "12_tensor_cores.cuh"
#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "cuda_owners.cuh"
#include "ladder.hpp"

namespace ladder::zero_copy {

namespace tc = ladder::tensor_cores;
constexpr int kImageWords = tc::kImagePixels / 4;    // 196 words of 4 pixels
constexpr int kImagePieces = tc::kImagePixels / 16;  // 49 pieces of 16 bytes

__device__ __forceinline__ void copy_async_16(std::uint32_t* shared_dst, const void* global_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(shared_dst))),
               "l"(global_src)
               : "memory");
}

/// Per warp: the warp's next image in flight into its own 784-byte slot of shared memory, as 16-byte
/// pieces lane and 32 + lane (the image starts 16-byte aligned, not 128: lines are shared with the
/// neighbouring images, which other warps read at other times).
struct PrefetchWarp {
  static constexpr int kWarpBytes = tc::kImagePixels;
  static constexpr bool kInterleaved = false;
  const uint4* pixels;  // 16-byte aligned (checked on the host)

  __device__ __forceinline__ void issue(int image, std::uint32_t* slot, int lane) const {
    const uint4* src = pixels + static_cast<std::size_t>(image) * kImagePieces;
    copy_async_16(slot + 4 * lane, src + lane);
    if (lane < kImagePieces - 32) copy_async_16(slot + 4 * (32 + lane), src + 32 + lane);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  __device__ __forceinline__ void start(const tc::Step& step, std::uint32_t* slot, int lane) const {
    issue(step.next, slot, lane);
  }
  __device__ __forceinline__ void stage(const tc::Step& step, std::uint32_t* pairs, std::uint32_t* slot, int lane) const {
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncwarp();  // every lane's pieces have landed
    // Lane l's four pixels of step s are word 28 s + l of the image (stage_rows).
    tc::stage_rows([&](int s) { return tc::pixels_to_float(slot[28 * s + lane]); }, pairs, lane);
    __syncwarp();  // every lane has read the slot: it may be refilled
    if (step.next >= 0) issue(step.next, slot, lane);
  }
};

__device__ __forceinline__ void named_barrier(int threads) {
  asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory");  // barrier 0 is __syncthreads'
}

/// Per block: the 8 consecutive images of the block's next step (6,272 bytes = 49 lines of 128,
/// aligned: the pinned buffer is, and 8 images are 49 lines) in flight into the block's 8 slots,
/// every warp instruction 512 whole bytes, so every line crosses PCIe once and whole. The warps of
/// a step wait for each other twice (named barrier 1): all pieces landed, all slots read.
template <bool Interleaved>
struct PrefetchBlock {
  static constexpr int kWarpBytes = tc::kImagePixels;
  static constexpr bool kInterleaved = Interleaved;
  const uint4* pixels;  // 128-byte aligned (checked on the host)

  /// Images first .. first + images - 1 into the block's slots, by the threads of warps 0 .. images - 1.
  __device__ __forceinline__ void issue(int first, int images, std::uint32_t* slots) const {
    const uint4* src = pixels + static_cast<std::size_t>(first) * kImagePieces;
    for (int p = static_cast<int>(threadIdx.x); p < kImagePieces * images; p += 32 * images)
      copy_async_16(slots + 4 * p, src + p);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  __device__ __forceinline__ void start(const tc::Step& step, std::uint32_t* slot, int lane) const {
    const int warp = static_cast<int>(threadIdx.x) / 32;
    issue(step.next - warp, step.warps_next, slot - warp * kImageWords);
  }
  __device__ __forceinline__ void stage(const tc::Step& step, std::uint32_t* pairs, std::uint32_t* slot, int lane) const {
    const int warp = static_cast<int>(threadIdx.x) / 32;
    asm volatile("cp.async.wait_all;" ::: "memory");
    named_barrier(32 * step.warps_now);  // every piece of the step has landed
    tc::stage_rows([&](int s) { return tc::pixels_to_float(slot[28 * s + lane]); }, pairs, lane);
    named_barrier(32 * step.warps_now);  // every warp has read its slot: they may be refilled
    if (warp < step.warps_next) issue(step.next - warp, step.warps_next, slot - warp * kImageWords);
  }
};

/// Per warp, in registers: lane l < 28 holds words 28 s + l, s = 0..6, of the next image (stage_rows').
struct PrefetchRegisters {
  static constexpr int kWarpBytes = 0;
  static constexpr bool kInterleaved = false;
  const std::uint32_t* pixels;  // 4-byte aligned
  std::uint32_t words[tc::kImageSide / 4];

  __device__ __forceinline__ void issue(int image, int lane) {
    if (lane >= 28) return;
    const std::uint32_t* src = pixels + static_cast<std::size_t>(image) * kImageWords + lane;
#pragma unroll
    for (int s = 0; s < tc::kImageSide / 4; ++s) words[s] = __ldcs(src + 28 * s);
  }
  __device__ __forceinline__ void start(const tc::Step& step, std::uint32_t*, int lane) { issue(step.next, lane); }
  __device__ __forceinline__ void stage(const tc::Step& step, std::uint32_t* pairs, std::uint32_t*, int lane) {
    std::uint32_t current[tc::kImageSide / 4];
#pragma unroll
    for (int s = 0; s < tc::kImageSide / 4; ++s) current[s] = words[s];
    if (step.next >= 0) issue(step.next, lane);
    tc::stage_rows([&](int s) { return tc::pixels_to_float(current[s]); }, pairs, lane);
  }
};

}  // namespace ladder::zero_copy

namespace {

namespace zc = ladder::zero_copy;

class ZeroCopyPrefetch final : public TensorCoreLeNet {
 public:
  void prepare(const lab04::FoldedLeNet& net, int max_batch) override {
    TensorCoreLeNet::prepare(net, max_batch);
    const char* text = std::getenv("COURSE_LADDER_PREFETCH");
    mode_ = text == nullptr || *text == '\0' ? "sweep" : text;
    if (mode_ != "sweep" && mode_ != "block" && mode_ != "warp" && mode_ != "registers" && mode_ != "none")
      throw course::Error("COURSE_LADDER_PREFETCH must be sweep, block, warp, registers or none, got '" + mode_ + "'");
    const int per_sm = std::min({allow_shared_memory<zc::PrefetchBlock<true>>(), allow_shared_memory<zc::PrefetchBlock<false>>(),
                                 allow_shared_memory<zc::PrefetchWarp>(), allow_shared_memory<zc::PrefetchRegisters>()});
    if (per_sm < 1) throw course::Error("rung 21: the kernel does not fit on this GPU (shared memory per block)");
    const auto batch = static_cast<std::size_t>(max_batch);
    pixels_ = course::DeviceBuffer<std::uint8_t>(batch * tc::kImagePixels);
    logits_ = course::DeviceBuffer<float>(batch * tc::kClasses);
    host_labels_ = make_pinned<int>(batch);
    static bool told = false;
    if (!told) {
      told = true;
      std::printf("  rung 21: prefetch %s, %d blocks per SM\n", mode_.c_str(), per_sm);
    }
  }

  void classify_from_host(const std::uint8_t* h_pixels, int n, int* h_labels, cudaStream_t stream) override {
    if (h_pixels == nullptr) throw course::Error("rung 21: h_pixels is null");
    if (h_labels == nullptr) throw course::Error("rung 21: h_labels is null");
    if (n < 1 || n > max_batch())
      throw course::Error("rung 21: n = " + std::to_string(n) + " is not in [1, " + std::to_string(max_batch()) + "]");
    // The kernel writes the labels into the caller's buffer if it is pinned, else into ours.
    int* labels_host = mapped(h_labels) != nullptr ? h_labels : host_labels_.get();
    int* labels = mapped(labels_host);
    const std::uint8_t* pixels = mapped(h_pixels);
    if (pixels == nullptr) {  // pageable pixels: no kernel may read them; one copy, then rung 12's kernel
      CUDA_CHECK(cudaMemcpyAsync(pixels_.get(), h_pixels, static_cast<std::size_t>(n) * tc::kImagePixels,
                                 cudaMemcpyHostToDevice, stream));
      forward_pixels(pixels_.get(), n, logits_.get(), labels, stream);
    } else {
      launch_prefetching(pixels, n, labels, stream);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));  // the one wait of the call: labels are in host memory
    if (labels_host != h_labels) std::memcpy(h_labels, labels_host, static_cast<std::size_t>(n) * sizeof(int));
  }

 private:
  /// The kernel on the mapped pixels, with the source COURSE_LADDER_PREFETCH asks for, or the
  /// next one down if the pixels are not aligned enough for it (128, 16, 4 bytes).
  void launch_prefetching(const std::uint8_t* pixels, int n, int* labels, cudaStream_t stream) {
    const auto aligned = [pixels](std::uintptr_t bytes) { return reinterpret_cast<std::uintptr_t>(pixels) % bytes == 0; };
    const auto* pieces = reinterpret_cast<const uint4*>(pixels);
    const bool block = mode_ == "sweep" || mode_ == "block";
    if (block && aligned(128) && mode_ == "sweep")
      launch(zc::PrefetchBlock<true>{pieces}, n, logits_.get(), labels, stream);
    else if (block && aligned(128))
      launch(zc::PrefetchBlock<false>{pieces}, n, logits_.get(), labels, stream);
    else if ((block || mode_ == "warp") && aligned(16))
      launch(zc::PrefetchWarp{pieces}, n, logits_.get(), labels, stream);
    else if (mode_ != "none" && aligned(4))
      launch(zc::PrefetchRegisters{reinterpret_cast<const std::uint32_t*>(pixels), {}}, n, logits_.get(), labels, stream);
    else
      forward_pixels(pixels, n, logits_.get(), labels, stream);
  }

  std::string mode_;
  course::DeviceBuffer<std::uint8_t> pixels_;
  course::DeviceBuffer<float> logits_;
  std::unique_ptr<int, PinnedDeleter> host_labels_;
};

}  // namespace

COURSE_LADDER_RUNG(21, "zero_copy_prefetch",
                   "one kernel reads the pinned pixels over PCIe, each warp fetching its next image while it computes",
                   ZeroCopyPrefetch);
