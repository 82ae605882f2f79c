#include "course/speed/plausibility.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "course/error.hpp"

namespace course::speed {
namespace {

// FP32 FMA lanes per SM. Volta/Turing/A100 have 64, consumer Ampere and Ada onwards 128 (with
// the shared INT/FP32 datapath counted), Hopper and Blackwell 128.
int fp32_lanes_per_sm(int major, int minor) {
  switch (major) {
    case 5: return 128;
    case 6: return minor == 0 ? 64 : 128;
    case 7: return 64;
    case 8: return minor == 0 ? 64 : 128;
    case 9: return 128;
    case 10: case 11: case 12: return 128;
    default: return 256;  // unknown: generous, see the header
  }
}

// Dense FP16 tensor-core FLOPs per SM per clock (the fastest dense mode; TF32 is half of it),
// from NVIDIA's published peaks divided by SMs x boost clock.
int tensor_flops_per_sm_clock(int major, int minor) {
  switch (major) {
    case 7: return 1024;                       // V100, T4
    case 8: return minor == 0 ? 2048 : 1024;   // A100; RTX 30xx, Orin, RTX 40xx
    case 9: return 4096;                       // H100, H200
    case 10: case 11: return 8192;             // B200 class
    case 12: return 1024;                      // RTX 50xx
    default: return 8192;
  }
}

std::string si(double value, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int p = 0;
  while (std::fabs(value) >= 1000.0 && p < 6) {
    value /= 1000.0;
    ++p;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", value, prefixes[p], unit);
  return buf;
}

std::string three_digits(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", value);
  return buf;
}

}  // namespace

MachinePeak peak_from_device(const DeviceInfo& device, MathUnits units) {
  if (device.sm_count <= 0 || device.clock_khz <= 0)
    throw Error("peak_from_device: the device info has no SM count or clock rate (was it filled by query_device?)");
  if (device.memory_clock_khz <= 0 || device.memory_bus_width_bits <= 0)
    throw Error("peak_from_device: the device info has no memory clock or bus width");
  const bool tensor = units == MathUnits::tensor_cores;
  const double per_sm_clock = tensor ? tensor_flops_per_sm_clock(device.cc_major, device.cc_minor)
                                     : 2.0 * fp32_lanes_per_sm(device.cc_major, device.cc_minor);
  MachinePeak peak;
  peak.flops_per_s = device.sm_count * per_sm_clock * device.clock_khz * 1e3;
  peak.bytes_per_s = device.peak_bandwidth_gbs() * 1e9;
  peak.source = (device.name.empty() ? std::string("device") : device.name) + " (CC " +
                std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor) + "), " +
                si(peak.flops_per_s, "FLOP/s") + (tensor ? " tensor-core" : " FP32") + " peak, " +
                si(peak.bytes_per_s, "B/s") + " memory bandwidth (from the device query)";
  return peak;
}

Plausibility check_plausible(double time_ms, const Work& work, const MachinePeak& peak, double margin) {
  if (!std::isfinite(time_ms) || time_ms < 0.0)
    throw Error("check_plausible: time_ms must be a finite number >= 0, got " + std::to_string(time_ms));
  if (!(std::isfinite(work.flops) && work.flops >= 0.0 && std::isfinite(work.min_bytes) && work.min_bytes >= 0.0))
    throw Error("check_plausible: work.flops and work.min_bytes must be finite and >= 0");
  if (!(std::isfinite(peak.flops_per_s) && peak.flops_per_s > 0.0 && std::isfinite(peak.bytes_per_s) &&
        peak.bytes_per_s > 0.0))
    throw Error("check_plausible: peak FLOP/s and bytes/s must be finite and > 0");
  if (!(std::isfinite(margin) && margin >= 1.0))
    throw Error("check_plausible: margin must be >= 1 (1.25 allows 25% above the peaks), got " + std::to_string(margin));

  Plausibility p;
  p.time_ms = time_ms;
  const double compute_floor_ms = work.flops / peak.flops_per_s * 1e3;
  const double memory_floor_ms = work.min_bytes / peak.bytes_per_s * 1e3;
  p.floor_ms = std::max(compute_floor_ms, memory_floor_ms);
  const double seconds = time_ms * 1e-3;
  // A zero time with real work implies an infinite rate: the most implausible time of all.
  p.flops_fraction = work.flops == 0.0 ? 0.0 : seconds > 0.0 ? work.flops / seconds / peak.flops_per_s : INFINITY;
  p.bytes_fraction = work.min_bytes == 0.0 ? 0.0 : seconds > 0.0 ? work.min_bytes / seconds / peak.bytes_per_s : INFINITY;
  p.plausible = p.floor_ms == 0.0 || time_ms * margin >= p.floor_ms;

  char buf[512];
  if (p.plausible) {
    std::snprintf(buf, sizeof buf, "%.4g ms is plausible: %.0f%% of peak FLOP/s, %.0f%% of peak bandwidth", time_ms,
                  100.0 * p.flops_fraction, 100.0 * p.bytes_fraction);
  } else {
    // Name the bound that was broken: the compute floor or the memory floor, whichever is higher.
    const bool compute_bound = compute_floor_ms >= memory_floor_ms;
    const std::string implied =
        seconds == 0.0 ? std::string("an infinite rate")
        : compute_bound
            ? si(work.flops / seconds, "FLOP/s") + ", " + three_digits(p.flops_fraction) + "x the peak " + si(peak.flops_per_s, "FLOP/s")
            : si(work.min_bytes / seconds, "B/s") + ", " + three_digits(p.bytes_fraction) + "x the peak " + si(peak.bytes_per_s, "B/s");
    std::snprintf(buf, sizeof buf,
                  "%.4g ms is faster than the hardware allows: it implies %s (no correct run can take less than "
                  "%.4g ms) -- work skipped, or a broken timer?",
                  time_ms, implied.c_str(), p.floor_ms);
  }
  p.message = buf;
  return p;
}

}  // namespace course::speed
