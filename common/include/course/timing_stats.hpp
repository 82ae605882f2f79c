// Summary statistics of timed runs (milliseconds). Plain C++: the CPU code and the tests use it
// without the CUDA toolkit; course/gpu_timer.hpp produces it from CUDA events.
#pragma once

#include <string>
#include <vector>

namespace course {

struct TimingStats {
  std::vector<double> samples_ms;  ///< every timed run, in the order measured
  double median_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0;
  std::string summary() const;     ///< "median 0.123 ms (min 0.120, max 0.150, n=20)"
};

/// Summary statistics of a list of samples (median of an even count = mean of the middle two).
TimingStats summarize_samples(std::vector<double> samples_ms);

}  // namespace course
