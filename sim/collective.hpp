// NCCL collectives as the simulator sees them.
//
// A collective over a group of GPUs is split, the way NCCL runs it on a
// cluster of NVLink nodes joined by NICs, into
//   - the bytes each node pushes into the fabric (one flow per ring hop
//     between nodes: SimGrid shares the links between concurrent flows),
//   - the bytes each GPU pushes over NVLink (analytic: NVLink is private to
//     the node and has ~9x the headroom of the NICs),
//   - a latency term: per-step latency times the number of steps.
// The time is max(network, NVLink) + latency: a ring is a pipeline, so its
// slowest hop sets the pace.
#pragma once

#include "topologies/cluster.hpp"

#include <string>

namespace tagcsim::sim {

enum class CollectiveOp { AllGather, ReduceScatter, AllReduce, Reduce, Broadcast };
enum class Algorithm { Auto, Ring, Tree };
const char* to_string(CollectiveOp op);
const char* to_string(Algorithm a);
CollectiveOp parse_collective_op(const std::string& text);  // InputError on unknown
Algorithm parse_algorithm(const std::string& text);

// Which GPUs take part. Groups tile the cluster: `count` identical groups run
// the same collective at the same time (HSDP: every shard group at once).
// Group j holds nodes first_node(j) + k * node_stride for k < nodes.
struct Group {
  int nodes = 1;           // nodes in one group
  int gpus_per_node = 1;   // GPUs of each node in the group
  int node_stride = 1;     // 1: consecutive nodes; m: every m-th node (HSDP replicas)
  int count = 1;           // concurrent groups
  int ranks() const { return nodes * gpus_per_node; }
};
// The whole cluster as one group (FULL_SHARD).
Group whole_cluster(const topologies::Cluster& c);

// The analytic decomposition of one collective.
struct CollectivePlan {
  CollectiveOp op = CollectiveOp::AllGather;
  Algorithm algorithm = Algorithm::Ring;
  double bytes = 0;               // S: full buffer (all-gather output, reduce-scatter input)
  Group group;
  double node_egress_bytes = 0;   // bytes each node sends to its successor (0 inside one node), on average
  double nvlink_bytes = 0;        // bytes each GPU sends over NVLink
  double network_seconds = 0;     // the network's time without contention: node_egress_bytes at the NICs'
                                  // rate, or S at that rate for a chain (reduce, broadcast), whose links
                                  // take turns
  double nvlink_seconds = 0;
  double latency_seconds = 0;     // launch + steps * step latency
  int steps = 0;
  double seconds() const;         // max(network, nvlink) + latency, without contention
  // nccl-tests conventions: algbw = S / t, busbw = algbw * factor(op, ranks).
  double algbw(double t) const;
  double busbw(double t) const;
};
double bus_factor(CollectiveOp op, int ranks);

CollectivePlan plan_collective(const topologies::Cluster& c, CollectiveOp op, double bytes, const Group& g,
                               Algorithm algorithm = Algorithm::Auto);

}  // namespace tagcsim::sim
