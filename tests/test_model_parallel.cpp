// Tensor and context parallelism under FSDP (training.tensor_parallel, torchtitan's 2D plan;
// training.context_parallel): one GPU's share of each block, the collectives its compute stream
// waits for, the FSDP groups, and the tokens a GPU trains on. Numbers by hand from the model's
// dimensions and from the collective model's own time for one collective (sim/model_parallel.hpp
// says what each block runs).
#include "kernel_list_testing.hpp"
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/scenario.hpp"
#include "sim/compute.hpp"
#include "sim/step.hpp"
#include "sim/model_parallel.hpp"
#include "toy_profile.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;
using test::find;

namespace {

scenarios::Scenario scenario(const std::string& training) {
  return scenarios::parse_scenario("model: llama3.1-70b\ncluster: {preset: dgx-h100-ib400, nodes: 4}\ntraining:\n" +
                                       training + "policies: [fsdp]\n",
                                   "tp.yaml");
}


}  // namespace

TEST_CASE("tensor parallel: one GPU holds 1/t of each block's heads, FFN and vocabulary, and the norms' tokens") {
  // Llama 3.1 70B over 8 GPUs: 8 of 64 heads, 1 of 8 KV heads (128 wide), FFN 28672 / 8 = 3584.
  const auto m = models::preset("llama3.1-70b");
  const auto shard = models::tensor_parallel_shard(m, 8);
  CHECK(shard.heads == 8);
  CHECK(shard.kv_heads == 1);
  CHECK(shard.head_dim == 128);
  CHECK(shard.ffn == 3584);
  CHECK(shard.vocab == 16032);
  models::TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 4096;  // T = 8192 tokens
  shape.tensor_parallel = 8;
  const auto units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& block = *units[1].kernels;
  CHECK(find(block.forward, "attn.q").m == 8192);  // every token, after the all-gather
  CHECK(find(block.forward, "attn.q").n == 1024);
  CHECK(find(block.forward, "attn.out").k == 1024);
  CHECK(find(block.forward, "mlp.gate").n == 3584);
  CHECK(find(block.forward, "mlp.down").k == 3584);
  CHECK(find(block.forward, "attention").batch_heads == 2 * 8);
  // The norms run on the sequence shard: T / 8 tokens x 8192, cast to fp32 (2 + 4 bytes each).
  CHECK(find(block.forward, "ln_1 to fp32").bytes == Approx(6.0 * 1024 * 8192));
  // Each GPU holds 1/8 of every matrix and the whole of every norm: the 70B's 70,553,706,496
  // parameters less its 1,318,912 norm weights, over 8, plus those norms: 8,820,367,360.
  std::int64_t params = 0;
  for (const auto& u : units) params += u.params;
  CHECK(params == 8'820'367'360);
  CHECK(shape.tensor_parallel == 8);
}

TEST_CASE("tensor parallel: a block waits for two all-gathers and two reduce-scatters each way, and its re-run") {
  // Full checkpointing: the backward runs the block's forward again, collectives included, up to
  // the early stop before the down projection (its reduce-scatter is not re-run).
  const auto s = scenario("  framework: torchtitan\n  tensor_parallel: 8\n  micro_batch: 2\n  seq_len: 4096\n"
                          "  activation_checkpointing: full\n");
  const auto& setup = s.points.at(0).setup;
  REQUIRE(setup.tensor_parallel_group);
  const auto& g = *setup.tensor_parallel_group;
  CHECK(g.ranks() == 8);
  // FSDP shards each GPU's part over the 4 GPUs, one a node, that hold the same part.
  CHECK(setup.shard_group.nodes == 4);
  CHECK(setup.shard_group.gpus_per_node == 1);
  CHECK(setup.shard_group.count == 8);
  const double bytes = 2.0 * 4096 * 8192 * 2;  // T x h in bf16
  const double ag = sim::plan_collective(setup.cluster, sim::CollectiveOp::AllGather, bytes, g).seconds();
  const double rs = sim::plan_collective(setup.cluster, sim::CollectiveOp::ReduceScatter, bytes, g).seconds();
  const int block = 1;  // torchtitan: tok_embeddings, then the blocks
  REQUIRE(setup.units[block].kind == models::UnitKind::Block);
  const auto tp = sim::model_parallel_time(setup, block, 0, 0);
  CHECK(tp.forward_seconds == Approx(2 * ag + 2 * rs));
  CHECK(tp.backward_seconds == Approx(4 * ag + 3 * rs));
  CHECK(tp.forward_collectives == 4);
  CHECK(tp.backward_collectives == 7);
  // The token embedding reduce-scatters its output; the head all-gathers its input and reduces the
  // loss over the vocabulary slices (two all-reduces of a float per token).
  const double loss = sim::plan_collective(setup.cluster, sim::CollectiveOp::AllReduce, 4.0 * 8192, g).seconds();
  CHECK(sim::model_parallel_time(setup, 0, 0, 0).forward_seconds == Approx(rs));
  const int head = int(setup.units.size()) - 1;
  CHECK(sim::model_parallel_time(setup, head, 0, 0).forward_seconds == Approx(ag + 2 * loss));
  CHECK(sim::model_parallel_time(setup, head, 0, 0).backward_seconds == Approx(rs));
  // The unit's compute carries them: without tensor parallelism none of this is there.
  const auto none = scenario("  framework: torchtitan\n  micro_batch: 2\n  seq_len: 4096\n"
                             "  activation_checkpointing: full\n");
  CHECK(sim::model_parallel_time(none.points.at(0).setup, block, 0, 0).forward_seconds == 0);
}

TEST_CASE("tensor parallel: async TP hides all but one chunk behind the unit's matmuls") {
  const auto s = scenario("  framework: torchtitan\n  tensor_parallel: 8\n  async_tp: true\n  compile: true\n"
                          "  micro_batch: 2\n  seq_len: 4096\n");
  const auto& setup = s.points.at(0).setup;
  const double bytes = 2.0 * 4096 * 8192 * 2;
  const auto& g = *setup.tensor_parallel_group;
  const double comm = 2 * sim::plan_collective(setup.cluster, sim::CollectiveOp::AllGather, bytes, g).seconds() +
                      2 * sim::plan_collective(setup.cluster, sim::CollectiveOp::ReduceScatter, bytes, g).seconds();
  // Matmuls longer than the transfers: one chunk of eight stays exposed.
  CHECK(sim::model_parallel_time(setup, 1, 1.0, 1.0).forward_seconds == Approx(comm / 8));
  // No matmuls at all: everything is exposed.
  CHECK(sim::model_parallel_time(setup, 1, 0, 0).forward_seconds == Approx(comm));
  // Matmuls of half the transfer time: a chunk, plus the 7/8 that the half does not cover.
  CHECK(sim::model_parallel_time(setup, 1, comm / 2, 0).forward_seconds == Approx(comm / 8 + comm * 7 / 8 - comm / 2));
}

TEST_CASE("tensor parallel: a GPU trains on 1/t of its group's tokens, and a global batch counts the groups") {
  const auto tp = scenario("  framework: torchtitan\n  tensor_parallel: 8\n  micro_batch: 2\n  seq_len: 4096\n"
                           "  global_batch: 8\n  activation_checkpointing: full\n");
  const auto& p = tp.points.at(0);
  CHECK(p.setup.training.grad_accumulation == 1);  // 32 GPUs in 4 groups of 8, 2 sequences each
  const auto r = sim::simulate_fsdp(p.setup);
  CHECK(r.tokens_per_s_per_gpu == Approx(2.0 * 4096 / 8 / r.step_time_s));
  // MFU counts the model's FLOPs per token, as without tensor parallelism.
  CHECK(r.mfu_megatron == Approx(r.tokens_per_s_per_gpu * models::model_flops_per_token(p.setup.model, 4096) /
                                 p.setup.cluster.gpu.peak_flops_bf16));
}

TEST_CASE("bad input: tensor_parallel that does not split the model or the node, or with HSDP") {
  auto qwen = [](const std::string& training) {
    return scenarios::parse_scenario("model: qwen2.5-7b\ncluster: {preset: dgx-h100-ib400, nodes: 2}\ntraining:\n" +
                                         training + "policies: [fsdp]\n",
                                     "q.yaml");
  };
  CHECK_THROWS_WITH_AS(qwen("  tensor_parallel: 8\n"),
                       Contains("q.yaml:4: training.tensor_parallel: 8 GPUs do not split model 'qwen2.5-7b''s 28 "
                                "heads evenly"),
                       InputError);
  CHECK(qwen("  tensor_parallel: 4\n").points.at(0).setup.tensor_parallel_group->ranks() == 4);  // 28 / 4, 4 / 4
  CHECK_THROWS_WITH_AS(scenario("  tensor_parallel: 16\n"),
                       Contains("tp.yaml:4: training.tensor_parallel: 16 GPUs do not divide a node's 8"), InputError);
  CHECK_THROWS_WITH_AS(scenario("  sharding: hybrid_shard\n  tensor_parallel: 8\n"),
                       Contains("tp.yaml:5: training.tensor_parallel: tensor parallelism with hybrid_shard is not "
                                "modelled"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  async_tp: true\n"),
                       Contains("tp.yaml:4: training.async_tp: async_tp needs tensor_parallel > 1"), InputError);
  CHECK_THROWS_WITH_AS(scenario("  wrap: size\n  tensor_parallel: 2\n"),
                       Contains("tp.yaml:5: training.tensor_parallel: wrap: size cuts blocks"), InputError);
}

TEST_CASE("context parallel: a GPU holds 1/c of each sequence, its attention 1/c of the causal work, load-balanced") {
  // Llama 3.1 8B at 65,536 tokens over 2 GPUs: 32,768 tokens each; the attention call does half of
  // the causal 2 x 32 x 65536^2 x 128 FLOPs forward.
  const auto m = models::preset("llama3.1-8b");
  models::TrainingShape shape;
  shape.micro_batch = 1;
  shape.seq_len = 65536;
  shape.context_parallel = 2;
  const auto units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& block = *units[1].kernels;
  CHECK(find(block.forward, "attn.q").m == 32768);
  const auto attention = find(block.forward, "attention");
  CHECK(attention.seq == 65536);  // every key
  CHECK(attention.query_shards == 2);
  CHECK(attention.flops() == Approx(2.0 * 32 * 65536.0 * 65536 * 128 / 2));
  // One merge of a partial output into the fp32 one per further chunk: (8 + 4 + 2) bytes per element.
  CHECK(find(block.forward, "context parallel merge").bytes == Approx(14.0 * 32768 * 4096));
}

TEST_CASE("context parallel: the diagonal chunk at the causal rate of seq / c, the others at the rate of seq / 2c") {
  // The toy profile: causal fwd+bwd 100 TFLOP/s at 1k, 200 at 4k (150 at 2k), backward/forward 0.5,
  // so forward runs at R x 6 / 3.5; it has no non-causal curve, so the causal one stands in.
  const auto p = test::toy();
  const double total = 4.0 * 16 * 4096 * 2048 * 128;  // causal forward FLOPs of 16 sequences of 4k
  const double share = total / 2 / 2;                 // a GPU's half, split into its two calls
  const double t = p.attention_seconds(models::AttentionKernel::Flash2, false, 16, 4096, 128, true, 0, 2);
  CHECK(t == Approx(share / (150e12 * 6 / 3.5) + share / (100e12 * 6 / 3.5)));
}

TEST_CASE("context parallel: each block gathers the sequence's K and V, backward again, and scatters their fp32 grads") {
  const auto s = scenario("  framework: torchtitan\n  context_parallel: 4\n  micro_batch: 1\n  seq_len: 32768\n"
                          "  activation_checkpointing: full\n");
  const auto& setup = s.points.at(0).setup;
  REQUIRE(setup.context_parallel_group);
  const auto& g = *setup.context_parallel_group;
  CHECK(g.ranks() == 4);
  CHECK(setup.shard_group.ranks() == 32);  // FSDP over every GPU, the CP ones included
  // Llama 3.1 70B repeats its 8 KV heads to 64 before SDPA: K and V of 8192 wide, 32768 tokens.
  const double elements = 2.0 * 32768 * 8192;
  const double ag = sim::plan_collective(setup.cluster, sim::CollectiveOp::AllGather, elements * 2, g).seconds();
  const double rs = sim::plan_collective(setup.cluster, sim::CollectiveOp::ReduceScatter, elements * 4, g).seconds();
  const auto cp = sim::model_parallel_time(setup, 1, 0, 0);
  CHECK(cp.forward_seconds == Approx(ag));
  CHECK(cp.backward_seconds == Approx(2 * ag + rs));
  CHECK(cp.backward_collectives == 3);
  const auto r = sim::simulate_fsdp(setup);
  CHECK(r.tokens_per_s_per_gpu == Approx(32768.0 / 4 / r.step_time_s));
}

TEST_CASE("bad input: context_parallel with tensor parallelism, a sequence it cannot split, or a window") {
  CHECK_THROWS_WITH_AS(scenario("  tensor_parallel: 2\n  context_parallel: 2\n"),
                       Contains("tp.yaml:5: training.context_parallel: context parallelism together with tensor "
                                "parallelism is not modelled"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  context_parallel: 4\n  seq_len: 4100\n"),
                       Contains("tp.yaml:4: training.context_parallel: 4 GPUs cannot split a 4100-token sequence"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  context_parallel: 16\n"),
                       Contains("tp.yaml:4: training.context_parallel: 16 GPUs do not divide a node's 8"), InputError);
  CHECK_THROWS_WITH_AS(
      scenarios::parse_scenario("model: mistral-7b-v0.1\ncluster: {preset: dgx-h100-ib400, nodes: 1}\ntraining:\n"
                                "  context_parallel: 2\npolicies: [fsdp]\n",
                                "w.yaml"),
      Contains("w.yaml:4: training.context_parallel: a model with a sliding window"), InputError);
}
