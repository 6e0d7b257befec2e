#include "topologies/stragglers.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tagcsim::topologies {

double expected_max_of_normals(int n) {
  if (n <= 1) return 0;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx, by Simpson's rule on [-10, 10]: the density
  // is below 1e-20 outside it for every n an int holds. Phi^(n-1) as exp((n-1) log Phi), with
  // log Phi from erfc so that it keeps its digits where Phi is close to 1.
  const double lo = -10, hi = 10;
  const int steps = 20000;  // even
  const double h = (hi - lo) / steps;
  auto f = [n](double x) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    const double log_cdf = std::log1p(-0.5 * std::erfc(x / std::sqrt(2.0)));
    return x * n * phi * std::exp((n - 1) * log_cdf);
  };
  double sum = f(lo) + f(hi);
  for (int i = 1; i < steps; ++i) sum += (i % 2 ? 4 : 2) * f(lo + i * h);
  return sum * h / 3;
}

double slowest_gpu_speed(const Stragglers& s, int gpus) {
  if (s.slowest > 0) return s.slowest;
  if (s.spread > 0) return 1 - s.spread * expected_max_of_normals(gpus);
  return 1;
}

Stragglers load_stragglers(const Input& in) {
  in.expect_keys({"spread", "slowest"});
  Stragglers s;
  const auto spread = in.find("spread"), slowest = in.find("slowest");
  if (spread && slowest)
    slowest->fail("give stragglers.spread (speeds spread over the GPUs) or stragglers.slowest (one slow GPU), not both");
  if (!spread && !slowest) in.fail("expected spread (e.g. 0.02: speeds spread by 2%) or slowest (e.g. 0.9)");
  if (spread) {
    s.spread = spread->as_fraction();
    if (s.spread >= 0.5) spread->fail(fmt::format("expected a spread below 0.5 (one standard deviation of the GPUs' "
                                                  "speeds, 0.02 for 2%), got {}", s.spread));
  }
  if (slowest) {
    s.slowest = slowest->as_fraction();
    if (s.slowest < 0.1)
      slowest->fail(fmt::format("expected the slowest GPU's speed relative to the others in [0.1, 1], got {}",
                                s.slowest));
  }
  return s;
}

}  // namespace tagcsim::topologies
