// How many channels (thread blocks, rings) NCCL gives a communicator, as its graph search and
// setup decide them (NVIDIA/nccl src/graph/search.cc, src/graph/connect.cc). Inside sim/ only.
#pragma once

#include "topologies/cluster.hpp"

namespace tagcsim::sim {

// The channels of a communicator of `n` nodes with `k` GPUs each that reach the network through
// `rails` rails; a cluster's `nccl: {channels}` pin wins.
int communicator_channels(const topologies::Cluster& c, int n, int k, int rails);

}  // namespace tagcsim::sim
