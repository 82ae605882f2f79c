// cpu_lenet_bench: the CPU baseline of the course's performance story.
//
// Times the lab 04 reference solution's LeNet-5-BN (folded) on the MNIST test images, per image
// and in GFLOP/s, first as the solution writes its convolution (output-stationary loop order
// n, k, p, q | c, r, s) and then with the convolution's loops reordered once (n, k | c, r, s | p, q:
// the innermost loop walks one output row and one input row in memory order, which a compiler
// can turn into SIMD instructions). Both versions must produce the same logits; the program
// checks that before it prints a single time.
//
//   cpu_lenet_bench [batch=500] [repetitions=7]
//
// It also estimates the core's clock with a chain of dependent additions (one per cycle on any
// modern x86 core), so that the measured GFLOP/s can be set against FLOP per cycle.
#include <algorithm>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "course/compare.hpp"
#include "course/error.hpp"
#include "course/idx.hpp"
#include "course/lenet.hpp"
#include "course/tensor.hpp"
#include "labs/lab03_pooling_activations.hpp"
#include "labs/lab04_lenet_cpu.hpp"

namespace {

namespace ln = course::lenet;
using course::Shape;
using course::Tensor;

// Convolution with stride 1 and the same zero padding on every side, loops in the order
// n, k, c, r, s, then p, q innermost. Each weight is loaded once and applied to a whole output
// plane; the q loop is a contiguous multiply-add of one input row into one output row.
void conv2d_weight_stationary(const Tensor& input, const Tensor& weight, const Tensor& bias, int pad, Tensor& output) {
  const std::int64_t N = input.dim(0), C = input.dim(1), H = input.dim(2), W = input.dim(3);
  const std::int64_t K = weight.dim(0), R = weight.dim(2), S = weight.dim(3);
  const std::int64_t P = H + 2 * pad - R + 1, Q = W + 2 * pad - S + 1;
  output.expect_shape({N, K, P, Q}, "conv2d_weight_stationary: output");
  const float* in = input.data();
  const float* wt = weight.data();
  float* out = output.data();
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) {
      float* out_plane = out + (n * K + k) * P * Q;
      std::fill(out_plane, out_plane + P * Q, bias[static_cast<std::size_t>(k)]);
      for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t r = 0; r < R; ++r)
          for (std::int64_t s = 0; s < S; ++s) {
            const float w = wt[((k * C + c) * R + r) * S + s];
            // Output column q reads input column q + s - pad; clip q so that it stays inside.
            const std::int64_t q_begin = std::max<std::int64_t>(0, pad - s);
            const std::int64_t q_end = std::min<std::int64_t>(Q, W + pad - s);
            for (std::int64_t p = 0; p < P; ++p) {
              const std::int64_t ih = p + r - pad;
              if (ih < 0 || ih >= H) continue;
              const float* in_row = in + ((n * C + c) * H + ih) * W + (s - pad);
              float* out_row = out_plane + p * Q;
              for (std::int64_t q = q_begin; q < q_end; ++q) out_row[q] += w * in_row[q];
            }
          }
    }
}

// The folded LeNet with conv2d_weight_stationary; everything else is the lab 03/04 solution.
void lenet_folded_reordered(const lab04::FoldedLeNet& net, const Tensor& images, Tensor& logits) {
  const std::int64_t N = images.dim(0);
  auto conv_block = [](const Tensor& x, const Tensor& w, const Tensor& b, int pad) {
    Tensor conv(Shape{x.dim(0), w.dim(0), x.dim(2) + 2 * pad - w.dim(2) + 1, x.dim(3) + 2 * pad - w.dim(3) + 1});
    conv2d_weight_stationary(x, w, b, pad, conv);
    lab03::relu(conv, conv);
    const auto pool = lab03::Pool2dParams::square(ln::kPool, ln::kPool);
    Tensor pooled(lab03::pool2d_output_shape(conv.shape(), pool));
    lab03::max_pool2d(conv, pool, pooled);
    return pooled;
  };
  const Tensor a1 = conv_block(images, net.conv1_weight, net.conv1_bias, ln::kConv1Pad);
  const Tensor a2 = conv_block(a1, net.conv2_weight, net.conv2_bias, 0);
  Tensor h1(Shape{N, ln::kFc1Out}), h2(Shape{N, ln::kFc2Out});
  lab04::linear_forward(a2.reshaped({N, ln::kFlat}), net.fc1_weight, net.fc1_bias, h1);
  lab03::relu(h1, h1);
  lab04::linear_forward(h1, net.fc2_weight, net.fc2_bias, h2);
  lab03::relu(h2, h2);
  lab04::linear_forward(h2, net.fc3_weight, net.fc3_bias, logits);
}

Tensor first_images(const Tensor& images, std::int64_t count) {
  const std::int64_t per_image = images.dim(1) * images.dim(2) * images.dim(3);
  Tensor out(Shape{count, images.dim(1), images.dim(2), images.dim(3)});
  std::copy(images.data(), images.data() + count * per_image, out.data());
  return out;
}

/// CPU time this thread has used, in seconds. On a machine shared with other processes, wall
/// time would also count the time the thread spent waiting for a core; CPU time does not.
double thread_cpu_seconds() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) throw course::Error("clock_gettime failed");
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Median CPU time in seconds of `repetitions` calls (after one untimed warm-up call).
double median_seconds(int repetitions, const std::function<void()>& work) {
  work();
  std::vector<double> samples;
  for (int i = 0; i < repetitions; ++i) {
    const double start = thread_cpu_seconds();
    work();
    samples.push_back(thread_cpu_seconds() - start);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

/// Cycles per second of this core, from a chain of dependent one-cycle additions.
double estimated_clock_hz() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  constexpr std::int64_t kIterations = 20'000'000, kAddsPerIteration = 50;
  std::uint64_t x = 0;
  auto run = [&] {
    for (std::int64_t i = 0; i < kIterations; ++i) {
      // 50 additions, each needing the previous one's result: 50 cycles per iteration.
      asm volatile(
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
          : "+r"(x));
    }
  };
  const double seconds = median_seconds(5, run);
  return static_cast<double>(kIterations * kAddsPerIteration) / seconds;
#else
  return 0.0;  // not measured on this architecture
#endif
}

void report(const char* what, std::int64_t images, double seconds) {
  const double flops = 2.0 * static_cast<double>(ln::multiply_adds_per_image()) * static_cast<double>(images);
  std::printf("  %-52s %8.1f us/image  %6.2f GFLOP/s\n", what, 1e6 * seconds / static_cast<double>(images),
              flops / seconds / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::int64_t batch = argc > 1 ? std::atoll(argv[1]) : 500;
    const int repetitions = argc > 2 ? std::atoi(argv[2]) : 7;
    if (batch < 1 || repetitions < 1) throw course::Error("usage: cpu_lenet_bench [batch >= 1] [repetitions >= 1]");

    const std::string data = COURSE_DATA_DIR;
    const ln::Weights weights = ln::load_weights(data + "/weights/lenet_mnist.safetensors");
    const course::DatasetFiles files = course::mnist_files(data);
    const course::Dataset test = course::load_dataset(files.test_images, files.test_labels, "mnist");
    if (batch > test.images.dim(0)) throw course::Error("batch larger than the MNIST test split");
    const Tensor images = first_images(test.images, batch);
    const Tensor one_image = first_images(test.images, 1);
    const lab04::FoldedLeNet net = lab04::fold_lenet(weights);

    // Same answers first: a fast wrong network measures nothing.
    Tensor reference(Shape{batch, ln::kNumClasses}), reordered(Shape{batch, ln::kNumClasses});
    lab04::lenet_forward_folded(net, images, reference);
    lenet_folded_reordered(net, images, reordered);
    const double rel = course::relative_l2_error(reordered.data(), reference.data(), reference.numel());
    if (!(rel < 1e-5)) throw course::Error("reordered LeNet disagrees with the solution: relative L2 error " + std::to_string(rel));

    std::printf("LeNet-5-BN (folded) on the CPU, one thread, %lld multiply-adds = %.3f MFLOP per image\n",
                static_cast<long long>(ln::multiply_adds_per_image()), 2e-6 * static_cast<double>(ln::multiply_adds_per_image()));
    std::printf("median thread CPU time of %d runs; batch %lld MNIST test images, and single images (batch 1)\n", repetitions,
                static_cast<long long>(batch));
    Tensor logits(Shape{batch, ln::kNumClasses}), logits1(Shape{1, ln::kNumClasses});
    report("solution, loops n,k,p,q|c,r,s, batch", batch,
           median_seconds(repetitions, [&] { lab04::lenet_forward_folded(net, images, logits); }));
    report("solution, loops n,k,p,q|c,r,s, batch 1", 1,
           median_seconds(repetitions * 20, [&] { lab04::lenet_forward_folded(net, one_image, logits1); }));
    report("reordered, loops n,k|c,r,s|p,q, batch", batch,
           median_seconds(repetitions, [&] { lenet_folded_reordered(net, images, logits); }));
    report("reordered, loops n,k|c,r,s|p,q, batch 1", 1,
           median_seconds(repetitions * 20, [&] { lenet_folded_reordered(net, one_image, logits1); }));
    report("unfolded solution (batch-norm as its own pass), batch", batch,
           median_seconds(repetitions, [&] { lab04::lenet_forward(weights, images, logits); }));

    const double hz = estimated_clock_hz();
    if (hz > 0) std::printf("estimated core clock: %.2f GHz (dependent-add chain)\n", hz / 1e9);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpu_lenet_bench: %s\n", e.what());
    return 1;
  }
}
