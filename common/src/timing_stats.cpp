#include "course/timing_stats.hpp"

#include <algorithm>
#include <iomanip>
#include <numeric>
#include <sstream>

namespace course {

TimingStats summarize_samples(std::vector<double> samples_ms) {
  TimingStats s;
  s.samples_ms = samples_ms;
  if (samples_ms.empty()) return s;
  std::sort(samples_ms.begin(), samples_ms.end());
  const std::size_t n = samples_ms.size();
  s.median_ms = n % 2 ? samples_ms[n / 2] : 0.5 * (samples_ms[n / 2 - 1] + samples_ms[n / 2]);
  s.min_ms = samples_ms.front();
  s.max_ms = samples_ms.back();
  s.mean_ms = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / static_cast<double>(n);
  return s;
}

std::string TimingStats::summary() const {
  std::ostringstream out;
  out << std::fixed << std::setprecision(4) << "median " << median_ms << " ms (min " << min_ms << ", max " << max_ms
      << ", n=" << samples_ms.size() << ")";
  return out.str();
}

}  // namespace course
