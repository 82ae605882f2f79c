// What a successful read_idx promises, checked on every input the fuzzers get through.
#pragma once

#include <cstdint>

#include "course/idx.hpp"
#include "course/tensor.hpp"
#include "fuzz_input.hpp"

namespace course_fuzz {

inline void check_idx(const course::IdxArray& a) {
  require(!a.dims.empty() && a.dims.size() <= 4, "1 to 4 dimensions");
  std::uint64_t n = 1;
  for (auto d : a.dims) {
    require(d > 0, "no zero extent");
    // An accepted header must describe the bytes that are really there: a product that wraps
    // around (and so could match an empty file) is a finding.
    require(!__builtin_mul_overflow(n, std::uint64_t{d}, &n), "the product of the extents does not overflow");
  }
  require(n == a.values.size(), "data length equals the product of the extents");
  // The next step of load_dataset: a 3-D file becomes an NCHW float tensor.
  if (a.dims.size() == 3) {
    const course::Tensor t(course::Shape{a.dims[0], 1, a.dims[1], a.dims[2]});
    require(t.numel() == a.values.size(), "tensor holds every pixel");
  }
}

}  // namespace course_fuzz
