// Stragglers: a job of GPUs that do not all run at the same speed moves at the slowest one's pace
// (topologies/stragglers.hpp). The expected slowest of n comes from the expected maximum of n
// normal deviates, whose small-n values have closed forms; a replay checked by hand shows what
// slows down (the GPU's kernels) and what does not (the host, the links).
#include "cluster_testing.hpp"
#include "scenarios/report.hpp"
#include "scenarios/scenario.hpp"
#include "sim/replay.hpp"
#include "topologies/cluster_yaml.hpp"
#include "topologies/stragglers.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;

TEST_CASE("the expected maximum of n standard normal deviates, against its closed forms and tables") {
  using topologies::expected_max_of_normals;
  CHECK(expected_max_of_normals(1) == 0);
  CHECK(expected_max_of_normals(2) == Approx(1 / std::sqrt(M_PI)).epsilon(1e-7));        // 0.5642
  CHECK(expected_max_of_normals(3) == Approx(1.5 / std::sqrt(M_PI)).epsilon(1e-7));      // 0.8463
  CHECK(expected_max_of_normals(4) == Approx(1.0293754).epsilon(1e-6));
  CHECK(expected_max_of_normals(5) == Approx(1.1629645).epsilon(1e-6));
  CHECK(expected_max_of_normals(100) == Approx(2.5075936).epsilon(1e-6));
  CHECK(expected_max_of_normals(1000) == Approx(3.2414).epsilon(1e-4));
}

TEST_CASE("the slowest GPU's speed: given, or expected from a spread over the job's GPUs") {
  using topologies::Stragglers;
  CHECK(topologies::slowest_gpu_speed(Stragglers{}, 512) == 1);
  CHECK(topologies::slowest_gpu_speed(Stragglers{.slowest = 0.9}, 512) == 0.9);
  // Two GPUs spread by 2%: the slower is expected 0.02 / sqrt(pi) below nominal.
  CHECK(topologies::slowest_gpu_speed(Stragglers{.spread = 0.02}, 2) == Approx(1 - 0.02 / std::sqrt(M_PI)));
  const auto c = test::load("cluster:\n  preset: dgx-h100-ib400\n  nodes: 2\n  stragglers: {spread: 0.02}\n");
  CHECK(c.slowest_gpu_speed() == Approx(1 - 0.02 * topologies::expected_max_of_normals(16)));
  const auto yaml = topologies::cluster_yaml(c);
  CHECK(yaml.find("# the slowest of 16 GPUs at 0.9647 of nominal speed\n    spread: 0.02 ") != std::string::npos);
}

TEST_CASE("a straggler slows the GPU's kernels, not the host's work nor the links") {
  // Two nodes of one GPU, 1 GB/s NICs. A compute kernel of 1 s, a host task of 0.5 s beside it,
  // and an all-gather of 2 GB over the two GPUs (each sends its 1 GB half: 1 s). With the slowest
  // GPU at 0.8 of nominal, the kernel takes 1 / 0.8 = 1.25 s; the other two do not change.
  topologies::Cluster c;
  c.nodes = 2;
  c.gpu = {.name = "toy", .peak_flops_bf16 = 1e12, .peak_flops_fp32 = 1e12, .peak_flops_tf32 = 1e12,
           .memory_bytes = 1e12, .memory_bandwidth = 1e18, .gemm_efficiency = 1, .memory_efficiency = 1};
  c.intra = {.kind = "pcie", .bandwidth = 1e12, .latency = 0, .efficiency = 1};
  c.nics = {.count = 1, .bandwidth = 1e9, .latency = 0, .efficiency = 1};
  sim::Schedule s;
  s.add({.name = "kernel", .stream = sim::Stream::Compute, .seconds = 1});
  s.add({.name = "host", .stream = sim::Stream::Host, .category = sim::Category::Host, .seconds = 0.5});
  sim::Task gather{.name = "all-gather", .stream = sim::Stream::AllGather, .category = sim::Category::AllGather};
  const sim::Group both{.nodes = 2, .gpus_per_node = 1, .node_stride = 1, .count = 1};
  gather.phases = {{sim::plan_collective(c, sim::CollectiveOp::AllGather, 2e9, both)}};
  s.add(gather);
  auto durations = [&](const topologies::Cluster& cluster) {
    const auto r = sim::replay(s, cluster);
    std::vector<double> d;
    for (const auto& t : r.timings) d.push_back(t.end - t.start);
    return d;
  };
  const auto even = durations(c);
  CHECK(even[0] == Approx(1.0).epsilon(1e-9));
  CHECK(even[1] == Approx(0.5).epsilon(1e-9));
  CHECK(even[2] == Approx(1.0).epsilon(1e-6));
  c.stragglers.slowest = 0.8;
  const auto slow = durations(c);
  CHECK(slow[0] == Approx(1.25).epsilon(1e-9));
  CHECK(slow[1] == Approx(0.5).epsilon(1e-9));
  CHECK(slow[2] == Approx(even[2]).epsilon(1e-9));
}

namespace {

double step_time(const std::string& cluster, const std::string& training = "") {
  const auto s = scenarios::parse_scenario("model: llama3.1-8b\ncluster: " + cluster +
                                               "\ntraining: {framework: torchtitan, micro_batch: 1, seq_len: 4096" +
                                               training + "}\npolicies: [fsdp]\n",
                                           "s.yaml");
  return scenarios::run(s).front().step.step_time_s;
}

}  // namespace

TEST_CASE("a compute-bound step slows by the slowest GPU's pace, its memory does not change") {
  // Llama 3.1 8B on one node of 8 GPUs, 4096 tokens a GPU: the step is almost all compute, so
  // a slowest GPU at 0.8 makes it nearly 1.25x as long (the collectives' exposed part stays).
  const double even = step_time("{preset: dgx-h100-ib400, nodes: 1}");
  const double slow = step_time("{preset: dgx-h100-ib400, nodes: 1, stragglers: {slowest: 0.8}}");
  CHECK(slow / even == Approx(1.25).epsilon(0.02));
  CHECK(slow / even < 1.25);
  // Under pipeline parallelism every stage runs at the whole job's slowest GPU's pace.
  const std::string pp = ", pipeline_parallel: 2, pipeline_microbatches: 4";
  const double even_pp = step_time("{preset: dgx-h100-ib400, nodes: 2}", pp);
  const double slow_pp = step_time("{preset: dgx-h100-ib400, nodes: 2, stragglers: {slowest: 0.8}}", pp);
  CHECK(slow_pp / even_pp == Approx(1.25).epsilon(0.03));
}

TEST_CASE("the report names the slowest GPU's pace, in the header and in JSON") {
  const auto s = scenarios::parse_scenario(
      "model: llama3.1-8b\ncluster: {preset: dgx-h100-ib400, nodes: 64, stragglers: {spread: 0.02}}\n"
      "training: {framework: torchtitan, micro_batch: 1, seq_len: 4096}\npolicies: [fsdp]\n",
      "s.yaml");
  const auto results = scenarios::run(s);
  // 512 GPUs: E[max] = 3.0439, so the slowest is expected at 1 - 0.02 x 3.0439 = 0.93912.
  const auto table = scenarios::format_results(s, results, scenarios::Format::Table);
  CHECK(table.find("  stragglers: speeds spread by 2% (one standard deviation): the slowest of 512 GPUs expected "
                   "at 0.9391 of nominal (3.04 sigma below)") != std::string::npos);
  const auto json = scenarios::format_results(s, results, scenarios::Format::Json);
  CHECK(json.find("\"slowest_gpu_speed\": 0.9391") != std::string::npos);
}

TEST_CASE("stragglers: one-line errors with file:line") {
  CHECK_THROWS_WITH_AS(test::load("cluster:\n  preset: dgx-h100-ib400\n  stragglers: {spread: 0.02, slowest: 0.9}\n"),
                       Contains("t.yaml:3: cluster.stragglers.slowest: give stragglers.spread"), InputError);
  CHECK_THROWS_WITH_AS(test::load("cluster:\n  preset: dgx-h100-ib400\n  stragglers: {sigma: 0.02}\n"),
                       Contains("t.yaml:3: cluster.stragglers.sigma: unknown key"), InputError);
  CHECK_THROWS_WITH_AS(test::load("cluster:\n  preset: dgx-h100-ib400\n  stragglers: {slowest: 1.2}\n"),
                       Contains("t.yaml:3: cluster.stragglers.slowest: expected a fraction in [0, 1]"), InputError);
  CHECK_THROWS_WITH_AS(test::load("cluster:\n  preset: dgx-h100-ib400\n  stragglers: {spread: 0.6}\n"),
                       Contains("t.yaml:3: cluster.stragglers.spread: expected a spread below 0.5"), InputError);
  // 0.3 of spread over 2048 GPUs: the slowest expected 3.4 sigma below, at about 0 of nominal speed.
  CHECK_THROWS_WITH_AS(
      test::load("cluster:\n  preset: dgx-h100-ib400\n  nodes: 256\n  stragglers: {spread: 0.3}\n"),
      Contains("t.yaml:4: cluster.stragglers: a spread of 0.3 puts the expected slowest of 2048 GPUs at"), InputError);
}
