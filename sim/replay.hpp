// Replays a step's task graph on the SimGrid model of the cluster.
//
// One actor per stream stands for that stream on every rank: FSDP's ranks
// run the same graph in lock-step, so their computations need no separate
// actors. What differs between nodes is the network, so every collective's
// network phase is one flow per ring hop between nodes (one fluid phase, as
// in docs/simgrid-notes.md), and SimGrid's max-min sharing
// decides how concurrent collectives slow each other down.
//
// SimGrid allows one engine per process, so each replay runs in a forked
// child that sends back the start and end time of every task.
#pragma once

#include "sim/schedule.hpp"

#include <vector>

namespace tagcsim::sim {

struct TaskTiming {
  double start = 0;
  double end = 0;
};

struct Replay {
  std::vector<TaskTiming> timings;  // one per task of the schedule
  std::size_t flows = 0;            // SimGrid flows simulated
  int simulated_nodes = 0;          // nodes in the replayed platform (fewer under symmetry)
  // Traffic per step through each kind of link, averaged over the links of
  // that kind (the same in the cut-down cluster as in the whole one).
  double nic_bytes_per_node = 0;       // out of each node's NICs
  double uplink_bytes_per_leaf = 0;    // up each leaf switch's uplink
  double uplink_bytes_per_pod = 0;     // up each pod's uplink
  double platform_wall_s = 0;       // wall-clock cost of building the platform
  double run_wall_s = 0;            // ... and of running the simulation
};

// `exploit_symmetry`: replay the smallest equivalent cut of the cluster
// (sim/symmetry.hpp); false replays every node, for checking that it is exact.
Replay replay(const Schedule& schedule, const topologies::Cluster& cluster, bool exploit_symmetry = true);

// One collective alone on the cluster, with contention between its own flows.
double simulate_collective(const topologies::Cluster& cluster, const CollectivePlan& plan);

}  // namespace tagcsim::sim
