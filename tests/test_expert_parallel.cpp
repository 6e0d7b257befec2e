// Expert parallelism under FSDP2 (training.expert_parallel, torchtitan's ExpertParallel): each GPU
// holds E / ep of every block's routed experts, FSDP shards them over the GPUs holding the same ones,
// and the tokens reach their experts in all-to-alls. Numbers by hand from the model's dimensions
// and from the collective model's own time for one collective.
#include "kernel_list_testing.hpp"
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/report.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/scenario.hpp"
#include "sim/model_parallel.hpp"
#include "sim/schedule_program.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;
using test::find;

namespace {

scenarios::Scenario scenario(const std::string& training, int nodes = 4, const std::string& extra = "") {
  return scenarios::parse_scenario("model: qwen3-30b-a3b\ncluster: {preset: dgx-h100-ib400, nodes: " +
                                       std::to_string(nodes) +
                                       "}\ntraining:\n  framework: torchtitan\n  micro_batch: 2\n  seq_len: 4096\n" +
                                       training + extra + "policies: [fsdp]\n",
                                   "ep.yaml");
}

// Qwen3-30B-A3B's block: hidden 2048, 128 experts of 768 (8 a token), 32 query heads and 4 KV heads of 128.
constexpr double kHidden = 2048, kFfn = 768, kExperts = 128, kExpert = 3 * kHidden * kFfn;

}  // namespace

TEST_CASE("expert parallel over 8 GPUs: a GPU holds 16 of the 128 experts and runs them on the T k rows it receives") {
  const auto m = models::preset("qwen3-30b-a3b");
  models::TrainingShape shape;
  shape.micro_batch = 2, shape.seq_len = 4096, shape.expert_parallel = 8;
  const auto units = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  models::TrainingShape alone = shape;
  alone.expert_parallel = 1;
  const auto& block = units.at(1);
  const auto alone_units = models::fsdp_units(m, models::WrapPolicy::Torchtitan, alone);
  const auto& whole = alone_units.at(1);
  REQUIRE(block.kind == models::UnitKind::Block);
  CHECK(double(block.expert_params) == 16 * kExpert);
  CHECK(double(whole.expert_params) == kExperts * kExpert);
  CHECK(double(whole.params - block.params) == (kExperts - 16) * kExpert);  // the router and attention stay whole
  // The same 2 x 4096 x 8 = 65,536 rows, over 16 groups: a wgrad stacks 16 experts' weight gradients.
  const auto& k = *block.kernels;
  const auto gate = find(k.forward, "mlp.experts.gate (grouped)");
  CHECK(gate.m == 65536);
  CHECK(gate.groups == 16);
  const auto wgrad = find(k.backward, "mlp.experts.gate wgrad (grouped)");
  CHECK(wgrad.m == 16 * kFfn);
  CHECK(wgrad.k == 65536 / 16);
  CHECK(find(whole.kernels->backward, "mlp.experts.gate wgrad (grouped)").k == 65536 / 128);
  // torchtitan's dispatch: the host reads the token counts back (.tolist() of the splits), and the
  // received rows are gathered into the local experts' order and scattered back after them.
  CHECK(find(k.forward, "tokens per expert").host_sync);
  CHECK_FALSE(find(whole.kernels->forward, "tokens per expert").host_sync);
  CHECK(find(k.forward, "permute received tokens").bytes == 2 * 2 * 65536 * kHidden);
  CHECK(find(k.forward, "unpermute received tokens").bytes == 2 * 2 * 65536 * kHidden);
  CHECK(k.forward.size() == whole.kernels->forward.size() + 2);
  CHECK(block.forward_kernels == whole.forward_kernels + 2);
  CHECK(block.backward_kernels == whole.backward_kernels + 2);
}

TEST_CASE("expert parallel groups: 8 GPUs of a node exchange tokens, the 4 holding the same experts shard them") {
  const auto s = scenario("  activation_checkpointing: true\n  expert_parallel: 8\n");
  const auto& setup = s.points.at(0).setup;
  REQUIRE(setup.expert_parallel_group);
  REQUIRE(setup.expert_shard_group);
  CHECK(setup.expert_parallel_group->nodes == 1);
  CHECK(setup.expert_parallel_group->gpus_per_node == 8);
  CHECK(setup.expert_parallel_group->count == 4);
  // One GPU a node on each of 4 nodes, 8 such groups at once (one per rail).
  CHECK(setup.expert_shard_group->nodes == 4);
  CHECK(setup.expert_shard_group->gpus_per_node == 1);
  CHECK(setup.expert_shard_group->count == 8);
  CHECK(setup.shard_size() == 32);
  CHECK(setup.expert_shard_size() == 4);
  // A block's shard: its other parameters over 32 GPUs, its 16 experts over 4; the same 1/32 of
  // the whole block as without expert parallelism.
  const int b = 1;
  const auto& u = setup.units[b];
  CHECK(sim::detail::shard_params(setup, b) == Approx(double(u.params - u.expert_params) / 32 + 16 * kExpert / 4));
  CHECK(sim::detail::shard_params(setup, b) == Approx((double(u.params - u.expert_params) + kExperts * kExpert) / 32));
  // Its all-gather: two collectives back to back, the experts' over the expert shard group.
  const auto ag = sim::detail::all_gather_task(setup, b, setup.shard_group, "fwd");
  REQUIRE(ag.phases.size() == 2);
  CHECK(ag.phases[0].plan.bytes == Approx(2.0 * double(u.params - u.expert_params)));
  CHECK(ag.phases[0].plan.group.ranks() == 32);
  CHECK(ag.phases[1].plan.bytes == Approx(2.0 * 16 * kExpert));
  CHECK(ag.phases[1].plan.group.ranks() == 4);
  CHECK(ag.phases[1].label == "experts all_gather");
  // 16 GPUs: the tokens cross 2 nodes; the experts are sharded over the 2 GPUs holding them, one in
  // every second node.
  const auto wide = scenario("  expert_parallel: 16\n").points.at(0).setup;
  CHECK(wide.expert_parallel_group->nodes == 2);
  CHECK(wide.expert_parallel_group->count == 2);
  CHECK(wide.expert_shard_group->nodes == 2);
  CHECK(wide.expert_shard_group->node_stride == 2);
  CHECK(wide.expert_shard_group->count == 16);
}

TEST_CASE("expert parallel all-to-alls: counts, tokens out and back forward, the gradients backward, a re-run's three") {
  const auto s = scenario("  activation_checkpointing: true\n  expert_parallel: 8\n");
  const auto& setup = s.points.at(0).setup;
  const auto& g = *setup.expert_parallel_group;
  auto a2a = [&](double bytes) {
    return sim::plan_collective(setup.cluster, sim::CollectiveOp::AllToAll, bytes, g).seconds();
  };
  const double counts = a2a(8 * kExperts);             // 128 int64 token counts
  const double tokens = a2a(65536 * kHidden * 2);       // T k rows of h in bf16: 268 MB
  CHECK(tokens > 50 * counts);
  const auto t = sim::model_parallel_time(setup, 1);
  CHECK(t.forward_seconds == Approx(counts + 2 * tokens));
  // Full checkpointing re-runs all three, even with early stop: Qwen3 weighs the experts' outputs
  // by their scores after the return, and the product's backward reads them.
  CHECK(t.backward_seconds == Approx(2 * tokens + counts + 2 * tokens));
  CHECK(t.forward_launches == 3);
  CHECK(t.backward_launches == 5);
  CHECK(sim::model_parallel_time(setup, 0).forward_seconds == 0);  // the embedding has no experts
  // The step names them apart: 48 blocks x 8 all-to-alls, inside the compute stream's time.
  const auto results = scenarios::run(s);
  const auto& step = results.at(0).step;
  const auto& totals = step.collectives.at("alltoall (expert parallel)");
  CHECK(totals.count == 48 * 8);
  CHECK(totals.bytes == Approx(48 * (2 * 8 * kExperts + 6 * 65536 * kHidden * 2)));
  CHECK(step.breakdown.expert_all_to_all_s == Approx(48 * (t.forward_seconds + t.backward_seconds)));
  CHECK(step.breakdown.expert_all_to_all_s < step.breakdown.compute_s);
}

TEST_CASE("bad input: expert parallelism where it is not modelled, or with nothing to split") {
  CHECK_THROWS_WITH_AS(scenario("  expert_parallel: 3\n"),
                       Contains("training.expert_parallel: 3 GPUs do not split model 'qwen3-30b-a3b''s 128 experts"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  expert_parallel: 64\n", 4),
                       Contains("training.expert_parallel: 64 GPUs do not divide the 32 GPUs FSDP shards over"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  expert_parallel: 2\n  tensor_parallel: 2\n"),
                       Contains("ep.yaml:7: training.expert_parallel: expert parallelism together with tensor"),
                       InputError);
  CHECK_THROWS_WITH_AS(
      scenarios::parse_scenario("model: llama3.1-8b\ncluster: dgx-h100-ib400\ntraining: {framework: torchtitan, "
                                "expert_parallel: 2}\npolicies: [fsdp]\n",
                                "dense.yaml"),
      Contains("training.expert_parallel: model 'llama3.1-8b' has no experts to split"), InputError);
  CHECK_THROWS_WITH_AS(
      scenarios::parse_scenario("model: qwen3-30b-a3b\ncluster: dgx-h100-ib400\ntraining: {fsdp: 1, "
                                "expert_parallel: 2}\npolicies: [fsdp]\n",
                                "fsdp1.yaml"),
      Contains("fsdp1.yaml:3: training.expert_parallel: expert parallelism is modelled with fully_shard"), InputError);
  // A compression policy reduces a unit over one group; the experts' reduce over another.
  CHECK_THROWS_WITH_AS(
      scenarios::parse_scenario("model: qwen3-30b-a3b\ncluster: dgx-h100-ib400\ntraining:\n  framework: torchtitan\n"
                                "  expert_parallel: 2\npolicies: [fsdp, tagc]\n",
                                "tagc.yaml"),
      Contains("tagc.yaml:5: training.expert_parallel: policy 'tagc': gradient compression with expert parallelism"),
      InputError);
}

TEST_CASE("a mixture of experts' dense blocks exchange no tokens, and the report and the resolved scenario say which") {
  const auto s = scenarios::parse_scenario(R"(model: {layers: 4, hidden: 1024, heads: 8, ffn: 512, gated_mlp: true,
  norm: rmsnorm, vocab: 1000, seq_len: 256, experts: 8, experts_per_token: 2, dense_layers: 1, moe_every: 2,
  dense_ffn: 2048}
cluster: {preset: dgx-h100-ib400, nodes: 1}
training: {framework: torchtitan, expert_parallel: 4}
policies: [fsdp]
)",
                                           "dense.yaml");
  const auto& setup = s.points.at(0).setup;
  // Units: the embedding, blocks 0-3, [norm, output]; blocks 1 and 3 hold experts.
  CHECK(sim::model_parallel_time(setup, 1).forward_seconds == 0);
  CHECK(sim::model_parallel_time(setup, 2).forward_seconds > 0);
  CHECK(sim::model_parallel_time(setup, 3).forward_seconds == 0);
  CHECK(setup.units[2].expert_params == 2 * 3 * 1024 * 512);  // 8 experts / 4 GPUs
  const auto results = scenarios::run(s);
  CHECK(results.at(0).step.collectives.at("alltoall (expert parallel)").count == 2 * 5);  // 2 blocks, no checkpointing
  const std::string table = scenarios::format_results(s, results, scenarios::Format::Table);
  CHECK(table.find("in 2 of the 4 blocks (the others a dense MLP of 2048)") != std::string::npos);
  const std::string yaml = scenarios::resolved_yaml(s);
  const auto back = scenarios::parse_scenario(yaml, "resolved.yaml");
  CHECK(back.points.at(0).setup.model.dense_layers == 1);
  CHECK(back.points.at(0).setup.model.moe_every == 2);
  CHECK(back.points.at(0).setup.model.dense_ffn == 2048);
  CHECK(scenarios::run(back).at(0).step.step_time_s == results.at(0).step.step_time_s);
}

TEST_CASE("expert_imbalance: the busiest GPU's experts run 1.5x the rows, and every token all-to-all waits for it") {
  // Qwen3-30B-A3B, EP 8, 2 x 4096 tokens: balanced, each GPU's 16 experts run the 65,536 rows it
  // receives; at 1.5 the busiest GPU runs 98,304 (6,144 an expert), and each token all-to-all is
  // timed as one of 98,304 rows of 2048 bf16 a GPU.
  const auto s = scenario("  activation_checkpointing: true\n  expert_parallel: 8\n  expert_imbalance: 1.5\n");
  const auto& setup = s.points.at(0).setup;
  const auto& k = *setup.units.at(1).kernels;
  CHECK(find(k.forward, "mlp.experts.gate (grouped)").m == 98304);
  CHECK(find(k.backward, "mlp.experts.down wgrad (grouped)").k == 98304 / 16);
  CHECK(find(k.forward, "permute received tokens").bytes == 2 * 2 * 98304.0 * kHidden);
  CHECK(find(k.forward, "permute tokens").bytes == 2 * 2 * 65536.0 * kHidden);  // what it sends stays T k
  const auto& g = *setup.expert_parallel_group;
  auto a2a = [&](double bytes) {
    return sim::plan_collective(setup.cluster, sim::CollectiveOp::AllToAll, bytes, g).seconds();
  };
  const auto t = sim::model_parallel_time(setup, 1);
  CHECK(t.forward_seconds == Approx(a2a(8 * kExperts) + 2 * a2a(98304 * kHidden * 2)));
  // The busiest GPU keeps the extra 32,768 rows' permuted input, g, silu(g), u and product (under
  // full checkpointing only while its block re-runs: the activations it holds are the block input).
  const auto balanced = scenario("  expert_parallel: 8\n").points.at(0).setup.units.at(1);
  const auto uneven = scenario("  expert_parallel: 8\n  expert_imbalance: 1.5\n").points.at(0).setup.units.at(1);
  CHECK(uneven.activation_bytes - balanced.activation_bytes == Approx(32768 * (kHidden + 4 * kFfn) * 2));
  // The report says so, and the resolved scenario keeps it.
  const auto results = scenarios::run(s);
  const std::string table = scenarios::format_results(s, results, scenarios::Format::Table);
  CHECK(table.find("the busiest GPU's experts run 1.5x the balanced rows") != std::string::npos);
  const auto back = scenarios::parse_scenario(scenarios::resolved_yaml(s), "resolved.yaml");
  CHECK(back.points.at(0).setup.training.expert_imbalance == 1.5);
  CHECK(scenarios::run(back).at(0).step.step_time_s == results.at(0).step.step_time_s);
  // MFU counts the model's work, the average GPU's: it falls with the throughput.
  const auto even = scenarios::run(scenario("  activation_checkpointing: true\n  expert_parallel: 8\n")).at(0).step;
  const auto& step = results.at(0).step;
  CHECK(step.tokens_per_s_per_gpu < even.tokens_per_s_per_gpu);
  CHECK(step.mfu / even.mfu == Approx(step.tokens_per_s_per_gpu / even.tokens_per_s_per_gpu));
}

TEST_CASE("bad input: expert_imbalance without expert parallelism, below 1 or past every row to one GPU") {
  CHECK_THROWS_WITH_AS(scenario("  expert_imbalance: 1.2\n"),
                       Contains("ep.yaml:7: training.expert_imbalance: only with expert_parallel > 1"), InputError);
  CHECK_THROWS_WITH_AS(scenario("  expert_parallel: 8\n  expert_imbalance: 0.9\n"),
                       Contains("training.expert_imbalance: expected the busiest GPU's routed rows over the balanced "
                                "share, from 1 (balanced) to expert_parallel (8: every row to one GPU), got 0.9"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  expert_parallel: 8\n  expert_imbalance: 9\n"),
                       Contains("to expert_parallel (8"), InputError);
}
