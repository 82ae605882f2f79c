// lab08_depthwise: depthwise 3x3 convolution (MobileNetV2's), our kernels against cuDNN, side by side.
//
//   lab08_depthwise [--batch B[,B...]] [--repetitions R] [--sweep]
//
// A depthwise convolution gives every channel its own 3x3 filter: output channel c reads input
// channel c only. That is 9 multiply-adds per output and one input value read per output (stride
// 1), so it is memory-bound on any GPU: the floor is the time to read the input and write the
// output once. cuDNN runs it as a grouped convolution (groupCount = channels), which is known to
// be far from that floor in NCHW FP32; this program measures by how much, on the depthwise layers
// of MobileNetV2 at 224 x 224 (Sandler et al., 2018, Table 2), and is the first experiment of
// lab 08's ladder (issue #16), in the style of llm.c's dev/cuda: a CPU reference, numbered
// kernel versions with a reason each, a validate step, then the benchmark.
//
//   version 1  one thread per output, nine loads from global memory (L1 catches the overlap)
//   version 2  one thread per column strip of 8 outputs, a 3-row window slides down in registers:
//              each input row is loaded once per thread (3 loads per output row instead of 9)
//   version 3  version 2's strips, flattened into full 256-thread blocks (small planes and 32-thread
//              blocks left SMs half empty)
//   version 4  outputs of at most 8 rows (7x7 here): whole input planes staged in shared memory,
//              several per block, float4 loads, one thread per output, no divisions in the loop,
//              streaming hints; version 3 elsewhere (v3 gives such a plane only Q threads)
//   cudnn      every forward algorithm cudnnFindConvolutionForwardAlgorithm offers, each timed
//
// Every version is compared with the CPU reference on batch 2 first, and with version 1 on the
// timed batch. --sweep times version 4's launch shapes (threads per block, planes per block)
// against version 3 on the layers it takes, instead of cuDNN. Times: median of R runs, CUDA events, L2 flushed before each (course::GpuTimer);
// "GB/s" counts one read of the input and one write of the output (the memory floor).
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "course/cuda_check.hpp"
#include "course/cudnn_check.hpp"
#include "course/cudnn_raii.hpp"
#include "course/device.hpp"
#include "course/device_buffer.hpp"
#include "course/error.hpp"
#include "course/gpu_timer.hpp"
#include "course/rng.hpp"

namespace {

using course::cudnn::algorithm_name;

/// One depthwise layer: input size x size, `channels`, 3x3, pad 1, `stride`.
struct Layer {
  int size, channels, stride;
  int out() const { return (size - 1) / stride + 1; }
};

/// MobileNetV2's depthwise layers at 224x224, each distinct shape once (t * c_in channels).
const std::vector<Layer> kLayers = {{112, 32, 1},  {112, 96, 2}, {56, 144, 1}, {56, 144, 2}, {28, 192, 1},
                                    {28, 192, 2},  {14, 384, 1}, {14, 576, 1}, {14, 576, 2}, {7, 960, 1}};

// ---- CPU reference -----------------------------------------------------------------------------
void depthwise_cpu(const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& y, int n, const Layer& l) {
  const int H = l.size, P = l.out();
  for (int i = 0; i < n * l.channels; ++i) {
    const int c = i % l.channels;
    for (int p = 0; p < P; ++p)
      for (int q = 0; q < P; ++q) {
        double sum = 0.0;
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) {
            const int h = p * l.stride + r - 1, v = q * l.stride + s - 1;
            if (h >= 0 && h < H && v >= 0 && v < H)
              sum += double(w[c * 9 + r * 3 + s]) * x[(std::size_t(i) * H + h) * H + v];
          }
        y[(std::size_t(i) * P + p) * P + q] = float(sum);
      }
  }
}

// ---- version 1: one thread per output ---------------------------------------------------------
__global__ void depthwise_v1(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int planes,
                             int channels, int H, int P, int stride) {
  const long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (idx >= (long long)planes * P * P) return;
  const int q = int(idx % P), p = int((idx / P) % P), plane = int(idx / ((long long)P * P));
  const float* in = x + (long long)plane * H * H;
  const float* f = w + (plane % channels) * 9;
  float sum = 0.0f;
  for (int r = 0; r < 3; ++r) {
    const int h = p * stride + r - 1;
    if (h < 0 || h >= H) continue;
    for (int s = 0; s < 3; ++s) {
      const int v = q * stride + s - 1;
      if (v >= 0 && v < H) sum += f[r * 3 + s] * in[h * H + v];
    }
  }
  y[idx] = sum;
}

// ---- version 2: a column strip per thread, the 3-row window in registers ------------------------
constexpr int kStrip = 8;  // output rows per thread

__device__ __forceinline__ void load_row(const float* __restrict__ row, int v, int H, bool valid, float out[3]) {
  // The three taps of one input row around column v: v-1, v, v+1 (zero outside the plane).
  out[0] = valid && v - 1 >= 0 && v - 1 < H ? row[v - 1] : 0.0f;
  out[1] = valid && v < H ? row[v] : 0.0f;
  out[2] = valid && v + 1 < H ? row[v + 1] : 0.0f;
}

/// The strip of output column q, rows p0 .. p0 + kStrip - 1, of one plane (image n, channel c).
__device__ __forceinline__ void depthwise_strip(const float* __restrict__ x, const float* __restrict__ w,
                                                float* __restrict__ y, int plane, int channels, int H, int P,
                                                int stride, int p0, int q) {
  const float* in = x + (long long)plane * H * H;
  float* out = y + (long long)plane * P * P;
  float f[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) f[i] = w[(plane % channels) * 9 + i];
  const int v = q * stride;  // centre column of this output's window
  // rows[k] holds input row (p*stride - 1 + k) around column v; for stride 1 two of the three rows
  // carry over to the next output row, for stride 2 one does.
  float rows[3][3];
  int h = p0 * stride - 1;
#pragma unroll
  for (int k = 0; k < 3; ++k) load_row(in + (long long)(h + k) * H, v, H, h + k >= 0 && h + k < H, rows[k]);
#pragma unroll
  for (int i = 0; i < kStrip; ++i) {
    const int p = p0 + i;
    if (p >= P) break;
    float sum = 0.0f;
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
      for (int s = 0; s < 3; ++s) sum += f[r * 3 + s] * rows[r][s];
    out[p * P + q] = sum;
    h += stride;  // the next output row's first input row
    if (stride == 1) {
#pragma unroll
      for (int s = 0; s < 3; ++s) {
        rows[0][s] = rows[1][s];
        rows[1][s] = rows[2][s];
      }
      load_row(in + (long long)(h + 2) * H, v, H, h + 2 >= 0 && h + 2 < H, rows[2]);
    } else {
#pragma unroll
      for (int s = 0; s < 3; ++s) rows[0][s] = rows[2][s];
      load_row(in + (long long)(h + 1) * H, v, H, h + 1 >= 0 && h + 1 < H, rows[1]);
      load_row(in + (long long)(h + 2) * H, v, H, h + 2 >= 0 && h + 2 < H, rows[2]);
    }
  }
}

/// Version 2: grid x = planes (n*c) x column tiles of blockDim.x (<= 32) columns, y = strips. A
/// block is one warp or less: small blocks cap how many threads an SM holds (32 blocks of 32).
__global__ void depthwise_v2(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int channels,
                             int H, int P, int stride, int column_tiles) {
  const int plane = blockIdx.x / column_tiles;
  const int q = (blockIdx.x % column_tiles) * blockDim.x + threadIdx.x;
  if (q < P) depthwise_strip(x, w, y, plane, channels, H, P, stride, blockIdx.y * kStrip, q);
}

/// Version 3: the same strip per thread, the work items (plane, strip, column) flattened with the
/// column fastest into 256-thread blocks: full blocks whatever the plane size (7x7 planes leave
/// most of a 32-wide block idle in version 2), and 8 blocks fill an SM's 2,048 threads.
__global__ void depthwise_v3(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int planes,
                             int channels, int H, int P, int stride) {
  const int strips = (P + kStrip - 1) / kStrip;
  const long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (idx >= (long long)planes * strips * P) return;
  const int q = int(idx % P);
  const int strip = int((idx / P) % strips);
  const int plane = int(idx / ((long long)P * strips));
  depthwise_strip(x, w, y, plane, channels, H, P, stride, strip * kStrip, q);
}

// ---- version 4: whole planes staged in shared memory, for small planes -------------------------
/// Version 4's launch shape: a tile of `tile_floats` input floats or so per block, `threads` per
/// block, streaming cache hints on the input loads and output stores or not.
struct V4Config {
  int threads = 128;
  int tile_floats = 1024;
  bool stream = true;
  bool force_shared = false;  // --sweep: the shared-memory path wherever the plane fits
};
constexpr int kV4MaxPlane = 32 * 32;  // the largest input plane the shared-memory path takes
constexpr int kV4MaxRows = 8;         // ... and only output planes of at most one v3 strip
V4Config g_v4;                        // --sweep changes it

/// Whether version 4 runs depthwise_v4 on this layer (else version 3). v3 gives each plane Q
/// threads when P <= kStrip (one strip per column): 7 threads for a 7x7 output.
bool v4_shared_path(const Layer& l) {
  return l.size * l.size <= kV4MaxPlane && (g_v4.force_shared || l.out() <= kV4MaxRows);
}

/// Version 4: a block takes `tile_planes` consecutive planes (n*C + c), which are one contiguous
/// chunk of the NCHW input, copies the chunk into shared memory with float4 loads (all in flight
/// at once, whole 128-byte lines), then computes the tile's outputs, one thread per output with the
/// output index fastest, so the stores are one contiguous chunk too. Stride 2 only ever visits its
/// outputs (a quarter of the inputs). The output index is advanced by blockDim.x with carries
/// (q, p, plane) instead of divided: the only divisions are once per thread.
template <int kStride, bool kStream>
__global__ void __launch_bounds__(256) depthwise_v4(const float* __restrict__ x, const float* __restrict__ w,
                                                    float* __restrict__ y, int planes, int channels, int H, int P,
                                                    int tile_planes) {
  extern __shared__ float4 smem4[];
  float* s_in = reinterpret_cast<float*>(smem4);  // tile_planes * H * H inputs
  float* s_w = s_in + tile_planes * H * H;        // tile_planes * 9 filter taps
  const int HW = H * H, PQ = P * P;
  const int first = blockIdx.x * tile_planes;
  const int count = min(tile_planes, planes - first);
  const float* in = x + (long long)first * HW;  // 16-byte aligned: tile_planes * HW % 4 == 0
  float* out = y + (long long)first * PQ;
  const int n = count * HW, n4 = n >> 2;
  // kStream: read once and written once, so marked evict-first (ld/st.global.cs): they replace
  // each other in L2 rather than whatever else L2 holds (dirty lines cost a write-back to evict).
  for (int i = threadIdx.x; i < n4; i += blockDim.x)
    smem4[i] = kStream ? __ldcs(reinterpret_cast<const float4*>(in) + i) : __ldg(reinterpret_cast<const float4*>(in) + i);
  for (int i = 4 * n4 + threadIdx.x; i < n; i += blockDim.x) s_in[i] = kStream ? __ldcs(in + i) : __ldg(in + i);
  for (int i = threadIdx.x; i < count * 9; i += blockDim.x) {
    const int pl = i / 9;
    s_w[i] = __ldg(w + ((first + pl) % channels) * 9 + (i - pl * 9));
  }
  __syncthreads();
  // Output j = (pl * P + p) * P + q; start at j = threadIdx.x, step blockDim.x = (dpl, dp, dq).
  const int m = count * PQ;
  int j = threadIdx.x;
  int pl = j / PQ, p = (j - pl * PQ) / P, q = j - pl * PQ - p * P;
  const int step = blockDim.x;
  const int dpl = step / PQ, dp = (step - dpl * PQ) / P, dq = step - dpl * PQ - dp * P;
  for (; j < m; j += step) {
    const float* src = s_in + pl * HW;
    const float* f = s_w + pl * 9;
    const int h0 = p * kStride - 1, v0 = q * kStride - 1;
    float sum = 0.0f;
#pragma unroll
    for (int r = 0; r < 3; ++r) {
      const int h = h0 + r;
      if (h < 0 || h >= H) continue;
#pragma unroll
      for (int s = 0; s < 3; ++s) {
        const int v = v0 + s;
        if (v >= 0 && v < H) sum = fmaf(f[r * 3 + s], src[h * H + v], sum);
      }
    }
    if (kStream)
      __stcs(out + j, sum);
    else
      out[j] = sum;
    q += dq;
    p += dp;
    pl += dpl;
    if (q >= P) {
      q -= P;
      ++p;
    }
    if (p >= P) {
      p -= P;
      ++pl;
    }
  }
}

/// Planes per block for version 4: about cfg.tile_floats inputs, rounded down to a multiple of the
/// planes that make a whole number of float4 (4 planes of 7x7, 1 of 14x14), so that every tile
/// starts 16-byte aligned; at least that many.
int v4_tile_planes(int plane_floats, const V4Config& cfg) {
  const int align = plane_floats % 4 == 0 ? 1 : plane_floats % 2 == 0 ? 2 : 4;
  return std::max(align, cfg.tile_floats / plane_floats / align * align);
}

void run_version(int version, const float* x, const float* w, float* y, int n, const Layer& l, cudaStream_t stream) {
  const int planes = n * l.channels, P = l.out();
  if (version == 1) {
    const long long total = (long long)planes * P * P;
    depthwise_v1<<<unsigned((total + 255) / 256), 256, 0, stream>>>(x, w, y, planes, l.channels, l.size, P, l.stride);
  } else if (version == 2) {
    const int threads = P >= 32 ? 32 : P;  // one warp spans a row of up to 32 output columns
    const int column_tiles = (P + threads - 1) / threads;
    const dim3 grid(unsigned(planes * column_tiles), unsigned((P + kStrip - 1) / kStrip));
    depthwise_v2<<<grid, threads, 0, stream>>>(x, w, y, l.channels, l.size, P, l.stride, column_tiles);
  } else if (version == 4 && v4_shared_path(l)) {
    const int tile = v4_tile_planes(l.size * l.size, g_v4);
    const unsigned blocks = unsigned((planes + tile - 1) / tile);
    const std::size_t shared = std::size_t(tile) * (l.size * l.size + 9) * sizeof(float);
    auto kernel = l.stride == 1 ? (g_v4.stream ? depthwise_v4<1, true> : depthwise_v4<1, false>)
                                : (g_v4.stream ? depthwise_v4<2, true> : depthwise_v4<2, false>);
    kernel<<<blocks, g_v4.threads, shared, stream>>>(x, w, y, planes, l.channels, l.size, P, tile);
  } else {  // version 3, and version 4 on large planes
    const long long total = (long long)planes * ((P + kStrip - 1) / kStrip) * P;
    depthwise_v3<<<unsigned((total + 255) / 256), 256, 0, stream>>>(x, w, y, planes, l.channels, l.size, P, l.stride);
  }
  CUDA_CHECK(cudaGetLastError());
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])) + (std::isnan(a[i]) ? 1e9 : 0.0));
  return worst;
}

std::vector<int> parse_list(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v < 1 || v > 4096) throw course::Error(std::string("bad batch list '") + text + "'");
    out.push_back(int(v));
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') throw course::Error(std::string("bad batch list '") + text + "'");
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<int> batches = {32, 256};
    int repetitions = 20;
    bool sweep = false;  // version 4's launch shapes on its planes instead of cuDNN (no cuDNN rows)
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--batch" && i + 1 < argc) batches = parse_list(argv[++i]);
      else if (a == "--repetitions" && i + 1 < argc) repetitions = std::max(1, std::atoi(argv[++i]));
      else if (a == "--sweep") sweep = true;
      else throw course::Error("usage: lab08_depthwise [--batch B[,B...]] [--repetitions R] [--sweep]");
    }
    if (!course::has_gpu()) {
      std::printf("lab08_depthwise: no GPU (%s)\n", course::gpu_unavailable_reason().c_str());
      return course::kSkipReturnCode;
    }
    std::printf("lab08_depthwise: %s, cuDNN %zu, NCHW FP32, %d timed runs per row (L2 flushed)\n",
                course::query_device(0).summary().c_str(), cudnnGetVersion(), repetitions);
    std::printf("| batch | input        | s | version                 | median ms | GB/s   | x cuDNN best |\n");
    std::printf("|------:|--------------|--:|-------------------------|----------:|-------:|-------------:|\n");
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    course::cudnn::Handle cudnn;
    CUDNN_CHECK(cudnnSetStream(cudnn, stream));
    course::GpuTimer timer(stream);
    course::TimerOptions options;
    options.repetitions = repetitions;
    int failures = 0;
    for (const Layer& l : kLayers) {
      course::Rng rng(uint64_t(l.size) * 1000 + l.channels);
      std::vector<float> h_w(std::size_t(l.channels) * 9);
      for (float& v : h_w) v = rng.uniform(-1.0f, 1.0f);
      course::DeviceBuffer<float> d_w(h_w);
      {  // validate every version against the CPU on batch 2
        const int n = 2;
        std::vector<float> h_x(std::size_t(n) * l.channels * l.size * l.size), want(std::size_t(n) * l.channels * l.out() * l.out());
        for (float& v : h_x) v = rng.uniform(-1.0f, 1.0f);
        depthwise_cpu(h_x, h_w, want, n, l);
        course::DeviceBuffer<float> d_x(h_x), d_y(want.size());
        for (int version : {1, 2, 3, 4}) {
          CUDA_CHECK(cudaMemsetAsync(d_y.get(), 0xff, want.size() * sizeof(float), stream));  // NaN poison
          run_version(version, d_x.get(), d_w.get(), d_y.get(), n, l, stream);
          std::vector<float> got(want.size());
          CUDA_CHECK(cudaStreamSynchronize(stream));
          d_y.download(got.data(), got.size());
          const double err = max_abs_diff(got, want);
          if (!(err < 1e-4)) {
            std::printf("version %d WRONG on %dx%dx%d stride %d: max |error| %.3g\n", version, l.size, l.size, l.channels, l.stride, err);
            ++failures;
          }
        }
      }
      for (int n : batches) {
        const std::size_t in_count = std::size_t(n) * l.channels * l.size * l.size;
        const std::size_t out_count = std::size_t(n) * l.channels * l.out() * l.out();
        std::vector<float> h_x(in_count);
        for (float& v : h_x) v = rng.uniform(-1.0f, 1.0f);
        course::DeviceBuffer<float> d_x(h_x), d_y(out_count), d_check(out_count);
        const double bytes = double(in_count + out_count) * sizeof(float);
        run_version(1, d_x.get(), d_w.get(), d_check.get(), n, l, stream);
        std::vector<float> want(out_count), got(out_count);
        CUDA_CHECK(cudaStreamSynchronize(stream));
        d_check.download(want.data(), want.size());

        if (sweep) {  // version 4's block size and tile against version 3, on the planes it takes
          if (l.size * l.size > kV4MaxPlane) continue;
          auto time_version = [&](int version) {
            const double ms = timer.time([&](cudaStream_t s) { run_version(version, d_x.get(), d_w.get(), d_y.get(), n, l, s); }, options).median_ms;
            CUDA_CHECK(cudaStreamSynchronize(stream));
            d_y.download(got.data(), got.size());
            if (!(max_abs_diff(got, want) < 1e-4)) {
              std::printf("version %d WRONG (sweep)\n", version);
              ++failures;
            }
            return ms;
          };
          const double v3 = time_version(3);
          std::printf("| %5d | %3dx%3dx%4d | %d | %-23s | %9.4f | %6.0f | %12s |\n", n, l.size, l.size, l.channels, l.stride,
                      "v3", v3, bytes / (v3 * 1e6), "x v3");
          const V4Config saved = g_v4;
          for (int stream_hint : {0, 1})
            for (int threads : {128, 256})
              for (int tile_floats : {1024, 2048, 4096}) {
                g_v4 = {threads, tile_floats, stream_hint == 1, true};
                const double ms = time_version(4);
                const std::string name = "v4 " + std::to_string(threads) + "t " +
                                         std::to_string(v4_tile_planes(l.size * l.size, g_v4)) + "pl" + (stream_hint ? " cs" : "");
                std::printf("| %5d | %3dx%3dx%4d | %d | %-23s | %9.4f | %6.0f | %12.2f |\n", n, l.size, l.size, l.channels,
                            l.stride, name.c_str(), ms, bytes / (ms * 1e6), v3 / ms);
              }
          g_v4 = saved;
          continue;
        }

        // cuDNN: a grouped convolution with one group per channel.
        course::cudnn::TensorDescriptor xd, yd;
        course::cudnn::FilterDescriptor wd;
        course::cudnn::ConvolutionDescriptor cd;
        CUDNN_CHECK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, l.channels, l.size, l.size));
        CUDNN_CHECK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, l.channels, l.out(), l.out()));
        CUDNN_CHECK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, l.channels, 1, 3, 3));
        CUDNN_CHECK(cudnnSetConvolution2dDescriptor(cd, 1, 1, l.stride, l.stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        CUDNN_CHECK(cudnnSetConvolutionGroupCount(cd, l.channels));
        CUDNN_CHECK(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int returned = 0;
        CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(cudnn, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
        struct Row {
          std::string name;
          double ms;
        };
        std::vector<Row> rows;
        double cudnn_best = 1e30;
        for (int i = 0; i < returned; ++i) {
          if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
          course::DeviceBuffer<unsigned char> ws(std::max<std::size_t>(perf[i].memory, 1));
          const float one = 1.0f, zero = 0.0f;
          auto call = [&](cudaStream_t) {
            CUDNN_CHECK(cudnnConvolutionForward(cudnn, &one, xd, d_x.get(), wd, d_w.get(), cd, perf[i].algo, ws.get(),
                                                perf[i].memory, &zero, yd, d_y.get()));
          };
          const double ms = timer.time(call, options).median_ms;
          CUDA_CHECK(cudaStreamSynchronize(stream));
          d_y.download(got.data(), got.size());
          const double err = max_abs_diff(got, want);
          rows.push_back({std::string("cudnn ") + algorithm_name(perf[i].algo) + (err < 1e-3 ? "" : " (WRONG)"), ms});
          cudnn_best = std::min(cudnn_best, ms);
        }
        for (int version : {1, 2, 3, 4}) {
          const double ms = timer.time([&](cudaStream_t s) { run_version(version, d_x.get(), d_w.get(), d_y.get(), n, l, s); }, options).median_ms;
          CUDA_CHECK(cudaStreamSynchronize(stream));
          d_y.download(got.data(), got.size());
          const double err = max_abs_diff(got, want);
          if (!(err < 1e-4)) ++failures;
          rows.push_back({"v" + std::to_string(version) + (err < 1e-4 ? "" : " (WRONG)"), ms});
        }
        for (const Row& r : rows)
          std::printf("| %5d | %3dx%3dx%4d | %d | %-23s | %9.4f | %6.0f | %12.2f |\n", n, l.size, l.size, l.channels, l.stride,
                      r.name.c_str(), r.ms, bytes / (r.ms * 1e6), cudnn_best / r.ms);
      }
    }
    CUDA_CHECK(cudaStreamDestroy(stream));
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab08_depthwise: %s\n", e.what());
    return 1;
  }
}
