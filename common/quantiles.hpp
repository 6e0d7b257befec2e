// The median and nearest-rank quantiles every report of errors and timings takes the same way.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace tagcsim {

// The middle value, or the mean of the two middle ones; 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Nearest rank: the smallest value that a share q of the values stay at or under (p90: q = 0.9);
// 0 for none.
inline double nearest_rank(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, std::size_t(std::max(1.0, std::ceil(q * double(v.size())))) - 1)];
}

}  // namespace tagcsim
