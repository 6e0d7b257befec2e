// NCCL's candidates for one collective, each costed as NCCL's tuner costs it (sim/nccl_tuning.hpp holds
// its constants) on the cluster's link rates, plus what the tuner leaves out: the ring, the double
// binary tree, PAT, NVLS and NVLS tree, and all-to-all's sends and receives. sim/collective.cpp picks.
#include "sim/collective_candidates.hpp"

#include <algorithm>
#include <cmath>

namespace tagcsim::sim::candidates {

using namespace nccl_tuning;

namespace {

int log2i(double x) { return x >= 1 ? int(std::floor(std::log2(x))) : 0; }

// A channel is one thread block: it moves ~10 GB/s of payload (NCCL's graph search gives NVLink
// rings 10-12 GB/s each), or its share of the link when that is more. `nc` channels of a link that
// delivers `full` bytes/s with every channel running reach min(full, nc x per-channel rate).
constexpr double kChannelRate = 10e9;
// A node's network traffic leaves through its groups' channels, each one thread block feeding one
// proxy at most `net_channel_rate`: `nc` channels a group cap what its NICs are offered. The plan
// records the channels' rate where they, not the NICs, bind.
double offered_net_rate(const Ctx& x, int nc, CollectivePlan& plan) {
  const double per_channel = x.c.collectives.net_channel_rate;
  const double offered = per_channel > 0 ? std::min(x.net_rate, x.lanes * nc * per_channel) : x.net_rate;
  plan.channel_bound_rate = x.n > 1 && offered < x.net_rate ? offered : 0.0;
  return offered;
}

double channel_rate(const Ctx& x, double full, int nc) {
  return std::min(full, nc * std::max(full / x.nch, kChannelRate));
}

int channels_for(const Ctx& x, int p, int a) {
  // enqueue.cc: fewer channels until each has nt x threshold bytes (LL's threshold x ranks on rings).
  const double thr = kThreadThreshold[p] * (a == kRing && p == kLL ? x.R : 1);
  int nc = x.nch;
  if (x.fixed_channels) return nc;
  while (nc > 1 && x.S < double(nc) * kThreads[p] * thr) --nc;
  return nc;
}

double intra_hop(const Ctx& x, int a, int p) {
  const double table = (x.nvlink ? x.table->nvlink : x.table->pcie)[a][p];
  double lat = x.scale * table * us + x.alpha_intra_extra;
  // Inter-node rings still post a network operation per step (NCCL's getNetOverhead, x3 for Simple).
  if (x.n > 1 && a == kRing) lat = std::max(lat, x.net_overhead * (p == kSimple ? 3.0 : 1.0));
  return lat;
}

double inter_hop(const Ctx& x, int a, int p) {
  // With one GPU per node every network latency is exposed: NCCL uses the tree's.
  const int row = (a == kRing && x.k == 1) ? kTree : a;
  return x.scale * x.table->net[row][p] * us + x.transport * (p == kSimple ? 2 : 1) + x.alpha_inter_extra;
}

// The bandwidth term's time for one chunk of one channel, when each channel moves `data_per_channel`.
double chunk_time(const CollectivePlan& p, double chunk, double data_per_channel) {
  return data_per_channel > 0 ? std::min(1.0, chunk / data_per_channel) * std::max(p.network_seconds, p.nvlink_seconds)
                              : 0;
}

// What NCCL's tuner leaves out of a candidate's time: it takes the time, not the choice.
struct Untuned {
  double latency = 0;        // s more
  double nvlink_factor = 1;  // x the NVLink term
};

// Latency, pipeline fill and the host's launch floor.
void finish(const Ctx& x, Candidate& cand, double base_latency, double chunk, double fill, int channels,
            Untuned untuned = {}) {
  auto& p = cand.plan;
  const auto& cl = x.c.collectives;
  p.chunk_bytes = chunk;
  p.fill_seconds = fill;
  p.latency_seconds = cl.launch_latency + base_latency + p.fill_seconds;
  // A CPU thread launches its GPUs' kernels one after another, each with a work descriptor per
  // channel to prepare: no collective runs faster than that.
  const double floor = (cl.host_launch + cl.host_launch_per_channel * channels) * x.gpus_per_process;
  // NCCL's tuner knows nothing of the host's launches nor of the untuned costs: it chooses on the
  // time before either.
  cand.tuned = p.tuner_seconds = p.seconds();
  p.latency_seconds += untuned.latency;
  p.nvlink_seconds *= untuned.nvlink_factor;
  if (p.seconds() < floor) p.latency_seconds += floor - p.seconds();
}

}  // namespace

Candidate ring(const Ctx& x, int p) {
  Candidate cand{kRing, p};
  auto& plan = cand.plan;
  const int nc = channels_for(x, p, kRing);
  const double f = kRingFraction[p];
  const bool chain = is_chain(x.op);
  const bool allreduce = x.op == CollectiveOp::AllReduce;
  // Per GPU, the bytes the ring moves: S per link for a chain, (R-1)/R S per pass otherwise.
  const double per_link = chain ? x.S : (allreduce ? 2.0 : 1.0) * (x.R - 1) / x.R * x.S;
  const double nvl_share = x.n == 1 ? 1.0 : double(x.k - 1) / x.k;  // the ring leaves each node once
  plan.steps = chain ? x.R - 1 : (allreduce ? 2 : 1) * (x.R - 1);
  const int inter_steps = x.n == 1 ? 0 : chain ? x.n - 1 : (allreduce ? 2 : 1) * (x.n - 1);
  plan.nvlink_bytes = per_link * nvl_share;
  plan.node_egress_bytes = x.n > 1 ? x.lanes * per_link / f : 0;
  plan.nvlink_seconds = plan.nvlink_bytes > 0 ? plan.nvlink_bytes / channel_rate(x, x.nvl_rate * f, nc) : 0;
  plan.network_seconds =
      x.n > 1 ? plan.node_egress_bytes * f / channel_rate(x, offered_net_rate(x, nc, plan) * f, nc) : 0;
  // Protocol ceilings on the ring's bus bandwidth (per GPU), NCCL's llMaxBw and LL128 per channel.
  double cap = std::numeric_limits<double>::infinity();
  if (p == kLL) cap = x.ll_max;
  if (p == kLL128) cap = x.nch * x.per_channel->ring_ll128[std::min(x.n, 3) - 1] * GBps;
  if (std::isfinite(cap)) plan.nvlink_seconds = std::max(plan.nvlink_seconds, per_link / channel_rate(x, cap, nc));
  // A chain's links take turns: S crosses each, one after the other, so the fabric carries
  // (n-1)/n of S per node on average.
  if (chain && x.n > 1) plan.node_egress_bytes *= double(x.n - 1) / x.n;
  double lat = x.scale * x.table->base[kRing][p] * us + (plan.steps - inter_steps) * intra_hop(x, kRing, p) +
               inter_steps * inter_hop(x, kRing, p);
  // "Plateau effect of ring": multi-node Simple all-reduces with data on every channel.
  if (allreduce && p == kSimple && x.n > 1 && x.scale > 0 && x.S / (double(x.nch) * x.R) >= 64)
    lat *= x.gen >= 1 ? 1.4 : 1.9;
  // Each step moves S/R per rank over nc channels, in chunks of at most kRingChunk. A ring's steps
  // run one after another, so the bandwidth term already holds them; what is left is the pipeline
  // between steps: a rank forwards a chunk once its first slice has arrived, so each step after the
  // first starts `ring_depth` chunk-times late (NCCL slices a Simple chunk in two: 0.5), a chunk-time
  // of the link that step crosses: the network's on the steps that leave a node, NVLink's on the
  // others. The delay vanishes as chunks shrink below full size.
  const double step_data = x.S / (double(x.R) * nc);
  const double chunk = std::min(kRingChunk[p], step_data);
  auto hop_time = [&](double link_seconds) {
    const double data = plan.steps * step_data;
    return data > 0 ? std::min(1.0, chunk / data) * link_seconds : 0.0;
  };
  const int fill_inter = std::min(inter_steps, plan.steps - 1);
  const double fill = x.c.collectives.ring_depth *
                      (fill_inter * hop_time(std::max(plan.network_seconds, plan.nvlink_seconds)) +
                       (plan.steps - 1 - fill_inter) * hop_time(plan.nvlink_seconds)) *
                      std::min(1.0, step_data / kRingChunk[p]);
  // Costs NCCL's tuner leaves out. Simple moves each chunk in two slices, and before each the
  // sender waits for the receiver's flag that its buffer slot is free: a fixed cost per slice, two
  // per step of every loop. Below one full loop (nc x R full chunks) NCCL shrinks the chunks, not
  // their number, so mid sizes pay it whole. Across nodes every step also crosses the network, whose
  // per-step cost (the transport's) hides the NVLink hops' flags. And LL128 over NVLink delivers
  // what it delivers (intra_node.ll128_efficiency), not what the tuner's per-channel rate says.
  // Nor does NCCL's table know an NVLink generation's own step latency (intra_node.step_latency).
  Untuned untuned{.latency = (plan.steps - inter_steps) * x.generation_step};
  if (p == kSimple && x.n == 1) {
    const double loops = std::max(1.0, std::ceil(x.S / (double(x.R) * nc * kRingChunk[kSimple])));
    untuned.latency += plan.steps * kSimpleSlicesPerChunk * loops * x.c.collectives.slice_latency;
  }
  if (p == kLL128 && x.nvlink && x.k > 1) untuned.nvlink_factor = 1 / x.c.intra.ll128_efficiency;
  finish(x, cand, lat, chunk, fill, nc, untuned);
  plan.channels = nc;
  return cand;
}

// PAT (NCCL 2.23 on): an all-gather or reduce-scatter whose ranks are each alone on their node, as an
// FSDP group under tensor parallelism inside the nodes is. Its ranks exchange shards along a tree of
// log2(nodes) network steps, and NCCL costs it that way (kPat*): a latency with a log part and a part
// linear in the ranks, the tree's network hop as every algorithm at one GPU a node takes, and its
// bandwidth at NCCL's fraction of the ring graph's over the whole buffer. Each node still sends what
// the ring's does, (R-1)/R of the buffer, so that is its share of the fabric; the time is NCCL's.
Candidate pat(const Ctx& x) {
  Candidate cand{kPat, kSimple};
  auto& plan = cand.plan;
  const int nc = channels_for(x, kSimple, kRing);
  const double fraction = pat_bandwidth_fraction(x.c.nccl.version);
  plan.steps = log2i(x.n);
  plan.node_egress_bytes = x.lanes * double(x.R - 1) / x.R * x.S;
  plan.network_seconds = x.lanes * x.S / (fraction * channel_rate(x, x.net_rate, nc));
  const double lat =
      x.scale * (kPatBase + x.R * kPatPerRank) * us + plan.steps * inter_hop(x, kTree, kSimple) / kPatLogDivisor;
  finish(x, cand, lat, std::min(kRingChunk[kSimple], x.S / (double(x.R) * nc)), 0.0, nc);
  plan.channels = nc;
  return cand;
}

// A double binary tree across n nodes: each of the two trees carries S/2 up and S/2 down its edges.
// A node inside one tree (a parent and two children) sends 3 x S/2 there and S/2 as a leaf of the
// other: 2S, and the busiest node sets the time (NCCL's tuner rates trees at bwInter beyond two
// nodes). Two nodes are each other's only neighbour: S each (NCCL doubles bwInter there).
namespace {
double tree_node_egress(int n) { return n <= 1 ? 0.0 : n == 2 ? 1.0 : 2.0; }
}  // namespace

Candidate tree(const Ctx& x, int p) {
  Candidate cand{kTree, p};
  auto& plan = cand.plan;
  const int nc = channels_for(x, p, kTree);
  const double proto = p == kLL128 && x.n == 1 ? 7.0 / 9 : kTreeFraction[p] / 0.92;  // of the links' 0.92
  double correction = 1;
  if (const int ls = log2i(x.S / 64); x.S >= 64 && ls < 23) correction = kTreeCorrection[p][ls];
  const double f = 0.92 * proto * correction;
  const int levels = x.n > 1 ? log2i(x.n) : 0;
  // A chain inside each node (S up, S down per GPU) and a double binary tree across nodes.
  plan.steps = 2 * (x.k - 1) + 2 * levels;
  plan.nvlink_bytes = x.k > 1 ? 2 * x.S : 0;
  const double egress = x.lanes * tree_node_egress(x.n) * x.S;
  plan.node_egress_bytes = egress / kRingFraction[p];
  plan.nvlink_seconds = plan.nvlink_bytes > 0 ? plan.nvlink_bytes / channel_rate(x, x.nvl_rate * f, nc) : 0;
  plan.network_seconds = x.n > 1 ? egress / channel_rate(x, offered_net_rate(x, nc, plan) * f, nc) : 0;
  // NCCL's ceilings, in tuning.cc's order: every protocol's bus bandwidth at perChMaxTreeBw a channel,
  // then the protocol's share of that, and LL's at llMaxBw and LL128's at perChMaxTreeLL128Bw after
  // their share, not before; the medium-size correction last.
  double cap = x.nch * x.per_channel->tree[std::min(x.n, 3) - 1] * GBps * proto;
  if (p == kLL) cap = std::min(cap, x.ll_max);
  if (p == kLL128) cap = std::min(cap, x.nch * x.per_channel->tree_ll128[std::min(x.n, 3) - 1] * GBps);
  plan.nvlink_seconds = std::max(plan.nvlink_seconds, 2 * x.S / channel_rate(x, cap * correction, nc));
  const double lat = x.scale * x.table->base[kTree][p] * us +
                     2 * ((x.k - 1) * intra_hop(x, kTree, p) + levels * inter_hop(x, kTree, p));
  // A chunk climbs the chain and the tree of nodes and comes back down, stage after stage: with few
  // chunks per channel little of that overlaps. `tree_depth` chunk-times of the slowest link. Not for
  // LL: each 8-byte line carries its own flag and goes on as it lands, so no chunk waits at a hop.
  const double chunk = std::min(kTreeChunk[p], x.S / nc);
  const double fill = p != kLL ? x.c.collectives.tree_depth * chunk_time(plan, chunk, x.S / nc) : 0.0;
  finish(x, cand, lat, chunk, fill, nc,
         {.latency = 2 * (x.k - 1) * x.generation_step});
  plan.channels = nc;
  return cand;
}

// NVLS chunk size (enqueue.cc calcCollChunking): smaller chunks for smaller buffers, so that every
// channel and head has work.
namespace {
double nvls_chunk(const Ctx& x, bool tree) {
  const double ops = double(x.nvls_ch) * x.k;
  double c = kNvlsChunk;
  if (!tree) {
    if (x.S < 64 * ops * c) c = 65536;
    if (x.S < 8 * ops * c) c = 32768;
    if (x.S < 2 * ops * c) c = 16384;
  } else {
    if (x.n >= 4) c = std::min(c, 65536.0);
    if (x.S < 4 * ops * c && c > 65536) c = 65536;
    if (x.S < ops * c && c > 32768) c = 32768;
  }
  return c;
}
}  // namespace

// NVLink SHARP: each GPU reduces its 1/k of the buffer in the switch (multimem.ld_reduce: S out of
// every GPU, S/k back) and multicasts the result (S/k out, S back): S (k+1)/k per GPU for an
// all-reduce, (k-1)/k S for an all-gather or reduce-scatter (the ring's, on a slower rate).
// Across nodes (NVLS tree) the node's reduced buffer goes through a tree of nodes.
Candidate nvls(const Ctx& x, bool across_nodes) {
  Candidate cand{across_nodes ? kNvlsTree : kNvls, kSimple};
  auto& plan = cand.plan;
  const bool allreduce = x.op == CollectiveOp::AllReduce;
  const double c = nvls_chunk(x, across_nodes);
  const double per_gpu = allreduce ? x.S * (x.k + 1) / x.k : x.S * (x.k - 1) / x.k;
  const double chunks = std::ceil(x.S / (double(x.nvls_ch) * c));
  plan.steps = 2 + (across_nodes ? 2 * log2i(x.n) : 0);
  plan.nvlink_bytes = per_gpu;
  plan.nvlink_seconds = per_gpu / (across_nodes ? x.nvls_tree_rate : x.nvls_rate) +
                        chunks * x.c.collectives.nvls_chunk_overhead;
  if (across_nodes) {
    plan.node_egress_bytes = x.lanes * tree_node_egress(x.n) * x.S;
    plan.network_seconds = plan.node_egress_bytes / offered_net_rate(x, x.nvls_ch, plan);
  }
  double lat = x.scale * (x.table->base[cand.a][kSimple] + x.table->nvlink[cand.a][kSimple]) * us;
  if (across_nodes) lat += 2 * log2i(x.n) * inter_hop(x, kNvlsTree, kSimple);
  finish(x, cand, lat, c, x.c.collectives.nvls_depth * chunk_time(plan, c, x.S / x.nvls_ch), x.nvls_ch);
  plan.channels = x.nvls_ch;
  return cand;
}

// All-to-all, as NCCL runs it (nccl-tests' alltoall_perf, PyTorch's all_to_all_single): a grouped
// send and receive of S/R bytes with every other rank, point to point, so there is no algorithm to
// choose. Each GPU's traffic to another node leaves through its own rail (an all-to-all cannot
// spread one GPU's bytes over the node's other NICs: NVIDIA/nccl-tests#267), so a node pushes k x
// (R - k)/R x S into the fabric while NVLink carries the (k - 1)/R x S for the GPUs beside it; the
// two run at once, on different channels. A message of at most 16 KiB a peer goes LL
// (NCCL_P2P_LL_THRESHOLD), larger ones Simple. NCCL gives each peer 2 channels across the network
// (NCCL_NCHANNELS_PER_NET_PEER) or up to all of them over NVLink (ncclTopoComputeP2pChannels), so a
// channel serves its share of the peers one after another: rounds of hop latencies. The CPU proxy
// posts a send and a receive per network peer (NCCL's per-step network overhead each).
Candidate all_to_all(const Ctx& x, bool ll_allowed) {
  const double per_peer = x.S / x.R;
  const bool ll = ll_allowed && per_peer <= kP2pLlThreshold;
  const int p = ll ? kLL : kSimple;
  Candidate cand{kRing, p};
  auto& plan = cand.plan;
  const double f = kRingFraction[p];
  const int intra_peers = x.k - 1, inter_peers = x.R - x.k;
  plan.nvlink_bytes = intra_peers * per_peer;
  plan.node_egress_bytes = x.lanes * x.k * inter_peers * per_peer / f;
  plan.nvlink_seconds = plan.nvlink_bytes > 0 ? plan.nvlink_bytes / (x.nvl_rate * f) : 0;
  plan.network_seconds = inter_peers > 0 ? plan.node_egress_bytes / x.net_rate : 0;  // flags included, at line rate
  if (ll) plan.nvlink_seconds = std::max(plan.nvlink_seconds, (intra_peers + inter_peers) * per_peer / x.ll_max);
  const int per_peer_channels = x.n > 1 ? kP2pChannelsPerNetPeer : x.nch;
  const int rounds = int(std::ceil(double(x.R - 1) * std::min(per_peer_channels, x.nch) / x.nch));
  plan.steps = x.R - 1;
  const double hop = x.n > 1 ? inter_hop(x, kRing, p) : intra_hop(x, kRing, p) + x.generation_step;
  const double proxy = x.n > 1 ? 2.0 * inter_peers * x.net_overhead : 0.0;
  finish(x, cand, x.scale * x.table->base[kRing][p] * us + rounds * hop + proxy, std::min(per_peer, kRingChunk[p]),
         0.0, x.nch);
  plan.channels = x.nch;
  return cand;
}

}  // namespace tagcsim::sim::candidates
