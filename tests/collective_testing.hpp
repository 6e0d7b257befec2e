// Hand-built clusters small enough that a collective's time is a formula of their numbers (shared
// by test_collectives.cpp and test_collectives_nccl.cpp).
#pragma once

#include "topologies/cluster.hpp"

namespace tagcsim::test {

// N nodes of one GPU each behind one switch: every ring hop is a NIC hop.
inline topologies::Cluster flat_cluster(int nodes, double nic_bw, double step_latency) {
  topologies::Cluster c;
  c.name = "flat";
  c.nodes = nodes;
  c.gpus_per_node = 1;
  c.gpu.memory_bytes = 80e9;
  c.intra = {.kind = "nvswitch", .bandwidth = 450e9, .latency = 0, .efficiency = 1};
  c.nics = {.count = 1, .bandwidth = nic_bw, .latency = 0, .efficiency = 1};
  c.fabric.kind = topologies::Fabric::Kind::SingleSwitch;
  c.collectives = {.step_latency_intra = 0, .step_latency_inter = step_latency, .launch_latency = 0};
  return c;
}

// Nodes of 8 GPUs and 8 NICs of 50 GB/s, one per GPU (a DGX H100), latency-free: times are bytes / rate.
inline topologies::Cluster rail_cluster(int nodes) {
  auto c = flat_cluster(nodes, 50e9, 0);
  c.gpus_per_node = 8;
  c.nics.count = 8;
  c.intra.efficiency = 0.825;
  return c;
}

// N one-GPU nodes of B each on a two-level fat tree.
inline topologies::Cluster fat_tree(int nodes, double B, int nodes_per_leaf, double oversubscription) {
  auto c = flat_cluster(nodes, B, 0);
  c.fabric.kind = topologies::Fabric::Kind::FatTree2;
  c.fabric.nodes_per_leaf = nodes_per_leaf;
  c.fabric.oversubscription = oversubscription;
  return c;
}

}  // namespace tagcsim::test
