// Lab 01 solution: direct convolution on the CPU, NCHW input, KCRS weights, stride 1, no padding.
// The interface and its contract are documented in common/include/labs/lab01_conv2d.hpp.
#include "labs/lab01_conv2d.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

#include "course/error.hpp"

namespace lab01 {

namespace {

// Every shape problem is the caller's mistake, so it is reported as course::Error with the
// tensor's name and its actual shape: the student sees at once which argument is wrong.
void require_4d(const course::Shape& shape, const std::string& name, const std::string& layout) {
  if (shape.size() != 4)
    throw course::Error("conv2d " + name + ": expected a 4-D shape " + layout + ", got " +
                        course::shape_to_string(shape));
  for (std::int64_t extent : shape)
    if (extent < 1)
      throw course::Error("conv2d " + name + ": every extent of " + layout + " must be at least 1, got " +
                          course::shape_to_string(shape));
}

}  // namespace

course::Shape conv2d_output_shape(const course::Shape& input, const course::Shape& weight) {
  require_4d(input, "input", "[N, C, H, W]");
  require_4d(weight, "weight", "[K, C, R, S]");

  const std::int64_t N = input[0], C = input[1], H = input[2], W = input[3];
  const std::int64_t K = weight[0], R = weight[2], S = weight[3];
  if (weight[1] != C)
    throw course::Error("conv2d: input has " + std::to_string(C) + " channels but the weight expects " +
                        std::to_string(weight[1]) + " channels (input " + course::shape_to_string(input) +
                        ", weight " + course::shape_to_string(weight) + ")");
  // Without padding the kernel must fit inside the image at least once; otherwise the output
  // would have zero (or a negative number of) rows or columns.
  if (R > H)
    throw course::Error("conv2d: kernel height R=" + std::to_string(R) + " is larger than the input height H=" +
                        std::to_string(H));
  if (S > W)
    throw course::Error("conv2d: kernel width S=" + std::to_string(S) + " is larger than the input width W=" +
                        std::to_string(W));

  // Stride 1, no padding: the top-left corner of the kernel can sit on rows 0 .. H-R, i.e. at
  // H-R+1 positions, and likewise on W-S+1 columns.
  return {N, K, H - R + 1, W - S + 1};
}

void conv2d_forward(const course::Tensor& input, const course::Tensor& weight, const course::Tensor& bias,
                    course::Tensor& output) {
  // Validate everything before writing a single output element.
  const course::Shape out_shape = conv2d_output_shape(input.shape(), weight.shape());
  bias.expect_shape({weight.dim(0)}, "conv2d bias");
  output.expect_shape(out_shape, "conv2d output");

  const std::int64_t N = input.dim(0), C = input.dim(1), H = input.dim(2), W = input.dim(3);
  const std::int64_t K = weight.dim(0), R = weight.dim(2), S = weight.dim(3);
  const std::int64_t P = out_shape[2], Q = out_shape[3];  // output height and width

  const float* x = input.data();
  const float* w = weight.data();
  const float* b = bias.data();
  float* y = output.data();

  // Flat offsets of contiguous NCHW / KCRS tensors: each index is multiplied by the number of
  // elements one step in it skips over, e.g. one step in c skips a whole H x W plane.
  //   input  (n, c, h, w) -> ((n*C + c)*H + h)*W + w
  //   weight (k, c, r, s) -> ((k*C + c)*R + r)*S + s
  //   output (n, k, p, q) -> ((n*K + k)*P + p)*Q + q
  //
  // The seven loops: four walk over the output elements, three over the terms that are summed
  // into one output element. Each output element is computed completely and written once, so
  // whatever the buffer held before (the tests fill it with NaN) never leaks into the result.
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t k = 0; k < K; ++k) {
      for (std::int64_t p = 0; p < P; ++p) {
        for (std::int64_t q = 0; q < Q; ++q) {
          float sum = b[k];  // the bias is added once per output element, not once per channel
          for (std::int64_t c = 0; c < C; ++c) {
            for (std::int64_t r = 0; r < R; ++r) {
              // Output (p, q) looks at input rows p .. p+R-1 and columns q .. q+S-1: the kernel is
              // applied as it is stored (cross-correlation), never flipped.
              const float* x_row = x + ((n * C + c) * H + (p + r)) * W + q;
              const float* w_row = w + ((k * C + c) * R + r) * S;
              for (std::int64_t s = 0; s < S; ++s) sum += x_row[s] * w_row[s];
            }
          }
          y[((n * K + k) * P + p) * Q + q] = sum;
        }
      }
    }
  }
}

}  // namespace lab01
