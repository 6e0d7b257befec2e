// NCCL's choice of algorithm and protocol for one collective, with the cluster's link rates: the
// candidates (sim/collective_candidates.cpp) are costed the way NCCL's tuner costs them (sim/nccl_tuning.hpp
// holds its constants), and the cheapest is replayed. The names, the whole-cluster group and bus
// bandwidth are in collective_names.cpp.
#include "sim/collective.hpp"

#include "sim/collective_candidates.hpp"
#include "sim/nccl_channels.hpp"
#include "sim/nccl_tuning.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace tagcsim::sim {
namespace {

using namespace nccl_tuning;
using namespace candidates;

// NCCL's compute-capability index.
int generation(int sm) { return sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0; }

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

unsigned algo_bit(int a) {
  using P = topologies::NcclPins;
  return a == kRing ? P::Ring : a == kTree ? P::Tree : a == kNvls ? P::Nvls : a == kNvlsTree ? P::NvlsTree : P::Pat;
}
unsigned proto_bit(int p) {
  using P = topologies::NcclPins;
  return p == kLL ? P::LL : p == kLL128 ? P::LL128 : P::Simple;
}
Algorithm algorithm_of(int a) {
  return a == kRing ? Algorithm::Ring : a == kTree ? Algorithm::Tree : a == kNvls ? Algorithm::Nvls
                                                   : a == kNvlsTree ? Algorithm::NvlsTree
                                                                    : Algorithm::Pat;
}
Protocol protocol_of(int p) { return p == kLL ? Protocol::LL : p == kLL128 ? Protocol::LL128 : Protocol::Simple; }
int algo_of_pin(unsigned bit) {
  using P = topologies::NcclPins;
  return bit == P::Ring ? kRing : bit == P::Tree ? kTree : bit == P::Nvls ? kNvls : bit == P::NvlsTree ? kNvlsTree : kPat;
}

// The first of a tuner plugin's rules that matches the collective (its type, NCCL's nBytes: the full
// buffer, the communicator's nodes and ranks) and that `allowed` lets run; -1 when none does. All-to-all
// is point to point: NCCL asks no tuner about it.
template <class Allowed>
int matching_tuner_rule(const std::vector<topologies::NcclTunerRule>& rules, CollectiveOp op, double bytes, int nodes,
                        int ranks, Allowed allowed) {
  if (rules.empty() || op == CollectiveOp::AllToAll) return -1;
  std::string word = to_string(op);  // NCCL's plugin spells them without the underscore: allgather
  std::erase(word, '_');
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const auto& r = rules[i];
    if (r.never || r.op != word || bytes < r.min_bytes || bytes > r.max_bytes) continue;
    if ((r.nodes != -1 && r.nodes != nodes) || (r.ranks != -1 && r.ranks != ranks)) continue;
    if (allowed(r.algo, r.proto)) return int(i);
  }
  return -1;
}

}  // namespace

CollectivePlan plan_collective(const topologies::Cluster& c, CollectiveOp op, double bytes, const Group& g,
                               Algorithm algorithm) {
  return plan_collective(c, op, bytes, g, PlanOptions{.algorithm = algorithm});
}

CollectivePlan plan_collective(const topologies::Cluster& c, CollectiveOp op, double bytes, const Group& g,
                               const PlanOptions& options) {
  const int R = g.ranks();
  if (R <= 1) {  // nothing to exchange; NCCL still launches a kernel
    CollectivePlan p;
    p.op = op;
    p.bytes = bytes;
    p.group = g;
    p.latency_seconds = c.collectives.launch_latency;
    if (op == CollectiveOp::AllToAll) p.algorithm = Algorithm::P2p;
    return p;
  }
  const int n = g.nodes, k = g.gpus_per_node;
  // Each node takes part in `lanes` groups at once (HSDP replica rings: one per local GPU); their
  // GPUs sit on the rails they are wired to.
  const double lanes = std::max(1.0, double(g.count) * n / c.nodes);
  const int gpus_used = int(std::min<double>(c.gpus_per_node, lanes * k));
  const int rails = c.rails_of_gpus(g.first_gpu, gpus_used);
  const auto& cl = c.collectives;
  const int gen = tuning_generation(generation(c.gpu.sm), c.nccl.version);
  Ctx x{.c = c,
        .op = op,
        .S = bytes,
        .g = g,
        .n = n,
        .k = k,
        .R = R,
        .lanes = lanes,
        // A group of a node's GPUs on a mesh has only the links among them, and no switch for NVLS.
        .nvl_rate = c.intra.group_bandwidth(k, c.gpus_per_node) * c.intra.efficiency,
        .nvls_rate = c.intra.mesh() ? 0.0 : c.intra.bandwidth * c.intra.nvls_efficiency,
        .nvls_tree_rate = c.intra.mesh() ? 0.0 : c.intra.bandwidth * c.intra.nvls_tree_rate_fraction(),
        .net_rate = rails * c.rail_bandwidth(),
        .rails = rails,
        .nvlink = c.intra.kind != "pcie",
        .gen = gen,
        .nch = communicator_channels(c, n, k, rails),
        .fixed_channels = false,
        .nvls_ch = c.gpu.sm >= 100 ? (n > 1 ? 32 : 24) : 16,
        .scale = cl.latency_scale,
        // NCCL's per-hop latencies already hold a link and a switch; the fabric adds the switches
        // beyond the first (leaf to spine and back). Without NCCL's table the links' own latencies
        // are the hops'.
        .alpha_intra_extra = cl.step_latency_intra + (cl.latency_scale > 0 ? 0.0 : c.intra.latency),
        .alpha_inter_extra = cl.step_latency_inter + (cl.latency_scale > 0 ? 0.0 : c.nics.latency) +
                             (switch_hops(c, g) - (cl.latency_scale > 0 ? 1 : 0)) * c.fabric.switch_latency,
        .generation_step = cl.latency_scale > 0 ? c.intra.step_latency : 0.0,
        .transport = c.nics.transport.latency,
        .net_overhead = (cl.latency_scale > 0 ? net_overhead_us(c.host_cpu) * us : 0.0) + c.nics.transport.overhead,
        .gpus_per_process = std::max(1, options.gpus_per_process),
        .table = &nccl_table(c.nccl.version),
        .per_channel = &per_channel_ceilings(gen, c.nccl.version),
        .ll_max = 0};
  x.ll_max = (n == 1 ? x.table->ll_one_node[x.gen]
                     : (c.host_cpu == topologies::HostCpu::Amd ? kLlMaxNetAmd : kLlMaxNetIntel)[n > 2 ? 1 : 0]) *
             GBps;

  // What may run: the caller's choice, else the cluster's pins (NCCL_ALGO / NCCL_PROTO).
  unsigned algos = options.algorithm != Algorithm::Auto
                       ? algo_bit(options.algorithm == Algorithm::Ring       ? kRing
                                  : options.algorithm == Algorithm::Tree     ? kTree
                                  : options.algorithm == Algorithm::Nvls     ? kNvls
                                  : options.algorithm == Algorithm::NvlsTree ? kNvlsTree
                                                                             : kPat)
                       : (c.nccl.algos ? c.nccl.algos : topologies::NcclPins::kAllAlgos);
  unsigned protos =
      options.protocol != Protocol::Auto
          ? proto_bit(options.protocol == Protocol::LL ? kLL : options.protocol == Protocol::LL128 ? kLL128 : kSimple)
          : (c.nccl.protos ? c.nccl.protos : 7u);
  // NCCL enables LL128 by default only where NVIDIA tested it (tuning.cc): a node's GPUs joined by
  // NVLink (typeIntra <= PATH_NVB) and NICs beside the GPUs (typeInter <= PATH_PXB, PXN from Hopper).
  // A socket transport's NIC hangs off the host; PCIe GPUs reach each other through it. NCCL_PROTO
  // naming LL128 turns it on anyway.
  const bool ll128_off = c.nccl.protos == 0 && options.protocol == Protocol::Auto &&
                         ((n > 1 && c.nics.transport.kind == "socket") || (k > 1 && !x.nvlink));
  if (ll128_off) protos &= ~proto_bit(kLL128);
  // Measured, not in NCCL's tuner: on Hopper and Blackwell, all-gathers and reduce-scatters across
  // nodes run at Simple's speed where the tuner would pick LL128; A100 nodes run the tuner's LL128
  // (docs/calibration.md). Unless LL128 is pinned alone.
  const bool gather_or_scatter = op == CollectiveOp::AllGather || op == CollectiveOp::ReduceScatter;
  const bool ll128_left_out = gather_or_scatter && n > 1 && c.gpu.sm >= 90 && (protos & proto_bit(kLL128)) &&
                              (protos & ~proto_bit(kLL128));
  if (ll128_left_out) protos &= ~proto_bit(kLL128);
  const unsigned nccl_protos = protos | (ll128_left_out ? proto_bit(kLL128) : 0u);  // what NCCL lets a tuner pick
  const bool allreduce = op == CollectiveOp::AllReduce;
  const bool has_nvls = x.nvls_rate > 0 && x.nvlink && k > 1;
  auto runs = [&](int a) {
    switch (a) {
      case kRing: return true;
      case kTree: return allreduce && n > 1;
      case kNvls:  // one node; all-gather/reduce-scatter only where NCCL allows NVLS for them
        return has_nvls && n == 1 &&
               (allreduce || op == CollectiveOp::AllGather || op == CollectiveOp::ReduceScatter);
      case kNvlsTree: return has_nvls && n > 1 && allreduce;
      case kPat:  // one GPU a node, from 2.23, on a host network device (tuning.cc, ncclPatEnable); its
                  // cost is NCCL's table's, so not where the links' own latencies stand in for it
        return gather_or_scatter && k == 1 && n > 1 && cl.latency_scale > 0 &&
               (c.nccl.version == 0 || c.nccl.version >= kPatSince) &&
               c.nics.transport.kind != "tcpx" && c.nics.transport.kind != "tcpxo";
    }
    return false;
  };
  // An algorithm that cannot run this collective (tree for an all-gather) leaves it to the ring,
  // where NCCL would refuse to run.
  bool any = false;
  for (int a = 0; a < 5; ++a) any = any || ((algos & algo_bit(a)) && runs(a));
  if (!any) algos = algo_bit(kRing);

  // A tuner plugin's rules come before NCCL's choice: the first that matches this collective and may
  // run here (its algorithm and protocol allowed, as NCCL marks the others IGNORE) picks both, and its
  // channels replace NCCL's count. An explicit choice of the caller's wins over them.
  int tuner_rule = -1;
  if (options.algorithm == Algorithm::Auto && options.protocol == Protocol::Auto)
    tuner_rule = matching_tuner_rule(c.nccl.tuner_rules, op, bytes, n, R, [&](unsigned algo_pin, unsigned proto_pin) {
      const int a = algo_of_pin(algo_pin);
      const bool simple_only = a == kNvls || a == kNvlsTree || a == kPat;
      return (algos & algo_pin) && (nccl_protos & proto_pin) && runs(a) &&
             (!simple_only || proto_pin == topologies::NcclPins::Simple);
    });
  if (tuner_rule >= 0) {
    const auto& rule = c.nccl.tuner_rules[tuner_rule];
    algos = rule.algo;
    // An all-gather or reduce-scatter across Hopper or Blackwell nodes runs LL128 at Simple's speed (above).
    protos = ll128_left_out && rule.proto == topologies::NcclPins::LL128 ? proto_bit(kSimple) : rule.proto;
    if (rule.channels > 0) x.nch = rule.channels, x.fixed_channels = true;
  }

  if (op == CollectiveOp::AllToAll) {  // point to point: NCCL_ALGO does not apply
    const Candidate cand = all_to_all(x, protos & proto_bit(kLL));
    CollectivePlan p = cand.plan;
    p.op = op;
    p.bytes = bytes;
    p.group = g;
    p.algorithm = Algorithm::P2p;
    p.protocol = protocol_of(cand.p);
    p.max_channels = x.nch;
    p.rails = n > 1 ? rails : 0;
    return p;
  }
  Candidate best;
  for (int a = 0; a < 5; ++a) {
    if (!(algos & algo_bit(a)) || !runs(a)) continue;
    if (a == kPat) {
      if (!(protos & proto_bit(kSimple))) continue;  // PAT runs Simple only
      if (const auto cand = pat(x); cand.tuned < best.tuned) best = cand;
      continue;
    }
    if (a == kNvls || a == kNvlsTree) {
      if (!(protos & proto_bit(kSimple))) continue;  // NVLS runs Simple only
      const auto cand = nvls(x, a == kNvlsTree);
      if (cand.tuned < best.tuned) best = cand;
      continue;
    }
    for (int p = 0; p < 3; ++p) {
      if (!(protos & proto_bit(p))) continue;
      const auto cand = a == kRing ? ring(x, p) : tree(x, p);
      if (cand.tuned < best.tuned) best = cand;
    }
  }
  if (!std::isfinite(best.tuned)) best = ring(x, kSimple);  // pins that exclude everything that runs here
  CollectivePlan p = best.plan;
  p.op = op;
  p.bytes = bytes;
  p.group = g;
  p.algorithm = algorithm_of(best.a);
  p.protocol = protocol_of(best.p);
  p.max_channels = best.a == kNvls || best.a == kNvlsTree ? x.nvls_ch : x.nch;
  p.rails = n > 1 ? rails : 0;
  p.ll128_left_out = ll128_left_out;
  p.ll128_off = ll128_off;
  p.tuner_rule = tuner_rule;
  return p;
}

}  // namespace tagcsim::sim
