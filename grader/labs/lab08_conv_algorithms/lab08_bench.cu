// Lab 08's benchmark (parts A and B): your functions on network-sized problems, each first checked
// against the CPU reference on a small case, then timed with CUDA events (warm-up, median of the
// repetitions, L2 flushed before each run, course::GpuTimer):
//   depthwise_conv3x3 on MobileNetV2's depthwise layers at 224x224 (batch 8): GB/s counts one
//                       read of the input and one write of the output, the memory floor;
//   sgemm on square products 512 .. 4096 and an odd 1000 x 1000 x 1000: GFLOP/s = 2 M N K / time;
//   conv2d_im2col_gemm on 3x3 and 1x1 layers of a ResNet/MobileNet at batch 8: GFLOP/s;
//   conv2d_winograd on the same 3x3 layers: "effective" GFLOP/s, counting the direct
//                       convolution's 2 N K P Q C 9 (the multiplications Winograd saves show as
//                       a higher rate); skipped while part B is not implemented.
//
//   build/labs/solutions/lab08_bench [repetitions]     (or build/labs/exercises/lab08_bench)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "conv_algorithms_reference.hpp"
#include "course/compare.hpp"
#include "course/cuda_check.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/gpu_timer.hpp"
#include "course/rng.hpp"
#include "course/tensor.hpp"
#include "labs/lab08_conv_algorithms.hpp"
#include "lab04_reference.hpp"

namespace {

using course::Shape;
using course::Tensor;

course::DeviceBuffer<float> to_device(const Tensor& t) { return course::DeviceBuffer<float>(t.values()); }

Tensor to_host(const course::DeviceBuffer<float>& d, const Shape& shape) {
  Tensor t(shape);
  d.download(t.data(), t.numel());
  return t;
}

bool report(const char* what, const Tensor& actual, const Tensor& expected, double atol) {
  const course::Comparison c = course::compare(actual, expected, {atol, 1e-4});
  std::printf("check %-34s %s\n", what, c.ok() ? "ok" : "WRONG");
  if (!c.ok()) std::printf("%s\n", c.report(expected.shape()).c_str());
  return c.ok();
}

/// Small cases against the CPU references: a wrong kernel is not worth timing.
bool check_all(cudaStream_t stream, bool& winograd_ready) {
  course::Rng rng(8);
  bool ok = true;
  winograd_ready = false;
  {
    const Tensor x = rng.tensor({2, 5, 13, 11}), w = rng.tensor({5, 1, 3, 3}), b = rng.tensor({5});
    for (int stride : {1, 2}) {
      const Tensor expected = golden::lab08_depthwise3x3(x, w, b, stride, true);
      auto dx = to_device(x), dw = to_device(w), db = to_device(b);
      course::DeviceBuffer<float> dy(expected.numel());
      lab08::depthwise_conv3x3(dx.get(), dw.get(), db.get(), dy.get(), 2, 5, 13, 11, stride, true, stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      ok &= report(stride == 1 ? "depthwise_conv3x3 stride 1" : "depthwise_conv3x3 stride 2",
                   to_host(dy, expected.shape()), expected, 1e-5);
    }
  }
  {
    const Tensor a = rng.tensor({129, 65}), b = rng.tensor({65, 257}), bias = rng.tensor({129});
    const Tensor expected = golden::lab08_gemm(a, b, bias);
    auto da = to_device(a), dbm = to_device(b), dbias = to_device(bias);
    course::DeviceBuffer<float> dc(expected.numel());
    lab08::sgemm(129, 257, 65, da.get(), dbm.get(), dbias.get(), dc.get(), stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    ok &= report("sgemm 129 x 257 x 65", to_host(dc, expected.shape()), expected, 2e-4);
  }
  {
    const Tensor x = rng.tensor({2, 6, 15, 14}), w = rng.tensor({9, 6, 3, 3}), b = rng.tensor({9});
    const Tensor expected = golden::lab04_conv2d(x, w, b, 1, 2);
    auto dx = to_device(x), dw = to_device(w), db = to_device(b);
    course::DeviceBuffer<float> dy(expected.numel());
    course::DeviceBuffer<unsigned char> ws(lab08::conv2d_im2col_gemm_workspace(2, 6, 15, 14, 3, 3, 1, 2) + 1);
    lab08::conv2d_im2col_gemm(dx.get(), dw.get(), db.get(), dy.get(), ws.get(), ws.size(), 2, 6, 15, 14, 9, 3, 3, 1, 2,
                              stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    ok &= report("conv2d_im2col_gemm 3x3 stride 2", to_host(dy, expected.shape()), expected, 2e-4);
  }
  try {
    const Tensor x = rng.tensor({2, 6, 15, 14}), w = rng.tensor({9, 6, 3, 3}), b = rng.tensor({9});
    const Tensor expected = golden::lab04_conv2d(x, w, b, 1, 1);
    auto dx = to_device(x), dw = to_device(w), db = to_device(b);
    course::DeviceBuffer<float> dy(expected.numel());
    course::DeviceBuffer<unsigned char> ws(lab08::conv2d_winograd_workspace(2, 6, 15, 14, 9));
    lab08::conv2d_winograd(dx.get(), dw.get(), db.get(), dy.get(), ws.get(), ws.size(), 2, 6, 15, 14, 9, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    winograd_ready = report("conv2d_winograd 3x3", to_host(dy, expected.shape()), expected, 2e-4);
    ok &= winograd_ready;
  } catch (const course::NotImplemented& e) {
    std::printf("check %-34s skipped (%s)\n", "conv2d_winograd 3x3", e.what());
  }
  return ok;
}

void time_depthwise(course::GpuTimer& timer, const course::TimerOptions& options) {
  struct Layer { int size, channels, stride; };
  const Layer layers[] = {{112, 32, 1}, {112, 96, 2}, {56, 144, 1}, {56, 144, 2}, {28, 192, 1},
                          {28, 192, 2}, {14, 384, 1}, {14, 576, 1}, {14, 576, 2}, {7, 960, 1}};
  const int n = 8;
  std::printf("\ndepthwise_conv3x3, batch %d (MobileNetV2 at 224x224), ReLU6\n%-22s %10s %10s\n", n, "layer", "us", "GB/s");
  course::Rng rng(1);
  for (const Layer& l : layers) {
    const int P = (l.size - 1) / l.stride + 1;
    const std::size_t in = std::size_t{1} * n * l.channels * l.size * l.size, out = std::size_t{1} * n * l.channels * P * P;
    course::DeviceBuffer<float> x(in), w(std::size_t{9} * l.channels), b(l.channels), y(out);
    x.fill_bytes(0);
    w.fill_bytes(0);
    b.fill_bytes(0);
    const auto stats = timer.time(
        [&](cudaStream_t s) {
          lab08::depthwise_conv3x3(x.get(), w.get(), b.get(), y.get(), n, l.channels, l.size, l.size, l.stride, true, s);
        },
        options);
    const std::string name = std::to_string(l.size) + "x" + std::to_string(l.size) + "x" + std::to_string(l.channels) +
                             " s" + std::to_string(l.stride);
    std::printf("%-22s %10.1f %10.1f\n", name.c_str(), stats.median_ms * 1e3,
                (in + out) * sizeof(float) / (stats.median_ms * 1e-3) / 1e9);
  }
}

void time_sgemm(course::GpuTimer& timer, const course::TimerOptions& options) {
  std::printf("\nsgemm (with a bias)\n%-22s %10s %10s\n", "M x N x K", "us", "GFLOP/s");
  const int shapes[][3] = {{512, 512, 512}, {1000, 1000, 1000}, {1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}};
  for (const auto& s : shapes) {
    const int M = s[0], N = s[1], K = s[2];
    course::DeviceBuffer<float> a(std::size_t{1} * M * K), b(std::size_t{1} * K * N), bias(M), c(std::size_t{1} * M * N);
    a.fill_bytes(0);
    b.fill_bytes(0);
    bias.fill_bytes(0);
    const auto stats = timer.time(
        [&](cudaStream_t st) { lab08::sgemm(M, N, K, a.get(), b.get(), bias.get(), c.get(), st); }, options);
    const std::string name = std::to_string(M) + " x " + std::to_string(N) + " x " + std::to_string(K);
    std::printf("%-22s %10.1f %10.1f\n", name.c_str(), stats.median_ms * 1e3,
                2.0 * M * N * K / (stats.median_ms * 1e-3) / 1e9);
  }
}

void time_conv(course::GpuTimer& timer, const course::TimerOptions& options) {
  struct Conv { int C, size, K, R, pad, stride; };
  const Conv convs[] = {{64, 56, 64, 3, 1, 1}, {128, 28, 128, 3, 1, 1}, {256, 14, 256, 3, 1, 1},
                        {32, 112, 16, 1, 0, 1}, {144, 56, 24, 1, 0, 1}, {24, 56, 144, 1, 0, 1}};
  const int n = 8;
  std::printf("\nconv2d_im2col_gemm, batch %d\n%-28s %10s %10s %12s\n", n, "C x HxW -> K, RxS", "us", "GFLOP/s",
              "workspace MB");
  for (const Conv& v : convs) {
    const int P = (v.size + 2 * v.pad - v.R) / v.stride + 1;
    course::DeviceBuffer<float> x(std::size_t{1} * n * v.C * v.size * v.size), w(std::size_t{1} * v.K * v.C * v.R * v.R),
        b(v.K), y(std::size_t{1} * n * v.K * P * P);
    x.fill_bytes(0);
    w.fill_bytes(0);
    b.fill_bytes(0);
    const std::size_t bytes = lab08::conv2d_im2col_gemm_workspace(n, v.C, v.size, v.size, v.R, v.R, v.pad, v.stride);
    course::DeviceBuffer<unsigned char> ws(bytes > 0 ? bytes : 1);
    const auto stats = timer.time(
        [&](cudaStream_t s) {
          lab08::conv2d_im2col_gemm(x.get(), w.get(), b.get(), y.get(), ws.get(), bytes, n, v.C, v.size, v.size, v.K,
                                    v.R, v.R, v.pad, v.stride, s);
        },
        options);
    const std::string name = std::to_string(v.C) + " x " + std::to_string(v.size) + "x" + std::to_string(v.size) +
                             " -> " + std::to_string(v.K) + ", " + std::to_string(v.R) + "x" + std::to_string(v.R);
    std::printf("%-28s %10.1f %10.1f %12.1f\n", name.c_str(), stats.median_ms * 1e3,
                2.0 * n * v.K * P * P * v.C * v.R * v.R / (stats.median_ms * 1e-3) / 1e9, bytes / 1e6);
  }
}

void time_winograd(course::GpuTimer& timer, const course::TimerOptions& options) {
  struct Conv { int C, size, K; };
  const Conv convs[] = {{64, 56, 64}, {128, 28, 128}, {256, 14, 256}, {512, 7, 512}};
  const int n = 8;
  std::printf("\nconv2d_winograd (filter transform included), batch %d\n%-28s %10s %10s %12s\n", n,
              "C x HxW -> K, 3x3", "us", "eff GFLOP/s", "workspace MB");
  for (const Conv& v : convs) {
    course::DeviceBuffer<float> x(std::size_t{1} * n * v.C * v.size * v.size), w(std::size_t{9} * v.K * v.C), b(v.K),
        y(std::size_t{1} * n * v.K * v.size * v.size);
    x.fill_bytes(0);
    w.fill_bytes(0);
    b.fill_bytes(0);
    const std::size_t bytes = lab08::conv2d_winograd_workspace(n, v.C, v.size, v.size, v.K);
    course::DeviceBuffer<unsigned char> ws(bytes);
    const auto stats = timer.time(
        [&](cudaStream_t s) {
          lab08::conv2d_winograd(x.get(), w.get(), b.get(), y.get(), ws.get(), bytes, n, v.C, v.size, v.size, v.K, s);
        },
        options);
    const std::string name = std::to_string(v.C) + " x " + std::to_string(v.size) + "x" + std::to_string(v.size) +
                             " -> " + std::to_string(v.K);
    std::printf("%-28s %10.1f %10.1f %12.1f\n", name.c_str(), stats.median_ms * 1e3,
                2.0 * n * v.K * v.size * v.size * v.C * 9 / (stats.median_ms * 1e-3) / 1e9, bytes / 1e6);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    course::TimerOptions options;
    if (argc > 1) options.repetitions = std::max(1, std::atoi(argv[1]));
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreate(&stream));
    bool winograd_ready = false;
    if (!check_all(stream, winograd_ready)) {
      std::printf("lab08_bench: a check failed; fix it before timing (./course grade lab08 says more)\n");
      return 1;
    }
    course::GpuTimer timer(stream);
    time_depthwise(timer, options);
    time_sgemm(timer, options);
    time_conv(timer, options);
    if (winograd_ready) time_winograd(timer, options);
    cudaStreamDestroy(stream);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab08_bench: %s\n", e.what());
    return 1;
  }
}
