// Rung 14: tensor cores from the host -- rung 12's FP16 network behind rung 10's pinned-memory
// pipeline, reading the uint8 pixels directly: pinned host pixels in, host labels out.
// Why faster: rung 10's FP32 network (0.27 ms per 10,000 images) is slower than the copy it hides
// behind; rung 12's (0.09 ms) is faster, so the copy becomes the limiter and overlap hides the compute.
//
// Two changes besides the network. The kernel stages each image from the uint8 pixels itself
// (float(pixel) / 255 as it packs FP16), so rung 10's conversion kernel and the float copy of the
// batch are gone: one launch per chunk, 4x fewer bytes read. And more, smaller chunks: what remains
// after the last copy (the last chunk's compute, its labels' trip back) shrinks with the chunk,
// until the host's cost of enqueueing a chunk (~20 us: copy, launch, events) outruns the copies.
// Measured on the H100 (PCIe 5), 10,000 images, pinned uint8 to host labels, median ms, equal sizes:
//   chunks  1      2      4      6      8      12     16        (8 shrinking x0.7: 0.301)
//           0.270  0.241  0.240  0.216  0.268  0.317  0.415
// Device-resident forward() takes 0.087 ms, the copy of 7.84 MB ~0.17 ms: 6 chunks come within
// ~45 us of the copy alone. So: up to 6 chunks of at least 1,250 images (~1 MB, full PCIe speed).
// COURSE_LADDER_CHUNKS=N and COURSE_LADDER_CHUNK_GROWTH=g (environment) override the choice.
//
// forward() (device-resident images) and the accuracy cost are rung 12's: reduced precision.
#include "10_pinned_streams.cuh"
#include "12_tensor_cores.cuh"
#include "ladder.hpp"

namespace {

// Up to 6 chunks of at least 1,250 images, equal sizes: 10,000 images -> 6 x ~1,667; 1,000 -> one.
constexpr ChunkPolicy kTensorCoreChunks{6, 1250, 1.0};

class TensorCoresFromHost : public PinnedStreams<TensorCoreLeNet> {
 public:
  TensorCoresFromHost() : PinnedStreams<TensorCoreLeNet>(kTensorCoreChunks) {}
};

}  // namespace

COURSE_LADDER_RUNG(14, "tensor_cores_from_host",
                   "rung 12's FP16 network behind rung 10's overlapped copies, reading uint8 pixels directly",
                   TensorCoresFromHost);
