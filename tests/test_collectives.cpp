// Collectives on hand-built clusters, against their textbook formulas and NCCL's cost model
// computed by hand: rails, protocols, channels, NVLS.
#include "sim/collective.hpp"
#include "sim/kernel_profile.hpp"
#include "sim/replay.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <fstream>
#include <filesystem>

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

// Nodes of 8 GPUs and 8 NICs of 50 GB/s, one per GPU (a DGX H100), latency-free: times are bytes / rate.
topologies::Cluster rail_cluster(int nodes) {
  auto c = flat_cluster(nodes, 50e9, 0);
  c.gpus_per_node = 8;
  c.nics.count = 8;
  c.intra.efficiency = 0.825;
  return c;
}

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

TEST_CASE("an NVL72 rack is one NVLink domain: NVLS over 72 GPUs and no NIC, two racks go out on all 72 rails") {
  // 72 GPUs each reduce 1/72 of the buffer in the switches and multicast it back: S x 73/72 per GPU
  // at NVLink5's 900 GB/s x the preset's NVLS efficiency. busbw = 2 x 71/72 x S / t
  // = 2 x 71/73 x 900 x eff: 1,751 x eff GB/s, 1,029 GB/s at eff 0.5876.
  const auto c = topologies::preset("gb200-nvl72");
  const double S = 8.0 * (1 << 30);
  const auto rack = plan_collective(c, CollectiveOp::AllReduce, S, {1, 72});
  CHECK(rack.algorithm == Algorithm::Nvls);
  CHECK(rack.node_egress_bytes == 0);
  CHECK(rack.network_seconds == 0);
  CHECK(rack.nvlink_bytes == doctest::Approx(S * 73 / 72));
  CHECK(rack.nvlink_seconds == doctest::Approx(S * 73 / 72 / (900e9 * c.intra.nvls_efficiency)));
  CHECK(c.intra.nvls_efficiency == doctest::Approx(0.5876));
  CHECK(rack.busbw(rack.nvlink_seconds) / 1e9 == doctest::Approx(2.0 * 71 / 73 * 900 * 0.5876).epsilon(1e-3));
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

namespace {
// Two 8x H100 nodes, 8 NICs of 50 GB/s, NCCL's latency table (scale 1), no transport latency, nothing fitted.
topologies::Cluster h100_pair() {
  auto c = h100_node(8, 0);
  c.nodes = 2;
  c.nics.count = 8;
  return c;
}
}  // namespace

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
  // All-gather on 2 x 8 GPUs, Simple, 32 channels: S = 2 GiB gives 4 MiB per rank and channel, so full
  // 2 MiB chunks, 1/30 of a channel's 15 steps of data. Of the 14 steps after the first, 1 leaves the
  // node (a network chunk-time: the slower link's) and 13 stay on NVLink (an NVLink chunk-time).
  auto c = h100_pair();
  c.nccl.protos = topologies::NcclPins::Simple;
  c.collectives.ring_depth = 1;
  const double S = 2.0 * (1 << 30);
  const auto plan = plan_collective(c, CollectiveOp::AllGather, S, whole_cluster(c));
  CHECK(plan.algorithm == Algorithm::Ring);
  CHECK(plan.channels == 32);
  const double net = 15.0 / 16 * S / 400e9;                     // 8 rails x 50 GB/s
  const double nvl = 15.0 / 16 * S * 7 / 8 / (450e9 * 0.825);  // the ring leaves each node once
  CHECK(plan.network_seconds == doctest::Approx(net));
  CHECK(plan.nvlink_seconds == doctest::Approx(nvl));
  CHECK(plan.fill_seconds == doctest::Approx((1 * net + 13 * nvl) / 30));
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
