// "Faster than the hardware allows": a time that implies more arithmetic per second than the
// GPU's peak, or more bytes per second than its memory bandwidth, is not a fast kernel -- it is a
// kernel that skipped work (an early return, a launch that never ran) or a timer that measured
// the wrong thing (events on another stream, a missing synchronisation).
//
// The floor on any correct run's time is max(flops / peak FLOP/s, min_bytes / peak bandwidth).
// A time below floor / margin is flagged. The peaks are theoretical upper bounds (from the
// device query, or measured), and the margin absorbs what they get wrong (boost clocks above
// the reported rate, a bandwidth formula that is a little off). Two things to keep in mind when
// choosing the numbers: count the FLOPs of the direct algorithm only if nothing faster is
// possible (Winograd/FFT convolutions need fewer multiplications, so widen the margin or leave
// flops at 0), and count as min_bytes only what must come from DRAM (with the L2 flushed and
// the inputs rotated: inputs and weights read once, outputs written once).
#pragma once

#include <string>

#include "course/device.hpp"

namespace course::speed {

/// The least a correct implementation has to do.
struct Work {
  double flops = 0;      ///< floating-point operations (a multiply-add counts 2); 0 = don't check
  double min_bytes = 0;  ///< bytes that must move between DRAM and the chip; 0 = don't check
};

/// The most the machine can do per second.
struct MachinePeak {
  double flops_per_s = 0;
  double bytes_per_s = 0;
  std::string source;  ///< where the numbers come from, for the report
};

/// Which arithmetic units the work may use: CUDA cores (FP32 FMA) or tensor cores.
enum class MathUnits { fp32_cuda_cores, tensor_cores };

/// Peaks from the device query: SMs x FP32 lanes (or dense FP16 tensor-core FLOPs) per SM per
/// clock x 2 for the FMA x the boost clock, and the DDR bandwidth of DeviceInfo. Unknown
/// architectures get a deliberately generous per-SM rate so that a new GPU is never flagged
/// unjustly. Throws course::Error if the device info lacks SMs, clock or memory figures.
MachinePeak peak_from_device(const DeviceInfo& device, MathUnits units = MathUnits::fp32_cuda_cores);

struct Plausibility {
  bool plausible = true;
  double time_ms = 0;         ///< the time that was checked
  double floor_ms = 0;        ///< fastest time the peaks allow for this work
  double flops_fraction = 0;  ///< implied FLOP/s as a fraction of the peak (1.5 = 150% of peak)
  double bytes_fraction = 0;  ///< implied bandwidth as a fraction of the peak
  std::string message;        ///< one line; says "faster than the hardware allows" when flagged
};

/// Flags `time_ms` if it is below floor / margin (margin >= 1; 1.25 = allow 25% above the peaks).
/// A zero time is flagged whenever the work is not empty. Throws course::Error for a negative or
/// non-finite time, negative work, non-positive peaks or a margin below 1.
Plausibility check_plausible(double time_ms, const Work& work, const MachinePeak& peak, double margin = 1.25);

}  // namespace course::speed
