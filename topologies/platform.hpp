// A cluster as a SimGrid platform.
//
// One SimGrid host stands for a whole node: NVLink traffic inside a node is
// accounted analytically (sim/collective.hpp), so only the links a node
// shares with others need to be simulated. Each node has one split-duplex
// link for all of its NICs, or, built per rail, one host and one link per
// rail (NIC group), so that collectives using some of a node's GPUs load only
// their GPUs' rails. Fat trees are aggregated per switch level: every leaf
// (and pod) has one uplink whose bandwidth is what its downlinks carry
// divided by the oversubscription, and the spine is a non-blocking core. A
// rail-optimized leaf is one switch per rail, each with its own uplink.
// Links carry no latency: collectives add theirs analytically, once per step.
//
// SimGrid allows one engine per process; build_platform() creates it.
#pragma once

#include "topologies/cluster.hpp"

#include <simgrid/s4u.hpp>

#include <vector>

namespace tagcsim::topologies {

struct Platform {
  int rails = 1;                                 // rails built separately (1: one link for all NICs)
  std::vector<simgrid::s4u::Host*> nodes;        // host of node i, rail r at i * rails + r
  std::vector<simgrid::s4u::Link*> nic_links;    // their NICs (split-duplex), same order
  std::vector<simgrid::s4u::Link*> leaf_uplinks; // leaf j's uplink (per rail when rail-optimized: j * rails + r)
  std::vector<simgrid::s4u::Link*> pod_uplinks;  // pod p's uplink (3-level fat trees)
  simgrid::s4u::Host* host(int node, int rail = 0) const { return nodes[std::size_t(node) * rails + rail]; }
  int node_count() const { return int(nodes.size()) / rails; }
};

// SimGrid settings that suit GPU fabrics: CM02 without TCP's latency and
// bandwidth corrections (see docs/simgrid-notes.md).
void configure_engine(simgrid::s4u::Engine& engine);

// `per_rail`: one host and NIC link per rail (cluster.rails()); otherwise one per node.
Platform build_platform(simgrid::s4u::Engine& engine, const Cluster& cluster, bool per_rail = false);

}  // namespace tagcsim::topologies
