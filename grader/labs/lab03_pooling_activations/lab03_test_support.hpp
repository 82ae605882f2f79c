// Shared pieces of the lab 03 tests: tolerances, parameter conversion, random pooling cases,
// and the runner for one JSON case (used by the hidden-case tests).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab03_reference.hpp"
#include "labs/lab03_pooling_activations.hpp"
#include "sweep.hpp"
#include "testkit.hpp"

namespace lab03_tests {

// Max pooling and ReLU only copy input values: any difference is a bug, so no real slack.
inline const course::Tolerance kExact{0.0, 0.0};
// Sums and transcendental functions in float vs the double reference.
inline const course::Tolerance kFloat{1e-6, 1e-5};

inline golden::Pool2d to_golden(const lab03::Pool2dParams& p) {
  golden::Pool2d g;
  g.kernel_h = p.kernel_h;
  g.kernel_w = p.kernel_w;
  g.stride_h = p.stride_h;
  g.stride_w = p.stride_w;
  g.pad_h = p.pad_h;
  g.pad_w = p.pad_w;
  g.count_include_pad = p.count_include_pad;
  return g;
}

inline std::string describe(const lab03::Pool2dParams& p, const course::Shape& input) {
  std::ostringstream s;
  s << "input " << course::shape_to_string(input) << " kernel " << p.kernel_h << "x" << p.kernel_w << " stride "
    << p.stride_h << "x" << p.stride_w << " pad " << p.pad_h << "x" << p.pad_w
    << " count_include_pad=" << (p.count_include_pad ? "true" : "false");
  return s.str();
}

inline lab03::Pool2dParams make_params(int kh, int kw, int sh, int sw, int ph, int pw, bool include_pad = true) {
  lab03::Pool2dParams p;
  p.kernel_h = kh;
  p.kernel_w = kw;
  p.stride_h = sh;
  p.stride_w = sw;
  p.pad_h = ph;
  p.pad_w = pw;
  p.count_include_pad = include_pad;
  return p;
}

/// A 4-D tensor [1, 1, rows, cols] from rows of numbers (the lecture's worked examples).
inline course::Tensor plane(std::initializer_list<std::initializer_list<float>> rows) {
  std::vector<float> values;
  std::int64_t cols = 0;
  for (const auto& r : rows) {
    cols = static_cast<std::int64_t>(r.size());
    values.insert(values.end(), r.begin(), r.end());
  }
  return course::Tensor({1, 1, static_cast<std::int64_t>(rows.size()), cols}, values);
}

/// Valid random pooling geometry: non-square windows, kernel != stride, overlapping windows
/// (stride < kernel), gaps (stride > kernel) and padding up to kernel/2 all occur.
struct PoolCase {
  course::Shape input;
  lab03::Pool2dParams params;
};

inline PoolCase random_pool_case(course::Rng& rng) {
  PoolCase c;
  c.params = make_params(rng.integer(1, 4), rng.integer(1, 4), rng.integer(1, 3), rng.integer(1, 3), 0, 0,
                         rng.integer(0, 1) == 1);
  c.params.pad_h = rng.integer(0, c.params.kernel_h / 2);
  c.params.pad_w = rng.integer(0, c.params.kernel_w / 2);
  // The padded input must hold at least one window.
  const int min_h = std::max(1, c.params.kernel_h - 2 * c.params.pad_h);
  const int min_w = std::max(1, c.params.kernel_w - 2 * c.params.pad_w);
  c.input = {rng.integer(1, 2), rng.integer(1, 4), rng.integer(min_h, 13), rng.integer(min_w, 13)};
  return c;
}

/// One axis of a pooling window: input extent, kernel, stride, padding.
struct PoolAxis {
  int in, kernel, stride, pad;
  /// The contract's rule: kernel, stride >= 1, 0 <= pad <= kernel / 2, and a window fits.
  bool valid() const { return in >= 1 && kernel >= 1 && stride >= 1 && pad >= 0 && pad <= kernel / 2 && in + 2 * pad >= kernel; }
};

/// Every axis with input <= max_input, kernel <= max_kernel, stride <= 3 and pad <= 2, valid or not.
inline std::vector<PoolAxis> small_pool_axes(int max_input, int max_kernel) {
  std::vector<PoolAxis> axes;
  for (int in = 1; in <= max_input; ++in)
    for (int k = 1; k <= max_kernel; ++k)
      for (int s = 1; s <= 3; ++s)
        for (int pad = 0; pad <= 2; ++pad) axes.push_back({in, k, s, pad});
  return axes;
}

// ---------------------------------------------------------------------------------------------
// One JSON case (hidden cases). Keys -- see the top of 5_hidden_case_tests.cpp.

inline void run_json_case(const nlohmann::json& spec, const std::string& name) {
  INFO(name << ": " << spec.dump());
  const std::string op = spec.at("op").get<std::string>();
  const std::int64_t n = spec.value("n", 1), c = spec.value("c", 1), h = spec.value("h", 1), w = spec.value("w", 1);
  const bool expect_error = spec.value("expect_error", false);
  course::Rng rng = grader::case_rng(name);
  const course::Tensor x = rng.tensor({n, c, h, w}, spec.value("low", -3.0f), spec.value("high", 3.0f));

  if (op == "max_pool2d" || op == "avg_pool2d") {
    const lab03::Pool2dParams p =
        make_params(spec.value("kernel_h", 2), spec.value("kernel_w", 2), spec.value("stride_h", 2),
                    spec.value("stride_w", 2), spec.value("pad_h", 0), spec.value("pad_w", 0),
                    spec.value("count_include_pad", true));
    const bool is_max = op == "max_pool2d";
    if (expect_error) {
      grader::check_rejects(name + " (" + op + " must reject these parameters)", [&] {
        course::Tensor out = grader::poisoned({n, c, 1, 1});
        if (is_max)
          lab03::max_pool2d(x, p, out);
        else
          lab03::avg_pool2d(x, p, out);
      });
      return;
    }
    const course::Tensor expected = is_max ? golden::max_pool2d(x, to_golden(p)) : golden::avg_pool2d(x, to_golden(p));
    CHECK(lab03::pool2d_output_shape(x.shape(), p) == expected.shape());
    course::Tensor out = grader::poisoned(expected.shape());
    if (is_max)
      lab03::max_pool2d(x, p, out);
    else
      lab03::avg_pool2d(x, p, out);
    grader::check_tensor(name + " " + op + " " + describe(p, x.shape()), out, expected, is_max ? kExact : kFloat);
  } else if (op == "global_avg_pool2d") {
    course::Tensor out = grader::poisoned({n, c, 1, 1});
    lab03::global_avg_pool2d(x, out);
    grader::check_tensor(name + " global_avg_pool2d", out, golden::global_avg_pool2d(x), kFloat);
  } else if (op == "softmax") {
    // The NCHW tensor is read as [n, c*h*w]: n rows of c*h*w logits.
    const course::Tensor logits = x.reshaped({n, c * h * w});
    course::Tensor out = grader::poisoned(logits.shape());
    lab03::softmax(logits, out);
    grader::check_tensor(name + " softmax", out, golden::softmax(logits), kFloat);
  } else {
    course::Tensor out = grader::poisoned(x.shape());
    course::Tensor expected;
    if (op == "relu") {
      lab03::relu(x, out);
      expected = golden::relu(x);
    } else if (op == "leaky_relu") {
      const float slope = spec.value("negative_slope", 0.01f);
      lab03::leaky_relu(x, slope, out);
      expected = golden::leaky_relu(x, slope);
    } else if (op == "sigmoid") {
      lab03::sigmoid(x, out);
      expected = golden::sigmoid(x);
    } else if (op == "tanh") {
      lab03::tanh_activation(x, out);
      expected = golden::tanh(x);
    } else {
      FAIL(name << ": unknown op \"" << op << "\" in a hidden case");
    }
    grader::check_tensor(name + " " + op, out, expected, op == "relu" ? kExact : kFloat);
  }
}

}  // namespace lab03_tests
