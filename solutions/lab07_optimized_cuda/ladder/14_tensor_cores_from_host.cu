// Rung 14: tensor cores from the host -- rung 12's FP16 network behind rung 10's pinned-memory
// pipeline, reading the uint8 pixels directly: pinned host pixels in, host labels out.
// Why faster: rung 10's FP32 network (0.27 ms per 10,000 images) is slower than the copy it hides
// behind; rung 12's (0.09 ms) is faster, so the copy becomes the limiter and overlap hides the compute.
//
// Two changes besides the network. The kernel stages each image from the uint8 pixels itself
// (float(pixel) / 255 as it packs FP16), so rung 10's conversion kernel and the float copy of the
// batch are gone: one launch per chunk, 4x fewer bytes read. And more, smaller chunks: a forward()
// call of this network costs little besides its images, so what remains after the last copy (the
// last chunk's compute and its labels' trip back) shrinks with the chunk. About 1,250 images a chunk
// (~1 MB, 20 us of PCIe) still copies at full speed. COURSE_LADDER_CHUNKS=N and
// COURSE_LADDER_CHUNK_GROWTH=g (environment) override the choice, to measure on your GPU.
//
// forward() (device-resident images) and the accuracy cost are rung 12's: reduced precision.
#include "10_pinned_streams.cuh"
#include "12_tensor_cores.cuh"
#include "ladder.hpp"

namespace {

// Up to 8 chunks of at least 1,250 images, equal sizes: 10,000 images -> 8 x 1,250.
constexpr ChunkPolicy kTensorCoreChunks{8, 1250, 1.0};

class TensorCoresFromHost : public PinnedStreams<TensorCoreLeNet> {
 public:
  TensorCoresFromHost() : PinnedStreams<TensorCoreLeNet>(kTensorCoreChunks) {}
};

}  // namespace

COURSE_LADDER_RUNG(14, "tensor_cores_from_host",
                   "rung 12's FP16 network behind rung 10's overlapped copies, reading uint8 pixels directly",
                   TensorCoresFromHost);
