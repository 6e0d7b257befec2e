// NCCL collectives as the simulator sees them.
//
// A collective over a group of GPUs is planned the way NCCL runs it: its tuner's cost model (NCCL
// src/graph/tuning.cc: a base latency per algorithm and protocol, per-hop latencies by link type,
// a bandwidth fraction per protocol) picks the algorithm (ring, tree, NVLS, NVLS tree), the
// protocol (LL, LL128, Simple) and the channels (fewer at small sizes, as NCCL's enqueue does), and
// the same model, fed with the cluster's achievable link rates, gives the time:
//   - the bytes each node pushes into the fabric through the rails its GPUs use (one flow per ring
//     hop between nodes and rail: SimGrid shares the links between concurrent flows),
//   - the bytes each GPU pushes over NVLink (analytic: NVLink is private to the node),
//   - a latency term: launch + base + steps x per-hop latency (+ the transport's per-message cost
//     on network steps) + pipeline fill (NCCL's chunk sizes).
// The time is max(network, NVLink) + latency: a pipelined algorithm runs at its slowest link.
#pragma once

#include "topologies/cluster.hpp"

#include <string>

namespace tagcsim::sim {

// AllToAll: S/R bytes from every rank to every other (nccl-tests' alltoall_perf, S its buffer).
enum class CollectiveOp { AllGather, ReduceScatter, AllReduce, Reduce, Broadcast, AllToAll };
// Reduce and broadcast run as a chain along the ring: S on each hop but the one at the root.
inline bool is_chain(CollectiveOp op) { return op == CollectiveOp::Reduce || op == CollectiveOp::Broadcast; }
enum class Algorithm { Auto, Ring, Tree, Nvls, NvlsTree, Pat, P2p };  // P2p: all-to-all's sends and receives
enum class Protocol { Auto, LL, LL128, Simple };
const char* to_string(CollectiveOp op);
const char* to_string(Algorithm a);
const char* to_string(Protocol p);
CollectiveOp parse_collective_op(const std::string& text);  // InputError on unknown
Algorithm parse_algorithm(const std::string& text);          // auto, ring, tree, nvls, nvls_tree
Protocol parse_protocol(const std::string& text);            // auto, ll, ll128, simple

// Which GPUs take part. Groups tile the cluster: `count` identical groups run
// the same collective at the same time (HSDP: every shard group at once).
// Group j holds nodes first_node(j) + k * node_stride for k < nodes.
struct Group {
  int nodes = 1;           // nodes in one group
  int gpus_per_node = 1;   // GPUs of each node in the group
  int node_stride = 1;     // 1: consecutive nodes; m: every m-th node (HSDP replicas)
  int count = 1;           // concurrent groups
  int first_gpu = 0;       // local index of the group's first GPU on each node (which rails it uses)
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
  double node_egress_bytes = 0;   // bytes each node sends to its successor on the wire (0 inside one node), on
                                  // average, for all its concurrent groups; LL's flags and LL128's included
  double nvlink_bytes = 0;        // bytes each GPU sends over NVLink
  double network_seconds = 0;     // the network's time without contention: node_egress_bytes at the rate of
                                  // the rails used and the channels running, or S at that rate for a chain
                                  // (reduce, broadcast), whose links take turns
  double nvlink_seconds = 0;
  double latency_seconds = 0;     // launch + base + steps x hop latency + fill_seconds
  int steps = 0;
  // What NCCL picked, and why the time is what it is.
  Protocol protocol = Protocol::Simple;
  int channels = 0;               // channels running (NCCL lowers them at small sizes)
  int max_channels = 0;           // channels the communicator has
  int rails = 0;                  // NIC rails each node's traffic for this collective goes through
  double chunk_bytes = 0;         // per channel and pipeline step
  double fill_seconds = 0;        // pipeline fill, part of latency_seconds
  bool ll128_left_out = false;    // LL128 was allowed but left out: a multi-node all-gather or reduce-scatter
  bool ll128_off = false;         // NCCL does not enable LL128 here by default: socket NICs or PCIe between GPUs
  int tuner_rule = -1;            // the cluster's tuner rule that chose (index in nccl.tuner_rules); -1: NCCL did
  // bytes/s a node's channels offer its NICs where that is less than the NICs take (the channels bind:
  // collectives.net_channel_rate); 0 where the NICs bind, or inside one node.
  double channel_bound_rate = 0;
  // The time NCCL's tuner sees, by which it chose: seconds() less what it leaves out (Simple's slice
  // flags, LL128's real NVLink rate). They differ where the tuner is optimistic.
  double tuner_seconds = 0;
  double seconds() const;         // max(network, nvlink) + latency, without contention
  // nccl-tests conventions: algbw = S / t, busbw = algbw * factor(op, ranks).
  double algbw(double t) const;
  double busbw(double t) const;
};
double bus_factor(CollectiveOp op, int ranks);

// How a caller wants the choice made. Explicit choices override the cluster's `nccl:` pins.
struct PlanOptions {
  Algorithm algorithm = Algorithm::Auto;
  Protocol protocol = Protocol::Auto;
  int gpus_per_process = 1;       // nccl-tests -g k: one CPU thread launches k GPUs' kernels
};

CollectivePlan plan_collective(const topologies::Cluster& c, CollectiveOp op, double bytes, const Group& g,
                               Algorithm algorithm = Algorithm::Auto);
CollectivePlan plan_collective(const topologies::Cluster& c, CollectiveOp op, double bytes, const Group& g,
                               const PlanOptions& options);

}  // namespace tagcsim::sim
