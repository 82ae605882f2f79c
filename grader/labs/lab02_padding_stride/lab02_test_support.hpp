// Helpers shared by lab 02's test files: building parameters, describing a case in a failure
// message, and running one random convolution against the golden reference.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "lab02_reference.hpp"
#include "labs/lab02_padding_stride.hpp"
#include "sweep.hpp"
#include "testkit.hpp"

namespace lab02_tests {

/// Float sums of up to a few hundred products in [-1, 1] against a double reference.
inline const course::Tolerance kConvTolerance{1e-4, 1e-4};

inline lab02::Conv2dParams params(int top, int bottom, int left, int right, int stride_h = 1, int stride_w = 1,
                                  int dilation_h = 1, int dilation_w = 1) {
  lab02::Conv2dParams p;
  p.pad_top = top;
  p.pad_bottom = bottom;
  p.pad_left = left;
  p.pad_right = right;
  p.stride_h = stride_h;
  p.stride_w = stride_w;
  p.dilation_h = dilation_h;
  p.dilation_w = dilation_w;
  return p;
}

inline std::string describe(const course::Shape& x, const course::Shape& w, const lab02::Conv2dParams& p) {
  std::ostringstream out;
  out << "input " << course::shape_to_string(x) << ", weight " << course::shape_to_string(w) << ", pad top/bottom/left/right "
      << p.pad_top << "/" << p.pad_bottom << "/" << p.pad_left << "/" << p.pad_right << ", stride " << p.stride_h << "x"
      << p.stride_w << ", dilation " << p.dilation_h << "x" << p.dilation_w;
  return out.str();
}

/// Random input, weight and bias of these shapes; checks conv2d_output_shape and conv2d_forward
/// (into a NaN-poisoned output) against the golden reference. The parameters must be valid.
inline void check_random_conv(course::Rng& rng, const course::Shape& x_shape, const course::Shape& w_shape,
                              const lab02::Conv2dParams& p) {
  const std::string what = describe(x_shape, w_shape, p);
  INFO("case: " << what);
  const course::Tensor x = rng.tensor(x_shape);
  const course::Tensor w = rng.tensor(w_shape);
  const course::Tensor b = rng.tensor({w_shape[0]});
  const course::Tensor expected = golden::lab02_conv2d(x, w, b, p);
  CHECK_MESSAGE(lab02::conv2d_output_shape(x_shape, w_shape, p) == expected.shape(),
                "conv2d_output_shape for " << what << " should be " << course::shape_to_string(expected.shape()));
  course::Tensor out = grader::poisoned(expected.shape());
  lab02::conv2d_forward(x, w, b, p, out);
  grader::check_tensor("conv2d_forward, " + what, out, expected, kConvTolerance);
}

/// Everything that decides one spatial dimension of a convolution.
struct AxisCase {
  int input, kernel, pad_before, pad_after, stride, dilation;
};

/// Every axis with input <= max_input, kernel <= 3, each padding <= 2, stride <= 3, dilation <= 3
/// (1,215 for max_input 5), valid or not: a sweep pairs them up as height and width.
inline std::vector<AxisCase> small_axis_cases(int max_input) {
  std::vector<AxisCase> cases;
  for (int in = 1; in <= max_input; ++in)
    for (int k = 1; k <= 3; ++k)
      for (int pb = 0; pb <= 2; ++pb)
        for (int pa = 0; pa <= 2; ++pa)
          for (int s = 1; s <= 3; ++s)
            for (int d = 1; d <= 3; ++d) cases.push_back({in, k, pb, pa, s, d});
  return cases;
}

/// Draws random valid parameters and shapes (small, so that many cases run fast).
struct RandomConvCase {
  course::Shape x, w;
  lab02::Conv2dParams p;
};

inline RandomConvCase random_conv_case(course::Rng& rng) {
  for (;;) {
    RandomConvCase c;
    const int n = rng.integer(1, 2), ch = rng.integer(1, 4), k = rng.integer(1, 4);
    c.x = {n, ch, rng.integer(1, 14), rng.integer(1, 14)};
    c.w = {k, ch, rng.integer(1, 5), rng.integer(1, 5)};
    c.p = params(rng.integer(0, 3), rng.integer(0, 3), rng.integer(0, 3), rng.integer(0, 3), rng.integer(1, 3),
                 rng.integer(1, 3), rng.integer(1, 3), rng.integer(1, 3));
    if (golden::lab02_valid(c.x, c.w, c.p)) return c;  // redraw combinations with no output pixel
  }
}

}  // namespace lab02_tests
