// `tagcsim calibrate check` on the CPU: the report from a synthetic measured step, the executor's
// host walk against the replay, and the TAGC stages behind compression tasks. What the GPUs would
// measure is made up from the prediction, so that every number the check prints has a known answer
// on a machine without a GPU.
#include "box_testing.hpp"
#include "calibrate/check_compare.hpp"
#include "calibrate/check_stages.hpp"
#include "calibrate/check_walk.hpp"
#include "common/input.hpp"
#include "scenarios/scenario.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

using namespace tagcsim;
using namespace tagcsim::calibrate;
using namespace tagcsim::test;  // rel

namespace {

const char* kSmall = R"(
name: small
model: {layers: 2, hidden: 256, heads: 4, kv_heads: 4, ffn: 1024, vocab: 1024, seq_len: 128, norm: rmsnorm, gated_mlp: true}
cluster: {preset: dgx-h100-ib400, nodes: 1, gpus_per_node: 2}
training: {micro_batch: 1, seq_len: 128}
policies: [fsdp, tagc, tagc-batched, lhc]
)";

}  // namespace

TEST_CASE("check: the report compares a synthetic measured step with the prediction task by task") {
  const auto sc = scenarios::parse_scenario(kSmall, "small.yaml");
  const auto& setup = sc.points[0].setup;
  const auto pred = sim::simulate(setup, sc.points[0].policies[0]);
  // Measured: every compute-stream task 25% longer than predicted, the rest as predicted.
  MeasuredRun m;
  m.policy = "fsdp";
  m.gpus = 2;
  m.box = "synthetic";
  double compute_pred = 0;
  for (std::size_t i = 0; i < pred.schedule.tasks.size(); ++i) {
    auto t = pred.replay.timings[i];
    if (pred.schedule.tasks[i].stream == sim::Stream::Compute) {
      compute_pred += t.end - t.start;
      t.end = t.start + 1.25 * (t.end - t.start);
    }
    m.timings.push_back(t);
  }
  m.step_times = {1.30 * pred.step_time_s, 1.20 * pred.step_time_s, 1.25 * pred.step_time_s};
  // Written and read back as the executor's file.
  const auto back = parse_measured_run(measured_run_json(m, pred.schedule), "measured-fsdp.json", pred.schedule);
  const auto c = compare(pred, back);
  CHECK(c.measured_step == rel(1.25 * pred.step_time_s));  // the median step
  CHECK(c.error() == rel(1 / 1.25 - 1));
  const auto& cs = c.streams[std::size_t(sim::Stream::Compute)];
  CHECK(cs.predicted_busy == rel(compute_pred));
  CHECK(cs.measured_busy == rel(1.25 * compute_pred));
  const auto& fwd = c.categories[std::size_t(sim::Category::Forward)];
  CHECK(fwd.measured == rel(1.25 * fwd.predicted));
  const auto& ag = c.categories[std::size_t(sim::Category::AllGather)];
  CHECK(ag.measured == rel(ag.predicted));
  for (const auto& t : c.tasks)
    if (pred.schedule.tasks[std::size_t(t.task)].stream == sim::Stream::Compute)
      CHECK(t.measured_s == rel(1.25 * t.predicted_s));
  const std::string report = comparison_report({c}, {pred});
  CHECK(report.find("-20.0%") != std::string::npos);
  CHECK(report.find("tasks furthest from their prediction") != std::string::npos);
  const std::string trace = measured_trace(pred, back, "measured");
  CHECK(trace.find(pred.schedule.tasks[0].name) != std::string::npos);
  // A trace of another schedule (another policy's) is refused.
  const auto tagc = sim::simulate(setup, sc.points[0].policies[1]);
  CHECK_THROWS_WITH_AS(parse_measured_run(measured_run_json(m, pred.schedule), "measured-fsdp.json", tagc.schedule),
                       doctest::Contains("belongs to another schedule"), InputError);
}

TEST_CASE("check: the executor's host walk gives back the replay's times on every stream FSDP1 and FSDP2 use") {
  // The walk the executor runs on the GPUs, on ideal streams with the replay's task durations:
  // if it issues, waits and spends host time as the simulator does, every task starts when the
  // replay started it. One node: the replay's collectives have no contention to add.
  struct Case {
    const char* training;
    std::vector<sim::Stream> streams;  // each must carry tasks
  } cases[] = {
      // FSDP1: the rate limiter's syncs, backward prefetch, the post-backward stream's casts.
      {"{micro_batch: 1, seq_len: 128, reduce_dtype: fp32}",
       {sim::Stream::Host, sim::Stream::Compute, sim::Stream::AllGather, sim::Stream::PostBackward}},
      // FSDP2, HYBRID_SHARD inside the node, reduce-scatters on their own process group.
      {"{fsdp: 2, sharding: hybrid_shard, hybrid_shard_gpus: 2, micro_batch: 1, seq_len: 128, "
       "reduce_scatter_group: separate, grad_accumulation: 2}",
       {sim::Stream::Host, sim::Stream::Compute, sim::Stream::AllGather, sim::Stream::ReduceScatter,
        sim::Stream::AllReduce}},
  };
  for (const auto& c : cases) {
    const std::string training = c.training;
    CAPTURE(training);
    const std::string yaml = fmt::format(
        "name: walk\nmodel: {{layers: 3, hidden: 256, heads: 4, kv_heads: 4, ffn: 1024, vocab: 1024, seq_len: 128, "
        "norm: rmsnorm, gated_mlp: true}}\ncluster: {{preset: dgx-h100-ib400, nodes: 1, gpus_per_node: 4}}\n"
        "training: {}\npolicies: [fsdp, tagc]\n",
        c.training);
    const auto sc = scenarios::parse_scenario(yaml, "walk.yaml");
    for (const auto& policy : sc.points[0].policies) {
      CAPTURE(policy.label);
      const auto pred = sim::simulate(sc.points[0].setup, policy);
      const auto& tasks = pred.schedule.tasks;
      std::vector<double> seconds;
      std::array<int, sim::kStreams> per_stream{};
      int delayed = 0;
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        seconds.push_back(pred.replay.timings[i].end - pred.replay.timings[i].start);
        ++per_stream[std::size_t(tasks[i].stream)];
        delayed += tasks[i].issue_delay > 0;
      }
      if (policy.kind == sim::PolicyKind::Fsdp)
        for (auto st : c.streams) CHECK_MESSAGE(per_stream[std::size_t(st)] > 0, sim::to_string(st));
      CHECK(delayed > 0);  // tasks issued partway into a host segment
      const auto walked = emulate_step(pred.schedule, seconds);
      int off = 0;
      for (std::size_t i = 0; i < tasks.size(); ++i)
        if (std::abs(walked[i].start - pred.replay.timings[i].start) > 1e-12 ||
            std::abs(walked[i].end - pred.replay.timings[i].end) > 1e-12) {
          if (off++ < 3)
            CHECK_MESSAGE(false, fmt::format("task {} '{}' on {}: walked {:.9f}-{:.9f}, replayed {:.9f}-{:.9f}", i,
                                             tasks[i].name, sim::to_string(tasks[i].stream), walked[i].start,
                                             walked[i].end, pred.replay.timings[i].start, pred.replay.timings[i].end));
        }
      CHECK(off == 0);
    }
  }
  // A walk that ignored issue_delay would start the first GPU task at 0: the walk does not.
  const auto sc = scenarios::parse_scenario(kSmall, "small.yaml");
  const auto pred = sim::simulate(sc.points[0].setup, sc.points[0].policies[0]);
  std::vector<double> zero(pred.schedule.tasks.size(), 0.0);
  const auto walked = emulate_step(pred.schedule, zero);
  for (std::size_t i = 0; i < pred.schedule.tasks.size(); ++i)
    if (pred.schedule.tasks[i].stream != sim::Stream::Host && pred.schedule.tasks[i].issued_after.empty()) {
      CHECK(walked[i].start == rel(pred.schedule.tasks[i].issue_delay));
      break;
    }
}

TEST_CASE("check: every compression-kernel task maps to TAGC stages, and they run on the CPU engine") {
  const auto sc = scenarios::parse_scenario(kSmall, "small.yaml");
  const auto& setup = sc.points[0].setup;
  auto engine = kernels::make_engine(kernels::Backend::Cpu);
  std::size_t biggest = 0;
  for (const auto& u : setup.units) biggest = std::max(biggest, std::size_t(u.params));
  StageBuffers buffers(*engine, biggest, setup.shard_size());
  for (const auto& p : sc.points[0].policies) {
    if (p.kind == sim::PolicyKind::Fsdp) continue;
    const auto s = sim::build_policy_step(setup, p, sim::kernel_profile_for(setup.cluster.gpu));
    int seen = 0;
    for (const auto& t : s.tasks) {
      if (t.category != sim::Category::CompressionKernel) continue;
      CAPTURE(t.name);
      CHECK_FALSE(compression_stages(setup, p, t).empty());
      if (seen++ < 3) CHECK(run_compression_task(*engine, buffers, setup, p, t));
    }
    CHECK(seen > 0);
  }
  // TAGC as published, N = 2 shards: the second task runs 1 more sparsify+index and 2 read+compress.
  const auto tagc = sim::build_policy_step(setup, sc.points[0].policies[1], sim::kernel_profile_for(setup.cluster.gpu));
  for (const auto& t : tagc.tasks)
    if (t.name.rfind("tagc kernels x2 shards", 0) == 0) {
      const auto calls = compression_stages(setup, sc.points[0].policies[1], t);
      REQUIRE(calls.size() == 4);
      CHECK(calls[0].kind == StageCall::Kind::Sparsify);
      CHECK(calls[0].repeat == 1);
      CHECK(calls[3].kind == StageCall::Kind::Compress);
      CHECK(calls[3].repeat == 2);
      CHECK(calls[3].elements == double(setup.units[std::size_t(t.unit)].params) / 2);
      break;
    }
}
