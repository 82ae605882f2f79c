#include "course/compare.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

namespace course {

std::size_t count_nonfinite(const float* values, std::size_t count) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < count; ++i) n += std::isfinite(values[i]) ? 0 : 1;
  return n;
}

void poison(float* values, std::size_t count) {
  std::fill(values, values + count, std::numeric_limits<float>::quiet_NaN());
}

double relative_l2_error(const float* actual, const float* expected, std::size_t count) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double d = double(actual[i]) - double(expected[i]);
    diff += d * d;
    ref += double(expected[i]) * double(expected[i]);
  }
  return ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff);
}

Comparison compare(const float* actual, const float* expected, std::size_t count, const Tolerance& tol,
                   std::size_t max_reported) {
  Comparison r;
  r.count = count;
  for (std::size_t i = 0; i < count; ++i) {
    const double a = actual[i], e = expected[i];
    bool bad;
    if (!std::isfinite(a) || !std::isfinite(e)) {
      r.nonfinite += std::isfinite(a) ? 0 : 1;
      bad = true;  // a NaN or Inf never passes, whatever the tolerance
    } else {
      const double abs_err = std::fabs(a - e);
      r.max_abs_error = std::max(r.max_abs_error, abs_err);
      r.max_rel_error = std::max(r.max_rel_error, abs_err / std::max(std::fabs(e), 1e-30));
      bad = !(abs_err <= tol.atol + tol.rtol * std::fabs(e));
    }
    if (bad) {
      ++r.mismatches;
      if (r.first.size() < max_reported) r.first.push_back({i, actual[i], expected[i]});
    }
  }
  r.relative_l2_error = relative_l2_error(actual, expected, count);
  return r;
}

Comparison compare(const Tensor& actual, const Tensor& expected, const Tolerance& tol, std::size_t max_reported) {
  if (actual.shape() != expected.shape()) {
    Comparison r;
    r.shape_mismatch = true;
    r.shape_message = "shape mismatch: got " + shape_to_string(actual.shape()) + ", expected " +
                      shape_to_string(expected.shape());
    return r;
  }
  return compare(actual.data(), expected.data(), actual.numel(), tol, max_reported);
}

std::string unravel_index(std::size_t flat_index, const Shape& shape) {
  if (shape.empty()) return "[" + std::to_string(flat_index) + "]";
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    const auto extent = static_cast<std::size_t>(std::max<std::int64_t>(shape[d], 1));
    idx[d] = static_cast<std::int64_t>(flat_index % extent);
    flat_index /= extent;
  }
  return shape_to_string(idx);
}

std::string Comparison::report(const Shape& shape) const {
  if (shape_mismatch) return shape_message;
  std::ostringstream out;
  out << std::setprecision(6);
  if (ok()) {
    out << "all " << count << " values match (max abs err " << max_abs_error << ", rel L2 err " << relative_l2_error << ")";
    return out.str();
  }
  out << mismatches << " of " << count << " values wrong";
  if (nonfinite) out << " (" << nonfinite << " NaN/Inf -- an output element never written, or an overflow?)";
  out << "; max abs err " << max_abs_error << ", rel L2 err " << relative_l2_error << "\n  first mismatches:";
  for (const auto& m : first)
    out << "\n    at " << unravel_index(m.flat_index, shape) << ": got " << m.actual << ", expected " << m.expected;
  return out.str();
}

}  // namespace course
