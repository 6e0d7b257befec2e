// The symmetry cut's check (sim/symmetry.hpp), shared by test_schedule.cpp and test_policies.cpp:
// replaying the cut-down cluster ends every task when replaying all of it does, to the nanosecond,
// and moves the same bytes through each node's NICs.
#pragma once

#include "sim/replay.hpp"
#include "topologies/cluster.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

namespace tagcsim::test {

inline void check_cut_matches_full(const sim::Schedule& schedule, const topologies::Cluster& c, int cut_nodes) {
  const auto cut = sim::replay(schedule, c, true);
  const auto full = sim::replay(schedule, c, false);
  CHECK(cut.simulated_nodes == cut_nodes);
  CHECK(full.simulated_nodes == c.nodes);
  REQUIRE(cut.timings.size() == full.timings.size());
  double worst = 0;
  for (std::size_t i = 0; i < cut.timings.size(); ++i)
    worst = std::max(worst, std::abs(cut.timings[i].end - full.timings[i].end));
  CHECK(worst < 1e-9);
  CHECK(full.timings.back().end > 0.01);
  CHECK(cut.nic_bytes_per_node == doctest::Approx(full.nic_bytes_per_node).epsilon(1e-9));
}

}  // namespace tagcsim::test
