// The GPU side of speed scoring: turns two pieces of GPU work (each enqueues everything on the
// stream it is given) into the samplers that compare() alternates. Every run is timed on its own
// with CUDA events by course::GpuTimer, with the L2 cache flushed first (untimed) so that no run
// profits from the one before; the input set is selected before each run (untimed) and the
// outputs are re-checked after the last one. Warm-up is ScheduleOptions::warmup_rounds.
//
//   auto result = course::speed::compare_on_gpu(
//       [&](cudaStream_t s) { reference_lenet(inputs[current], ref_out, s); },
//       [&](cudaStream_t s) { student_lenet(inputs[current], out, s); },
//       course::speed::Requirement::at_least_faster(2.0), {},
//       {/*input_sets=*/4, [&](int i) { current = i; }, [&](int last) { check(out, expected[last]); }});
//   std::cout << result.summary() << "\n" << result.decision.explanation << "\n";
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

#include "course/speed/compare.hpp"

namespace course::speed {

/// GPU work to time: must enqueue all of it on `stream` (work on another stream is not timed).
using GpuWork = std::function<void(cudaStream_t stream)>;

struct GpuTiming {
  bool flush_l2 = true;           ///< flush L2 before every timed run (not timed)
  cudaStream_t stream = nullptr;  ///< the stream both implementations run on
};

/// Times `reference` and `candidate` alternately on the GPU and decides `requirement`. CUDA
/// failures (including faults inside the timed work) throw course::Error, as do samples that are
/// not positive times and a failing re-check (see compare_with_hooks).
SpeedResult compare_on_gpu(const GpuWork& reference, const GpuWork& candidate, const Requirement& requirement,
                           const ScheduleOptions& options = {}, const RunHooks& hooks = {},
                           const GpuTiming& timing = {});

}  // namespace course::speed
