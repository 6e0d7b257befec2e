// Collectives on hand-built clusters, against their textbook formulas: rings, reduces, fat trees,
// rails, and the SMs an NCCL kernel leaves to compute. The bytes and the links are checked here on
// their own, so that NCCL's cost model on top of them (test_collectives_nccl.cpp) starts from
// times known to be right.
#include "collective_testing.hpp"
#include "sim/collective.hpp"
#include "sim/kernel_profile.hpp"
#include "sim/replay.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tagcsim;
using namespace tagcsim::sim;
using namespace tagcsim::test;  // flat_cluster, rail_cluster, fat_tree

namespace {

Task task(const CollectivePlan& plan, Stream stream) {
  Task t{.name = to_string(plan.op), .stream = stream, .category = Category::AllGather};
  t.phases = {{plan}};
  return t;
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

TEST_CASE("a full NVLink mesh (no switch): two of four GPUs have their pair's links, a third of the node's") {
  // HGX 4-GPU boards and GH200 quads: each GPU's 450 GB/s is 3 x 150 GB/s, one bundle per peer.
  // A ring over all four uses every bundle; over two, only the one between them.
  auto c = flat_cluster(1, 50e9, 5e-6);
  c.gpus_per_node = 4;
  c.intra.kind = "nvlink";
  c.intra.bandwidth = 450e9;
  c.collectives.step_latency_intra = 1e-6;
  const double S = 600e6;
  const auto all = plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c));
  CHECK(all.seconds() == doctest::Approx(3.0 / 4 * S / 450e9 + 3 * 1e-6).epsilon(1e-9));
  const Group pair{.nodes = 1, .gpus_per_node = 2, .node_stride = 1, .count = 2, .first_gpu = 0};
  const auto two = plan_collective(c, CollectiveOp::AllGather, S, pair);
  CHECK(two.seconds() == doctest::Approx(1.0 / 2 * S / 150e9 + 1 * 1e-6).epsilon(1e-9));
  // Behind a switch the same pair has the GPU's whole 450 GB/s.
  c.intra.kind = "nvswitch";
  CHECK(plan_collective(c, CollectiveOp::AllGather, S, pair).seconds() ==
        doctest::Approx(1.0 / 2 * S / 450e9 + 1 * 1e-6).epsilon(1e-9));
  CHECK(c.intra.group_bandwidth(2, 4) == 450e9);
  c.intra.kind = "nvlink";
  CHECK(c.intra.group_bandwidth(2, 4) == doctest::Approx(150e9));
  CHECK(c.intra.group_bandwidth(3, 4) == doctest::Approx(300e9));
  CHECK(c.intra.group_bandwidth(2, 2) == 450e9);  // two GPUs bridged: the bridge is all of it
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
  auto c = fat_tree(8, B, 2, 2);
  const auto plan = plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c));
  CHECK(simulate_collective(c, plan) == doctest::Approx(7.0 / 8 * S / B).epsilon(1e-6));
}

TEST_CASE("a partly filled last leaf keeps its switch's uplinks: 6 nodes on leaves of 4 at 4:1") {
  // Leaf 0 holds nodes 0-3, leaf 1 nodes 4-5. Each leaf switch has 4 x B / 4 = B of uplink, the
  // ports of the switch, not of the nodes plugged in. A ring over the six nodes crosses each uplink
  // once per direction (3 -> 4, 5 -> 0): one flow on B, so the ring keeps B. Sized by its two nodes
  // (B/2), leaf 1's uplink would halve it.
  const double S = 600e6, B = 25e9;
  auto c = fat_tree(6, B, 4, 4);
  CHECK(c.leaves() == 2);
  CHECK(c.nodes_in_last_leaf() == 2);
  const auto plan = plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c));
  CHECK(simulate_collective(c, plan) == doctest::Approx(5.0 / 6 * S / B).epsilon(1e-6));
}

TEST_CASE("a three-level fat tree: a ring across two pods is held by the 2:1 uplinks, B/2") {
  // 4 one-GPU nodes, one per leaf, two leaves per pod. At 2:1 a leaf's uplink is B/2 and a pod's
  // 2 x B/2 / 2 = B/2. The ring 0 -> 1 -> 2 -> 3 -> 0 puts one flow on each uplink per direction,
  // so every hop runs at B/2: 3/4 x S / (B/2). At 1:1, B.
  const double S = 400e6, B = 25e9;
  for (const double oversubscription : {1.0, 2.0}) {
    CAPTURE(oversubscription);
    auto c = fat_tree(4, B, 1, oversubscription);
    c.fabric.kind = topologies::Fabric::Kind::FatTree3;
    c.fabric.leaves_per_pod = 2;
    CHECK(c.pods() == 2);
    const auto plan = plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c), Algorithm::Ring);
    CHECK(simulate_collective(c, plan) == doctest::Approx(0.75 * S / (B / oversubscription)).epsilon(1e-6));
  }
}

TEST_CASE("a reduce is a chain: S/B alone, its hop out of the root idle") {
  const double S = 1e9, B = 1e9;
  auto c = flat_cluster(3, B, 0);
  const auto reduce = plan_collective(c, CollectiveOp::Reduce, S, whole_cluster(c));
  CHECK(reduce.node_egress_bytes == doctest::Approx(2 * S / 3));  // two hops of three carry S
  // Root 0: flows 1->2 and 2->0 of S at B each, at once (the hops pipeline): S/B, plus latency.
  CHECK(simulate_collective(c, reduce) ==
        doctest::Approx(S / B + reduce.latency_seconds).epsilon(1e-6));
  Schedule s;
  Task t{.name = "reduce", .stream = Stream::AllGather, .category = Category::AllGather};
  t.phases = {{reduce, 1}};
  s.add(t);
  const auto r = replay(s, c, false);
  CHECK(r.flows == 2);
  CHECK(r.nic_bytes_per_node == doctest::Approx(2 * S / 3));
  // Three reduces, roots 0, 1, 2 in turn: 3 S/B, each hop idle once.
  s.tasks[0].phases[0].count = 3;
  const auto three = replay(s, c, false);
  CHECK(three.flows == 6);
  CHECK(three.timings[0].end == doctest::Approx(3 * (S / B + reduce.latency_seconds)).epsilon(1e-6));
  CHECK(three.nic_bytes_per_node == doctest::Approx(2 * S));
}

TEST_CASE("a reduce fills one direction: a concurrent all-gather shares it and has the other to itself") {
  const double S = 1e9, B = 1e9;
  auto c = flat_cluster(2, B, 0);
  const auto reduce = plan_collective(c, CollectiveOp::Reduce, S, whole_cluster(c));
  CHECK(reduce.node_egress_bytes == doctest::Approx(S / 2));  // one direction of two carries S
  CHECK(simulate_collective(c, reduce) == doctest::Approx(S / B).epsilon(1e-6));
  // Root 0: the reduce sends S from node 1 to node 0. An all-gather of S beside it sends S/2
  // each way. Node 1 -> 0 is shared: B/2 each, so the all-gather's S/2 ends at 1 s, when the
  // reduce has sent S/2; its other S/2 then runs alone at B, ending at 1.5 s. Node 0 -> 1
  // carries only the all-gather's S/2, done at 0.5 s. (Spread over both directions, S/2 each,
  // the reduce used to end at 1 s like the all-gather.)
  Schedule s;
  Task a{.name = "reduce", .stream = Stream::AllGather, .category = Category::AllGather};
  a.phases = {{reduce}};
  Task b{.name = "all-gather", .stream = Stream::ReduceScatter, .category = Category::AllGather};
  b.phases = {{plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c))}};
  s.add(a);
  s.add(b);
  const auto r = replay(s, c);
  CHECK(r.timings[0].end == doctest::Approx(1.5).epsilon(1e-6));
  CHECK(r.timings[1].end == doctest::Approx(1.0).epsilon(1e-6));
  // A broadcast from node 1 sends its S from node 1 to node 0 too: the same times.
  s.tasks[0].phases[0].root = 1;
  s.tasks[0].phases[0].plan = plan_collective(c, CollectiveOp::Broadcast, S, whole_cluster(c));
  const auto other = replay(s, c);
  CHECK(other.timings[0].end == doctest::Approx(1.5).epsilon(1e-6));
  CHECK(other.timings[1].end == doctest::Approx(1.0).epsilon(1e-6));
  // Two reduces back to back, roots 0 then 1, beside an all-gather of 2S (S each way). The first
  // shares 1 -> 0 with it at B/2 each while its 0 -> 1 half ends alone at 1 s; then both have S/2
  // left on 1 -> 0, still at B/2: 2 s. The second reduce sends S from node 0 to node 1 alone:
  // 3 s. (Spread, each direction carried S of the reduces and S of the all-gather: both 2 s.)
  Schedule two;
  a.phases = {{reduce, 2}};
  b.phases = {{plan_collective(c, CollectiveOp::AllGather, 2 * S, whole_cluster(c))}};
  two.add(a);
  two.add(b);
  const auto r2 = replay(two, c);
  CHECK(r2.timings[0].end == doctest::Approx(3.0).epsilon(1e-6));
  CHECK(r2.timings[1].end == doctest::Approx(2.0).epsilon(1e-6));
}

TEST_CASE("a compute kernel beside an NCCL kernel runs on the SMs it leaves: one per channel, in flight") {
  // One DGX H100 node: 132 SMs (its kernel profile). A collective of 33 channels holds a quarter of
  // them for its 4 ms in flight (latency only, no bytes). A 10 ms compute kernel started with it
  // does 3 ms of work by then and its last 7 ms at full speed: it ends at 11 ms. Two such
  // collectives on two communicators hold half: 2 ms of work by 4 ms, the end at 12 ms. On a GPU
  // without a kernel profile (the datasheet roofline) kernels do not share: 10 ms.
  auto c = topologies::preset("dgx-h100-ib400");
  c.nodes = 1;
  auto held = plan_collective(c, CollectiveOp::AllGather, 1e6, whole_cluster(c));
  held.node_egress_bytes = held.nvlink_seconds = held.network_seconds = 0;
  held.latency_seconds = 4e-3;
  held.channels = 33;
  auto step = [&](const topologies::Cluster& cl, int collectives) {
    Schedule s;
    s.add({.name = "backward", .stream = Stream::Compute, .category = Category::Backward, .seconds = 10e-3});
    for (int i = 0; i < collectives; ++i) {
      Task t{.name = "collective", .stream = i == 0 ? Stream::AllGather : Stream::ReduceScatter,
             .category = Category::AllGather};
      t.phases = {{held}};
      s.add(t);
    }
    const auto r = replay(s, cl);
    CHECK(r.timings[1].end == doctest::Approx(4e-3).epsilon(1e-9));  // the collective is not slowed
    return r.timings[0].end;
  };
  CHECK(step(c, 1) == doctest::Approx(11e-3).epsilon(1e-9));
  CHECK(step(c, 2) == doctest::Approx(12e-3).epsilon(1e-9));
  auto roofline = c;
  roofline.gpu.profile = "";
  CHECK(step(roofline, 1) == doctest::Approx(10e-3).epsilon(1e-9));
  // A profile whose measured block takes half an SM (`nccl_sm.block_share`, calibrate box): 33
  // blocks hold an eighth, 3.5 ms of work by 4 ms, the end at 10.5 ms.
  const auto dir = std::filesystem::temp_directory_path() / "tagcsim-test-block-share";
  std::filesystem::create_directories(dir);
  std::ifstream shipped(sim::kernel_profile_path("device-h100-sxm"));
  std::stringstream base;
  base << shipped.rdbuf();
  std::ofstream(dir / "half.yaml") << base.str() << "nccl_sm: {block_share: 0.5, source: 'test'}\n";
  auto half = c;
  half.gpu.profile = (dir / "half.yaml").string();
  CHECK(step(half, 1) == doctest::Approx(10.5e-3).epsilon(1e-9));
  // More than a whole SM is an error at its line.
  std::ofstream(dir / "bad.yaml") << base.str() << "nccl_sm: {block_share: 1.5, source: 't'}\n";
  CHECK_THROWS_WITH_AS(sim::kernel_profile((dir / "bad.yaml").string()),
                       doctest::Contains("nccl_sm.block_share: expected a share of one SM in [0, 1], got 1.5"),
                       InputError);
}

TEST_CASE("busbw follows nccl-tests' factors") {
  CHECK(bus_factor(CollectiveOp::AllReduce, 8) == doctest::Approx(1.75));
  CHECK(bus_factor(CollectiveOp::AllGather, 8) == doctest::Approx(0.875));
  CHECK(bus_factor(CollectiveOp::Reduce, 8) == doctest::Approx(1.0));
}

TEST_CASE("rails: 2 nodes x 1 GPU on an 8-NIC node get one NIC's bandwidth") {
  const auto c = rail_cluster(2);
  const double S = 1e9;
  const Group one_gpu{.nodes = 2, .gpus_per_node = 1, .node_stride = 1, .count = 1, .first_gpu = 3};
  const auto plan = plan_collective(c, CollectiveOp::AllGather, S, one_gpu);
  CHECK(c.rails() == 8);
  CHECK(c.rail_of_gpu(3) == 3);
  CHECK(plan.rails == 1);
  // A 2-rank ring sends S/2 each way through GPU 3's NIC: 0.5 GB at 50 GB/s = 10 ms, not the
  // node's 400 GB/s (1.25 ms).
  CHECK(plan.node_egress_bytes == doctest::Approx(S / 2));
  CHECK(plan.network_seconds == doctest::Approx(0.5e9 / 50e9));
  CHECK(simulate_collective(c, plan) == doctest::Approx(0.01).epsilon(1e-6));
}

TEST_CASE("dgx-b300: a ConnectX-8 of 800 Gb/s per GPU carries two nodes' all-gather in half a DGX B200's network time") {
  const auto b300 = topologies::preset("dgx-b300");
  const auto b200 = topologies::preset("dgx-b200");
  const double S = 8.0 * (1 << 30);
  const auto fast = plan_collective(b300, CollectiveOp::AllGather, S, whole_cluster(b300));
  const auto slow = plan_collective(b200, CollectiveOp::AllGather, S, whole_cluster(b200));
  CHECK(b300.nics.bandwidth == doctest::Approx(100e9));
  CHECK(fast.rails == 8);
  // 16 ranks: each node sends 15/16 S over its 32 channels of 22.99 GB/s (735.7 GB/s, under what its
  // 8 NICs of 100 GB/s take at InfiniBand's fitted 0.9626: the channels bind, as on a B200 node's 16).
  CHECK(fast.channels == 32);
  CHECK(slow.channels == 16);
  CHECK(fast.network_seconds == doctest::Approx(15.0 / 16 * S / (32 * 22.99e9)));  // 10.95 ms
  CHECK(fast.network_seconds == doctest::Approx(slow.network_seconds / 2));
  // The same NVLink5: its term is the B200's, and still below the network's.
  CHECK(fast.nvlink_seconds == doctest::Approx(slow.nvlink_seconds));
  CHECK(fast.nvlink_seconds < fast.network_seconds);
}

TEST_CASE("rails: 8 GPUs per node across 2 nodes use all 8 rails") {
  const auto c = rail_cluster(2);
  const double S = 1e9;
  const auto plan = plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c));
  CHECK(plan.rails == 8);
  // 16 ranks: each node sends 15/16 S across the cut, through 8 x 50 GB/s.
  const double expected = 15.0 / 16 * S / 400e9;  // 2.34375 ms
  CHECK(plan.network_seconds == doctest::Approx(expected));
  // With a second, 1-GPU collective beside it the platform is built rail by rail: the all-gather's
  // flows then run one per rail, 1/8 of the bytes each, and take the same time.
  Schedule s;
  s.add(task(plan, Stream::AllGather));
  const Group tiny{.nodes = 2, .gpus_per_node = 1, .node_stride = 1, .count = 1, .first_gpu = 0};
  s.add(task(plan_collective(c, CollectiveOp::AllGather, 2, tiny), Stream::ReduceScatter));
  const auto r = replay(s, c);
  CHECK(r.flows == 2 * 8 + 2);  // per node: one flow per rail; the tiny one on rail 0
  CHECK(r.timings[0].end - r.timings[0].start == doctest::Approx(expected).epsilon(1e-6));
}

TEST_CASE("rails: two jobs on the same rail share it, on different rails they do not") {
  const auto c = rail_cluster(2);
  const double S = 1e9;
  auto job = [&](int gpu) {
    const Group g{.nodes = 2, .gpus_per_node = 1, .node_stride = 1, .count = 1, .first_gpu = gpu};
    return plan_collective(c, CollectiveOp::AllGather, S, g);
  };
  auto both = [&](int gpu_a, int gpu_b) {
    Schedule s;
    s.add(task(job(gpu_a), Stream::AllGather));
    s.add(task(job(gpu_b), Stream::ReduceScatter));
    return replay(s, c);
  };
  const double alone = 0.5e9 / 50e9;  // 10 ms on one NIC
  const auto same = both(2, 2);
  CHECK(same.timings[0].end == doctest::Approx(2 * alone).epsilon(1e-6));
  CHECK(same.timings[1].end == doctest::Approx(2 * alone).epsilon(1e-6));
  const auto apart = both(2, 5);
  CHECK(apart.timings[0].end == doctest::Approx(alone).epsilon(1e-6));
  CHECK(apart.timings[1].end == doctest::Approx(alone).epsilon(1e-6));
  // GPUs sharing a NIC (4 NICs for 8 GPUs) share its rail.
  auto shared = c;
  shared.nics.count = 4;
  shared.nics.bandwidth = 100e9;
  CHECK(shared.rails() == 4);
  CHECK(shared.rail_of_gpu(4) == shared.rail_of_gpu(5));
  CHECK(shared.rail_of_gpu(3) != shared.rail_of_gpu(4));
}

TEST_CASE("rail-optimized fabrics give each rail its own leaf switch and uplink") {
  // 4 nodes, 2 per leaf, 8 rails of 50 GB/s, 8:1 oversubscribed. Two jobs of one GPU per node
  // (rails 0 and 1), each ring pairing node i with node i+2 in the other leaf: both nodes of a
  // leaf send 0.5 GB up per job.
  auto c = rail_cluster(4);
  c.fabric = {.kind = topologies::Fabric::Kind::FatTree2, .nodes_per_leaf = 2, .leaves_per_pod = 0,
              .oversubscription = 8, .switch_latency = 0};
  auto both = [&] {
    Schedule s;
    for (int gpu : {0, 1}) {
      const Group g{.nodes = 2, .gpus_per_node = 1, .node_stride = 2, .count = 2, .first_gpu = gpu};
      s.add(task(plan_collective(c, CollectiveOp::AllGather, 1e9, g), gpu ? Stream::ReduceScatter : Stream::AllGather));
    }
    return replay(s, c);
  };
  // One leaf switch for all NICs: its uplink, 2 x 400 / 8 = 100 GB/s, is shared by 4 flows: 25 GB/s each.
  c.fabric.rail_optimized = false;
  CHECK(both().timings[0].end == doctest::Approx(0.5e9 / 25e9).epsilon(1e-6));
  // One leaf switch per rail: rail 0's uplink, 2 x 50 / 8 = 12.5 GB/s, carries only job 0's 2 flows.
  c.fabric.rail_optimized = true;
  const auto r = both();
  CHECK(r.timings[0].end == doctest::Approx(0.5e9 / 6.25e9).epsilon(1e-6));
  CHECK(r.timings[1].end == doctest::Approx(0.5e9 / 6.25e9).epsilon(1e-6));
}
