// Lab 02, part 2: TensorFlow's SAME/VALID padding rules (and back to explicit padding), and the
// two memory layouts of a 4-D activation, NCHW (PyTorch) and NHWC (TensorFlow, Tensor Cores).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "course/error.hpp"
#include "labs/lab02_padding_stride.hpp"

namespace lab02 {

Padding1d tf_padding(TfPadding mode, int input, int kernel, int stride, int dilation) {
  const auto at_least_one = [](const char* name, int value) {
    if (value < 1) throw course::Error(std::string("tf_padding: ") + name + " must be >= 1, got " + std::to_string(value));
  };
  at_least_one("input size", input);
  at_least_one("kernel size", kernel);
  at_least_one("stride", stride);
  at_least_one("dilation", dilation);

  if (mode == TfPadding::Valid) return {0, 0};  // VALID never pads: only windows that fit count

  // In 64-bit: input + stride - 1 and dilation * (kernel - 1) overflow an int for large values.
  // SAME fixes the OUTPUT size first: one output per `stride` input pixels, rounded up ...
  const std::int64_t output = (static_cast<std::int64_t>(input) + stride - 1) / stride;
  // ... then pads just enough that the last window (starting at (output-1)*stride) fits.
  const std::int64_t effective_kernel = static_cast<std::int64_t>(dilation) * (kernel - 1) + 1;
  const std::int64_t total64 = std::max<std::int64_t>((output - 1) * stride + effective_kernel - input, 0);
  if (total64 > std::numeric_limits<int>::max())
    throw course::Error("tf_padding: SAME padding " + std::to_string(total64) + " does not fit in an int");
  const int total = static_cast<int>(total64);
  // An odd total cannot be split evenly; TensorFlow puts the extra pixel at the END (bottom or
  // right), which is where PyTorch's symmetric padding differs.
  const int before = total / 2;
  return {before, total - before};
}

std::optional<TfPadding> tf_mode_for(Padding1d explicit_padding, int input, int kernel, int stride, int dilation) {
  if (explicit_padding.before < 0 || explicit_padding.after < 0)
    throw course::Error("tf_mode_for: padding must not be negative, got before=" +
                        std::to_string(explicit_padding.before) + " after=" + std::to_string(explicit_padding.after));
  // Computing SAME first also validates the parameters, so bad input throws in every case.
  const Padding1d same = tf_padding(TfPadding::Same, input, kernel, stride, dilation);
  // Checked first: when SAME needs no padding at all, {0, 0} matches both, and VALID is the
  // simpler name for "no padding".
  if (explicit_padding.before == 0 && explicit_padding.after == 0) return TfPadding::Valid;
  if (explicit_padding.before == same.before && explicit_padding.after == same.after) return TfPadding::Same;
  return std::nullopt;
}

namespace {

void check_index(const char* function, const course::Shape& shape, std::int64_t n, std::int64_t c, std::int64_t h,
                 std::int64_t w) {
  if (shape.size() != 4)
    throw course::Error(std::string(function) + ": shape must be 4-D [N, C, H, W], got " +
                        course::shape_to_string(shape));
  const std::int64_t index[4] = {n, c, h, w};
  const char* names[4] = {"n", "c", "h", "w"};
  for (int d = 0; d < 4; ++d)
    if (index[d] < 0 || index[d] >= shape[static_cast<std::size_t>(d)])
      throw course::Error(std::string(function) + ": index " + names[d] + "=" + std::to_string(index[d]) +
                          " is outside shape " + course::shape_to_string(shape));
}

// A conversion's input: 4-D with every extent at least 1 (the same rule as the convolution).
void check_layout_input(const char* function, const course::Tensor& t, const char* layout) {
  if (t.rank() != 4)
    throw course::Error(std::string(function) + ": input must be 4-D " + layout + ", got " +
                        course::shape_to_string(t.shape()));
  for (std::int64_t extent : t.shape())
    if (extent < 1)
      throw course::Error(std::string(function) + ": every extent of the input " + layout + " must be at least 1, got " +
                          course::shape_to_string(t.shape()));
}

}  // namespace

std::size_t nchw_offset(const course::Shape& nchw_shape, std::int64_t n, std::int64_t c, std::int64_t h,
                        std::int64_t w) {
  check_index("nchw_offset", nchw_shape, n, c, h, w);
  const std::int64_t C = nchw_shape[1], H = nchw_shape[2], W = nchw_shape[3];
  // Horner form of n*C*H*W + c*H*W + h*W + w: w is the fastest-moving index.
  return static_cast<std::size_t>(((n * C + c) * H + h) * W + w);
}

std::size_t nhwc_offset(const course::Shape& nchw_shape, std::int64_t n, std::int64_t c, std::int64_t h,
                        std::int64_t w) {
  check_index("nhwc_offset", nchw_shape, n, c, h, w);
  const std::int64_t C = nchw_shape[1], H = nchw_shape[2], W = nchw_shape[3];
  // n*H*W*C + h*W*C + w*C + c: now the channel moves fastest, so the C values of one pixel are
  // neighbours in memory.
  return static_cast<std::size_t>(((n * H + h) * W + w) * C + c);
}

void nchw_to_nhwc(const course::Tensor& nchw, course::Tensor& nhwc) {
  check_layout_input("nchw_to_nhwc", nchw, "[N, C, H, W]");
  // In place cannot work: every element moves, and we would overwrite values not yet read.
  if (&nchw == &nhwc) throw course::Error("nchw_to_nhwc: nhwc must be a different tensor than nchw");
  const course::Shape& s = nchw.shape();
  nhwc.expect_shape({s[0], s[2], s[3], s[1]}, "nchw_to_nhwc: nhwc");
  // Read the source in its own order (sequential reads), write each value to its NHWC place.
  std::size_t src = 0;
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t c = 0; c < s[1]; ++c)
      for (std::int64_t h = 0; h < s[2]; ++h)
        for (std::int64_t w = 0; w < s[3]; ++w)
          nhwc[static_cast<std::size_t>(((n * s[2] + h) * s[3] + w) * s[1] + c)] = nchw[src++];
}

void nhwc_to_nchw(const course::Tensor& nhwc, course::Tensor& nchw) {
  check_layout_input("nhwc_to_nchw", nhwc, "[N, H, W, C]");
  if (&nchw == &nhwc) throw course::Error("nhwc_to_nchw: nchw must be a different tensor than nhwc");
  const course::Shape& s = nhwc.shape();  // [N, H, W, C]
  nchw.expect_shape({s[0], s[3], s[1], s[2]}, "nhwc_to_nchw: nchw");
  std::size_t src = 0;
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t h = 0; h < s[1]; ++h)
      for (std::int64_t w = 0; w < s[2]; ++w)
        for (std::int64_t c = 0; c < s[3]; ++c)
          nchw[static_cast<std::size_t>(((n * s[3] + c) * s[1] + h) * s[2] + w)] = nhwc[src++];
}

}  // namespace lab02
