// The collectives' vocabulary: names as the command line and reports spell them, the whole
// cluster as a group, nccl-tests' bus bandwidth, and a plan's time. The planning itself (NCCL's
// tuner model) is in collective.cpp.
#include "sim/collective.hpp"

#include "common/input.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>

namespace tagcsim::sim {

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllGather: return "all_gather";
    case CollectiveOp::ReduceScatter: return "reduce_scatter";
    case CollectiveOp::AllReduce: return "all_reduce";
    case CollectiveOp::Reduce: return "reduce";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::AllToAll: return "alltoall";
  }
  return "?";
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::Auto: return "auto";
    case Algorithm::Ring: return "ring";
    case Algorithm::Tree: return "tree";
    case Algorithm::Nvls: return "nvls";
    case Algorithm::NvlsTree: return "nvls_tree";
    case Algorithm::Pat: return "pat";
    case Algorithm::P2p: return "p2p";
  }
  return "?";
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::Auto: return "auto";
    case Protocol::LL: return "LL";
    case Protocol::LL128: return "LL128";
    case Protocol::Simple: return "Simple";
  }
  return "?";
}

CollectiveOp parse_collective_op(const std::string& text) {
  for (auto op : {CollectiveOp::AllGather, CollectiveOp::ReduceScatter, CollectiveOp::AllReduce,
                  CollectiveOp::Reduce, CollectiveOp::Broadcast, CollectiveOp::AllToAll})
    if (text == to_string(op)) return op;
  throw InputError(fmt::format(
      "--op: expected one of all_gather, reduce_scatter, all_reduce, reduce, broadcast, alltoall; got '{}'", text));
}

Algorithm parse_algorithm(const std::string& text) {
  if (text == "auto") return Algorithm::Auto;
  switch (topologies::parse_nccl_algo(text)) {
    case topologies::NcclPins::Ring: return Algorithm::Ring;
    case topologies::NcclPins::Tree: return Algorithm::Tree;
    case topologies::NcclPins::Nvls: return Algorithm::Nvls;
    case topologies::NcclPins::NvlsTree: return Algorithm::NvlsTree;
    case topologies::NcclPins::Pat: return Algorithm::Pat;
  }
  throw InputError(fmt::format("--algorithm: expected one of auto, {}; got '{}'",
                               fmt::join(topologies::nccl_words(~0u, topologies::kNcclAlgoWords), ", "), text));
}

Protocol parse_protocol(const std::string& text) {
  if (text == "auto") return Protocol::Auto;
  switch (topologies::parse_nccl_proto(text)) {
    case topologies::NcclPins::LL: return Protocol::LL;
    case topologies::NcclPins::LL128: return Protocol::LL128;
    case topologies::NcclPins::Simple: return Protocol::Simple;
  }
  throw InputError(fmt::format("--protocol: expected one of auto, {}; got '{}'",
                               fmt::join(topologies::nccl_words(~0u, topologies::kNcclProtoWords), ", "), text));
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
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllToAll: return (n - 1) / n;
    case CollectiveOp::Reduce:
    case CollectiveOp::Broadcast: return 1;
  }
  return 1;
}

double CollectivePlan::seconds() const { return std::max(network_seconds, nvlink_seconds) + latency_seconds; }
double CollectivePlan::algbw(double t) const { return t > 0 ? bytes / t : 0; }
double CollectivePlan::busbw(double t) const { return algbw(t) * bus_factor(op, group.ranks()); }

}  // namespace tagcsim::sim
