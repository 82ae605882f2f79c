// Rung 10: pinned memory, async copies and streams -- the whole trip from host pixels to host labels.
// Why faster: uint8 pixels (4x fewer bytes than float) go to the GPU without a CPU conversion or a
// staging copy, in chunks, while the GPU computes the chunk before: the copy hides behind compute.
//
// The network is the lab 07 solution (rung 9) unchanged; only the host side is new (the code is in
// 10_pinned_streams.cuh, which rung 11 shares). For 4 chunks, copy engines and SMs work at once:
//
//   upload stream   : [H2D 0][H2D 1][H2D 2][H2D 3]
//   compute stream  :        [net 0]  [net 1]  [net 2]  [net 3]          (net = uint8->float + LeNet)
//   download stream :                 [D2H 0]  [D2H 1]  [D2H 2]  [D2H 3]  (labels, 4 bytes an image)
//
// Events carry the order between streams: "chunk c uploaded" gates its compute, "chunk c computed"
// gates its download. The compute stays on ONE stream (the caller's), because FastLeNet keeps
// internal scratch buffers that two concurrent forward() calls would share.
//
// Asynchronous copies need pinned (page-locked) host memory: from pageable memory the driver first
// copies into a pinned buffer of its own and the "async" copy waits for that. The runner allocates
// the pixels with cudaMallocHost; the labels land in the caller's buffer when that is pinned too,
// else in ours and then one memcpy.
//
// How many chunks: each one costs a few launches and copies, and FastLeNet's time for a chunk is not
// proportional to its size (a small forward() leaves SMs idle), so chunks are at least
// kMinChunkImages big and a small batch is one chunk on one stream. COURSE_LADDER_CHUNKS=N in the
// environment forces N chunks, to measure the trade-off.
#include "10_pinned_streams.cuh"

COURSE_LADDER_RUNG(10, "pinned_streams",
                   "uint8 pixels copied in chunks on a second stream, overlapping the previous chunk's compute",
                   PinnedStreams);
