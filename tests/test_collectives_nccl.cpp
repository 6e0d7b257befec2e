// NCCL's cost model computed by hand from its tuning.cc, on H100 nodes with nothing fitted, so that
// a change to the planner shows up as a number against the source it came from: protocols,
// channels, pins, NVLS, trees, what changed between releases, the host CPU, the ring's pipeline fill.
#include "collective_testing.hpp"
#include "sim/collective.hpp"
#include "topologies/cluster.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <utility>

using namespace tagcsim;
using namespace tagcsim::sim;
using namespace tagcsim::test;  // flat_cluster, rail_cluster

namespace {

// One 8x H100 node with NCCL's latency table (scale 1) and nothing fitted: no fill, no host cost.
topologies::Cluster h100_node(int gpus, double nvls_efficiency) {
  auto c = flat_cluster(1, 50e9, 0);
  c.gpus_per_node = gpus;
  c.gpu.sm = 90;
  c.intra.efficiency = 0.825;
  c.intra.nvls_efficiency = nvls_efficiency;
  c.collectives.latency_scale = 1;
  return c;
}

// Two 8x H100 nodes, 8 NICs of 50 GB/s, NCCL's latency table (scale 1), no transport latency, nothing fitted.
topologies::Cluster h100_pair() {
  auto c = h100_node(8, 0);
  c.nodes = 2;
  c.nics.count = 8;
  return c;
}

}  // namespace

TEST_CASE("protocols: LL, then LL128, then Simple, switching where NCCL's cost model says") {
  // 8x H100, NVLink4 at 450 GB/s x 0.825 = 371.25 GB/s, ring all-reduce over 14 steps. From
  // NCCL's tuning.cc: base + 14 x per-hop latency, and each protocol's bandwidth ceiling:
  //   LL     6.6 + 14 x 0.6 = 15.0 us,  min(371.25 x 0.5, 141 llMaxBw on Hopper) = 141 GB/s
  //   LL128  14 + 14 x 1.9  = 40.6 us,  371.25 x 0.92 = 341.55 GB/s
  //   Simple 8.4 + 14 x 3.4 = 56.0 us,  371.25 GB/s
  // time = latency + 2 * 7/8 * S / rate. LL = LL128 at 3.513 MB, LL128 = Simple at 37.58 MB.
  const auto c = h100_node(8, 0);
  auto t = [](double lat_us, double rate_gbps, double S) { return lat_us * 1e-6 + 1.75 * S / (rate_gbps * 1e9); };
  const double ll_ll128 = 25.6e-6 / (1.75e-9 * (1 / 141.0 - 1 / 341.55));
  const double ll128_simple = 15.4e-6 / (1.75e-9 * (1 / 341.55 - 1 / 371.25));
  CHECK(ll_ll128 == doctest::Approx(3.513e6).epsilon(1e-3));
  CHECK(ll128_simple == doctest::Approx(37.58e6).epsilon(1e-3));
  struct Case {
    double S;
    Protocol expected;
    double seconds;
  };
  const Case cases[] = {{0.98 * ll_ll128, Protocol::LL, t(15.0, 141, 0.98 * ll_ll128)},
                        {1.02 * ll_ll128, Protocol::LL128, t(40.6, 341.55, 1.02 * ll_ll128)},
                        {0.98 * ll128_simple, Protocol::LL128, t(40.6, 341.55, 0.98 * ll128_simple)},
                        {1.02 * ll128_simple, Protocol::Simple, t(56.0, 371.25, 1.02 * ll128_simple)}};
  for (const auto& k : cases) {
    CAPTURE(k.S);
    const auto plan = plan_collective(c, CollectiveOp::AllReduce, k.S, whole_cluster(c));
    CHECK(plan.algorithm == Algorithm::Ring);
    CHECK(plan.protocol == k.expected);
    CHECK(plan.channels == 32);
    CHECK(plan.seconds() == doctest::Approx(k.seconds).epsilon(1e-9));
  }
}

TEST_CASE("channels: NCCL runs fewer at small sizes, each moving at most ~10 GB/s") {
  const auto c = h100_node(8, 0);
  // LL on a ring adds a channel per 512 threads x 8 B x 8 ranks = 32 KiB.
  const auto small = plan_collective(c, CollectiveOp::AllReduce, 65536, whole_cluster(c));
  CHECK(small.protocol == Protocol::LL);
  CHECK(small.channels == 2);
  CHECK(small.max_channels == 32);
  // 2 channels of 10 GB/s: 1.75 x 64 KiB / 20 GB/s, well under LL's 141 GB/s ceiling.
  CHECK(small.seconds() == doctest::Approx(15e-6 + 1.75 * 65536 / 20e9).epsilon(1e-9));
}

TEST_CASE("channels across nodes: NCCL's rings through the NICs at its search's speed, doubled as its postset does") {
  // src/graph/search.cc: the fastest speedArrayInter entry a NIC carries, a channel per NIC at it;
  // ncclTopoDupChannels from 25 GB/s a channel (not past Ampere below 50 with more than 4);
  // src/graph/connect.cc's ncclTopoPostset doubles every ring. Measured on a large all-gather.
  const double S = 1.0 * (1 << 30);
  auto channels = [&](const topologies::Cluster& c) {
    return plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c)).channels;
  };
  auto c = h100_pair();  // 8 NICs of 50 GB/s: 48 GB/s a channel, 8; Hopper below 50: no dup; 16
  CHECK(channels(c) == 16);
  c.nodes = 1;  // one node: the NVLinks' rings, NVLink4's 32
  CHECK(channels(c) == 32);
  c.nodes = 2;
  c.gpu.sm = 80;
  c.nics.bandwidth = 25e9;  // DGX A100's HDR200: 24 GB/s a channel, 8, no dup below 25; 16
  CHECK(channels(c) == 16);
  c.gpus_per_node = 4;
  c.nics.count = 4;
  c.nics.bandwidth = 12.5e9;  // Leonardo's HDR100 quads: 12 GB/s a channel, 4; 8
  CHECK(channels(c) == 8);
  c.gpus_per_node = 8;
  c.nics.count = 8;
  c.gpu.sm = 100;
  c.nics.bandwidth = 100e9;  // 800 Gb/s on Blackwell: 96 GB/s, 8, doubled to 16, then 32
  CHECK(channels(c) == 32);
}

TEST_CASE("a channel carries at most net_channel_rate across the network: a full node's 16 bind, 1 GPU's 16 do not") {
  // Each ring channel is one thread block feeding one proxy; a node's traffic leaves through its
  // channels. An all-gather of 1 GiB on two H100 nodes: 15/16 S leaves each node.
  const double S = 1.0 * (1 << 30);
  auto c = h100_pair();  // 8 NICs of 50 GB/s, 16 channels
  c.collectives.net_channel_rate = 20e9;
  const auto full = plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c));
  CHECK(full.channels == 16);
  // 16 x 20 = 320 GB/s, under the NICs' 400: the channels bind.
  CHECK(full.network_seconds == doctest::Approx(15.0 / 16 * S / 320e9));
  // One GPU a node: its ring crosses one NIC (50 GB/s), still on 16 channels (320 GB/s): the NIC binds.
  const Group one_gpu{.nodes = 2, .gpus_per_node = 1, .node_stride = 1, .count = 1, .first_gpu = 0};
  const auto alone = plan_collective(c, CollectiveOp::AllGather, S, one_gpu);
  CHECK(alone.rails == 1);
  CHECK(alone.network_seconds == doctest::Approx(1.0 / 2 * S / 50e9));
  // Without a ceiling the full node's NICs bind: 400 GB/s.
  c.collectives.net_channel_rate = 0;
  CHECK(plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c)).network_seconds ==
        doctest::Approx(15.0 / 16 * S / 400e9));
  // A tree across 4 nodes: the busiest node sends 2S of an all-reduce through its 16 channels, at
  // Simple's 0.92 of their 320 GB/s.
  c.nodes = 4;
  c.collectives.net_channel_rate = 20e9;
  const auto tree = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c), Algorithm::Tree);
  CHECK(tree.channels == 16);
  CHECK(tree.network_seconds == doctest::Approx(2 * S / (320e9 * 0.92)));
}

TEST_CASE("pins: NCCL_ALGO / NCCL_PROTO as nccl: {algo, proto} in the cluster") {
  auto c = h100_node(8, 0.686);
  c.nccl.protos = topologies::NcclPins::Simple;
  const auto simple = plan_collective(c, CollectiveOp::AllReduce, 1 << 20, whole_cluster(c));
  CHECK(simple.protocol == Protocol::Simple);
  c.nccl = {};
  c.nccl.algos = topologies::NcclPins::Ring;
  CHECK(plan_collective(c, CollectiveOp::AllReduce, 8e9, whole_cluster(c)).algorithm == Algorithm::Ring);
  // An algorithm the collective cannot run leaves it to the ring (tree only does all-reduce).
  c.nccl.algos = topologies::NcclPins::Tree;
  CHECK(plan_collective(c, CollectiveOp::AllGather, 8e9, whole_cluster(c)).algorithm == Algorithm::Ring);
  // The caller's choice overrides the pins.
  CHECK(plan_collective(c, CollectiveOp::AllReduce, 8e9, whole_cluster(c), Algorithm::Nvls).algorithm ==
        Algorithm::Nvls);
}

TEST_CASE("NVLS all-reduce on 8x H100 uses the NVLS bandwidth formula") {
  // Each GPU reduces 1/8 of the buffer in the switch (S out, S/8 back) and multicasts it (S/8 out,
  // S back): S x 9/8 per GPU at 450 GB/s x 0.686 = 308.7 GB/s. busbw = 2 x 7/8 x S / t
  // = 2(k-1)/(k+1) x 308.7 = 480.2 GB/s, the NCCL maintainers' figure.
  const auto c = h100_node(8, 0.686);
  const double S = 8.0 * (1 << 30);
  const auto plan = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c));
  CHECK(plan.algorithm == Algorithm::Nvls);
  CHECK(plan.protocol == Protocol::Simple);
  CHECK(plan.channels == 16);
  CHECK(plan.nvlink_bytes == doctest::Approx(S * 9 / 8));
  CHECK(plan.nvlink_seconds == doctest::Approx(S * 9 / 8 / (450e9 * 0.686)));
  CHECK(plan.latency_seconds == doctest::Approx(25e-6));  // NCCL's NVLS latency, no fill here
  CHECK(plan.busbw(plan.nvlink_seconds) / 1e9 == doctest::Approx(14.0 / 9 * 450 * 0.686).epsilon(1e-9));
  CHECK(plan.busbw(plan.nvlink_seconds) / 1e9 == doctest::Approx(480.2).epsilon(1e-3));
  // On 4 GPUs NVLS would give 2 x 3/5 x 308.7 = 370.4 GB/s, under the ring's 371.25: NCCL's choice
  // (and the measured one on H200) is the ring.
  const auto four = h100_node(4, 0.686);
  CHECK(plan_collective(four, CollectiveOp::AllReduce, S, whole_cluster(four)).algorithm == Algorithm::Ring);
}

TEST_CASE("H800: NVLink4 with 8 links, 200 GB/s a direction, its NVLS all-reduce at 14/9 x 200 x 0.6774 = 211 GB/s") {
  // The preset as shipped (hgx-h800-ib400, NVLink4's fitted NVLS efficiency). An 8x H800 node was
  // measured at 215 GB/s of all-reduce bus bandwidth with NVLS (NVIDIA/nccl#1374): a check, not a fit.
  auto c = topologies::preset("hgx-h800-ib400");
  c.nodes = 1;
  CHECK(c.gpu.name == "H800-SXM5-80GB");
  CHECK(c.gpu.sm == 90);
  CHECK(c.intra.bandwidth == doctest::Approx(200e9));
  const double S = 8.0 * (1 << 30);
  const auto plan = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c));
  CHECK(plan.algorithm == Algorithm::Nvls);
  CHECK(plan.nvlink_seconds == doctest::Approx(S * 9 / 8 / (200e9 * c.intra.nvls_efficiency)));
  const double busbw = plan.busbw(plan.nvlink_seconds) / 1e9;
  CHECK(busbw == doctest::Approx(14.0 / 9 * 200 * c.intra.nvls_efficiency).epsilon(1e-9));
  CHECK(std::abs(busbw / 215 - 1) < 0.03);
}

TEST_CASE("a full NVLink mesh has no switch for NVLS: its all-reduce is a ring where NVSwitch's would be NVLS") {
  auto c = h100_node(8, 0.686);
  const double S = 8.0 * (1 << 30);
  CHECK(plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c)).algorithm == Algorithm::Nvls);
  c.intra.kind = "nvlink";
  const auto mesh = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c));
  CHECK(mesh.algorithm == Algorithm::Ring);
  // All eight GPUs: every link of the mesh, the ring at the node's 450 GB/s x 0.825.
  CHECK(mesh.nvlink_seconds == doctest::Approx(2 * 7.0 / 8 * S / (450e9 * 0.825)));
}

TEST_CASE("an NVL72 rack is one NVLink domain: NVLS over 72 GPUs and no NIC, two racks go out on all 72 rails") {
  // 72 GPUs each reduce 1/72 of the buffer in the switches and multicast it back: S x 73/72 per GPU
  // at NVLink5's 900 GB/s x the preset's NVLS efficiency. busbw = 2 x 71/72 x S / t
  // = 2 x 71/73 x 900 x eff: 1,751 x eff GB/s, 1,032 GB/s at eff 0.5895.
  const auto c = topologies::preset("gb200-nvl72");
  const double S = 8.0 * (1 << 30);
  const auto rack = plan_collective(c, CollectiveOp::AllReduce, S, {1, 72});
  CHECK(rack.algorithm == Algorithm::Nvls);
  CHECK(rack.node_egress_bytes == 0);
  CHECK(rack.network_seconds == 0);
  CHECK(rack.nvlink_bytes == doctest::Approx(S * 73 / 72));
  CHECK(rack.nvlink_seconds == doctest::Approx(S * 73 / 72 / (900e9 * c.intra.nvls_efficiency)));
  CHECK(c.intra.nvls_efficiency == doctest::Approx(0.5895));
  CHECK(rack.busbw(rack.nvlink_seconds) / 1e9 == doctest::Approx(2.0 * 71 / 73 * 900 * 0.5895).epsilon(1e-3));
  // Two racks: an all-gather's ring leaves each rack through every GPU's own NIC.
  CHECK(c.rails() == 72);
  CHECK(c.rails_of_gpus(0, 72) == 72);
  const auto two = plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c));
  CHECK(two.network_seconds > 0);
  CHECK(two.node_egress_bytes > 0);
}

TEST_CASE("a tree across nodes: two nodes send S each, beyond two the busiest node sends 2S") {
  // A double binary tree: each tree carries S/2 up and down its edges. A node inside one tree
  // (parent and two children) sends 3 x S/2 there and S/2 as a leaf of the other; of two nodes
  // each is the other's only neighbour. So 1 GiB on nodes of 8 GPUs with 8 x 50 GB/s NICs takes
  // S / 400 GB/s of network on 2 nodes and 2S / 400 GB/s on 4 or 8 (the average node sends less:
  // 2(n-1)/n S, but the busiest sets the pace).
  const double S = 1 << 30;
  for (const int n : {2, 4, 8}) {
    CAPTURE(n);
    auto c = rail_cluster(n);
    c.intra.nvls_efficiency = 0.686;
    const double per_node = n == 2 ? S : 2 * S;
    auto plan = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c), Algorithm::Tree);
    CHECK(plan.protocol == Protocol::Simple);
    CHECK(plan.node_egress_bytes == doctest::Approx(per_node));
    CHECK(plan.network_seconds == doctest::Approx(per_node / (0.92 * 8 * 50e9)));  // NCCL's tree rate x 0.92
    // NVLS tree: the node's reduced buffer takes the same tree of nodes.
    plan = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c), Algorithm::NvlsTree);
    CHECK(plan.node_egress_bytes == doctest::Approx(per_node));
    CHECK(plan.network_seconds == doctest::Approx(per_node / (8 * 50e9)));
    // busbw beyond two nodes: 2 (N-1)/N S / (2S / 400 GB/s) = (N-1)/N x 400 GB/s, under the NICs.
    if (n > 2) CHECK(plan.busbw(plan.network_seconds) / 1e9 == doctest::Approx((8.0 * n - 1) / (8 * n) * 400));
  }
}

TEST_CASE("an NVLS tree moves the node's NVLink bytes at its own rate, one node's NVLS at the other") {
  // 2 nodes x 8 H100: each GPU still moves S x 9/8 over NVLink, at 450 GB/s x nvls_tree_efficiency
  // (0.62: 279 GB/s) where one node runs at x nvls_efficiency (0.686: 308.7 GB/s). 8 GiB takes
  // 8 GiB x 9/8 / 279 GB/s = 34.6 ms of NVLink, over the 21.5 ms its NICs need (S / 400 GB/s), so
  // busbw = 2 x 15/16 x 8 GiB / 34.6 ms = 465 GB/s (the two-node tables: 467-469), not 504.
  const double S = 8.0 * (1 << 30);
  auto c = rail_cluster(2);
  c.intra.nvls_efficiency = 0.686;
  c.intra.nvls_tree_efficiency = 0.62;
  auto plan = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c), Algorithm::NvlsTree);
  CHECK(plan.nvlink_bytes == doctest::Approx(S * 9 / 8));
  CHECK(plan.nvlink_seconds == doctest::Approx(S * 9 / 8 / (450e9 * 0.62)));
  CHECK(plan.network_seconds == doctest::Approx(S / 400e9));
  CHECK(plan.busbw(plan.nvlink_seconds) / 1e9 == doctest::Approx(2.0 * 15 / 16 * 8 / 9 * 450 * 0.62));
  CHECK(plan.busbw(plan.nvlink_seconds) / 1e9 == doctest::Approx(465.0).epsilon(1e-3));
  // One node of the same cluster keeps the one-node rate.
  const auto one = plan_collective(c, CollectiveOp::AllReduce, S, {1, 8}, Algorithm::Nvls);
  CHECK(one.nvlink_seconds == doctest::Approx(S * 9 / 8 / (450e9 * 0.686)));
  // Unset (0), the tree takes the one-node rate, as NCCL's tuner rates it.
  c.intra.nvls_tree_efficiency = 0;
  plan = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c), Algorithm::NvlsTree);
  CHECK(plan.nvlink_seconds == doctest::Approx(S * 9 / 8 / (450e9 * 0.686)));
}

TEST_CASE("a process driving 8 GPUs (nccl-tests -g 8) cannot beat 8 launches with their channels") {
  auto c = h100_node(8, 0);
  c.collectives.host_launch = 5e-6;
  c.collectives.host_launch_per_channel = 0.3e-6;
  const auto one = plan_collective(c, CollectiveOp::AllReduce, 32768, whole_cluster(c));
  CHECK(one.channels == 1);
  CHECK(one.seconds() == doctest::Approx(15e-6 + 1.75 * 32768 / 10e9).epsilon(1e-9));  // the GPU's time
  const auto eight = plan_collective(c, CollectiveOp::AllReduce, 32768, whole_cluster(c),
                                     PlanOptions{.gpus_per_process = 8});
  CHECK(eight.seconds() == doctest::Approx(8 * (5e-6 + 0.3e-6)).epsilon(1e-9));
}

TEST_CASE("NCCL releases: tree Simple costs 28 us per hop in 2.19-2.22, 4 us (NVLink) / 14 us (network) around them") {
  // An 8-byte all-reduce on 2 x 8 GPUs, NCCL_ALGO=Ring,Tree and NCCL_PROTO=Simple (Google's TCPXO profile).
  // tuning.cc by release, in us (the bandwidth term is negligible at 8 bytes):
  //   tree  = base + 2 x (7 NVLink hops + log2(2) network hops)
  //           2.23+: 8.4 + 2 x (7 x 4 + 14) = 92.4;  2.19-2.22: 0 + 2 x (7 x 28 + 28) = 448;  2.18: 2 x (28 + 14) = 84
  //   ring  = 8.4 + 28 NVLink steps x max(3.4, 3 x 1 us Intel post cost) + 2 network steps x 14 = 131.6
  // so NCCL 2.21.5 runs the ring (131.6 us: the GCP a3-mega table measured 123 us) and 2.23 the tree.
  auto c = h100_pair();
  c.nccl.algos = topologies::NcclPins::Ring | topologies::NcclPins::Tree;
  c.nccl.protos = topologies::NcclPins::Simple;
  struct Case {
    int version;
    Algorithm algo;
    double us;
  };
  for (const auto& k : {Case{0, Algorithm::Tree, 92.4}, Case{22300, Algorithm::Tree, 92.4},
                        Case{22105, Algorithm::Ring, 131.6}, Case{21903, Algorithm::Ring, 131.6},
                        Case{21805, Algorithm::Tree, 84.0}}) {
    CAPTURE(k.version);
    c.nccl.version = k.version;
    const auto plan = plan_collective(c, CollectiveOp::AllReduce, 8, whole_cluster(c));
    CHECK(plan.algorithm == k.algo);
    CHECK(plan.seconds() * 1e6 == doctest::Approx(k.us).epsilon(1e-4));
  }
  // An AMD host posts each network step in 2 us (getNetOverhead), 6 us for Simple: ring 8.4 + 28 x 6 + 28.
  c.nccl.version = 22105;
  c.host_cpu = topologies::HostCpu::Amd;
  CHECK(plan_collective(c, CollectiveOp::AllReduce, 8, whole_cluster(c)).seconds() * 1e6 ==
        doctest::Approx(204.4).epsilon(1e-4));
  // A transport's own per-step cost adds to the host's: Intel 1 us + 1 us, x 3 for Simple = 6 us.
  c.host_cpu = topologies::HostCpu::Intel;
  c.nics.transport.overhead = 1e-6;
  CHECK(plan_collective(c, CollectiveOp::AllReduce, 8, whole_cluster(c)).seconds() * 1e6 ==
        doctest::Approx(204.4).epsilon(1e-4));
}

TEST_CASE("NCCL releases: LL's one-node ceiling on Hopper (87.7 -> 141 GB/s in 2.21) and NVLS's latency") {
  // One 8x H100 node, ring LL pinned: bus bandwidth min(371.25 x 0.5, llMaxBw).
  auto c = h100_node(8, 0.686);
  c.nccl.algos = topologies::NcclPins::Ring;
  c.nccl.protos = topologies::NcclPins::LL;
  const double S = 64e6;
  c.nccl.version = 22005;
  CHECK(plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c)).nvlink_seconds ==
        doctest::Approx(1.75 * S / 87.7e9));
  c.nccl.version = 22105;
  CHECK(plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c)).nvlink_seconds ==
        doctest::Approx(1.75 * S / 141e9));
  // NVLS: a 23 us base latency up to 2.18, 23 us as a hop in 2.19-2.20, 25 us from 2.21 (no fill here).
  c.nccl = {};
  for (auto [version, us] : {std::pair{21805, 23.0}, std::pair{22005, 23.0}, std::pair{22105, 25.0}, std::pair{0, 25.0}}) {
    CAPTURE(version);
    c.nccl.version = version;
    const auto plan = plan_collective(c, CollectiveOp::AllReduce, 8e9, whole_cluster(c));
    CHECK(plan.algorithm == Algorithm::Nvls);
    CHECK(plan.latency_seconds == doctest::Approx(us * 1e-6));
  }
}

TEST_CASE("NCCL releases: Blackwell's ceilings are Hopper's before 2.25, then its own rows, which 2.28.3 and 2.28.7 changed") {
  // B200 nodes: NVLink5 at 900 GB/s x 0.825 = 742.5 GB/s. tuning.cc rates an sm100 GPU with Hopper's
  // rows until 2.25 added Blackwell's (compCapIndex).
  auto c = h100_node(8, 0);
  c.gpu.sm = 100;
  c.intra.bandwidth = 900e9;
  c.nccl.algos = topologies::NcclPins::Ring;
  c.nccl.protos = topologies::NcclPins::LL;
  const double S = 256e6;
  // One node, ring LL: bus bandwidth min(742.5 x 0.5, llMaxBw): Hopper's 141 GB/s in 2.24, 2 x 141 from 2.25.
  for (auto [version, ll] : {std::pair{22403, 141.0}, std::pair{22602, 282.0}, std::pair{0, 282.0}}) {
    CAPTURE(version);
    c.nccl.version = version;
    CHECK(plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c)).nvlink_seconds ==
          doctest::Approx(1.75 * S / (ll * 1e9)));
  }
  // Two nodes, 8 NICs of 50 GB/s, 4 channels pinned so that the per-channel ceilings bind, at 1 GiB
  // (past the trees' medium-size correction):
  //   ring LL128: 2 x 15/16 x S over 4 x perChMaxRingLL128Bw[2 nodes]: 36.7 (2.24), 73.4 (2.25-2.28.6), 34.6 (2.28.7+);
  //   tree Simple: 2S over 4 x perChMaxTreeBw[2 nodes] (the 0.92 is the links', not the ceiling's):
  //   41.4 (2.24), 82.8 (2.25-2.28.2), 42.8 (2.28.3+).
  const double G = 1073741824;
  c.nodes = 2;
  c.nics.count = 8;
  c.nccl.channels = 4;
  struct Case {
    int version;
    double ring_ll128, tree;
  };
  for (const auto& k : {Case{22403, 36.7, 41.4}, Case{22602, 73.4, 82.8}, Case{22803, 73.4, 42.8},
                        Case{22807, 34.6, 42.8}, Case{0, 34.6, 42.8}}) {
    CAPTURE(k.version);
    c.nccl.version = k.version;
    c.nccl.algos = topologies::NcclPins::Ring;
    c.nccl.protos = topologies::NcclPins::LL128;
    CHECK(plan_collective(c, CollectiveOp::AllReduce, G, whole_cluster(c)).nvlink_seconds ==
          doctest::Approx(1.875 * G / (4 * k.ring_ll128 * 1e9)));
    c.nccl.algos = topologies::NcclPins::Tree;
    c.nccl.protos = topologies::NcclPins::Simple;
    CHECK(plan_collective(c, CollectiveOp::AllReduce, G, whole_cluster(c)).nvlink_seconds ==
          doctest::Approx(2 * G / (4 * k.tree * 1e9)));
  }
}

TEST_CASE("LL's ceiling across nodes follows the host CPU: 39 GB/s on Intel, 22.5 on AMD (2 nodes)") {
  auto c = h100_pair();
  c.nccl.algos = topologies::NcclPins::Ring;
  c.nccl.protos = topologies::NcclPins::LL;
  const double S = 256e6;
  // The ring moves 2 x 15/16 x S per GPU; LL's ceiling binds (the NICs give 400 GB/s x 0.5).
  CHECK(plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c)).nvlink_seconds ==
        doctest::Approx(1.875 * S / 39e9));
  c.host_cpu = topologies::HostCpu::Amd;
  CHECK(plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c)).nvlink_seconds ==
        doctest::Approx(1.875 * S / 22.5e9));
}

TEST_CASE("a ring's pipeline fill: each step late by a chunk-time of the link it crosses") {
  // All-gather on 2 x 8 GPUs, Simple, 16 channels (the NICs' 8 rings, doubled): S = 2 GiB gives 8 MiB
  // per rank and channel, so full 2 MiB chunks, 1/60 of a channel's 15 steps of data. Of the 14 steps
  // after the first, 1 leaves the node (a network chunk-time: the slower link's) and 13 stay on NVLink
  // (an NVLink chunk-time).
  auto c = h100_pair();
  c.nccl.protos = topologies::NcclPins::Simple;
  c.collectives.ring_depth = 1;
  const double S = 2.0 * (1 << 30);
  const auto plan = plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c));
  CHECK(plan.algorithm == Algorithm::Ring);
  CHECK(plan.channels == 16);
  const double net = 15.0 / 16 * S / 400e9;                     // 8 rails x 50 GB/s
  const double nvl = 15.0 / 16 * S * 7 / 8 / (450e9 * 0.825);  // the ring leaves each node once
  CHECK(plan.network_seconds == doctest::Approx(net));
  CHECK(plan.nvlink_seconds == doctest::Approx(nvl));
  CHECK(plan.fill_seconds == doctest::Approx((1 * net + 13 * nvl) / 60));
}

TEST_CASE("a tree's LL: llMaxBw caps the bus bandwidth after LL's 1/3.8, and its lines need no pipeline fill") {
  // tuning.cc: busBw = min(busBw x 0.92, nChannels x perChMaxTreeBw), then for LL min(busBw / 3.8, llMaxBw),
  // then the medium-size correction (0.7 for LL at 32 KiB, log2(32768 / 64) = 9). On two H100 nodes
  // (Intel: llMaxBw 39 GB/s) the ceiling is 39 x 0.7 = 27.3 GB/s, not 39 / 3.8 x 0.7. A tree moves 2S
  // per GPU over NVLink (the chain up and down); 32 KiB runs on 8 channels (8 x 512 threads x 8 B).
  auto c = h100_pair();
  c.nccl.algos = topologies::NcclPins::Tree;
  c.nccl.protos = topologies::NcclPins::LL;
  c.collectives.tree_depth = 1;
  const double S = 32768;
  auto plan = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c));
  CHECK(plan.protocol == Protocol::LL);
  CHECK(plan.channels == 8);
  CHECK(plan.nvlink_seconds == doctest::Approx(2 * S / (39e9 * 0.7)));  // 2.40 us, under the links' 62.9 GB/s
  CHECK(plan.network_seconds == doctest::Approx(S / (400e9 * 0.92 / 3.8 * 0.7)));
  // LL writes each 8-byte line with its flag and the next GPU forwards it as it lands: no chunk waits
  // at a hop. LL128 (6 channels of 640 threads here) and Simple forward by the chunk: one chunk-time.
  CHECK(plan.fill_seconds == 0);
  c.nccl.protos = topologies::NcclPins::LL128;
  plan = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c));
  CHECK(plan.channels == 6);
  CHECK(plan.fill_seconds > 0);
  CHECK(plan.fill_seconds == doctest::Approx(std::max(plan.nvlink_seconds, plan.network_seconds)));
}

TEST_CASE("PAT: an all-gather over ranks alone on their nodes takes NCCL's PAT below the size its cost model says") {
  // 16 one-GPU nodes, one 50 GB/s NIC each, NCCL's table (scale 1), nothing fitted. tuning.cc from
  // 2.24 on: PAT 8 + 16 x 2.8 + log2(16) x 14 / 3.5 = 68.8 us, the whole buffer at 0.75 x 50 GB/s;
  // the ring, every step a network step at one GPU a node, 8.4 + 15 x 14 = 218.4 us, 15/16 of it at
  // 50 GB/s; LL 6.6 + 15 x 5 = 81.6 us at LL's 20.4 GB/s ceiling, never cheaper than PAT here.
  // Simple ring = PAT where 149.6 us = S (1 / 37.5 - 0.9375 / 50) / 1e9: S = 18.9 MB.
  auto c = flat_cluster(16, 50e9, 0);
  c.gpu.sm = 90;
  c.collectives.latency_scale = 1;
  const auto g = whole_cluster(c);
  const double crossover = 149.6e-6 / ((1 / 37.5 - 0.9375 / 50) * 1e-9);
  CHECK(crossover == doctest::Approx(18.90e6).epsilon(1e-3));
  const auto below = plan_collective(c, CollectiveOp::AllGather, 0.95 * crossover, g);
  CHECK(below.algorithm == Algorithm::Pat);
  CHECK(below.protocol == Protocol::Simple);
  CHECK(below.latency_seconds == doctest::Approx(68.8e-6));
  CHECK(below.network_seconds == doctest::Approx(0.95 * crossover / 37.5e9));
  CHECK(below.node_egress_bytes == doctest::Approx(0.95 * crossover * 15 / 16));  // the ring's bytes on the wire
  const auto above = plan_collective(c, CollectiveOp::AllGather, 1.05 * crossover, g);
  CHECK(above.algorithm == Algorithm::Ring);
  CHECK(above.seconds() == doctest::Approx(218.4e-6 + 1.05 * crossover * 0.9375 / 50e9));
  CHECK(plan_collective(c, CollectiveOp::ReduceScatter, 1 << 20, g).algorithm == Algorithm::Pat);
  CHECK(plan_collective(c, CollectiveOp::AllReduce, 1 << 20, g).algorithm != Algorithm::Pat);  // AG and RS only
  // 2.23 rated it at 0.85 of the graph's bandwidth; before 2.23 there was none.
  c.nccl.version = 22304;
  CHECK(plan_collective(c, CollectiveOp::AllGather, 1 << 20, g).network_seconds ==
        doctest::Approx((1 << 20) / (0.85 * 50e9)));
  c.nccl.version = 22203;
  CHECK(plan_collective(c, CollectiveOp::AllGather, 1 << 20, g).algorithm == Algorithm::Ring);
  c.nccl.version = 0;
  // Not where a node holds more than one of the ranks, nor on an offloaded network device
  // (GPUDirect-TCPXO), nor with NCCL_ALGO leaving it out.
  auto two_a_node = c;
  two_a_node.gpus_per_node = 2;
  two_a_node.nodes = 8;
  CHECK(plan_collective(two_a_node, CollectiveOp::AllGather, 1 << 20, whole_cluster(two_a_node)).algorithm !=
        Algorithm::Pat);
  auto tcpxo = c;
  tcpxo.nics.transport.kind = "tcpxo";
  CHECK(plan_collective(tcpxo, CollectiveOp::AllGather, 1 << 20, g).algorithm == Algorithm::Ring);
  c.nccl.algos = topologies::NcclPins::kAllAlgos & ~topologies::NcclPins::Pat;
  CHECK(plan_collective(c, CollectiveOp::AllGather, 1 << 20, g).algorithm == Algorithm::Ring);
  CHECK(plan_collective(c, CollectiveOp::AllGather, 1 << 20, g, Algorithm::Pat).algorithm == Algorithm::Pat);
}
