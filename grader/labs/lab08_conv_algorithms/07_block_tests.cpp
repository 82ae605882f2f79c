// Lab 08 tests, part C1: inverted_residual_block against the golden folded block in double
// (golden::lab08_inverted_residual, mobilenet_folding_reference.hpp): every block of the course's
// MobileNetV2 at batch 1, 3 and 8, odd sizes, a very wide input, residual on and off, t = 1 (no
// expansion), ReLU6's upper clamp in both activations, and the zero padding of the EXPANDED tensor.
#include <cstdint>
#include <string>

#include "lab08_mobilenet_test_support.hpp"

using course::Tensor;

namespace {

void check_block(const std::string& what, const Tensor& x, const lab08::FoldedBlock& block, int stride) {
  const Tensor expected = golden::lab08_inverted_residual(x, block, stride);
  Tensor out = grader::poisoned(expected.shape());
  std::uint64_t workspace = 0;
  lab08_harness::inverted_residual_block(x, block, stride, out, workspace);
  const std::int64_t in = x.dim(1), hidden = block.depthwise_weight.dim(0), outc = block.project_weight.dim(0);
  const bool residual = stride == 1 && in == outc;
  grader::check_tensor(what + " (x " + lab08_c_tests::shape_text(x) + ", " + std::to_string(in) + " -> " +
                           std::to_string(hidden) + " -> " + std::to_string(outc) + ", stride " +
                           std::to_string(stride) + (residual ? ", residual" : ", no residual") +
                           (hidden == in ? ", no expansion" : "") + ", workspace " + std::to_string(workspace) +
                           " bytes)",
                       out, expected, lab08_c_tests::block_tolerance(in, hidden));
}

void check_random_block(const std::string& what, course::Rng& rng, int n, int in, int hidden, int out, int h, int w,
                        int stride, float input_scale = 1.0f, float gain = 1.0f) {
  check_block(what, rng.tensor({n, in, h, w}, -input_scale, input_scale),
              lab08_c_tests::random_block(rng, in, hidden, out, gain), stride);
}

}  // namespace

TEST_CASE("inverted_residual_block: MobileNetV2's seven blocks (course/mobilenet.hpp), batch 1, 3 and 8") {
  course::Rng rng = grader::case_rng("block: MobileNetV2");
  const auto& blocks = course::mobilenet::blocks();
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto& b = blocks[i];
    for (int n : {1, 3, 8})
      check_random_block("block " + std::to_string(i), rng, n, b.in_channels, b.hidden, b.out_channels, b.size, b.size,
                         b.stride);
  }
}

TEST_CASE("inverted_residual_block: under the sanitizers -- each MobileNetV2 block once, batch 2") {
  course::Rng rng = grader::case_rng("block: sanitizers");
  for (const auto& b : course::mobilenet::blocks())
    check_random_block("sanitizers", rng, 2, b.in_channels, b.hidden, b.out_channels, b.size, b.size, b.stride);
}

TEST_CASE("inverted_residual_block: odd sizes -- 7x7 stride 2 -> 4x4, 1x1, 9x13, 17x17, partial tiles") {
  course::Rng rng = grader::case_rng("block: odd sizes");
  check_random_block("7x7 stride 2 -> 4x4", rng, 2, 8, 48, 12, 7, 7, 2);
  check_random_block("7x7 stride 1, residual", rng, 2, 8, 48, 8, 7, 7, 1);
  check_random_block("1x1 image", rng, 3, 4, 24, 4, 1, 1, 1);
  check_random_block("1x1 image, stride 2", rng, 3, 4, 24, 6, 1, 1, 2);
  check_random_block("2x3, stride 2", rng, 1, 5, 30, 7, 2, 3, 2);
  check_random_block("9x13", rng, 2, 6, 36, 6, 9, 13, 1);
  check_random_block("13x9, stride 2", rng, 2, 6, 36, 10, 13, 9, 2);
  check_random_block("17x17 (3 tiles of 8 with a 1-pixel tail)", rng, 1, 3, 18, 3, 17, 17, 1);
  check_random_block("17x17 stride 2 -> 9x9", rng, 1, 3, 18, 5, 17, 17, 2);
  check_random_block("hidden not a multiple of 32", rng, 2, 7, 45, 7, 10, 10, 1);
  check_random_block("more than 64 output channels", rng, 1, 16, 40, 130, 6, 6, 1);
  check_random_block("more than 64 output channels, residual", rng, 1, 70, 140, 70, 5, 5, 1);
}

TEST_CASE("inverted_residual_block: 1,536 input channels -- a window too wide for shared memory") {
  // The reference stages a tile's input window, every input channel, in shared memory; even one
  // output pixel's 3 x 3 window of 1,536 channels (plus a chunk of expand weights as wide) is more
  // than an H100's 227 KB, so it takes its other kernel. Any correct block passes.
  course::Rng rng = grader::case_rng("block: wide input");
  check_random_block("1,536 input channels", rng, 2, 1536, 40, 70, 5, 5, 1);
  check_random_block("1,536 input channels, stride 2", rng, 1, 1536, 36, 12, 7, 7, 2);
}

TEST_CASE("inverted_residual_block: the residual is added exactly when stride == 1 and in == out") {
  course::Rng rng = grader::case_rng("block: residual");
  check_random_block("stride 1, in == out: residual", rng, 2, 16, 96, 16, 14, 14, 1);
  check_random_block("stride 1, in != out: none", rng, 2, 16, 96, 24, 14, 14, 1);
  check_random_block("stride 2, in == out: none", rng, 2, 16, 96, 16, 14, 14, 2);
  // A block whose weights are all zero outputs its project bias, plus the input if residual: the
  // residual alone, exactly (no other term can hide or fake it).
  const Tensor x = rng.tensor({2, 8, 6, 6});
  lab08::FoldedBlock zero;
  zero.expand_weight = Tensor(course::Shape{24, 8});
  zero.expand_bias = Tensor(course::Shape{24});
  zero.depthwise_weight = Tensor(course::Shape{24, 1, 3, 3});
  zero.depthwise_bias = Tensor(course::Shape{24});
  zero.project_weight = Tensor(course::Shape{8, 24});
  zero.project_bias = Tensor(course::Shape{8}, 0.25f);
  Tensor expected = x;
  for (std::size_t i = 0; i < expected.numel(); ++i) expected[i] += 0.25f;
  Tensor out = grader::poisoned(x.shape());
  std::uint64_t workspace = 0;
  lab08_harness::inverted_residual_block(x, zero, 1, out, workspace);
  grader::check_tensor("zero weights, residual: output = input + project bias (missing residual add?)", out, expected,
                       course::Tolerance{1e-6, 0.0});
  Tensor strided = grader::poisoned({2, 8, 3, 3});
  lab08_harness::inverted_residual_block(x, zero, 2, strided, workspace);
  grader::check_tensor("zero weights, stride 2: output = project bias, no residual", strided,
                       Tensor(course::Shape{2, 8, 3, 3}, 0.25f), course::Tolerance{0.0, 0.0});
}

TEST_CASE("inverted_residual_block: t = 1 (hidden == in: no expansion, the depthwise step reads the input)") {
  course::Rng rng = grader::case_rng("block: t = 1");
  check_random_block("t = 1, residual", rng, 3, 16, 16, 16, 28, 28, 1);
  check_random_block("t = 1, stride 2", rng, 2, 16, 16, 24, 15, 15, 2);
  check_random_block("t = 1, in != out", rng, 1, 9, 9, 5, 11, 7, 1);
}

TEST_CASE("inverted_residual_block: ReLU6 clamps at 6 after the expansion and after the depthwise step") {
  // Inputs in [-4, 4] and weights 4x larger than the other tests': many expanded and depthwise
  // values lie above 6 and below 0, so both ends of both clamps matter.
  course::Rng rng = grader::case_rng("block: relu6");
  check_random_block("large values, stride 1", rng, 2, 16, 96, 16, 14, 14, 1, 4.0f, 4.0f);
  check_random_block("large values, stride 2", rng, 2, 16, 96, 24, 14, 14, 2, 4.0f, 4.0f);
  check_random_block("large values, t = 1", rng, 2, 16, 16, 16, 9, 9, 1, 8.0f, 4.0f);
  // A 1x1 image (value 1) through a 1 -> 2 -> 1 block, stride 2 (so no residual), by hand:
  // expanded relu6(10) = 6 and relu6(-3) = 0; depthwise (only the centre tap lies inside the
  // image) relu6(2 * 6 + 1) = 6 and relu6(5 * 0 + 1) = 1; projected 1 * 6 + 1 * 1 + 0.5 = 7.5.
  // Without the upper clamp: 10 -> 21 -> 22.5.
  lab08::FoldedBlock b;
  b.expand_weight = Tensor(course::Shape{2, 1}, {10.0f, -3.0f});
  b.expand_bias = Tensor(course::Shape{2}, {0.0f, 0.0f});
  b.depthwise_weight = Tensor(course::Shape{2, 1, 3, 3}, {0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0});
  b.depthwise_bias = Tensor(course::Shape{2}, {1.0f, 1.0f});
  b.project_weight = Tensor(course::Shape{1, 2}, {1.0f, 1.0f});
  b.project_bias = Tensor(course::Shape{1}, {0.5f});
  Tensor out = grader::poisoned({1, 1, 1, 1});
  std::uint64_t workspace = 0;
  lab08_harness::inverted_residual_block(Tensor(course::Shape{1, 1, 1, 1}, {1.0f}), b, 2, out, workspace);
  grader::check_tensor("hand-computed 1 -> 2 -> 1 block (7.5; 22.5 would mean ReLU6 without its upper clamp)", out,
                       Tensor(course::Shape{1, 1, 1, 1}, {7.5f}), course::Tolerance{0.0, 0.0});
}

TEST_CASE("inverted_residual_block: the depthwise padding pads the EXPANDED tensor with zeros, not relu6(bias)") {
  // A zero 3x3 input, zero expand weights, expand bias 2: inside the image every expanded value
  // is relu6(2) = 2, in the padding it must be 0. A depthwise filter of 0.25 everywhere then
  // gives 0.25 * 2 * (taps inside): 2 at the corners (4 taps), 3 at the edges (6), 4.5 in the
  // centre (9). Padding with relu6(bias) instead would give 4.5 everywhere.
  lab08::FoldedBlock b;
  b.expand_weight = Tensor(course::Shape{2, 1});
  b.expand_bias = Tensor(course::Shape{2}, 2.0f);
  b.depthwise_weight = Tensor(course::Shape{2, 1, 3, 3}, 0.25f);
  b.depthwise_bias = Tensor(course::Shape{2});
  b.project_weight = Tensor(course::Shape{1, 2}, {1.0f, 0.0f});
  b.project_bias = Tensor(course::Shape{1});
  Tensor out = grader::poisoned({1, 1, 3, 3});
  std::uint64_t workspace = 0;
  lab08_harness::inverted_residual_block(Tensor(course::Shape{1, 1, 3, 3}), b, 1, out, workspace);
  // in == out == 1 and stride 1: the residual adds the (zero) input.
  grader::check_tensor("zero padding of the expanded tensor", out,
                       Tensor(course::Shape{1, 1, 3, 3}, {2, 3, 2, 3, 4.5f, 3, 2, 3, 2}), course::Tolerance{0.0, 0.0});
}

TEST_CASE("inverted_residual_block: a large batch -- 32 images through block 1 (16 -> 96 -> 24, 28x28, stride 2)") {
  course::Rng rng = grader::case_rng("block: large");
  check_random_block("large", rng, 32, 16, 96, 24, 28, 28, 2);
  check_random_block("large, residual", rng, 32, 24, 144, 24, 14, 14, 1);
}
