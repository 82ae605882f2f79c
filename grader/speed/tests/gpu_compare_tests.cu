// The GPU adapter on a real GPU: kernels of known relative speed, input rotation with a re-check,
// and the plausibility flag catching work that escaped the timer. Without a usable GPU the
// program says why and exits 77, which CTest reports as "skipped" -- never as passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "course/cuda_check.hpp"
#include "course/device.hpp"
#include "course/device_buffer.hpp"
#include "course/speed/gpu_compare.hpp"
#include "course/speed/plausibility.hpp"

using namespace course;
using namespace course::speed;

namespace {

// Sleeps about `ns` nanoseconds: a kernel whose duration we choose.
__global__ void sleep_kernel(unsigned ns) {
  for (unsigned slept = 0; slept < ns; slept += 1000) __nanosleep(1000);
}

__global__ void scale_kernel(const float* in, float* out, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}

void launch_scale(const float* in, float* out, int n, cudaStream_t stream) {
  scale_kernel<<<(n + 255) / 256, 256, 0, stream>>>(in, out, n, 2.0f);
  CUDA_CHECK_LAST_LAUNCH();
}

ScheduleOptions small_schedule() {
  ScheduleOptions o;
  o.warmup_rounds = 2;
  o.min_rounds = 11;
  o.max_rounds = 61;
  o.time_budget_s = 10;
  return o;
}

}  // namespace

TEST_CASE("gpu: a kernel half as long is measured as ~2x faster") {
  const GpuWork slow = [](cudaStream_t s) { sleep_kernel<<<1, 1, 0, s>>>(400'000); };
  const GpuWork fast = [](cudaStream_t s) { sleep_kernel<<<1, 1, 0, s>>>(200'000); };
  const SpeedResult r = compare_on_gpu(slow, fast, Requirement::at_least_faster(1.5), small_schedule());
  MESSAGE(r.summary() << " -- " << std::string(to_string(r.decision.verdict)) << ": " << r.decision.explanation);
  CHECK(r.decision.verdict == Verdict::pass);
  CHECK(r.speedup.point > 1.6);
  CHECK(r.speedup.point < 2.4);
  CHECK(r.candidate.point > 0.15);  // about 0.2 ms; __nanosleep may oversleep a little

  const SpeedResult too_much = compare_on_gpu(slow, fast, Requirement::at_least_faster(3.0), small_schedule());
  CHECK(too_much.decision.verdict == Verdict::fail);
}

TEST_CASE("gpu: inputs rotate before every run and the outputs are re-checked after timing") {
  const int n = 1 << 20, sets = 3;
  std::vector<DeviceBuffer<float>> inputs;
  for (int s = 0; s < sets; ++s) inputs.emplace_back(std::vector<float>(n, static_cast<float>(s + 1)));
  DeviceBuffer<float> ref_out(n), cand_out(n);
  int current = -1, selections = 0, rechecked = -1;

  RunHooks hooks;
  hooks.input_sets = sets;
  hooks.select_input = [&](int s) { current = s; ++selections; };
  hooks.recheck = [&](int last) {
    rechecked = last;
    const std::vector<float> out = cand_out.download();
    const float expected = 2.0f * static_cast<float>(last + 1);
    for (int i = 0; i < n; i += 4099)
      if (out[i] != expected)
        throw Error("candidate output[" + std::to_string(i) + "] = " + std::to_string(out[i]) + ", expected " +
                    std::to_string(expected));
  };
  const GpuWork reference = [&](cudaStream_t s) { launch_scale(inputs[current].get(), ref_out.get(), n, s); };
  const GpuWork candidate = [&](cudaStream_t s) { launch_scale(inputs[current].get(), cand_out.get(), n, s); };
  const SpeedResult r = compare_on_gpu(reference, candidate, Requirement::within(0.5), small_schedule(), hooks);
  MESSAGE(r.summary());
  CHECK(rechecked >= 0);
  CHECK(selections == 2 * 2 * (r.warmup_rounds + r.rounds));  // A B B A: two runs per side per round
  CHECK(r.speedup.point > 0.7);  // the same kernel: about 1x
  CHECK(r.speedup.point < 1.4);

  // A candidate that writes the wrong thing on its later runs is caught by the re-check.
  const GpuWork stale = [&](cudaStream_t s) { launch_scale(inputs[0].get(), cand_out.get(), n, s); };
  hooks.recheck = [&](int last) {
    if (last != 0) {  // set 0's answer is right for set 0 only
      const std::vector<float> out = cand_out.download();
      if (out[0] != 2.0f * static_cast<float>(last + 1)) throw Error("candidate output[0] is stale");
    }
  };
  ScheduleOptions o = small_schedule();
  o.min_rounds = o.max_rounds = 11;  // (2 + 11) rounds x 2 runs per side: the last uses set 25 % 3 = 1
  CHECK_THROWS_WITH_AS(compare_on_gpu(reference, stale, Requirement::measure_only(), o, hooks),
                       doctest::Contains("re-check after timing failed: candidate output[0] is stale"), Error);
}

TEST_CASE("gpu: work that escapes the timer is flagged as faster than the hardware allows") {
  const int n = 1 << 26;  // 256 MiB in, 256 MiB out: at least ~0.15 ms on an H100
  DeviceBuffer<float> in(n), out(n);
  in.fill_bytes(0);
  cudaStream_t elsewhere = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&elsewhere, cudaStreamNonBlocking));
  const GpuWork honest = [&](cudaStream_t s) { launch_scale(in.get(), out.get(), n, s); };
  // The classic bug: the kernel goes to another stream, so the events on the timed stream
  // measure nothing but their own overhead.
  const GpuWork escaped = [&](cudaStream_t) { launch_scale(in.get(), out.get(), n, elsewhere); };
  ScheduleOptions o = small_schedule();
  o.max_rounds = o.min_rounds;
  // The escaped candidate's time is the events' own overhead: a few microseconds, or exactly 0
  // if both events land in the same timer tick -- which compare() rejects by itself.
  SpeedResult r;
  bool rejected_as_zero = false;
  try {
    r = compare_on_gpu(honest, escaped, Requirement::measure_only(), o);
  } catch (const Error& e) {
    MESSAGE("escaped work rejected outright: " << e.what());
    rejected_as_zero = std::string(e.what()).find("zero") != std::string::npos;
    REQUIRE(rejected_as_zero);
  }
  CUDA_CHECK(cudaStreamSynchronize(elsewhere));
  CUDA_CHECK(cudaStreamDestroy(elsewhere));
  if (rejected_as_zero) return;

  const MachinePeak peak = peak_from_device(query_device(0));
  const Work work{static_cast<double>(n), 2.0 * n * sizeof(float)};
  const Plausibility honest_check = check_plausible(r.reference.point, work, peak);
  const Plausibility escaped_check = check_plausible(r.candidate.point, work, peak);
  MESSAGE(peak.source);
  MESSAGE("honest: " << honest_check.message);
  MESSAGE("escaped: " << escaped_check.message);
  CHECK(honest_check.plausible);
  CHECK(honest_check.bytes_fraction > 0.3);  // a streaming kernel gets a good share of the bandwidth
  CHECK_FALSE(escaped_check.plausible);
}

int main(int argc, char** argv) {
  if (!has_gpu()) {
    std::printf("SKIPPED: speed-scoring GPU tests need a CUDA GPU: %s\n", gpu_unavailable_reason().c_str());
    return kSkipReturnCode;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
