// A cluster as a SimGrid platform.
//
// One SimGrid host stands for a whole node: NVLink traffic inside a node is
// accounted analytically (sim/collective.hpp), so only the links a node
// shares with others need to be simulated. Each node has one split-duplex
// link for all of its NICs. Fat trees are aggregated per switch level: every
// leaf (and pod) has one uplink whose bandwidth is what its downlinks carry
// divided by the oversubscription, and the spine is a non-blocking core.
// Links carry no latency: collectives add theirs analytically, once per step.
//
// SimGrid allows one engine per process; build_platform() creates it.
#pragma once

#include "topologies/cluster.hpp"

#include <simgrid/s4u.hpp>

#include <vector>

namespace tagcsim::topologies {

struct Platform {
  std::vector<simgrid::s4u::Host*> nodes;        // node i's host
  std::vector<simgrid::s4u::Link*> nic_links;    // node i's NICs (split-duplex)
  std::vector<simgrid::s4u::Link*> leaf_uplinks; // leaf j's uplink (fat trees)
  std::vector<simgrid::s4u::Link*> pod_uplinks;  // pod p's uplink (3-level fat trees)
};

// SimGrid settings that suit GPU fabrics: CM02 without TCP's latency and
// bandwidth corrections (see docs/simgrid-notes.md).
void configure_engine(simgrid::s4u::Engine& engine);

Platform build_platform(simgrid::s4u::Engine& engine, const Cluster& cluster);

}  // namespace tagcsim::topologies
