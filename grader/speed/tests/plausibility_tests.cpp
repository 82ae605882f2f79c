// "Faster than the hardware allows": peaks from a device description, the floor, the flag.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "course/error.hpp"
#include "course/speed/plausibility.hpp"

using namespace course::speed;

namespace {

// What query_device() reports for an H100 SXM (132 SMs, 1.98 GHz boost, HBM3 5120-bit bus).
course::DeviceInfo h100() {
  course::DeviceInfo d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_width_bits = 5120;
  return d;
}

}  // namespace

TEST_CASE("peaks from the device query match the published H100 figures") {
  const MachinePeak fp32 = peak_from_device(h100());
  CHECK(fp32.flops_per_s == doctest::Approx(66.9e12).epsilon(0.01));  // "67 TFLOPS FP32"
  CHECK(fp32.bytes_per_s == doctest::Approx(3.35e12).epsilon(0.01));  // "3.35 TB/s"
  CHECK(fp32.source.find("H100") != std::string::npos);
  const MachinePeak tensor = peak_from_device(h100(), MathUnits::tensor_cores);
  CHECK(tensor.flops_per_s > 900e12);  // dense FP16 tensor cores, ~1 PFLOP/s
  CHECK(tensor.bytes_per_s == fp32.bytes_per_s);

  course::DeviceInfo future = h100();
  future.cc_major = 42;  // an architecture this table has never heard of: a generous guess
  CHECK(peak_from_device(future).flops_per_s > fp32.flops_per_s);

  course::DeviceInfo empty;
  CHECK_THROWS_AS(peak_from_device(empty), course::Error);
}

TEST_CASE("a time faster than the hardware allows is flagged, a plausible one is not") {
  const MachinePeak peak = peak_from_device(h100());
  // 1 GFLOP of FP32 work needs at least 1e9 / 66.9e12 s = 0.01495 ms on this GPU.
  const Work gemm{1e9, 12e6};
  Plausibility p = check_plausible(0.1, gemm, peak);
  CHECK(p.plausible);
  CHECK(p.floor_ms == doctest::Approx(0.01495).epsilon(0.01));
  CHECK(p.flops_fraction == doctest::Approx(0.1495).epsilon(0.01));

  p = check_plausible(0.001, gemm, peak);  // 15x the peak: skipped work or a broken timer
  CHECK_FALSE(p.plausible);
  CHECK(p.flops_fraction > 14.0);
  CHECK(p.message.find("faster than the hardware allows") != std::string::npos);
  MESSAGE(p.message);

  // Just under the floor is within the margin (peaks are approximate), well under is not.
  CHECK(check_plausible(0.9 * p.floor_ms, gemm, peak, 1.25).plausible);
  CHECK_FALSE(check_plausible(0.7 * p.floor_ms, gemm, peak, 1.25).plausible);
  CHECK_FALSE(check_plausible(0.9 * p.floor_ms, gemm, peak, 1.0).plausible);
}

TEST_CASE("the memory bound: moving bytes faster than DRAM can is flagged too") {
  const MachinePeak peak = peak_from_device(h100());
  const Work copy{0, 2e9};  // read 1 GB, write 1 GB: at least ~0.6 ms at 3.35 TB/s
  CHECK(check_plausible(0.7, copy, peak).plausible);
  const Plausibility p = check_plausible(0.1, copy, peak);
  CHECK_FALSE(p.plausible);
  CHECK(p.bytes_fraction > 5.0);
  CHECK(p.message.find("B/s") != std::string::npos);
}

TEST_CASE("plausibility edge cases") {
  const MachinePeak peak{1e12, 1e11, "test machine"};
  const Plausibility zero = check_plausible(0.0, Work{1e6, 0}, peak);
  CHECK_FALSE(zero.plausible);  // real work in no time at all
  CHECK(zero.message.find("infinite") != std::string::npos);
  CHECK(check_plausible(0.0, Work{}, peak).plausible);  // nothing declared, nothing to check
  CHECK(check_plausible(1e-9, Work{}, peak).plausible);
  CHECK_THROWS_AS(check_plausible(-1.0, Work{1e6, 0}, peak), course::Error);
  CHECK_THROWS_AS(check_plausible(std::nan(""), Work{1e6, 0}, peak), course::Error);
  CHECK_THROWS_AS(check_plausible(1.0, Work{-1.0, 0}, peak), course::Error);
  CHECK_THROWS_AS(check_plausible(1.0, Work{1e6, 0}, MachinePeak{0, 1e11, ""}), course::Error);
  CHECK_THROWS_AS(check_plausible(1.0, Work{1e6, 0}, peak, 0.5), course::Error);
}
