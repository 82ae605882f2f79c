// lab05_algorithm_accuracy: how far each cuDNN forward algorithm's FP32 result is from the others,
// on LeNet's two convolutions (chapter 5, section 4, quotes its table).
//
//   lab05_algorithm_accuracy [--batch B[,B...]]        (default 64,100,1024)
//
// FMA math rules TF32 out, but the algorithms still round differently: the GEMM-based ones add the
// same products in some order, FFT computes in the frequency domain, Winograd on transformed
// tiles. For each convolution and batch this runs every algorithm cudnnFindConvolutionForwardAlgorithm
// offers on the same input (uniform in [0, 1), like the images) and weights (uniform in
// [-0.5, 0.5) for conv1, [-0.3, 0.3) for conv2: outputs with an rms of about 1, like the network's),
// and prints the largest absolute difference from IMPLICIT_GEMM's output, next to Find's ranking
// and time. Lab 05 refuses WINOGRAD_NONFUSED because of what this prints for it (5e-3 to 1.2e-2,
// against the labs' 1e-3); FFT and FFT_TILING stay near 1e-6.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "course/cudnn_check.hpp"
#include "course/cudnn_raii.hpp"
#include "course/device.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/rng.hpp"

namespace {

using course::cudnn::algorithm_name;

/// One of LeNet's convolutions: C -> K channels, 5x5, `pad`, on size x size inputs.
struct Conv {
  const char* name;
  int C, size, K, pad;
  float weight_range;
};
const Conv kConvs[] = {{"conv1", 1, 28, 6, 2, 0.5f}, {"conv2", 6, 14, 16, 0, 0.3f}};
constexpr int kFilter = 5;

std::vector<float> random_vector(course::Rng& rng, std::size_t count, float lo, float hi) {
  std::vector<float> v(count);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

void measure(cudnnHandle_t handle, const Conv& conv, int batch) {
  const int P = conv.size + 2 * conv.pad - kFilter + 1;
  course::Rng rng(20261126);
  const std::size_t in_count = static_cast<std::size_t>(batch) * conv.C * conv.size * conv.size;
  const std::size_t out_count = static_cast<std::size_t>(batch) * conv.K * P * P;
  course::DeviceBuffer<float> x(random_vector(rng, in_count, 0.0f, 1.0f));
  course::DeviceBuffer<float> w(random_vector(rng, static_cast<std::size_t>(conv.K) * conv.C * kFilter * kFilter,
                                              -conv.weight_range, conv.weight_range));
  course::DeviceBuffer<float> y(out_count), reference(out_count);

  course::cudnn::TensorDescriptor x_desc, y_desc;
  course::cudnn::FilterDescriptor w_desc;
  course::cudnn::ConvolutionDescriptor conv_desc;
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, batch, conv.C, conv.size, conv.size));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, batch, conv.K, P, P));
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, conv.K, conv.C, kFilter, kFilter));
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_desc, conv.pad, conv.pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
  CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc, CUDNN_FMA_MATH));  // FP32 lanes only, as lab 05

  std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
  int returned = 0;
  CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(handle, x_desc, w_desc, conv_desc, y_desc,
                                                   static_cast<int>(perf.size()), &returned, perf.data()));
  std::size_t workspace_bytes = 0;
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) workspace_bytes = std::max(workspace_bytes, perf[i].memory);
  course::DeviceBuffer<unsigned char> workspace(std::max<std::size_t>(workspace_bytes, 1));

  const float one = 1.0f, zero = 0.0f;
  auto run = [&](cudnnConvolutionFwdAlgo_t algo, float* out) {
    CUDNN_CHECK(cudnnConvolutionForward(handle, &one, x_desc, x.get(), w_desc, w.get(), conv_desc, algo,
                                        workspace.get(), workspace_bytes, &zero, y_desc, out));
  };
  run(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, reference.get());
  const std::vector<float> want = reference.download();
  double rms = 0;
  for (float v : want) rms += static_cast<double>(v) * v;
  rms = std::sqrt(rms / static_cast<double>(want.size()));

  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& p = perf[i];
    std::printf("| %-5s | %5d | %d | %-21s |", conv.name, batch, i, algorithm_name(p.algo));
    if (p.status != CUDNN_STATUS_SUCCESS) {
      std::printf("         - |          - |           - | not supported |\n");
      continue;
    }
    run(p.algo, y.get());
    const std::vector<float> got = y.download();
    double worst = 0;
    for (std::size_t j = 0; j < got.size(); ++j)
      worst = std::max(worst, std::fabs(static_cast<double>(got[j]) - want[j]));
    std::printf(" %9.4f | %10.1f | %11.2e | rms %.2f      |\n", p.time, p.memory / 1e6, worst, rms);
  }
}

std::vector<int> parse_batches(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v < 1 || v > 100000) throw course::Error(std::string("--batch: not a list of sizes: ") + text);
    out.push_back(static_cast<int>(v));
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') throw course::Error(std::string("--batch: not a list of sizes: ") + text);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<int> batches = {64, 100, 1024};
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--batch" && i + 1 < argc) {
        batches = parse_batches(argv[++i]);
      } else {
        std::fprintf(stderr, "usage: lab05_algorithm_accuracy [--batch B[,B...]]\n");
        return arg == "--help" ? 0 : 2;
      }
    }
    if (!course::has_gpu()) {
      std::printf("lab05_algorithm_accuracy: %s: nothing measured\n", course::gpu_unavailable_reason().c_str());
      return course::kSkipReturnCode;
    }
    std::printf("lab05_algorithm_accuracy: %s, cuDNN %zu, FMA math; error = max |output - IMPLICIT_GEMM's|\n",
                course::query_device().summary().c_str(), cudnnGetVersion());
    std::printf("| conv  | batch | # | algorithm (Find's order)  | Find's ms | workspace MB | max abs err | output         |\n");
    std::printf("|-------|------:|--:|-----------------------|----------:|-----------:|------------:|---------------|\n");
    course::cudnn::Handle handle;
    for (int batch : batches)
      for (const Conv& conv : kConvs) measure(handle, conv, batch);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab05_algorithm_accuracy: %s\n", e.what());
    return 1;
  }
}
