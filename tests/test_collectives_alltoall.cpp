// All-to-all (nccl-tests' alltoall_perf, an MoE layer's token exchange) on hand-built clusters: each
// rank sends S/R to every other, its network share through its own rail, the rest over NVLink.
#include "calibrate/fit.hpp"
#include "collective_testing.hpp"
#include "common/input.hpp"
#include "sim/collective.hpp"
#include "sim/replay.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace tagcsim;
using namespace tagcsim::sim;
using namespace tagcsim::test;  // flat_cluster, rail_cluster, fat_tree

TEST_CASE("all-to-all across 2 DGX-like nodes: half of each GPU's bytes leave through its own 50 GB/s NIC") {
  const auto c = rail_cluster(2);  // 8 GPUs and 8 NICs of 50 GB/s a node, NVLink 450 x 0.825 GB/s
  const double S = 1.6e9;          // 1e8 bytes to each of 16 ranks
  const auto plan = plan_collective(c, CollectiveOp::AllToAll, S, whole_cluster(c));
  CHECK(plan.algorithm == Algorithm::P2p);
  CHECK(plan.protocol == Protocol::Simple);
  CHECK(plan.rails == 8);
  // 7 peers beside it over NVLink, 8 on the other node through the GPU's rail.
  CHECK(plan.nvlink_bytes == doctest::Approx(7e8));
  CHECK(plan.nvlink_seconds == doctest::Approx(7e8 / (450e9 * 0.825)));  // 1.886 ms
  CHECK(plan.node_egress_bytes == doctest::Approx(8 * 8e8));
  CHECK(plan.network_seconds == doctest::Approx(8e8 / 50e9));  // 16 ms: the NIC, not NVLink, sets the time
  CHECK(plan.seconds() == doctest::Approx(0.016));
  CHECK(simulate_collective(c, plan) == doctest::Approx(0.016).epsilon(1e-6));
  // nccl-tests' busbw, (R-1)/R x S/t: 15/8 of one NIC on 2 nodes (NVIDIA/nccl-tests#130: N/(N-1) x
  // the NIC for N nodes, here 2 x 8 GPUs).
  CHECK(plan.busbw(plan.seconds()) == doctest::Approx(50e9 * 15 / 8));
}

TEST_CASE("all-to-all: 2 nodes x 1 GPU on an 8-NIC node get one NIC's bandwidth") {
  const auto c = rail_cluster(2);
  const Group one_gpu{.nodes = 2, .gpus_per_node = 1, .node_stride = 1, .count = 1, .first_gpu = 5};
  const double S = 1e9;
  const auto plan = plan_collective(c, CollectiveOp::AllToAll, S, one_gpu);
  CHECK(plan.rails == 1);
  CHECK(plan.nvlink_bytes == 0);
  CHECK(plan.network_seconds == doctest::Approx(0.5e9 / 50e9));  // S/2 to the other rank: 10 ms
  CHECK(simulate_collective(c, plan) == doctest::Approx(0.01).epsilon(1e-6));
}

TEST_CASE("all-to-all inside one node runs on NVLink alone: busbw is the GPU's NVLink rate") {
  const auto c = rail_cluster(1);
  const double S = 8e9;
  const auto plan = plan_collective(c, CollectiveOp::AllToAll, S, whole_cluster(c));
  CHECK(plan.network_seconds == 0);
  CHECK(plan.nvlink_seconds == doctest::Approx(7.0 / 8 * S / (450e9 * 0.825)));
  CHECK(plan.busbw(plan.nvlink_seconds) == doctest::Approx(450e9 * 0.825));
}

TEST_CASE("all-to-all sends every other node its share: on a 2:1 fat tree the leaf uplinks, not the NICs, set the time") {
  // 4 one-GPU nodes, 2 a leaf, uplinks of 2 x B / 2 = B. Each node sends S/4 to each of the 3 others,
  // 2 of them across: each uplink carries 2 x 2 x S/4 = S, so S/B where the NICs alone need 3/4 S/B.
  const double S = 1e9, B = 25e9;
  const auto c = fat_tree(4, B, 2, 2.0);
  const auto plan = plan_collective(c, CollectiveOp::AllToAll, S, whole_cluster(c));
  CHECK(plan.network_seconds == doctest::Approx(0.75 * S / B));  // what the node's NIC alone allows
  CHECK(simulate_collective(c, plan) == doctest::Approx(S / B).epsilon(1e-6));
  // Non-blocking (1:1), the NICs are the bottleneck again.
  const auto flat = fat_tree(4, B, 2, 1.0);
  CHECK(simulate_collective(flat, plan_collective(flat, CollectiveOp::AllToAll, S, whole_cluster(flat))) ==
        doctest::Approx(0.75 * S / B).epsilon(1e-6));
}

TEST_CASE("all-to-all: LL up to 16 KiB a peer (NCCL_P2P_LL_THRESHOLD), Simple above, and none where NCCL_PROTO=Simple") {
  auto c = rail_cluster(2);
  auto plan_of = [&](double S) { return plan_collective(c, CollectiveOp::AllToAll, S, whole_cluster(c)); };
  CHECK(plan_of(16 * 16384.0).protocol == Protocol::LL);
  CHECK(plan_of(16 * 16385.0).protocol == Protocol::Simple);
  // LL carries a flag with every 4 bytes: half the rate.
  CHECK(plan_of(16 * 16384.0).network_seconds == doctest::Approx(8 * 16384.0 / (50e9 * 0.5)));
  const auto simple = plan_collective(c, CollectiveOp::AllToAll, 16 * 1024.0, whole_cluster(c),
                                      PlanOptions{.protocol = Protocol::Simple});
  CHECK(simple.protocol == Protocol::Simple);
}

TEST_CASE("all-to-all latency: rounds of peers over the channels, and the proxy posting each network peer") {
  const double alpha = 5e-6;
  auto c = rail_cluster(2);
  c.collectives.step_latency_inter = alpha;
  // 32 channels (NVLink's 371 GB/s at ~10 GB/s each, at most 32), 2 per network peer: 16 peers a round.
  const auto two = plan_collective(c, CollectiveOp::AllToAll, 1024, whole_cluster(c));
  CHECK(two.channels == 32);
  CHECK(two.latency_seconds == doctest::Approx(alpha));  // 15 peers: one round
  auto four_nodes = rail_cluster(4);
  four_nodes.collectives.step_latency_inter = alpha;
  CHECK(plan_collective(four_nodes, CollectiveOp::AllToAll, 1024, whole_cluster(four_nodes)).latency_seconds ==
        doctest::Approx(2 * alpha));  // 31 peers x 2 channels over 32: two rounds
  // A transport's per-message cost: a send and a receive posted per network peer (8 here).
  c.nics.transport.overhead = 1e-6;
  CHECK(plan_collective(c, CollectiveOp::AllToAll, 1024, whole_cluster(c)).latency_seconds ==
        doctest::Approx(alpha + 2 * 8 * 1e-6));
}

TEST_CASE("a fit leaves all-to-all points out: they are predicted from what the rings fitted") {
  const auto c = rail_cluster(2);
  calibrate::Point p;
  p.op_name = "alltoall";
  p.op = CollectiveOp::AllToAll;
  p.nodes = 2;
  p.gpus_per_node = 8;
  p.bytes = 1 << 30;
  p.time_s = 0.02;
  p.where = "a2a.txt:12";
  std::string error;
  try {
    calibrate::fit({p}, c);
  } catch (const InputError& e) {
    error = e.what();
  }
  CHECK(error.find("a2a.txt:12: an all-to-all is predicted, never fitted") != std::string::npos);
}
