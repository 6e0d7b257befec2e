// Pipeline parallelism (training.pipeline_parallel, sim/pipeline.hpp): torchtitan's split of the
// blocks into stages, each schedule's order of ops, the schedule's replay against the textbook
// makespans, and a pipelined step put together from its ranks. Numbers by hand.
#include "scenarios/scenario.hpp"
#include "sim/pipeline.hpp"
#include "sim/policy.hpp"
#include "sim/trace.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;
using sim::PipelineOp;
using sim::PipelineSchedule;

namespace {

std::string ops(const std::vector<PipelineOp>& list) {
  std::string s;
  for (const auto& op : list)
    s += fmt::format("{}{}{}.{}", s.empty() ? "" : " ", op.backward ? "B" : "F", op.stage, op.microbatch);
  return s;
}

}  // namespace

TEST_CASE("pipeline: torchtitan splits the blocks evenly, the middle stages taking the remainder") {
  // generate_split_points at 9dec370: 126 blocks over 8 stages: 15, then 16 while the 6 extra last, 15.
  CHECK(sim::stage_layers(126, 8) == std::vector<int>{15, 16, 16, 16, 16, 16, 16, 15});
  CHECK(sim::stage_layers(126, 16) == std::vector<int>{7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7});
  CHECK(sim::stage_layers(32, 4) == std::vector<int>{8, 8, 8, 8});
  CHECK(sim::stage_layers(10, 4) == std::vector<int>{2, 3, 3, 2});
}

TEST_CASE("pipeline: each schedule's order of ops on a rank") {
  // 1F1B over 4 ranks, 4 micro-batches: rank 0 runs 3 forwards first, rank 3 none.
  const auto one = sim::pipeline_order(PipelineSchedule::OneFOneB, 4, 1, 4);
  CHECK(ops(one[0]) == "F0.0 F0.1 F0.2 F0.3 B0.0 B0.1 B0.2 B0.3");
  CHECK(ops(one[2]) == "F2.0 F2.1 B2.0 F2.2 B2.1 F2.3 B2.2 B2.3");
  CHECK(ops(one[3]) == "F3.0 B3.0 F3.1 B3.1 F3.2 B3.2 F3.3 B3.3");
  const auto gpipe = sim::pipeline_order(PipelineSchedule::Gpipe, 2, 1, 2);
  CHECK(ops(gpipe[1]) == "F1.0 F1.1 B1.0 B1.1");
  // Interleaved over 2 ranks with 2 stages each (0 and 2 on rank 0): rounds of 2 micro-batches
  // through stage 0 then 2; (2 - 1) x 2 + 2 x (2 - 1 - r) forwards first; backwards from stage 2.
  const auto looped = sim::pipeline_order(PipelineSchedule::Interleaved1F1B, 2, 2, 2);
  CHECK(ops(looped[0]) == "F0.0 F0.1 F2.0 F2.1 B2.0 B2.1 B0.0 B0.1");
  CHECK(ops(looped[1]) == "F1.0 F1.1 F3.0 B3.0 F3.1 B3.1 B1.0 B1.1");
}

TEST_CASE("pipeline: the replay gives the textbook makespans, and a bubble of (p - 1) / v stage-times") {
  // 4 ranks, 8 micro-batches, forward 1 s and backward 2 s a stage: (m + p - 1) (f + b) = 33 s for
  // 1F1B and GPipe alike.
  const std::vector<double> f(4, 1.0), b(4, 2.0);
  for (auto schedule : {PipelineSchedule::OneFOneB, PipelineSchedule::Gpipe}) {
    const auto t = sim::replay_pipeline(sim::pipeline_order(schedule, 4, 1, 8), f, b, 0);
    CHECK(t.end == Approx(33));
    CHECK(t.busy[0] == Approx(24));
  }
  // The same ranks with two stages each of half the work: the bubble shrinks to (p - 1) (f + b) / v,
  // m (f + b) + 3 x 1.5 = 28.5 s.
  const std::vector<double> half_f(8, 0.5), half_b(8, 1.0);
  const auto looped =
      sim::replay_pipeline(sim::pipeline_order(PipelineSchedule::Interleaved1F1B, 4, 2, 8), half_f, half_b, 0);
  CHECK(looped.end == Approx(28.5));
  // A send between ranks delays each hop: 2 stages, 1 micro-batch: f + x + f + b + x + b.
  const auto sent = sim::replay_pipeline(sim::pipeline_order(PipelineSchedule::OneFOneB, 2, 1, 1), {1.0, 1.0},
                                         {2.0, 2.0}, 0.25);
  CHECK(sent.end == Approx(1 + 0.25 + 1 + 2 + 0.25 + 2));
  // 1F1B keeps p - r micro-batches' activations on rank r at most; GPipe all of them.
  const auto one = sim::replay_pipeline(sim::pipeline_order(PipelineSchedule::OneFOneB, 4, 1, 8), f, b, 0);
  CHECK(one.peak_in_flight[0] == Approx(4));
  CHECK(one.peak_in_flight[3] == Approx(1));
  const auto all = sim::replay_pipeline(sim::pipeline_order(PipelineSchedule::Gpipe, 4, 1, 8), f, b, 0);
  CHECK(all.peak_in_flight[3] == Approx(8));
}

namespace {

scenarios::Scenario pipelined(const std::string& training, const std::string& model = "llama3.1-8b", int nodes = 4) {
  return scenarios::parse_scenario(fmt::format("model: {}\ncluster: {{preset: dgx-h100-ib400, nodes: {}}}\ntraining:\n"
                                               "  framework: torchtitan\n{}policies: [fsdp]\n",
                                               model, nodes, training),
                                   "pp.yaml");
}

}  // namespace

TEST_CASE("pipeline: a step is its schedule plus what its ranks do beside it, and a GPU's tokens are 1/p of a pipeline's") {
  // Llama 3.1 70B (80 blocks; the head weighs about one more) over 2 stages of 2 nodes each, 1F1B,
  // 4 micro-batches of 1 x 4096 tokens.
  const std::string training = "  pipeline_parallel: 2\n  pipeline_microbatches: 4\n  micro_batch: 1\n  seq_len: 4096\n";
  const auto s = pipelined(training, "llama3.1-70b");
  const auto& setup = s.points.at(0).setup;
  CHECK(setup.shard_group.ranks() == 16);  // FSDP over a stage's 2 nodes
  const auto r = sim::simulate_fsdp(setup);
  CHECK(r.tokens_per_s_per_gpu == Approx(4.0 * 4096 / 2 / r.step_time_s));
  CHECK(r.gpus == 32);
  // 1F1B over 2 nearly equal stages and 4 micro-batches idles one stage-time (f + b) of 5 on each
  // rank: a fifth of the schedule, a little less of the step.
  CHECK(r.breakdown.pipeline_bubble_s > 0.15 * r.step_time_s);
  CHECK(r.breakdown.pipeline_bubble_s < 0.21 * r.step_time_s);
  CHECK(r.breakdown.exposed_comm_s >= r.breakdown.pipeline_bubble_s);
  CHECK(r.pipeline.find("1f1b over 2 stages (1 a rank, 40 blocks the most), 4 micro-batches of 1") != std::string::npos);
  // Two stages a rank halve the bubble; GPipe keeps every micro-batch's activations.
  const auto looped =
      sim::simulate_fsdp(pipelined(training + "  pipeline_schedule: interleaved_1f1b\n", "llama3.1-70b").points.at(0).setup);
  CHECK(looped.breakdown.pipeline_bubble_s == Approx(r.breakdown.pipeline_bubble_s / 2).epsilon(0.1));
  CHECK(looped.step_time_s < r.step_time_s);
  const auto gpipe = sim::simulate_fsdp(pipelined(training + "  pipeline_schedule: gpipe\n", "llama3.1-70b").points.at(0).setup);
  CHECK(gpipe.memory.activation_bytes > r.memory.activation_bytes);
  // The trace shows the schedule: a track per pipeline rank, a slice per op (2 stages x 4
  // micro-batches, forward and backward), the last ending with the schedule.
  CHECK(r.pipeline_ops.size() == 16);
  const auto trace = sim::chrome_trace(r, "1f1b");
  CHECK(trace.find("\"pipeline rank 1 (schedule)\"") != std::string::npos);
  CHECK(trace.find("\"name\":\"B0.3\",\"cat\":\"pipeline\"") != std::string::npos);
  double end = 0;
  for (const auto& op : r.pipeline_ops) end = std::max(end, op.end);
  CHECK(end < r.step_time_s);  // FSDP's reduce-scatters and the optimizer come after
  CHECK(end > 0.8 * r.step_time_s);
}

TEST_CASE("pipeline: what it is not modelled with, or cannot split, is refused with the key's line") {
  CHECK_THROWS_WITH_AS(pipelined("  fsdp: 2\n  wrap: block\n  pipeline_parallel: 2\n"),
                       Contains("pp.yaml:7: training.pipeline_parallel: pipeline stages split torchtitan's layout"),
                       InputError);
  CHECK_THROWS_WITH_AS(pipelined("  pipeline_parallel: 2\n  grad_accumulation: 4\n"),
                       Contains("pp.yaml:6: training.grad_accumulation: under pipeline parallelism a step's "
                                "micro-batches are pipeline_microbatches"),
                       InputError);
  CHECK_THROWS_WITH_AS(pipelined("  pipeline_schedule: gpipe\n"),
                       Contains("pp.yaml:5: training.pipeline_schedule: only meaningful with pipeline_parallel > 1"),
                       InputError);
  CHECK_THROWS_WITH_AS(pipelined("  pipeline_parallel: 2\n  pipeline_schedule: interleaved_1f1b\n  pipeline_microbatches: 3\n"),
                       Contains("pp.yaml:7: training.pipeline_microbatches: interleaved_1f1b runs its micro-batches in "
                                "rounds of 2"),
                       InputError);
  CHECK_THROWS_WITH_AS(pipelined("  pipeline_parallel: 2\n  stages_per_rank: 2\n"),
                       Contains("pp.yaml:6: training.stages_per_rank: GPipe and 1F1B run one stage a rank"), InputError);
  CHECK_THROWS_WITH_AS(pipelined("  pipeline_parallel: 3\n"),
                       Contains("training.pipeline_parallel: 3 stages do not split the cluster's 4 nodes"), InputError);
  CHECK_THROWS_WITH_AS(pipelined("  pipeline_parallel: 4\n  pipeline_schedule: interleaved_1f1b\n  stages_per_rank: 16\n"),
                       Contains("training.pipeline_parallel: 64 stages need at least as many blocks; model "
                                "'llama3.1-8b' has 32"),
                       InputError);
}

TEST_CASE("pipeline: a stage gathers its parameters once a step and reduces its gradients after its last backward") {
  // torch.distributed.pipelining's stage keeps FSDP from resharding after each micro-batch's
  // backward and runs FSDP's post_backward by hand once the last micro-batch's backward is over;
  // plain FSDP reduces each unit as its backward ends.
  auto setup = pipelined("  micro_batch: 1\n  seq_len: 4096\n  grad_accumulation: 2\n  no_sync: true\n").points.at(0).setup;
  auto spans = [](const sim::StepSetup& st) {
    const auto r = sim::simulate_fsdp(st);
    double last_backward = 0, first_reduce = 1e30;
    int reduces = 0;
    for (std::size_t i = 0; i < r.schedule.tasks.size(); ++i) {
      const auto& t = r.schedule.tasks[i];
      if (t.category == sim::Category::Backward) last_backward = std::max(last_backward, r.replay.timings[i].end);
      if (t.category == sim::Category::ReduceScatter)
        first_reduce = std::min(first_reduce, r.replay.timings[i].start), ++reduces;
    }
    return std::tuple{last_backward, first_reduce, reduces};
  };
  const auto [plain_backward, plain_reduce, plain_count] = spans(setup);
  CHECK(plain_reduce < plain_backward);
  setup.training.reduce_after_backward = true;
  const auto [backward, reduce, count] = spans(setup);
  CHECK(reduce >= backward);
  CHECK(count == plain_count);
  CHECK(count == int(setup.units.size()));  // once a step, every unit
  // Kept unsharded from the first forward (reshard_after_forward false) to the end: one all-gather
  // a unit a step, where resharding after each backward gathers again for the second micro-batch.
  auto gathers = [](const sim::StepSetup& st) {
    const auto r = sim::simulate_fsdp(st);
    return int(std::count_if(r.schedule.tasks.begin(), r.schedule.tasks.end(),
                             [](const sim::Task& t) { return t.category == sim::Category::AllGather; }));
  };
  setup.training.reshard_after_forward = 0;
  CHECK(gathers(setup) == 2 * int(setup.units.size()));
  // torchtitan's default for a pipeline stage (reshard_after_forward = not pp_enabled); a scenario
  // may still say otherwise.
  CHECK(pipelined("  pipeline_parallel: 2\n").points.at(0).setup.training.reshard_after_forward == 0);
  CHECK(pipelined("  pipeline_parallel: 2\n  reshard_after_forward: true\n").points.at(0).setup.training.reshard_after_forward ==
        -1);
  setup.training.reshard_after_backward = false;
  CHECK(gathers(setup) == int(setup.units.size()));
}
