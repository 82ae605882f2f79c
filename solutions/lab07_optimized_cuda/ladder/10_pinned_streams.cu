// Rung 10: pinned memory, async copies and streams -- the whole trip from host pixels to host labels.
// Why faster: uint8 pixels (4x fewer bytes than float) go to the GPU without a CPU conversion or a
// staging copy, in chunks, while the GPU computes the chunk before: the copy hides behind compute.
//
// The network is the lab 07 solution (rung 9) unchanged; only the host side is new (the code is in
// 10_pinned_streams.cuh, which rung 11 shares and rung 14 puts in front of the tensor cores). For 4 chunks, copy engines and SMs work at once:
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
// How many chunks: each one costs a copy, a conversion and a forward(), and forward()'s time is not
// proportional to its batch (on the H100, for the lab 07 solution: 72-78 us a call from 129 to
// 1,000 images, then growing; the line through its 1,000- and 10,000-image times, 55 us + 22 ns an
// image, models chunks of 1,000 images and more), so a chunk's compute costs its fixed part again. Measured on the H100 (PCIe 5 x16), pinned uint8 to
// host labels, median ms:          chunks 1      2      3      4      8   (equal sizes)
//                  2,000 images          0.148  0.173  0.227  0.286  0.545
//                  5,000 images          0.269  0.319  0.332  0.409  0.552
//                 10,000 images          0.449  0.446  0.503  0.580  0.793
// Sizes growing geometrically help (a small first chunk starts the compute early; the copy of the
// later ones hides behind it): 2 chunks growing x2 (3,333 + 6,667) 0.430 ms at 10,000, the best.
// So: one chunk on one stream below 10,000 images, two growing x2 from there. The overlap buys only
// 4 % here because the compute (0.273 ms device-resident) outweighs the copy (~0.15 ms) and every
// extra forward() pays its fixed part; with a smaller fixed cost per call, more chunks would pay.
// Most of this rung's gain over rung 9's host path (5.0 ms at 10,000 images in this sweep's run,
// 9.12 ms in the committed CSV's: a CPU conversion to float, 4x the bytes, pageable staging) is the pinned uint8 copy itself. COURSE_LADDER_CHUNKS=N and
// COURSE_LADDER_CHUNK_GROWTH=g (environment) override the choice, to measure on your GPU.
#include "10_pinned_streams.cuh"

COURSE_LADDER_RUNG(10, "pinned_streams",
                   "uint8 pixels copied in chunks on a second stream, overlapping the previous chunk's compute",
                   FastLeNetFromHost);
