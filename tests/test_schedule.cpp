// The FSDP step schedule, on cases small enough to compute by hand.
#include "models/model.hpp"
#include "sim/replay.hpp"
#include "sim/schedule.hpp"
#include "sim/step.hpp"
#include "sim/trace.hpp"

#include <doctest/doctest.h>

using namespace tagcsim;
using namespace tagcsim::sim;

namespace {

// 2 nodes x 1 GPU, 1 GB/s NICs, no latency; a GPU doing 1 TFLOP/s with
// unbounded memory bandwidth, so that every duration is a round number.
topologies::Cluster toy_cluster() {
  topologies::Cluster c;
  c.name = "toy";
  c.nodes = 2;
  c.gpus_per_node = 1;
  c.gpu = {.name = "toy", .peak_flops_bf16 = 1e12, .peak_flops_fp32 = 1e12, .peak_flops_tf32 = 1e12,
           .memory_bytes = 1e12, .memory_bandwidth = 1e18, .gemm_efficiency = 1, .memory_efficiency = 1};
  c.intra = {.kind = "pcie", .bandwidth = 1e12, .latency = 0, .efficiency = 1};
  c.nics = {.count = 1, .bandwidth = 1e9, .latency = 0, .efficiency = 1};
  return c;
}

models::FsdpUnit unit(const char* name, double params, double fwd_s, double bwd_s) {
  models::FsdpUnit u;
  u.name = name;
  u.params = std::int64_t(params);
  u.forward_flops = fwd_s * 1e12;
  u.backward_flops = bwd_s * 1e12;
  u.gemm_fraction = u.backward_gemm_fraction = 1;
  return u;
}

StepSetup two_units() {
  StepSetup s = make_setup(models::preset("gpt2-124m"), toy_cluster(), Training{});
  // Root: 1e9 params (all-gather of bf16: 1 s at 2 ranks; reduce-scatter of fp32: 2 s).
  // Unit 1: 0.5e9 params (0.5 s and 1 s).
  s.units = {unit("root", 1e9, 1, 2), unit("block", 0.5e9, 2, 4)};
  return s;
}

}  // namespace

TEST_CASE("a two-unit FULL_SHARD step overlaps exactly what FSDP lets it overlap") {
  // all-gather stream: root [0, 1], block [1, 1.5], block again for backward [3.5, 4]
  // compute:           fwd block [1.5, 3.5], fwd root [3.5, 4.5], bwd root [4.5, 6.5], bwd block [6.5, 10.5]
  // reduce-scatter:    block [10.5, 11.5], root [11.5, 13.5]; the optimizer's time is ~0
  const auto r = simulate_fsdp(two_units());
  CHECK(r.step_time_s == doctest::Approx(13.5).epsilon(1e-6));
  CHECK(r.breakdown.compute_s == doctest::Approx(9.0).epsilon(1e-9));
  CHECK(r.breakdown.exposed_comm_s == doctest::Approx(4.5).epsilon(1e-6));  // 1.5 before, 3 after the compute
  CHECK(r.breakdown.allgather_s == doctest::Approx(2.0).epsilon(1e-6));     // of which the backward 0.5 s is hidden
  CHECK(r.breakdown.reduce_scatter_s == doctest::Approx(3.0).epsilon(1e-6));
  CHECK(r.collectives.at("all_gather").count == 3);
  CHECK(r.collectives.at("reduce_scatter").bytes == doctest::Approx(4 * 1.5e9));
}

TEST_CASE("SHARD_GRAD_OP keeps parameters gathered, so backward needs no all-gather") {
  auto s = two_units();
  s.training.sharding = Sharding::ShardGradOp;
  const auto r = simulate_fsdp(s);
  CHECK(r.collectives.at("all_gather").count == 2);
  CHECK(r.step_time_s == doctest::Approx(13.5).epsilon(1e-6));  // that all-gather was hidden anyway
}

TEST_CASE("no_sync accumulation reduce-scatters once per step, without it once per micro-batch") {
  auto s = two_units();
  s.training.grad_accumulation = 3;
  CHECK(simulate_fsdp(s).collectives.at("reduce_scatter").count == 2);
  s.training.no_sync = false;
  CHECK(simulate_fsdp(s).collectives.at("reduce_scatter").count == 6);
}

TEST_CASE("two collectives at once share the NICs: each takes twice as long") {
  const auto c = toy_cluster();
  const auto plan = plan_collective(c, CollectiveOp::AllGather, 2e9, whole_cluster(c));  // 1 s alone
  Schedule s;
  Task a{.name = "a", .stream = Stream::AllGather, .category = Category::AllGather};
  a.phases = {{plan}};
  Task b = a;
  b.stream = Stream::ReduceScatter;
  s.add(a);
  s.add(b);
  const auto r = replay(s, c);
  CHECK(r.timings[0].end == doctest::Approx(2.0).epsilon(1e-6));
  CHECK(r.timings[1].end == doctest::Approx(2.0).epsilon(1e-6));
}

TEST_CASE("HYBRID_SHARD shards inside a node and all-reduces shards across nodes") {
  auto c = toy_cluster();
  c.gpus_per_node = 4;
  Training t;
  t.sharding = Sharding::HybridShard;
  const auto s = make_setup(models::preset("gpt2-124m"), c, t);
  CHECK(s.shard_size() == 4);
  REQUIRE(s.replica_group);
  CHECK(s.replica_group->ranks() == 2);
  CHECK(s.replica_group->count == 4);
}

TEST_CASE("replaying two leaves instead of the whole fat tree gives the same times, to the nanosecond") {
  // 16 leaves of 4 nodes, 2:1 oversubscribed; HSDP with one leaf per shard
  // group, so that shard rings stay in leaves and replica rings cross them.
  auto c = toy_cluster();
  c.nodes = 64;
  c.gpus_per_node = 2;
  c.fabric = {.kind = topologies::Fabric::Kind::FatTree2, .nodes_per_leaf = 4, .leaves_per_pod = 0,
              .oversubscription = 2, .switch_latency = 0};
  Training t;
  t.sharding = Sharding::HybridShard;
  t.hybrid_shard_gpus = 8;
  auto s = make_setup(models::preset("gpt2-124m"), c, t);
  const Schedule schedule = build_step(s);
  const auto cut = replay(schedule, c, true);
  const auto full = replay(schedule, c, false);
  CHECK(cut.simulated_nodes == 8);
  CHECK(full.simulated_nodes == 64);
  REQUIRE(cut.timings.size() == full.timings.size());
  double worst = 0;
  for (std::size_t i = 0; i < cut.timings.size(); ++i)
    worst = std::max(worst, std::abs(cut.timings[i].end - full.timings[i].end));
  CHECK(worst < 1e-9);
  CHECK(full.timings.back().end > 0.01);
}

TEST_CASE("the Chrome trace has one track per stream and one slice per task, in microseconds") {
  const auto r = simulate_fsdp(two_units());
  const std::string trace = chrome_trace(r, "two units");
  for (const char* track : {"\"compute\"", "\"all-gather\"", "\"reduce-scatter\""})
    CHECK(trace.find(track) != std::string::npos);
  std::size_t slices = 0;
  for (std::size_t at = 0; (at = trace.find("\"ph\":\"X\"", at)) != std::string::npos; ++at) ++slices;
  CHECK(slices == r.schedule.tasks.size());
  // The backward of the block runs [6.5, 10.5] s.
  CHECK(trace.find("\"name\":\"backward block\",\"cat\":\"backward\",\"ph\":\"X\",\"pid\":0,\"tid\":0,"
                   "\"ts\":6500000.000,\"dur\":4000000.000") != std::string::npos);
}
