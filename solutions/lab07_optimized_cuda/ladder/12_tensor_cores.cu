// Rung 12: tensor cores -- every layer an FP16 GEMM with FP32 accumulation on mma.sync, the
// convolutions as implicit GEMMs read from shared memory, the whole network in one kernel.
// Why faster: a tensor-core instruction does 2,048 multiply-adds where an FMA does one, so the
// arithmetic that bounded the FP32 rungs almost disappears; what is left is feeding the tensor
// cores from shared memory (ncu: L1/shared pipe ~78% busy at 10,000 images).
// The cost: inputs, weights and activations rounded to FP16 (11 significant bits). Measured on an
// H100 against the golden FP32 network: logits off by up to ~1e-2; MNIST (1,996 test images)
// 98.90 % as golden, no label changed; Fashion-MNIST 90.48 % vs 90.50 %, 2 of 10,000 labels
// changed (borderline images). The runner checks accuracy (within 0.1 points) instead of labels.
//
// The kernel and the fragment layouts are in 12_tensor_cores_kernels.cuh; the network class, which
// rung 14 reuses, in 12_tensor_cores.cuh. It prepares the weights: each layer's weight matrix
// B[k][n] is built in the k-order the kernel reads the activations in, zero-padded to whole mma
// tiles, rounded to FP16 and stored fragment by fragment.
#include "12_tensor_cores.cuh"
#include "ladder.hpp"

COURSE_LADDER_RUNG(12, "tensor_cores", "FP16 mma.sync implicit-GEMM convolutions and GEMM fc layers in one kernel",
                   TensorCoreLeNet);
