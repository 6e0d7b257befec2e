// NCCL's published cost model (NVIDIA/nccl src/graph/tuning.cc and src/enqueue.cc, 2.18 to
// 2.28), written out as data for sim/collective.cpp: latencies in us, bandwidths in GB/s, as NCCL
// states them. Which one applies is said where each is used. Inside sim/ only.
#pragma once

#include "topologies/cluster.hpp"

#include <iterator>

namespace tagcsim::sim::nccl_tuning {

inline constexpr double us = 1e-6, GBps = 1e9;
inline constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
inline constexpr int kRing = 0, kTree = 1, kNvls = 2, kNvlsTree = 3, kPat = 4;

// tuning.cc's latency table and LL ceilings, as each NCCL release has them. NCCL tunes these numbers
// to steer its choice, and changed them between releases (tree Simple's per-hop latency went from 4 to
// 28 us in 2.19 and back in 2.23; NVLS's from a 23 us base to a 25 us hop in 2.21; LL's one-node
// ceiling on Hopper from Ampere's 87.7 to 141 GB/s in 2.21); a cluster pinned to a release
// (`nccl: {version}`) is modelled with that release's table, otherwise with the newest.
struct NcclTable {
  int since;                // first release with these values (major*10000 + minor*100 + patch)
  double base[4][3];        // baseLat [ring, tree, nvls, nvls_tree][LL, LL128, Simple], us
  double nvlink[4][3];      // hwLat NVLINK
  double pcie[4][3];        // hwLat PCI
  double net[4][3];         // hwLat NET
  double ll_one_node[4];    // llMaxBws[compCap][0] (Volta, Ampere, Hopper, Blackwell), GB/s; indexed by
                            // tuning_generation, so a release before 2.25 never reads the Blackwell slot
};
// Newest first. Rows [ring, tree, nvls, nvls_tree]; NCCL writes them [tree, ring, ...].
inline constexpr NcclTable kNcclTables[] = {
    {22809,  // 2.28.9: NVLS tree's network hop 20.9 us
     {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}},
     {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0, 0, 25}, {0, 0, 25}},
     {{1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}, {0, 0, 0}, {0, 0, 0}},
     {{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}, {0, 0, 18}, {0, 0, 20.9}},
     {39.0, 87.7, 141.0, 282.0}},
    {22300,  // 2.23: tree Simple back to 4 us per NVLink hop, 14 per network hop, 8.4 us base
     {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}},
     {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0, 0, 25}, {0, 0, 25}},
     {{1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}, {0, 0, 0}, {0, 0, 0}},
     {{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}, {0, 0, 18}, {0, 0, 14}},
     {39.0, 87.7, 141.0, 282.0}},
    {22100,  // 2.21: NVLS 25 us; LL on one Hopper node up to 141 GB/s
     {{6.6, 14.0, 8.4}, {6.8, 14.0, 0}, {0, 0, 0}, {0, 0, 0}},
     {{0.6, 1.9, 3.4}, {0.6, 1.25, 28}, {0, 0, 25}, {0, 0, 25}},
     {{1.0, 2.5, 5.7}, {1.0, 1.9, 28}, {0, 0, 0}, {0, 0, 0}},
     {{2.7, 4.0, 14.0}, {5.0, 8.5, 28}, {0, 0, 18}, {0, 0, 14}},
     {39.0, 87.7, 141.0, 141.0}},
    {21900,  // 2.19: tree Simple 28 us per hop, NVLS 23 us as a hop latency
     {{6.6, 14.0, 8.4}, {6.8, 14.0, 0}, {0, 0, 0}, {0, 0, 0}},
     {{0.6, 1.9, 3.4}, {0.6, 1.25, 28}, {0, 0, 23}, {0, 0, 23}},
     {{1.0, 2.5, 5.7}, {1.0, 1.9, 28}, {0, 0, 0}, {0, 0, 0}},
     {{2.7, 4.0, 14.0}, {5.0, 8.5, 28}, {0, 0, 18}, {0, 0, 14}},
     {39.0, 87.7, 87.7, 87.7}},
    {0,  // up to 2.18: NVLS and NVLS tree 23 us as a base latency
     {{6.6, 14.0, 8.4}, {6.8, 14.0, 0}, {0, 0, 23}, {0, 0, 23}},
     {{0.6, 1.9, 3.4}, {0.6, 1.25, 4}, {0, 0, 0}, {0, 0, 0}},
     {{1.0, 2.5, 5.7}, {1.0, 1.9, 6}, {0, 0, 0}, {0, 0, 0}},
     {{2.7, 4.0, 14.0}, {5.0, 8.5, 14}, {0, 0, 18}, {0, 0, 19}},
     {39.0, 87.7, 87.7, 87.7}},
};
inline const NcclTable& nccl_table(int version) {
  for (const auto& t : kNcclTables)
    if (version == 0 || version >= t.since) return t;
  return kNcclTables[std::size(kNcclTables) - 1];
}
// PAT (2.23 on): all-gather and reduce-scatter over ranks each alone on its node, Simple only, and not
// where the network device is offloaded (GPUDirect-TCPX/TCPXO's unpack device). tuning.cc costs it
// 8 us + log2i(nNodes) x interLat / 3.5 + nRanks x 2.8 us (interLat the tree's network hop, as for
// every algorithm at one GPU a node), and its bus bandwidth at 0.85 (2.23) or 0.75 (2.24 on) of the
// graph's, on the whole buffer where a ring's is on (R-1)/R of it.
inline constexpr int kPatSince = 22300;
inline constexpr double kPatBase = 8.0, kPatPerRank = 2.8, kPatLogDivisor = 3.5;
inline double pat_bandwidth_fraction(int version) { return version != 0 && version < 22400 ? 0.85 : 0.75; }
// LL's ceiling across nodes (llMaxBws rows by host CPU, for 2 and for more nodes): Intel's row, or the
// AMD row (NCCL uses it for AMD hosts).
inline constexpr double kLlMaxNetIntel[2] = {39.0, 20.4};
inline constexpr double kLlMaxNetAmd[2] = {22.5, 19.0};
// NCCL's per-step network post cost by host CPU (getNetOverhead), us: Intel 1, AMD 2, others 1.
inline double net_overhead_us(topologies::HostCpu cpu) { return cpu == topologies::HostCpu::Amd ? 2.0 : 1.0; }
// NCCL's compute-capability index for its tables. Before 2.25 NCCL knows no Blackwell row: an
// sm100 GPU takes Hopper's (tuning.cc, compCapIndex: minCompCap >= 90 is Hopper).
inline int tuning_generation(int gen, int version) { return gen == 3 && version != 0 && version < 22500 ? 2 : gen; }
// Per-channel bus-bandwidth ceilings, GB/s, for [1 node, 2 nodes, more]: perChMaxRingLL128Bws,
// perChMaxTreeLL128Bws and perChMaxTreeBws. Volta's, Ampere's and Hopper's rows are the same in
// every release from 2.18 to 2.28.9; Blackwell's came in 2.25 and changed twice.
struct PerChannelCeilings {
  double ring_ll128[3], tree_ll128[3], tree[3];
};
inline constexpr PerChannelCeilings kPerChannel[3] = {
    {{20, 20, 20}, {20, 20, 20}, {26.5, 18.5, 10}},            // Volta
    {{20, 20, 20}, {20, 20, 20}, {24, 23.6, 17.8}},            // Ampere
    {{36.7, 36.7, 36.7}, {36.7, 36.7, 29.0}, {38.7, 41.4, 36.0}},  // Hopper
};
struct BlackwellRows {
  int since;
  PerChannelCeilings rows;
};
// Newest first.
inline constexpr BlackwellRows kBlackwellPerChannel[] = {
    {22807, {{73.4, 34.6, 73.4}, {55.6, 31.67, 20.0}, {70, 42.8, 24}}},  // 2.28.7: ring LL128 across 2 nodes 34.6
    {22803, {{73.4, 73.4, 73.4}, {55.6, 31.67, 20.0}, {70, 42.8, 24}}},  // 2.28.3: trees' own rows
    {22500, {{73.4, 73.4, 73.4}, {73.4, 73.4, 58.0}, {77.4, 82.8, 72.0}}},  // 2.25: twice Hopper's
};
inline const PerChannelCeilings& per_channel_ceilings(int gen, int version) {
  gen = tuning_generation(gen, version);
  if (gen < 3) return kPerChannel[gen];
  for (const auto& b : kBlackwellPerChannel)
    if (version == 0 || version >= b.since) return b.rows;
  return kBlackwellPerChannel[std::size(kBlackwellPerChannel) - 1].rows;  // not reached: older ones take Hopper's
}
// "Trees are not perfectly sticking to the model for medium sizes": tree bandwidth x this, by
// log2(bytes / 64), 64 B to 256 MB.
inline constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
// Bandwidth a protocol delivers of what the links carry: LL sends a 4-byte flag with every 4 bytes
// of data, LL128 one 8-byte flag per 128-byte line (NCCL's model takes 0.92); trees lose 8% more
// and LL on a tree is slower still (1/3.8).
inline constexpr double kRingFraction[3] = {0.5, 0.92, 1.0};
inline constexpr double kTreeFraction[3] = {0.92 / 3.8, 0.92 * 120.0 / 128, 0.92};
// enqueue.cc: threads per channel and bytes per thread before NCCL adds a channel.
inline constexpr int kThreads[3] = {512, 640, 512};
inline constexpr int kThreadThreshold[3] = {8, 8, 64};
// Data per channel and pipeline step at full size: Simple 4 MiB buffers in 8 steps, 4 steps a chunk
// (rings) or 1 (trees); LL 512 KiB in 8 steps, half of it flags; LL128 4.9 MB in 8 steps, 15/16 data.
inline constexpr double kRingChunk[3] = {32768, 576000, 2097152};
inline constexpr int kSimpleSlicesPerChunk = 2;  // ALLREDUCE_CHUNKSTEPS / ALLREDUCE_SLICESTEPS
inline constexpr double kTreeChunk[3] = {32768, 576000, 524288};
inline constexpr double kNvlsChunk = 131072;  // NCCL_NVLS_CHUNKSIZE default
// Point to point (all-to-all): a message of at most this many bytes a peer goes LL
// (NCCL_P2P_LL_THRESHOLD, enqueue.cc), and each network peer gets this many channels
// (NCCL_NCHANNELS_PER_NET_PEER, paths.cc).
inline constexpr double kP2pLlThreshold = 16384;
inline constexpr int kP2pChannelsPerNetPeer = 2;

}  // namespace tagcsim::sim::nccl_tuning
