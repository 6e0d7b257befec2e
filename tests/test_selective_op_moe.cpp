// torchtitan's op-level selective checkpointing on a mixture of experts (activation_checkpointing:
// selective_op; _get_save_ops and _apply_op_sac in torchtitan/distributed/activation_checkpoint.py
// @0014ac2, where "selective" means it): every second aten.mm's output is kept, the router gate's
// mm is re-run and not counted, the experts' torch._grouped_mm is not an aten.mm and re-runs, the
// router's top-k and, under expert parallelism, every all-to-all's output are kept. Numbers by
// hand from each model's shapes.
#include "kernel_list_testing.hpp"
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/scenario.hpp"
#include "sim/model_parallel.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace tagcsim;
using doctest::Approx;

namespace {

// 2 x 4096 tokens, every block checkpointed by the per-op policy, re-run in full (no early stop).
models::TrainingShape selective_op_2x4096(int expert_parallel = 1) {
  models::TrainingShape shape;
  shape.micro_batch = 2, shape.seq_len = 4096, shape.expert_parallel = expert_parallel;
  shape.activation_checkpointing = true;
  shape.impl.selective_op = true;
  shape.impl.checkpoint_early_stop = false;
  return shape;
}

struct Rerun {
  std::vector<std::string> gemms;
  int attention = 0, topk = 0, host_syncs = 0, memory = 0;
};

Rerun rerun_of(const models::UnitKernels& u) {
  Rerun r;
  for (const auto& k : u.backward) {
    if (k.pass != models::Pass::Recompute) continue;
    if (k.kind == models::KernelKind::Gemm) r.gemms.push_back(k.op);
    r.attention += k.kind == models::KernelKind::Attention;
    r.topk += k.op == "router topk";
    r.host_syncs += k.host_sync;
    r.memory += k.kind == models::KernelKind::Memory;
  }
  return r;
}

int memory_kernels(const std::vector<models::Kernel>& list) {
  int n = 0;
  for (const auto& k : list) n += k.kind == models::KernelKind::Memory;
  return n;
}

}  // namespace

TEST_CASE("selective_op on Qwen3-30B-A3B: k and out re-run, and the router gate and every grouped GEMM") {
  // The block's aten.mm in order: q (1st), k, v (3rd), out; the router gate's mm is forced to re-run
  // and not counted; the experts' gate, up and down are torch._grouped_mm. Kept: q, v, attention.
  const auto m = models::preset("qwen3-30b-a3b");
  const auto shape = selective_op_2x4096();
  const auto units = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  const auto& block = units.at(1);
  REQUIRE(block.kernels->recomputes);
  const Rerun r = rerun_of(*block.kernels);
  CHECK(r.gemms == std::vector<std::string>{"attn.k", "attn.out", "mlp.router", "mlp.experts.gate (grouped)",
                                            "mlp.experts.up (grouped)", "mlp.experts.down (grouped)"});
  CHECK(r.attention == 0);
  CHECK(r.topk == 0);
  CHECK(r.memory == memory_kernels(block.kernels->forward) - 1);  // all but the top-k
  // In FLOPs, a token re-runs 2 h kv (k: 2048 x 512), 2 q h (out: 4096 x 2048), 2 h E (the gate:
  // 2048 x 128) and its 8 experts' 3 matrices of 2048 x 768: 94,896,128 FLOPs, over 8192 tokens.
  auto plain = shape;
  plain.activation_checkpointing = false, plain.impl.selective_op = false;
  const auto none = models::fsdp_units(m, models::WrapPolicy::Torchtitan, plain);
  const double per_token = 2 * 2048.0 * 512 + 2 * 4096.0 * 2048 + 2 * 2048.0 * 128 + 8 * 3 * 2 * 2048.0 * 768;
  CHECK(per_token == 94'896'128);
  CHECK(block.backward_flops - none.at(1).backward_flops == Approx(8192 * per_token));
  // Kept for backward, in bytes over the 8192 tokens (bf16): the block input (2048), q (4096) and v
  // (512), the attention output (4096) and its fp32 log-sum-exp (32 heads), the 65,536 routed rows'
  // top-k scores (fp32) and ids (int64).
  const double kept = 8192 * 2 * (2048.0 + 4096 + 512 + 4096) + 8192 * 4 * 32.0 + 65536 * 12.0;
  CHECK(kept == 177'995'776);
  CHECK(block.activation_bytes == Approx(kept));
}

TEST_CASE("selective_op with shared experts and latent attention: the count runs on through the shared MLP") {
  // DeepSeek-V3's MoE block: q_a (1st), q_b, kv_a (3rd), kv_b, out (5th), then after the routed
  // experts the shared ones' gate, up (7th) and down: kept q_a, kv_a, out and the shared up.
  const auto m = models::preset("deepseek-v3-671b");
  auto shape = selective_op_2x4096();
  shape.micro_batch = 1;
  const auto units = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  const auto& moe_block = units.at(4);  // blocks 0-2 are dense
  REQUIRE(moe_block.expert_params > 0);
  CHECK(rerun_of(*moe_block.kernels).gemms ==
        std::vector<std::string>{"attn.q_b", "attn.kv_b", "mlp.router", "mlp.shared.gate", "mlp.shared.down",
                                 "mlp.experts.gate (grouped)", "mlp.experts.up (grouped)",
                                 "mlp.experts.down (grouped)"});
  // A dense block counts its MLP's gate (6th), up (7th) and down: it keeps the up projection.
  CHECK(rerun_of(*units.at(1).kernels).gemms ==
        std::vector<std::string>{"attn.q_b", "attn.kv_b", "mlp.gate", "mlp.down"});
}

namespace {

scenarios::Scenario qwen3_ep8_selective_op(const std::string& extra = "") {
  return scenarios::parse_scenario(R"(model: qwen3-30b-a3b
cluster: {preset: dgx-h100-ib400, nodes: 4}
training: {framework: torchtitan, micro_batch: 2, seq_len: 4096, activation_checkpointing: selective_op,
  expert_parallel: 8)" + extra + R"(}
policies: [fsdp]
)",
                                   "ep.yaml");
}

}  // namespace

TEST_CASE("selective_op with expert parallelism: the re-run exchanges nothing, the block keeps what came") {
  // Qwen3-30B-A3B, EP 8 on 4 DGX H100 nodes, 2 x 4096 tokens a GPU: the policy keeps every
  // all_to_all_single's output and the host's copy of the counts (torchtitan#1672, one list for
  // every model since #2357), so the backward sends only the two gradients, and each block keeps
  // the 65,536 rows of 2,048 bf16 its experts received and as many coming home, and 128 counts.
  const auto s = qwen3_ep8_selective_op();
  const auto& setup = s.points.at(0).setup;
  const double tokens = sim::plan_collective(setup.cluster, sim::CollectiveOp::AllToAll, 65536 * 2048.0 * 2,
                                             *setup.expert_parallel_group)
                            .seconds();
  const auto t = sim::model_parallel_time(setup, 1);
  CHECK(t.backward_seconds == Approx(2 * tokens));
  CHECK(t.backward_launches == 2);
  const auto& kernels = *setup.units.at(1).kernels;
  CHECK(test::find(kernels.forward, "tokens per expert").host_sync);
  CHECK(rerun_of(kernels).host_syncs == 0);
  const auto alone = models::fsdp_units(models::preset("qwen3-30b-a3b"), models::WrapPolicy::Torchtitan,
                                        selective_op_2x4096());
  CHECK(setup.units.at(1).activation_bytes - alone.at(1).activation_bytes == Approx(8 * 128 + 2 * 65536 * 2048.0 * 2));
}

TEST_CASE("selective_op_recomputes_all_to_all: a list without them exchanges counts and rows again, keeps none") {
  // As Qwen3's own list ran it before torchtitan#2357: under full checkpointing's rule, 1 count
  // exchange and 2 + 2 token exchanges in the backward, and the block keeps what it keeps alone.
  const auto s = qwen3_ep8_selective_op(", selective_op_recomputes_all_to_all: true");
  const auto& setup = s.points.at(0).setup;
  const auto plan = [&](double bytes) {
    return sim::plan_collective(setup.cluster, sim::CollectiveOp::AllToAll, bytes, *setup.expert_parallel_group)
        .seconds();
  };
  const auto t = sim::model_parallel_time(setup, 1);
  CHECK(t.backward_seconds == Approx(plan(8 * 128) + 4 * plan(65536 * 2048.0 * 2)));
  CHECK(t.backward_launches == 5);
  const auto alone = models::fsdp_units(models::preset("qwen3-30b-a3b"), models::WrapPolicy::Torchtitan,
                                        selective_op_2x4096());
  CHECK(setup.units.at(1).activation_bytes == Approx(alone.at(1).activation_bytes));
  CHECK(scenarios::resolved_yaml(s).find("selective_op_recomputes_all_to_all: true") != std::string::npos);
  CHECK_THROWS_WITH_AS(scenarios::parse_scenario("model: qwen3-30b-a3b\ncluster: dgx-h100-ib400\ntraining: {framework: torchtitan, "
                                                 "activation_checkpointing: true, expert_parallel: 8,\n"
                                                 "  selective_op_recomputes_all_to_all: true}\n",
                                                 "bad.yaml"),
                       doctest::Contains("only with activation_checkpointing: selective_op"),
                       InputError);
  CHECK_THROWS_WITH_AS(scenarios::parse_scenario("model: qwen3-30b-a3b\ncluster: dgx-h100-ib400\ntraining: {framework: torchtitan, "
                                                 "activation_checkpointing: selective_op,\n"
                                                 "  selective_op_recomputes_all_to_all: true}\n",
                                                 "bad.yaml"),
                       doctest::Contains("bad.yaml:4: training.selective_op_recomputes_all_to_all: only with expert_parallel > 1"), InputError);
}

TEST_CASE("checkpoint early stop: a dense block skips its down projection, an MoE block re-runs its experts' down") {
  // Full checkpointing with early stop: the experts' outputs are weighed by their scores after the
  // down projection, and the product's backward reads them, so the re-run ends after the product;
  // the scatter back and the residual add are not re-run. A dense block's ends before mlp.down.
  const auto m = models::preset("deepseek-v2-lite");  // block 0 dense, the others MoE
  models::TrainingShape shape;
  shape.micro_batch = 1, shape.seq_len = 4096, shape.activation_checkpointing = true;
  const auto units = models::fsdp_units(m, models::WrapPolicy::Torchtitan, shape);
  auto rerun_ops = [](const models::UnitKernels& u) {
    std::vector<std::string> ops;
    for (const auto& k : u.backward)
      if (k.pass == models::Pass::Recompute) ops.push_back(k.op);
    return ops;
  };
  auto has = [](const std::vector<std::string>& ops, const std::string& op) {
    return std::find(ops.begin(), ops.end(), op) != ops.end();
  };
  const auto dense = rerun_ops(*units.at(1).kernels), moe = rerun_ops(*units.at(2).kernels);
  CHECK(!has(dense, "mlp.down"));
  CHECK(has(dense, "mlp.up"));
  CHECK(has(moe, "mlp.experts.down (grouped)"));
  CHECK(moe.back() == "routing scores mul");
  CHECK(!has(moe, "unpermute scatter_add"));
  CHECK(!has(moe, "residual 2"));
}
