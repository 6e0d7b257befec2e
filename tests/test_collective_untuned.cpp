// Costs beyond NCCL's tuning table. Most are left out of NCCL's tuner: they change a collective's
// time, never NCCL's choice of algorithm and protocol. Hand-built 8x H100 nodes with NCCL's latency table and nothing else fitted, so each
// time is the tuner's formula (test_collectives.cpp, "protocols: ...") plus the cost under test.
#include "common/input.hpp"
#include "sim/collective.hpp"
#include "topologies/cluster.hpp"

#include <doctest/doctest.h>

using namespace tagcsim;
using namespace tagcsim::sim;
using doctest::Approx;

namespace {

constexpr double us = 1e-6, MiB = 1 << 20;

topologies::Cluster h100_nodes(int nodes) {
  topologies::Cluster c;
  c.name = "h100";
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.gpu.sm = 90;
  c.gpu.memory_bytes = 80e9;
  c.intra = {.kind = "nvswitch", .bandwidth = 450e9, .latency = 0, .efficiency = 0.825};
  c.nics = {.count = 8, .bandwidth = 50e9, .latency = 0, .efficiency = 1};
  c.fabric.kind = topologies::Fabric::Kind::SingleSwitch;
  c.collectives.latency_scale = 1;
  return c;
}

double all_reduce(const topologies::Cluster& c, double bytes) {
  return plan_collective(c, CollectiveOp::AllReduce, bytes, whole_cluster(c)).seconds();
}

}  // namespace

TEST_CASE("a Simple ring on one node pays a flag per slice: two per step of every loop") {
  // 8 ranks, 32 channels: a loop moves 8 x 32 full 2 MiB chunks = 512 MiB. Below it NCCL shrinks the
  // chunks, not their number: 64 MiB is one loop, 2 GiB four. 14 steps x 2 slices x loops x 5 us.
  auto c = h100_nodes(1);
  c.nccl.protos = topologies::NcclPins::Simple;
  auto with = c;
  with.collectives.slice_latency = 5 * us;
  CHECK(all_reduce(with, 64 * MiB) - all_reduce(c, 64 * MiB) == Approx(14 * 2 * 1 * 5 * us));
  CHECK(all_reduce(with, 2048 * MiB) - all_reduce(c, 2048 * MiB) == Approx(14 * 2 * 4 * 5 * us));
  // LL and LL128 carry their flags in the data: no slice handshake.
  with.nccl.protos = c.nccl.protos = topologies::NcclPins::LL128;
  CHECK(all_reduce(with, 64 * MiB) == Approx(all_reduce(c, 64 * MiB)));
}

TEST_CASE("across nodes the network's step hides the NVLink hops' flags") {
  auto c = h100_nodes(2);
  c.nccl.protos = topologies::NcclPins::Simple;
  c.nccl.algos = topologies::NcclPins::Ring;
  auto with = c;
  with.collectives.slice_latency = 5 * us;
  CHECK(all_reduce(with, 64 * MiB) == Approx(all_reduce(c, 64 * MiB)));
}

TEST_CASE("the choice stays NCCL's: the slice flags slow Simple without handing the size to LL128") {
  // From test_collectives.cpp: the tuner rates LL128 and Simple equal at 37.58 MB (LL128 40.6 us +
  // 1.75 S / 341.55 GB/s, Simple 56.0 us + 1.75 S / 371.25 GB/s). Just above it NCCL runs Simple, and
  // still does when each of its 28 slices costs 5 us more: 140 us that would make LL128 faster.
  auto c = h100_nodes(1);
  c.collectives.slice_latency = 5 * us;
  const double S = 1.02 * 37.58e6;
  const auto plan = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c));
  CHECK(plan.protocol == Protocol::Simple);
  CHECK(plan.seconds() == Approx(56.0 * us + 1.75 * S / 371.25e9 + 140 * us).epsilon(1e-9));
  CHECK(plan.tuner_seconds == Approx(56.0 * us + 1.75 * S / 371.25e9).epsilon(1e-9));  // what NCCL saw
  const double ll128 = 40.6 * us + 1.75 * S / 341.55e9;
  CHECK(ll128 < plan.seconds());
}

TEST_CASE("LL128 over NVLink delivers ll128_efficiency of what the tuner rates it, at the tuner's sizes") {
  // Just below 37.58 MB the tuner runs LL128: 40.6 us + 1.75 S / 341.55 GB/s. At half the rate its
  // bandwidth term doubles, and NCCL keeps LL128 though Simple would now be faster.
  auto c = h100_nodes(1);
  c.intra.ll128_efficiency = 0.5;
  const double S = 0.98 * 37.58e6;
  const auto plan = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c));
  CHECK(plan.protocol == Protocol::LL128);
  CHECK(plan.seconds() == Approx(40.6 * us + 1.75 * S / (0.5 * 341.55e9)).epsilon(1e-9));
  CHECK(plan.tuner_seconds == Approx(40.6 * us + 1.75 * S / 341.55e9).epsilon(1e-9));
  CHECK(56.0 * us + 1.75 * S / 371.25e9 < plan.seconds());
}

TEST_CASE("bad input: an LL128 efficiency of 0 or above 1, an NVLS tree efficiency above 1, or a negative slice latency, names its key") {
  auto load = [](const std::string& text) {
    return topologies::load_cluster(Input::load_string(text, "u.yaml")["cluster"]);
  };
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-a100-ib200\n  intra_node: {ll128_efficiency: 0}\n"),
                       doctest::Contains("intra_node.ll128_efficiency"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-h100-ib400\n  intra_node: {nvls_tree_efficiency: 1.2}\n"),
                       doctest::Contains("intra_node.nvls_tree_efficiency"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-a100-ib200\n  intra_node: {ll128_efficiency: 1.5}\n"),
                       doctest::Contains("expected a fraction in (0, 1]"), InputError);
  CHECK_THROWS_WITH_AS(load("cluster:\n  preset: dgx-a100-ib200\n  collectives: {slice_latency: -2 us}\n"),
                       doctest::Contains("u.yaml:3"), InputError);
  CHECK(load("cluster:\n  preset: dgx-a100-ib200\n").intra.ll128_efficiency == Approx(0.6741));
}

TEST_CASE("Hopper's all-gathers and reduce-scatters across nodes run Simple where the tuner would pick LL128 (measured)") {
  // NCCL's tuner rates an LL128 ring at 0.92 of Simple's bandwidth with 15 x 1.9 + 4 us of latency
  // against Simple's 15 x 3.4 + 14: below ~100 MiB it would choose LL128. Three published all-gather
  // tables (InfiniBand, RoCE, TCPXO; H100 and B200) run at Simple's speed from 1 MiB, and a 10-node
  // run's reduce-scatters take its all-gathers' times (docs/calibration.md).
  const auto two = h100_nodes(2);
  const double S = 16 * MiB;
  const auto ag = plan_collective(two, CollectiveOp::AllGather, S, whole_cluster(two));
  CHECK(ag.algorithm == Algorithm::Ring);
  CHECK(ag.protocol == Protocol::Simple);
  CHECK(ag.seconds() == Approx(plan_collective(two, CollectiveOp::AllGather, S, whole_cluster(two),
                                               PlanOptions{.protocol = Protocol::Simple}).seconds()));
  CHECK(plan_collective(two, CollectiveOp::ReduceScatter, S, whole_cluster(two)).protocol == Protocol::Simple);
  // What the tuner alone chooses: LL128, on one node and for an all-reduce across nodes.
  const auto one = h100_nodes(1);
  CHECK(plan_collective(one, CollectiveOp::AllGather, S, whole_cluster(one)).protocol == Protocol::LL128);
  CHECK(plan_collective(one, CollectiveOp::ReduceScatter, S, whole_cluster(one)).protocol == Protocol::LL128);
  CHECK(plan_collective(two, CollectiveOp::AllReduce, S, whole_cluster(two)).protocol == Protocol::LL128);
  // LL stays for small all-gathers, and LL128 pinned alone still runs.
  CHECK(plan_collective(two, CollectiveOp::AllGather, 64 * 1024, whole_cluster(two)).protocol == Protocol::LL);
  CHECK(plan_collective(two, CollectiveOp::AllGather, S, whole_cluster(two), PlanOptions{.protocol = Protocol::LL128})
            .protocol == Protocol::LL128);
  // A100 nodes run the tuner's LL128: ALCF's DGX A100 pair (S106, NCCL 2.22.3) takes 154 us for a
  // 16 MiB all-gather, against Simple's 212 and LL128's 154 (docs/calibration.md).
  auto a100 = two;
  a100.gpu.sm = 80;
  const auto ampere = plan_collective(a100, CollectiveOp::AllGather, S, whole_cluster(a100));
  CHECK(ampere.protocol == Protocol::LL128);
  CHECK_FALSE(ampere.ll128_left_out);
  CHECK(plan_collective(a100, CollectiveOp::ReduceScatter, S, whole_cluster(a100)).protocol == Protocol::LL128);
  CHECK(ag.ll128_left_out);
}

TEST_CASE("NCCL turns LL128 on by default only over NVLink and NICs beside the GPUs, not over sockets or PCIe") {
  // tuning.cc: LL128 is enabled by default where typeIntra <= PATH_NVB and typeInter <= PATH_PXB (PXN
  // from Hopper on). The same 16 MiB all-reduce that runs LL128 across two NVLink nodes with RDMA NICs
  // (the case above) runs Simple when the NICs are sockets on the host, unless NCCL_PROTO names LL128.
  auto two = h100_nodes(2);
  const double S = 16 * MiB;
  auto plan = plan_collective(two, CollectiveOp::AllReduce, S, whole_cluster(two));
  CHECK(plan.protocol == Protocol::LL128);
  CHECK_FALSE(plan.ll128_off);
  two.nics.transport.kind = "socket";
  plan = plan_collective(two, CollectiveOp::AllReduce, S, whole_cluster(two));
  CHECK(plan.protocol == Protocol::Simple);
  CHECK(plan.ll128_off);
  two.nccl.protos = topologies::NcclPins::LL | topologies::NcclPins::LL128 | topologies::NcclPins::Simple;
  plan = plan_collective(two, CollectiveOp::AllReduce, S, whole_cluster(two));
  CHECK(plan.protocol == Protocol::LL128);
  CHECK_FALSE(plan.ll128_off);
  // Eight GPUs of one node joined by PCIe: a 4 MiB all-gather the tuner would run LL128 (pinned in)
  // runs Simple.
  auto pcie = h100_nodes(1);
  pcie.intra = {.kind = "pcie", .bandwidth = 31.5e9, .latency = 0, .efficiency = 0.8};
  plan = plan_collective(pcie, CollectiveOp::AllGather, 4 * MiB, whole_cluster(pcie));
  CHECK(plan.protocol == Protocol::Simple);
  CHECK(plan.ll128_off);
  pcie.nccl.protos = two.nccl.protos;
  CHECK(plan_collective(pcie, CollectiveOp::AllGather, 4 * MiB, whole_cluster(pcie)).protocol == Protocol::LL128);
}

TEST_CASE("an NVLink generation's step latency: every step inside the node pays it, none between nodes") {
  // 2 x 8 GPUs, 8 B: a tree all-reduce climbs and descends 7 NVLink hops in each node (2 x 7 steps), a
  // ring all-gather takes 15 steps of which one leaves the node (14). 0.8 us each: 11.2 us more.
  auto c = h100_nodes(2);
  auto slow = c;
  slow.intra.step_latency = 0.8 * us;
  for (auto op : {CollectiveOp::AllReduce, CollectiveOp::AllGather}) {
    CAPTURE(int(op));
    const auto a = plan_collective(c, op, 8, whole_cluster(c));
    const auto b = plan_collective(slow, op, 8, whole_cluster(slow));
    CHECK(b.algorithm == a.algorithm);
    CHECK(b.seconds() - a.seconds() == Approx(14 * 0.8 * us));
  }
  CHECK(plan_collective(c, CollectiveOp::AllReduce, 8, whole_cluster(c)).algorithm == Algorithm::Tree);
}
