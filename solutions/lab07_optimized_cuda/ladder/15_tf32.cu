// Rung 15: TF32 tensor cores -- rung 12's one-kernel network with FP32 activations and TF32
// mma.sync (m16n8k8, FP32 accumulation) in place of FP16 (m16n8k16).
// Why: the question after rung 12 is what its FP16 costs. TF32 keeps FP32's 8-bit exponent (no
// overflow or underflow to think about) but has FP16's 10 fraction bits, so each product is as
// rounded as rung 12's; what changes is that nothing is stored in FP16 (activations stay FP32 in
// shared memory, rounded to TF32 with cvt.rna as they are stored) and the tensor cores do half
// the work per instruction (TF32 runs at half FP16's rate). Expect logits off by ~1e-2 from FP32,
// like rung 12, at about twice its tensor-core time: this rung is the baseline that rung 16's
// three products are measured against, not a speed-up. Checked on accuracy (reduced precision).
//
// The kernel (fragment layouts, tiling, shared memory: 99.25 KB per block, chunks of 16 images,
// 2 blocks of 8 warps per SM) is in 15_tf32_kernels.cuh; the class in 15_tf32.cuh.
// Needs compute capability 8.0 (TF32 mma); older GPUs skip it.
#include "15_tf32.cuh"
#include "ladder.hpp"

namespace {

class Tf32Rung : public Tf32LeNet {
 public:
  Tf32Rung() : Tf32LeNet(15, false, [] { return Kernel{ladder::tf32::lenet_tf32<ladder::tf32::OneTf32>}; }) {}
};

}  // namespace

COURSE_LADDER_RUNG(15, "tf32", "rung 12 with FP32 activations and TF32 mma.sync m16n8k8 (10 fraction bits, as FP16)",
                   Tf32Rung);
