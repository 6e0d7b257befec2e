// Linear interpolation in log(x), shared by the kernel profile's curves.
#pragma once

#include <cmath>

namespace tagcsim::sim {

// y at x on the line through (log x0, y0) and (log x1, y1); y0 when the points coincide.
inline double lerp_log(double x, double x0, double x1, double y0, double y1) {
  if (x1 <= x0) return y0;
  const double t = (std::log(x) - std::log(x0)) / (std::log(x1) - std::log(x0));
  return y0 + t * (y1 - y0);
}

}  // namespace tagcsim::sim
