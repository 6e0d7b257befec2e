// Data-parallel symmetry: replaying a few leaves instead of the whole cluster.
//
// Every node runs every collective of an FSDP step, and each collective's
// flows form rings laid out the same way in every leaf (or pod). So the
// per-link loads, and with them every flow's max-min share, are the same in
// a cluster cut down to the smallest whole number of leaves that still holds
// one period of every ring pattern (two leaves when rings cross leaves, so
// that each leaf still sends and receives across its uplink; two stand for
// any number, odd ones included, since each leaf of such a ring sends one hop
// out and takes one in however many there are). The bytes and
// latencies of each collective stay those of the full cluster; only the
// number of identical flows shrinks. Where the layout is not periodic (a
// shard group straddling leaves unevenly) the full cluster is replayed.
//
// A reduce or broadcast leaves one hop of its ring idle, the one at its root,
// and the root rotates (sim/replay.cpp): that pattern is not periodic, so a
// ring of such chains spanning the cluster is never cut down. Rings of more
// than kRotatingChainNodes nodes spread each chain over all hops instead
// ((n-1)/n of S on each): there the idle hop is under 1/16 of the load, while
// rotating it costs n rounds of n-1 flows per phase and the whole cluster.
#pragma once

#include "sim/schedule.hpp"

namespace tagcsim::sim {

constexpr int kRotatingChainNodes = 16;

// Whether a phase of this plan is replayed as chains whose idle hop rotates with the root.
bool rotating_chain(const CollectivePlan& plan);

// Nodes of the cut-down cluster, or cluster.nodes when no cut is exact.
int symmetric_nodes(const Schedule& schedule, const topologies::Cluster& cluster);

// The cluster to build for `nodes` (same leaves and links, fewer of them).
topologies::Cluster reduced_cluster(const topologies::Cluster& cluster, int nodes);

// How a phase's group looks in the cut-down cluster: its number of nodes.
// Groups spanning the whole cluster shrink with it; groups tiling it keep their size.
int reduced_group_nodes(const Group& g, int full_nodes, int reduced_nodes);

}  // namespace tagcsim::sim
