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


// One sequence collective of the TP group over `bytes` (T x h): its all-gather, its reduce-scatter,
// and the chunk-and-concatenate copy beside each (reads and writes the tensor).
struct SequenceCollectives {
  double ag, rs, copy;
};
SequenceCollectives sequence_collectives(const sim::StepSetup& setup, double bytes) {
  const auto& g = *setup.tensor_parallel_group;
  return {sim::plan_collective(setup.cluster, sim::CollectiveOp::AllGather, bytes, g).seconds(),
          sim::plan_collective(setup.cluster, sim::CollectiveOp::ReduceScatter, bytes, g).seconds(),
          sim::memory_kernel_seconds(2 * bytes, setup.cluster.gpu)};
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

TEST_CASE("tensor parallel: a block waits for two all-gathers and two reduce-scatters each way, their copies, and its re-run") {
  // Eager, full checkpointing: the backward runs the block's forward again, collectives included,
  // up to the early stop before the down projection (its reduce-scatter is not re-run). Each
  // collective along the sequence dimension comes with PyTorch's chunk-and-concatenate copy of the
  // whole T x h tensor (read and written).
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
  const auto [ag, rs, copy] = sequence_collectives(setup, 2.0 * 4096 * 8192 * 2);  // T x h in bf16
  CHECK(copy > 0);
  const int block = 1;  // torchtitan: tok_embeddings, then the blocks
  REQUIRE(setup.units[block].kind == models::UnitKind::Block);
  const auto tp = sim::model_parallel_time(setup, block);
  CHECK(tp.forward_seconds == Approx(2 * ag + 2 * rs + 4 * copy));
  CHECK(tp.backward_seconds == Approx(4 * ag + 3 * rs + 7 * copy));
  CHECK(tp.forward_launches == 8);
  CHECK(tp.backward_launches == 14);
  // The token embedding reduce-scatters its output; the head all-gathers its input and reduces the
  // loss over the vocabulary slices: three all-reduces of a float per token (the max, the sum of
  // exponentials, the target's logit), no copy.
  const double loss = sim::plan_collective(setup.cluster, sim::CollectiveOp::AllReduce, 4.0 * 8192, g).seconds();
  CHECK(sim::model_parallel_time(setup, 0).forward_seconds == Approx(rs + copy));
  const int head = int(setup.units.size()) - 1;
  CHECK(sim::model_parallel_time(setup, head).forward_seconds == Approx(ag + copy + 3 * loss));
  CHECK(sim::model_parallel_time(setup, head).backward_seconds == Approx(rs + copy));
  // Compiled, the backward reduce-scatters' copy joins the element-wise sum of the dgrads before them.
  const auto compiled = scenario("  framework: torchtitan\n  tensor_parallel: 8\n  micro_batch: 2\n  seq_len: 4096\n"
                                 "  activation_checkpointing: full\n  compile: true\n");
  CHECK(sim::model_parallel_time(compiled.points.at(0).setup, block).backward_seconds ==
        Approx(4 * ag + 3 * rs + 5 * copy));
  // The unit's compute carries them: without tensor parallelism none of this is there.
  const auto none = scenario("  framework: torchtitan\n  micro_batch: 2\n  seq_len: 4096\n"
                             "  activation_checkpointing: full\n");
  CHECK(sim::model_parallel_time(none.points.at(0).setup, block).forward_seconds == 0);
}

TEST_CASE("tensor parallel: per-op checkpointing keeps the reduce-scatters' outputs, so its re-run gathers only") {
  // torchtitan's per-op policy names reduce_scatter_tensor in its save list (parallelize.py, from
  // 88d8ab3, 2025-04-21, and before 247f4e3): the re-run replays the two all-gathers (their
  // outputs are not saved) and no reduce-scatter. Full checkpointing, above, re-runs the
  // attention's reduce-scatter too.
  const auto s = scenario("  framework: torchtitan\n  tensor_parallel: 8\n  micro_batch: 2\n  seq_len: 4096\n"
                          "  activation_checkpointing: selective_op\n");
  const auto& setup = s.points.at(0).setup;
  const auto [ag, rs, copy] = sequence_collectives(setup, 2.0 * 4096 * 8192 * 2);
  const auto tp = sim::model_parallel_time(setup, 1);
  CHECK(tp.forward_seconds == Approx(2 * ag + 2 * rs + 4 * copy));
  CHECK(tp.backward_seconds == Approx(4 * ag + 2 * rs + 6 * copy));
  CHECK(tp.backward_launches == 12);
}

TEST_CASE("tensor parallel: async TP hides each fused collective behind its own matmuls, all but one chunk") {
  // Compiled, no checkpointing. Forward: the attention's and the MLP's all-gather fused with the
  // matmuls reading the gathered sequence, their reduce-scatters with the matmul writing it, plus
  // the reduction that sums the 8 partial chunks (reads T x h, writes T x h / 8). Backward: the
  // output gradients' all-gathers fused with the out and down dgrads; the input gradients'
  // reduce-scatters (of summed dgrads) waited for, their copy inside the compiled sum.
  const auto s = scenario("  framework: torchtitan\n  tensor_parallel: 8\n  async_tp: true\n  compile: true\n"
                          "  micro_batch: 2\n  seq_len: 4096\n");
  const auto& setup = s.points.at(0).setup;
  const double bytes = 2.0 * 4096 * 8192 * 2;
  const auto& g = *setup.tensor_parallel_group;
  const double ag = sim::plan_collective(setup.cluster, sim::CollectiveOp::AllGather, bytes, g).seconds();
  const double rs = sim::plan_collective(setup.cluster, sim::CollectiveOp::ReduceScatter, bytes, g).seconds();
  const double sum = sim::memory_kernel_seconds(bytes * (1 + 1.0 / 8), setup.cluster.gpu);
  using models::Pass, models::TpSite;
  auto gemms = [](double seconds) {
    sim::TpSiteGemms x;
    for (auto p : {Pass::Forward, Pass::Backward, Pass::Recompute})
      for (auto site : {TpSite::AttentionIn, TpSite::AttentionOut, TpSite::MlpIn, TpSite::MlpOut}) x.at(p, site) = seconds;
    return x;
  };
  // Matmuls longer than the transfers: one chunk of eight stays exposed.
  const auto hidden = sim::model_parallel_time(setup, 1, gemms(1.0));
  CHECK(hidden.forward_seconds == Approx(2 * ag / 8 + 2 * rs / 8 + 2 * sum));
  CHECK(hidden.backward_seconds == Approx(2 * ag / 8 + 2 * rs));
  // No matmuls at all: everything is exposed.
  CHECK(sim::model_parallel_time(setup, 1, gemms(0)).forward_seconds == Approx(2 * ag + 2 * rs + 2 * sum));
  // Only the attention's q/k/v matmuls, of half the all-gather: a chunk, plus the 7/8 they do not cover.
  sim::TpSiteGemms qkv = gemms(1.0);
  qkv.at(Pass::Forward, TpSite::AttentionIn) = ag / 2;
  CHECK(sim::model_parallel_time(setup, 1, qkv).forward_seconds ==
        Approx(ag / 8 + (ag * 7 / 8 - ag / 2) + ag / 8 + 2 * rs / 8 + 2 * sum));
  // The embedding's and the head's collectives, outside the compiled blocks, are not fused.
  const double copy = sim::memory_kernel_seconds(2 * bytes, setup.cluster.gpu);
  CHECK(sim::model_parallel_time(setup, 0, gemms(1.0)).forward_seconds == Approx(rs + copy));
}

TEST_CASE("tensor parallel: each block matmul knows the collective it sits beside, and float8 casts run on the shard") {
  models::TrainingShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 4096;  // T = 8192 tokens, 1024 a shard
  shape.tensor_parallel = 8;
  shape.impl.compiled = true;
  shape.impl.float8_linears = true;
  shape.impl.float8_all_gather = true;
  const auto m = models::preset("llama3.1-70b");
  const auto units = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  const auto& block = *units[1].kernels;
  using models::TpSite;
  CHECK(find(block.forward, "attn.q").tp_site == TpSite::AttentionIn);
  CHECK(find(block.forward, "attn.v").tp_site == TpSite::AttentionIn);
  CHECK(find(block.forward, "attn.out").tp_site == TpSite::AttentionOut);
  CHECK(find(block.forward, "mlp.up").tp_site == TpSite::MlpIn);
  CHECK(find(block.forward, "mlp.down").tp_site == TpSite::MlpOut);
  CHECK(find(block.backward, "mlp.down dgrad").tp_site == TpSite::MlpOut);  // reads the gathered gradient
  CHECK(find(block.backward, "mlp.gate dgrad").tp_site == TpSite::None);    // its sum is reduce-scattered
  CHECK(find(block.backward, "mlp.down wgrad").tp_site == TpSite::None);
  int heads = 0;
  for (const auto& u : units)  // the head's collectives run outside the compiled blocks
    for (const auto& k : u.kernels->forward)
      if (k.op == "lm_head") {
        CHECK(k.tp_site == TpSite::None);
        ++heads;
      }
  CHECK(heads == 1);
  // torchao casts the gathered Linears' input on the 1024-token shard before the float8
  // all-gather (2 bytes read for the amax; 2 read and 1 written for the cast), and the out and
  // down projections' output gradient there too, then transposes the gathered 8192 x 8192 float8.
  CHECK(find(block.forward, "attn.q fp8 amax input").bytes == Approx(2.0 * 1024 * 8192));
  CHECK(find(block.forward, "attn.q fp8 cast input").bytes == Approx(3.0 * 1024 * 8192));
  CHECK(find(block.backward, "mlp.down fp8 amax grad_output").bytes == Approx(2.0 * 1024 * 8192));
  CHECK(find(block.backward, "mlp.down fp8 grad_output transpose").bytes == Approx(2.0 * 8192 * 8192));
  // The column-parallel ones' output gradient is this GPU's own slice, cast whole as without TP.
  CHECK(find(block.backward, "mlp.gate fp8 amax grad_output").bytes == Approx(2.0 * 8192 * 3584));
  // Without tensor parallelism nothing sits beside a collective.
  shape.tensor_parallel = 1;
  const auto plain = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(find(plain[1].kernels->forward, "attn.q").tp_site == TpSite::None);
  CHECK(find(plain[1].kernels->forward, "attn.q fp8 amax input").bytes == Approx(2.0 * 8192 * 8192));
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

TEST_CASE("tensor parallel, tp_plan per_linear: q, k, v, gate and up each gather the input, the head the logits") {
  // parallelize_module with ColwiseParallel(input_layouts=Shard(1)) on every column-parallel Linear
  // (KempnerForge's plan): Llama's attention gathers the sequence three times and its MLP twice,
  // backward reduce-scatters each one's dgrad, and the checkpointed re-run gathers again; the
  // embedding stays replicated (no forward collective), and the head gathers its logits along the
  // vocabulary, with the copy, for a whole-vocabulary loss on every rank (no loss all-reduces).
  const std::string common = "  tensor_parallel: 8\n  micro_batch: 2\n  seq_len: 4096\n  activation_checkpointing: full\n";
  const auto titan = scenario("  fsdp: 2\n" + common);
  const auto per = scenario("  fsdp: 2\n" + common + "  tp_plan: per_linear\n");
  const auto& setup = per.points.at(0).setup;
  const auto& g = *setup.tensor_parallel_group;
  const auto [ag, rs, copy] = sequence_collectives(setup, 2.0 * 4096 * 8192 * 2);  // T x h in bf16
  const int block = 1;  // wrap: block: the root first, then the blocks
  REQUIRE(setup.units[block].kind == models::UnitKind::Block);
  const auto a = sim::model_parallel_time(titan.points.at(0).setup, block);
  const auto b = sim::model_parallel_time(setup, block);
  // Forward 5 gathers (3 + 2) where torchtitan's plan has 2; backward 5 reduce-scatters where it
  // has 2, and 5 re-run gathers where it has 2: each with its copy.
  CHECK(b.forward_seconds == Approx(a.forward_seconds + 3 * (ag + copy)));
  CHECK(b.backward_seconds == Approx(a.backward_seconds + 3 * (rs + copy) + 3 * (ag + copy)));
  CHECK(b.forward_launches == a.forward_launches + 6);
  CHECK(b.backward_launches == a.backward_launches + 12);
  // The root holds the embedding and the head: no reduce-scatter of the embedding, the input
  // gathered as before, and the logits (T x 128256 in bf16, gathered from 8 slices) with their copy.
  const double logits = 8192.0 * 128256 * 2;
  const double gathered = sim::plan_collective(setup.cluster, sim::CollectiveOp::AllGather, logits, g).seconds();
  const auto root = sim::model_parallel_time(setup, 0);
  CHECK(root.forward_seconds ==
        Approx(ag + copy + gathered + sim::memory_kernel_seconds(2 * logits, setup.cluster.gpu)));
  CHECK(root.backward_seconds == Approx(ag + copy + rs + copy));
  // The loss's kernels run over the whole vocabulary: 8 times torchtitan's slice.
  const auto& titan_head = *titan.points.at(0).setup.units[0].kernels;
  const auto& per_head = *setup.units[0].kernels;
  CHECK(find(per_head.forward, "log_softmax").bytes ==
        Approx(8 * find(titan_head.forward, "log_softmax shift").bytes));
  CHECK(find(per_head.forward, "lm_head").n == find(titan_head.forward, "lm_head").n);  // the GEMM stays sliced
}

TEST_CASE("tensor parallel, tp_qk_norm no_parallel: q and k gathered after their norms, rotary on every head") {
  // torchtitan's qwen3 plan before #1870 wrapped q_norm and k_norm in NoParallel, whose output hook
  // redistributes the head-sharded output to Replicate. Qwen3-32B over 8 GPUs at 2 x 4096 tokens
  // (T = 8192): a GPU holds 8 of 64 q heads and 1 of 8 KV heads, 128 wide.
  auto qwen = [](const std::string& extra) {
    return scenarios::parse_scenario("model: qwen3-32b\ncluster: {preset: dgx-h100-ib400, nodes: 4}\ntraining:\n"
                                     "  framework: torchtitan\n  tensor_parallel: 8\n  micro_batch: 2\n"
                                     "  seq_len: 4096\n  activation_checkpointing: full\n" +
                                         extra + "policies: [fsdp]\n",
                                     "q.yaml");
  };
  const auto sharded = qwen(""), gathered = qwen("  tp_qk_norm: no_parallel\n");
  const auto& setup = gathered.points.at(0).setup;
  const auto& g = *setup.tensor_parallel_group;
  // Forward: q (T x 64 x 128) and k (T x 8 x 128) in bf16, each gathered and joined by a copy. The
  // re-run does both again; backward gathers dq and the repeated K's gradient, both q wide.
  const double q = 8192.0 * 8192 * 2, k = 8192.0 * 1024 * 2;
  auto gather = [&](double bytes) {
    return sim::plan_collective(setup.cluster, sim::CollectiveOp::AllGather, bytes, g).seconds() +
           sim::memory_kernel_seconds(2 * bytes, setup.cluster.gpu);
  };
  const int block = 1;  // torchtitan: tok_embeddings, then the blocks
  const auto a = sim::model_parallel_time(sharded.points.at(0).setup, block);
  const auto b = sim::model_parallel_time(setup, block);
  CHECK(b.forward_seconds == Approx(a.forward_seconds + gather(q) + gather(k)));
  CHECK(b.backward_seconds == Approx(a.backward_seconds + gather(q) + gather(k) + 2 * gather(q)));
  CHECK(b.forward_launches == a.forward_launches + 4);
  CHECK(b.backward_launches == a.backward_launches + 8);
  // Rotary runs on every head (8 times this GPU's), and so does GQA's repeat of K: from 8 KV heads
  // to 64 (V's repeat stays local, 1 to 8), 2 bytes an element read and written:
  // (8 x (128 + 1024) + (128 + 1024)) x 8192 x 2.
  const auto& one = *sharded.points.at(0).setup.units[block].kernels;
  const auto& all = *setup.units[block].kernels;
  CHECK(find(all.forward, "rotary q to fp32").bytes == Approx(8 * find(one.forward, "rotary q to fp32").bytes));
  CHECK(find(all.forward, "rotary k to fp32").bytes == Approx(8 * find(one.forward, "rotary k to fp32").bytes));
  CHECK(find(one.forward, "repeat_kv").bytes == Approx(2.0 * 1152 * 8192 * 2));
  CHECK(find(all.forward, "repeat_kv").bytes == Approx(9.0 * 1152 * 8192 * 2));
  // SDPA takes its 8 heads of q and of K back: a copy of each (1024 wide a token), read and written.
  CHECK(test::count_prefix(all.forward, "q, k heads sharded again") == 2);
  CHECK(find(all.forward, "q, k heads sharded again").bytes == Approx(2.0 * 1024 * 8192 * 2));
  CHECK(test::count_prefix(one.forward, "q, k heads sharded again") == 0);
}

TEST_CASE("tensor parallel: loss parallelism runs DTensor's log_softmax op by op and holds one more fp32 slice") {
  // torch/distributed/tensor/parallel/loss.py on each GPU's 128256 / 8 = 16032-word slice of the
  // fp32 logits, T = 8192 tokens (TV = 8192 x 16032): forward max (reads TV), shift, exp and
  // subtract (read and write TV each), sum (reads TV); backward zeros (writes TV), exp(out) (read,
  // write), their sum (reads two, writes one) and its product with the gradient (read, write).
  // Eager PyTorch's single log_softmax kernels move 8 TV and 12 TV bytes.
  const auto s = scenario("  fsdp: 2\n  tensor_parallel: 8\n  micro_batch: 2\n  seq_len: 4096\n");
  const auto& head = *s.points.at(0).setup.units[0].kernels;
  const double TV = 8192.0 * 16032;
  double fwd = 0, bwd = 0;
  for (const auto& k : head.forward)
    if (k.op.rfind("log_softmax", 0) == 0) fwd += k.bytes;
  for (const auto& k : head.backward)
    if (k.op.rfind("log_softmax", 0) == 0 || k.op == "nll_loss bwd zeros") bwd += k.bytes;
  CHECK(fwd == Approx(32 * TV));
  CHECK(bwd == Approx(32 * TV));
  CHECK(test::count_prefix(head.forward, "log_softmax") == 5);
  // Its backward holds zeros, (zeros + exp(out)) and the product beside the saved fp32 output:
  // 12 TV bytes in flight where the eager kernels hold 8 TV (tensor parallelism off: every word).
  const auto tp = models::fsdp_units(models::preset("llama3.1-70b"), models::WrapPolicy::Block, [] {
    models::TrainingShape shape;
    shape.micro_batch = 2, shape.seq_len = 4096, shape.tensor_parallel = 8;
    return shape;
  }());
  CHECK(tp[0].backward_transient_bytes == Approx(12 * TV));
}

TEST_CASE("bad input: tp_plan without tensor parallelism, with async TP or float8, or misspelt") {
  CHECK_THROWS_WITH_AS(scenario("  tp_plan: per_linear\n"),
                       Contains("tp.yaml:4: training.tp_plan: only meaningful with tensor_parallel > 1"), InputError);
  CHECK_THROWS_WITH_AS(scenario("  tensor_parallel: 8\n  compile: true\n  async_tp: true\n  tp_plan: per_linear\n"),
                       Contains("tp.yaml:7: training.tp_plan: async TP fuses the collectives of torchtitan's plan"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  fsdp: 2\n  tensor_parallel: 8\n  tp_plan: per_linear\n  float8: true\n"),
                       Contains("tp.yaml:7: training.float8: float8 tensor parallelism (torchao's Float8ColwiseParallel) "
                                "is modelled under tp_plan: torchtitan only"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  tensor_parallel: 8\n  tp_plan: per-linear\n"),
                       Contains("tp.yaml:5: training.tp_plan"), InputError);
  // DTensor's loss parallelism casts to fp32: a bf16 loss is a per_linear (or TP-free) choice.
  CHECK_THROWS_WITH_AS(scenario("  tensor_parallel: 8\n  cross_entropy: bf16\n"),
                       Contains("tp.yaml:5: training.cross_entropy: torchtitan's TP plan takes the loss with DTensor's "
                                "loss parallelism"),
                       InputError);
  CHECK_NOTHROW(scenario("  tensor_parallel: 8\n  tp_plan: per_linear\n  cross_entropy: bf16\n"));
}

TEST_CASE("bad input: tp_qk_norm without tensor parallelism, under per_linear, on a model without q and k norms") {
  CHECK_THROWS_WITH_AS(scenario("  tp_qk_norm: no_parallel\n"),
                       Contains("tp.yaml:4: training.tp_qk_norm: no_parallel needs tensor_parallel > 1"), InputError);
  CHECK_THROWS_WITH_AS(scenario("  tensor_parallel: 8\n  tp_plan: per_linear\n  tp_qk_norm: no_parallel\n"),
                       Contains("tp.yaml:6: training.tp_qk_norm: no_parallel is torchtitan's qwen3 plan"), InputError);
  CHECK_THROWS_WITH_AS(scenario("  tensor_parallel: 8\n  tp_qk_norm: no_parallel\n"),
                       Contains("tp.yaml:5: training.tp_qk_norm: no_parallel wraps q_norm and k_norm, and model "
                                "'llama3.1-70b' has none"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenario("  tensor_parallel: 8\n  tp_qk_norm: NoParallel\n"),
                       Contains("tp.yaml:5: training.tp_qk_norm"), InputError);
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
  CHECK_THROWS_WITH_AS(scenario("  tensor_parallel: 8\n  async_tp: true\n"),
                       Contains("tp.yaml:5: training.async_tp: async TP is torch.compile's micro-pipelining of the "
                                "compiled blocks: set compile: true as well"),
                       InputError);
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
  const auto cp = sim::model_parallel_time(setup, 1);
  CHECK(cp.forward_seconds == Approx(ag));
  CHECK(cp.backward_seconds == Approx(2 * ag + rs));
  CHECK(cp.backward_launches == 3);
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
