// Rung 16: 3xTF32 -- rung 15 with every operand split into two TF32 numbers, x = hi + lo with
// hi = tf32(x) and lo = tf32(x - hi), and three tensor-core products a_hi b_lo + a_lo b_hi +
// a_hi b_hi accumulated in FP32. Why: FP32 accuracy on the tensor cores. hi carries 11 bits of x,
// lo the next 11, so the dropped a_lo b_lo and the rounding of lo are ~2^-22 of the product: about
// FP32's rounding (2^-24), not TF32's (2^-11). So this rung is checked as an FP32 rung: every
// label the golden network's and every logit within 1e-3 -- the question being whether three
// TF32 products still beat the FP32 CUDA cores' floor (0.125 ms for 10,000 images on the H100).
//
// The weights' hi and lo parts are computed once in prepare(); the activations stay FP32 in
// shared memory and are split in registers as the fragments are loaded (two roundings and a
// subtraction per value, instead of twice the shared-memory bytes). The small products go into
// the accumulator first (15_tf32_kernels.cuh, ThreeTf32, says why). Kernel and class: rung 15's.
// COURSE_LADDER_3XTF32_ROUNDING=cvt (environment) splits with cvt.rna instead of two integer ops:
// the same bits, possibly another speed.
#include <cstdlib>
#include <string>

#include "15_tf32.cuh"
#include "course/error.hpp"
#include "ladder.hpp"

namespace {

namespace tf = ladder::tf32;

Tf32LeNet::Kernel split_kernel() {
  const char* knob = std::getenv("COURSE_LADDER_3XTF32_ROUNDING");
  const std::string rounding = knob != nullptr && *knob != '\0' ? knob : "int";
  if (rounding == "int") return tf::lenet_tf32<tf::ThreeTf32<tf::SplitRounding::integer>>;
  if (rounding == "cvt") return tf::lenet_tf32<tf::ThreeTf32<tf::SplitRounding::cvt>>;
  throw course::Error("COURSE_LADDER_3XTF32_ROUNDING must be int or cvt, got '" + rounding + "'");
}

class ThreeTf32Rung : public Tf32LeNet {
 public:
  ThreeTf32Rung() : Tf32LeNet(16, true, split_kernel) {}
};

}  // namespace

COURSE_LADDER_RUNG(16, "3xtf32", "rung 15 with split operands: 3 TF32 products per step, FP32 accuracy",
                   ThreeTf32Rung);
