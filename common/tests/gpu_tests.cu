// GPU-side tests of the common library: device buffer, device query, GPU timer, error checks.
// Without a usable GPU the program prints why and exits with 77, which CTest reports as
// "skipped" (SKIP_RETURN_CODE) -- never as passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <limits>

#include "course/compare.hpp"
#include "course/device.hpp"
#include "course/device_buffer.hpp"
#include "course/gpu_timer.hpp"

using namespace course;

namespace {

__global__ void scale_kernel(float* data, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

// Spins for about `ns` nanoseconds so the timer has a known duration to measure.
__global__ void sleep_kernel(unsigned ns) {
  for (unsigned slept = 0; slept < ns; slept += 1000) __nanosleep(1000);
}

__global__ void out_of_bounds_kernel(float* data) {
  data[1ull << 40] = 1.0f;  // far outside any allocation: an illegal address
}

}  // namespace

TEST_CASE("gpu: device query reports a real device") {
  REQUIRE(has_gpu());
  DeviceInfo info = query_device(0);
  MESSAGE("device: " << info.summary() << ", peak bandwidth ~" << info.peak_bandwidth_gbs() << " GB/s");
  CHECK_FALSE(info.name.empty());
  CHECK(info.sm_count > 0);
  CHECK(info.cc_major >= 5);
  CHECK(info.global_memory_bytes > (std::size_t{1} << 30));
  CHECK(info.l2_cache_bytes > 0);
  CHECK(info.peak_bandwidth_gbs() > 100.0);
}

TEST_CASE("gpu: DeviceBuffer uploads, runs a kernel over, and downloads data") {
  std::vector<float> host(1000);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  DeviceBuffer<float> buf(host);
  CHECK(buf.size() == 1000);
  scale_kernel<<<4, 256>>>(buf.get(), 1000, 2.0f);
  CUDA_CHECK_LAST_LAUNCH();
  std::vector<float> back = buf.download();
  for (std::size_t i = 0; i < back.size(); ++i) REQUIRE(back[i] == 2.0f * static_cast<float>(i));

  DeviceBuffer<float> moved = std::move(buf);
  CHECK(buf.get() == nullptr);  // NOLINT: moved-from state is part of the contract
  CHECK(moved.size() == 1000);
  moved.fill_bytes(0xFF);  // 0xFFFFFFFF is a NaN: the poison pattern
  back = moved.download();
  CHECK(count_nonfinite(back.data(), back.size()) == 1000);
  CHECK_THROWS_AS(moved.upload(host.data(), 1001), course::Error);
}

TEST_CASE("gpu: CUDA_CHECK turns failures into course::Error with the call and CUDA's message") {
  float* p = nullptr;
  try {
    CUDA_CHECK(cudaMalloc(&p, std::numeric_limits<std::size_t>::max() / 2));
    FAIL("an impossible allocation succeeded");
  } catch (const course::Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("cudaErrorMemoryAllocation") != std::string::npos);
    CHECK(msg.find("cudaMalloc") != std::string::npos);
    CHECK(msg.find("gpu_tests.cu") != std::string::npos);
  }
  cudaGetLastError();  // clear the (non-sticky) allocation error
  scale_kernel<<<1, 4096>>>(nullptr, 0, 1.0f);  // 4096 threads per block is never allowed
  CHECK_THROWS_AS(CUDA_CHECK_LAST_LAUNCH(), course::Error);
}

TEST_CASE("gpu: the timer measures a kernel of known duration") {
  GpuTimer timer;
  TimingStats s = timer.time([](cudaStream_t stream) { sleep_kernel<<<1, 1, 0, stream>>>(2'000'000); },
                             TimerOptions{2, 9, true});
  MESSAGE("2 ms sleep kernel: " << s.summary());
  CHECK(s.samples_ms.size() == 9);
  CHECK(s.median_ms > 1.5);  // __nanosleep may oversleep, never undersleep by much
  CHECK(s.median_ms < 20.0);
  CHECK(s.min_ms <= s.median_ms);
  CHECK(s.median_ms <= s.max_ms);
}

TEST_CASE("gpu: a kernel fault is reported, not ignored (run last: it poisons the context)") {
  DeviceBuffer<float> buf(16);
  out_of_bounds_kernel<<<1, 1>>>(buf.get());
  CHECK_THROWS_AS(CUDA_CHECK(cudaDeviceSynchronize()), course::Error);
}

int main(int argc, char** argv) {
  if (!has_gpu()) {
    std::printf("SKIPPED: common GPU tests need a CUDA GPU: %s\n", gpu_unavailable_reason().c_str());
    return kSkipReturnCode;
  }
  doctest::Context context(argc, argv);
  context.setOption("order-by", "file");  // the fault test must stay last
  return context.run();
}
