// NCCL's candidates for one collective: each algorithm and protocol costed the way NCCL's tuner costs
// it, on the cluster's link rates (sim/collective_candidates.cpp). sim/collective.cpp builds their
// shared context and replays the cheapest. Inside sim/ only.
#pragma once

#include "sim/collective.hpp"
#include "sim/nccl_tuning.hpp"

#include <limits>

namespace tagcsim::sim::candidates {

// Everything the candidates share.
struct Ctx {
  const topologies::Cluster& c;
  CollectiveOp op;
  double S;
  Group g;
  int n, k, R;
  double lanes;        // concurrent groups per node
  double nvl_rate;     // ring bytes/s per GPU over NVLink (or PCIe)
  double nvls_rate;    // NVLS bytes/s per GPU, 0 without NVLink SHARP
  double nvls_tree_rate;  // the same inside an NVLS tree
  double net_rate;     // bytes/s out of a node through the rails its GPUs in this collective use
  int rails;
  bool nvlink;
  int gen;             // NCCL's compute-capability index for its tables, as the release that runs has it
  int nch;             // channels of the communicator
  bool fixed_channels; // a tuner plugin set them: NCCL lowers none at small sizes
  int nvls_ch;
  double scale;        // x NCCL's latency table
  double alpha_intra_extra, alpha_inter_extra;  // per-step latencies beyond NCCL's table
  double generation_step;  // the NVLink generation's own, per step inside a node: NCCL's tuner does not see it
  double transport;    // the transport's per-message latency
  double net_overhead; // s per network step posted: NCCL's for the host CPU + the transport's own
  int gpus_per_process;
  const nccl_tuning::NcclTable* table;  // NCCL's constants of the release that runs
  const nccl_tuning::PerChannelCeilings* per_channel;  // and its per-channel ceilings for this GPU
  double ll_max;       // LL's bus bandwidth ceiling, bytes/s (one node: by GPU; across nodes: by host CPU)
};

// The group's share of NVLink and network bytes, and the time the slower takes, per algorithm.
struct Candidate {
  int a = nccl_tuning::kRing, p = nccl_tuning::kSimple;
  CollectivePlan plan;
  double tuned = std::numeric_limits<double>::infinity();  // what NCCL's tuner sees, by which it chooses
};

// Protocols are nccl_tuning's kLL, kLL128, kSimple.
Candidate ring(const Ctx& x, int protocol);
Candidate tree(const Ctx& x, int protocol);
Candidate pat(const Ctx& x);  // Simple only
Candidate nvls(const Ctx& x, bool across_nodes);
Candidate all_to_all(const Ctx& x, bool ll_allowed);

}  // namespace tagcsim::sim::candidates
