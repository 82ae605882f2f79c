// Rung 16: 3xTF32 -- rung 15 with every operand split into two TF32 numbers, x = hi + lo with
// hi = tf32(x) and lo = tf32(x - hi), and three tensor-core products a_hi b_lo + a_lo b_hi +
// a_hi b_hi accumulated in FP32. Why: FP32 accuracy on the tensor cores. hi carries 11 bits of x,
// lo the next 11, so the dropped a_lo b_lo and the rounding of lo are ~2^-22 of the product: about
// FP32's rounding (2^-24), not TF32's (2^-11). So this rung is checked as an FP32 rung: every
// label the golden network's and every logit within 1e-3 -- the question being whether three
// TF32 products still beat the FP32 CUDA cores' floor (0.125 ms for 10,000 images on the H100).
//
// The weights' hi and lo parts are computed once in prepare(); the activations stay FP32 in
// shared memory and are split in registers as the fragments are loaded (two cvt.rna and a
// subtraction per value, instead of twice the shared-memory bytes). The small products go into
// the accumulator first (15_tf32_kernels.cuh, ThreeTf32, says why). Kernel and class: rung 15's.
#include "15_tf32.cuh"
#include "ladder.hpp"

namespace {

class ThreeTf32Rung : public Tf32LeNet<ladder::tf32::ThreeTf32> {
 public:
  ThreeTf32Rung() : Tf32LeNet<ladder::tf32::ThreeTf32>(16) {}
};

}  // namespace

COURSE_LADDER_RUNG(16, "3xtf32", "rung 15 with split operands: 3 TF32 products per step, FP32 accuracy",
                   ThreeTf32Rung);
