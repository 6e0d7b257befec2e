// Collectives on hand-built clusters, against their textbook formulas.
#include "sim/collective.hpp"
#include "sim/replay.hpp"

#include <doctest/doctest.h>

using namespace tagcsim;
using namespace tagcsim::sim;

namespace {

// N nodes of one GPU each behind one switch: every ring hop is a NIC hop.
topologies::Cluster flat_cluster(int nodes, double nic_bw, double step_latency) {
  topologies::Cluster c;
  c.name = "flat";
  c.nodes = nodes;
  c.gpus_per_node = 1;
  c.gpu.memory_bytes = 80e9;
  c.intra = {.kind = "nvswitch", .bandwidth = 450e9, .latency = 0, .efficiency = 1};
  c.nics = {.count = 1, .bandwidth = nic_bw, .latency = 0, .efficiency = 1};
  c.fabric.kind = topologies::Fabric::Kind::SingleSwitch;
  c.collectives = {.step_latency_intra = 0, .step_latency_inter = step_latency, .launch_latency = 0};
  return c;
}

}  // namespace

TEST_CASE("a ring all-gather on a symmetric cluster takes (N-1)/N * S/B + (N-1) * alpha") {
  const int N = 16;
  const double S = 256e6, B = 25e9, alpha = 5e-6;
  auto c = flat_cluster(N, B, alpha);
  const auto plan = plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c));
  const double expected = double(N - 1) / N * S / B + (N - 1) * alpha;  // 9.6075 ms
  CHECK(plan.seconds() == doctest::Approx(expected).epsilon(1e-9));
  CHECK(simulate_collective(c, plan) == doctest::Approx(expected).epsilon(1e-6));
  CHECK(plan.steps == N - 1);
  CHECK(plan.busbw(expected) == doctest::Approx(B * (1 - alpha * (N - 1) / expected)).epsilon(1e-9));
}

TEST_CASE("a ring reduce-scatter costs the same as the all-gather of the same buffer") {
  const int N = 8;
  const double S = 1e9, B = 50e9, alpha = 2e-6;
  auto c = flat_cluster(N, B, alpha);
  const auto plan = plan_collective(c, CollectiveOp::ReduceScatter, S, whole_cluster(c));
  const double expected = 7.0 / 8 * S / B + 7 * alpha;  // 17.514 ms
  CHECK(simulate_collective(c, plan) == doctest::Approx(expected).epsilon(1e-6));
}

TEST_CASE("a ring all-reduce moves 2(N-1)/N * S and takes 2(N-1) steps") {
  const int N = 4;
  const double S = 100e6, B = 10e9, alpha = 10e-6;
  auto c = flat_cluster(N, B, alpha);
  const auto plan = plan_collective(c, CollectiveOp::AllReduce, S, whole_cluster(c), Algorithm::Ring);
  CHECK(plan.node_egress_bytes == doctest::Approx(2 * 3.0 / 4 * S));
  CHECK(plan.steps == 2 * (N - 1));
  CHECK(simulate_collective(c, plan) == doctest::Approx(1.5 * S / B + 2 * (N - 1) * alpha).epsilon(1e-6));
}

TEST_CASE("inside one node the ring runs on NVLink only") {
  auto c = flat_cluster(1, 50e9, 5e-6);
  c.gpus_per_node = 8;
  c.intra.bandwidth = 400e9;
  c.collectives.step_latency_intra = 1e-6;
  const auto plan = plan_collective(c, CollectiveOp::AllGather, 800e6, whole_cluster(c));
  CHECK(plan.node_egress_bytes == 0);
  CHECK(simulate_collective(c, plan) == doctest::Approx(7.0 / 8 * 800e6 / 400e9 + 7 * 1e-6).epsilon(1e-9));
}

TEST_CASE("a 2:1 oversubscribed fat tree halves the bandwidth of rings that cross leaves on every hop") {
  // 4 leaves of 2 nodes. HSDP with one leaf per shard group: the replica
  // all-reduce of node i goes to node i+2, in the next leaf. Each leaf sends
  // 2 flows up; at 1:1 its uplink carries 2*B, at 2:1 only B, so each flow
  // gets B/2 and the bandwidth term doubles.
  const double S = 400e6, B = 25e9;
  auto c = flat_cluster(8, B, 0);
  c.fabric.kind = topologies::Fabric::Kind::FatTree2;
  c.fabric.nodes_per_leaf = 2;
  const Group replicas{.nodes = 4, .gpus_per_node = 1, .node_stride = 2, .count = 2};
  c.fabric.oversubscription = 1;
  const auto plan = plan_collective(c, CollectiveOp::AllReduce, S, replicas, Algorithm::Ring);
  const double full = simulate_collective(c, plan);
  CHECK(full == doctest::Approx(2 * 3.0 / 4 * S / B).epsilon(1e-6));
  c.fabric.oversubscription = 2;
  CHECK(simulate_collective(c, plan) == doctest::Approx(2 * full).epsilon(1e-6));
}

TEST_CASE("a ring over consecutive nodes crosses each leaf uplink once, so 2:1 does not slow it") {
  const double S = 400e6, B = 25e9;
  auto c = flat_cluster(8, B, 0);
  c.fabric.kind = topologies::Fabric::Kind::FatTree2;
  c.fabric.nodes_per_leaf = 2;
  c.fabric.oversubscription = 2;
  const auto plan = plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c));
  CHECK(simulate_collective(c, plan) == doctest::Approx(7.0 / 8 * S / B).epsilon(1e-6));
}

TEST_CASE("a reduce is a chain: S/B alone, but its idle link is free for a concurrent collective") {
  const double S = 1e9, B = 1e9;
  auto c = flat_cluster(2, B, 0);
  const auto reduce = plan_collective(c, CollectiveOp::Reduce, S, whole_cluster(c));
  CHECK(reduce.node_egress_bytes == doctest::Approx(S / 2));  // one link of two carries S
  CHECK(simulate_collective(c, reduce) == doctest::Approx(S / B).epsilon(1e-6));
  // With an all-gather of S beside it (S/2 per node), the reduce's flows take
  // half of each link for S/2 at B/2 = 1 s, the all-gather too; both end at 1 s.
  Schedule s;
  Task a{.name = "reduce", .stream = Stream::AllGather, .category = Category::AllGather};
  a.phases = {{reduce}};
  Task b{.name = "all-gather", .stream = Stream::ReduceScatter, .category = Category::AllGather};
  b.phases = {{plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c))}};
  s.add(a);
  s.add(b);
  const auto r = replay(s, c);
  CHECK(r.timings[0].end == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(r.timings[1].end == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("busbw follows nccl-tests' factors") {
  CHECK(bus_factor(CollectiveOp::AllReduce, 8) == doctest::Approx(1.75));
  CHECK(bus_factor(CollectiveOp::AllGather, 8) == doctest::Approx(0.875));
  CHECK(bus_factor(CollectiveOp::Reduce, 8) == doctest::Approx(1.0));
}
