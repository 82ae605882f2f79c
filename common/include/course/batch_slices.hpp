// A golden CPU network over a whole test split, one contiguous slice of the batch per thread.
//
// The golden networks take seconds to minutes on 10,000 images on one core (lab 08's MobileNetV2
// ~40 ms per image), and one image's output never depends on another's, so the benchmark runners
// and the tests split the batch over the machine's cores. The split changes only the time: every
// slice runs the same code on the same images, and the results are stacked back in order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "course/error.hpp"
#include "course/tensor.hpp"

namespace course {

/// `forward(slice)` on the first `count` entries (along dim 0) of `batch`, cut into at most
/// `threads` contiguous slices that run on threads of their own; returns the slices' outputs
/// stacked along dim 0 ([count, ...], the other extents as `forward` returned them). An exception
/// thrown by any slice is rethrown here; the slices still running finish first (a future of
/// std::async waits for its thread when it is destroyed).
template <class Forward>
Tensor forward_in_slices(const Tensor& batch, std::int64_t count, unsigned threads, const Forward& forward) {
  if (batch.shape().empty() || count < 1 || count > batch.dim(0))
    throw Error("forward_in_slices: asked for " + std::to_string(count) + " entries of a batch of shape " +
                shape_to_string(batch.shape()));
  const std::int64_t per_entry = static_cast<std::int64_t>(batch.numel()) / batch.dim(0);
  const std::int64_t slices = std::clamp<std::int64_t>(threads, 1, count);
  const std::int64_t per_slice = (count + slices - 1) / slices;
  std::vector<std::future<Tensor>> parts;
  for (std::int64_t begin = 0; begin < count; begin += per_slice) {
    const std::int64_t n = std::min(per_slice, count - begin);
    parts.push_back(std::async(std::launch::async, [&batch, &forward, begin, n, per_entry] {
      Shape shape = batch.shape();
      shape[0] = n;
      const float* first = batch.data() + begin * per_entry;
      return forward(Tensor(std::move(shape), std::vector<float>(first, first + n * per_entry)));
    }));
  }
  Shape shape;
  std::vector<float> stacked;
  for (auto& part : parts) {
    const Tensor out = part.get();
    if (shape.empty()) shape = out.shape();
    stacked.insert(stacked.end(), out.data(), out.data() + out.numel());
  }
  shape[0] = count;
  return Tensor(std::move(shape), std::move(stacked));
}

}  // namespace course
