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

/// The next image's 784 bytes in flight into the warp's own shared slot: pieces lane and 32 + lane.
struct PrefetchAsync {
  static constexpr int kWarpBytes = tc::kImagePixels;
  const uint4* pixels;  // 16-byte aligned (checked on the host)

  __device__ __forceinline__ void issue(int image, std::uint32_t* slot, int lane) const {
    const uint4* src = pixels + static_cast<std::size_t>(image) * kImagePieces;
    copy_async_16(slot + 4 * lane, src + lane);
    if (lane < kImagePieces - 32) copy_async_16(slot + 4 * (32 + lane), src + 32 + lane);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  __device__ __forceinline__ void start(int image, std::uint32_t* slot, int lane) const { issue(image, slot, lane); }
  __device__ __forceinline__ void stage(int, int next, std::uint32_t* pairs, std::uint32_t* slot, int lane) const {
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncwarp();  // every lane's pieces have landed
    // Lane l's four pixels of step s are word 28 s + l of the image (stage_rows).
    tc::stage_rows([&](int step) { return tc::pixels_to_float(slot[28 * step + lane]); }, pairs, lane);
    __syncwarp();  // every lane has read the slot: it may be refilled
    if (next >= 0) issue(next, slot, lane);
  }
};

/// The next image's words in registers: lane l < 28 holds words 28 s + l, s = 0..6 (stage_rows').
struct PrefetchRegisters {
  static constexpr int kWarpBytes = 0;
  const std::uint32_t* pixels;  // 4-byte aligned
  std::uint32_t words[tc::kImageSide / 4];

  __device__ __forceinline__ void issue(int image, int lane) {
    if (lane >= 28) return;
    const std::uint32_t* src = pixels + static_cast<std::size_t>(image) * kImageWords + lane;
#pragma unroll
    for (int step = 0; step < tc::kImageSide / 4; ++step) words[step] = __ldcs(src + 28 * step);
  }
  __device__ __forceinline__ void start(int image, std::uint32_t*, int lane) { issue(image, lane); }
  __device__ __forceinline__ void stage(int, int next, std::uint32_t* pairs, std::uint32_t*, int lane) {
    std::uint32_t current[tc::kImageSide / 4];
#pragma unroll
    for (int step = 0; step < tc::kImageSide / 4; ++step) current[step] = words[step];
    if (next >= 0) issue(next, lane);
    tc::stage_rows([&](int step) { return tc::pixels_to_float(current[step]); }, pairs, lane);
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
    const std::string mode = text == nullptr || *text == '\0' ? "async" : text;
    if (mode != "async" && mode != "registers" && mode != "none")
      throw course::Error("COURSE_LADDER_PREFETCH must be async, registers or none, got '" + mode + "'");
    mode_ = mode;
    const int per_sm = std::min(allow_shared_memory<zc::PrefetchAsync>(), allow_shared_memory<zc::PrefetchRegisters>());
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
    } else if (mode_ == "async" && reinterpret_cast<std::uintptr_t>(pixels) % alignof(uint4) == 0) {
      launch(zc::PrefetchAsync{reinterpret_cast<const uint4*>(pixels)}, n, logits_.get(), labels, stream);
    } else if (mode_ != "none" && reinterpret_cast<std::uintptr_t>(pixels) % alignof(std::uint32_t) == 0) {
      launch(zc::PrefetchRegisters{reinterpret_cast<const std::uint32_t*>(pixels), {}}, n, logits_.get(), labels, stream);
    } else {
      forward_pixels(pixels, n, logits_.get(), labels, stream);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));  // the one wait of the call: labels are in host memory
    if (labels_host != h_labels) std::memcpy(h_labels, labels_host, static_cast<std::size_t>(n) * sizeof(int));
  }

 private:
  std::string mode_;
  course::DeviceBuffer<std::uint8_t> pixels_;
  course::DeviceBuffer<float> logits_;
  std::unique_ptr<int, PinnedDeleter> host_labels_;
};

}  // namespace

COURSE_LADDER_RUNG(21, "zero_copy_prefetch",
                   "one kernel reads the pinned pixels over PCIe, each warp fetching its next image while it computes",
                   ZeroCopyPrefetch);
