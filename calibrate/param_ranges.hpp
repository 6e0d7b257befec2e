// What the fit needs to know about each parameter: its typical range, physical bounds and, when
// starting from the priors, how tightly it is held to them. Private to calibrate/.
#pragma once

#include "calibrate/fit.hpp"

namespace tagcsim::calibrate {

inline Param param(int j) { return static_cast<Param>(j); }
bool is_latency(Param p);
bool is_efficiency(Param p);
bool ceiling(Param p);  // a rate the model caps at: it moves nothing until it binds

// Typical range (the unit the fit moves in) and physical bounds.
struct Range {
  double scale, lo, hi;
};
Range range(Param p);

// Width of the pull toward the starting value (0: none).
double prior_sigma(Param p);

}  // namespace tagcsim::calibrate
