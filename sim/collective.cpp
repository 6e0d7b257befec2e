#include "sim/collective.hpp"

#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tagcsim::sim {

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllGather: return "all_gather";
    case CollectiveOp::ReduceScatter: return "reduce_scatter";
    case CollectiveOp::AllReduce: return "all_reduce";
    case CollectiveOp::Reduce: return "reduce";
    case CollectiveOp::Broadcast: return "broadcast";
  }
  return "?";
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::Auto: return "auto";
    case Algorithm::Ring: return "ring";
    case Algorithm::Tree: return "tree";
  }
  return "?";
}

CollectiveOp parse_collective_op(const std::string& text) {
  for (auto op : {CollectiveOp::AllGather, CollectiveOp::ReduceScatter, CollectiveOp::AllReduce,
                  CollectiveOp::Reduce, CollectiveOp::Broadcast})
    if (text == to_string(op)) return op;
  throw InputError(fmt::format(
      "--op: expected one of all_gather, reduce_scatter, all_reduce, reduce, broadcast; got '{}'", text));
}

Algorithm parse_algorithm(const std::string& text) {
  for (auto a : {Algorithm::Auto, Algorithm::Ring, Algorithm::Tree})
    if (text == to_string(a)) return a;
  throw InputError(fmt::format("--algorithm: expected one of auto, ring, tree; got '{}'", text));
}

Group whole_cluster(const topologies::Cluster& c) {
  return Group{.nodes = c.nodes, .gpus_per_node = c.gpus_per_node, .node_stride = 1, .count = 1};
}

double bus_factor(CollectiveOp op, int ranks) {
  // nccl-tests' PERFORMANCE.md: busbw = algbw * factor, so that busbw is
  // comparable to the hardware's link bandwidth whatever the rank count.
  const double n = ranks;
  switch (op) {
    case CollectiveOp::AllReduce: return 2 * (n - 1) / n;
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter: return (n - 1) / n;
    case CollectiveOp::Reduce:
    case CollectiveOp::Broadcast: return 1;
  }
  return 1;
}

double CollectivePlan::seconds() const { return std::max(network_seconds, nvlink_seconds) + latency_seconds; }
double CollectivePlan::algbw(double t) const { return t > 0 ? bytes / t : 0; }
double CollectivePlan::busbw(double t) const { return algbw(t) * bus_factor(op, group.ranks()); }

namespace {

// Switches a packet crosses between two nodes of the group, on average.
int switch_hops(const topologies::Cluster& c, const Group& g) {
  using K = topologies::Fabric::Kind;
  const int span = (g.nodes - 1) * g.node_stride + 1;  // nodes the group spreads over
  const int leaf = c.fabric.nodes_per_leaf > 0 ? c.fabric.nodes_per_leaf : c.nodes;
  if (c.fabric.kind == K::SingleSwitch || (span <= leaf && g.node_stride == 1)) return 1;
  if (c.fabric.kind == K::FatTree2) return 3;
  const int pod = leaf * std::max(1, c.fabric.leaves_per_pod);
  return span <= pod ? 3 : 5;
}

}  // namespace

CollectivePlan plan_collective(const topologies::Cluster& c, CollectiveOp op, double bytes, const Group& g,
                               Algorithm algorithm) {
  CollectivePlan p;
  p.op = op;
  p.bytes = bytes;
  p.group = g;
  const int R = g.ranks();
  const int n = g.nodes;
  const int gpn = g.gpus_per_node;
  if (R <= 1) {  // nothing to exchange; NCCL still launches a kernel
    p.algorithm = Algorithm::Ring;
    p.latency_seconds = c.collectives.launch_latency;
    return p;
  }
  // Each node takes part in `lanes` groups at once (HSDP replica rings: one per local GPU).
  const double lanes = std::max(1.0, double(g.count) * n / c.nodes);
  const double net_rate = c.node_injection_bandwidth();
  const double nvl_rate = c.intra.bandwidth * c.intra.efficiency;
  const double alpha_intra = c.collectives.step_latency_intra + c.intra.latency;
  const double alpha_inter =
      c.collectives.step_latency_inter + c.nics.latency + switch_hops(c, g) * c.fabric.switch_latency;
  // Share of a GPU's ring traffic that stays on NVLink: all of it inside one
  // node; (g-1)/g of it when the ring leaves the node once per channel.
  const double nvl_share = n == 1 ? 1.0 : double(gpn - 1) / gpn;
  const double ring = double(R - 1) / R;

  auto ring_plan = [&](double per_link, int steps, int inter_steps) {
    p.algorithm = Algorithm::Ring;
    p.node_egress_bytes = n > 1 ? lanes * per_link : 0;
    p.nvlink_bytes = per_link * nvl_share;
    p.steps = steps;
    // NCCL's tuning model: steps that cross nodes pay the network latency,
    // the others NVLink's.
    p.latency_seconds = c.collectives.launch_latency + (steps - inter_steps) * alpha_intra + inter_steps * alpha_inter;
  };

  switch (op) {
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
      ring_plan(ring * bytes, R - 1, n - 1);
      break;
    case CollectiveOp::Reduce:
    case CollectiveOp::Broadcast:
      // A pipelined chain through every rank: each of its links carries the
      // whole buffer once, so it takes S/B, but the chain has n-1 links
      // between nodes, not n: the fabric carries (n-1)/n * S per node.
      ring_plan(bytes, R - 1, n - 1);
      p.network_seconds = p.node_egress_bytes / net_rate;
      p.nvlink_seconds = p.nvlink_bytes / nvl_rate;
      p.node_egress_bytes *= double(n - 1) / n;
      return p;
    case CollectiveOp::AllReduce: {
      // NCCL counts 2n network steps for a ring all-reduce across n nodes; with
      // one GPU per node that exceeds the 2(R-1) steps there are.
      ring_plan(2 * ring * bytes, 2 * (R - 1), n > 1 ? std::min(2 * n, 2 * (R - 1)) : 0);
      CollectivePlan as_ring = p;
      as_ring.network_seconds = as_ring.node_egress_bytes / net_rate;
      as_ring.nvlink_seconds = as_ring.nvlink_bytes / nvl_rate;
      // Double binary tree between nodes, chains inside them. Each of the two
      // trees carries S/2 up and S/2 down each of its n-1 edges, so a node
      // sends 2(n-1)/n * S on average (S at 2 nodes, where the ring sends
      // ~2S), in only 2 log2(nodes) network steps.
      CollectivePlan as_tree = p;
      as_tree.algorithm = Algorithm::Tree;
      as_tree.node_egress_bytes = n > 1 ? lanes * 2.0 * (n - 1) / n * bytes : 0;
      as_tree.nvlink_bytes = gpn > 1 ? 2 * bytes : 0;
      const int levels = n > 1 ? int(std::ceil(std::log2(double(n)))) : 0;
      as_tree.steps = 2 * (gpn - 1) + 2 * levels;
      as_tree.latency_seconds =
          c.collectives.launch_latency + 2 * (gpn - 1) * alpha_intra + 2 * levels * alpha_inter;
      as_tree.network_seconds = as_tree.node_egress_bytes / net_rate;
      as_tree.nvlink_seconds = as_tree.nvlink_bytes / nvl_rate;
      const bool tree = algorithm == Algorithm::Tree ||
                        (algorithm == Algorithm::Auto && n > 1 && as_tree.seconds() < as_ring.seconds());
      return tree ? as_tree : as_ring;
    }
  }
  p.network_seconds = p.node_egress_bytes / net_rate;
  p.nvlink_seconds = p.nvlink_bytes / nvl_rate;
  return p;
}

}  // namespace tagcsim::sim
