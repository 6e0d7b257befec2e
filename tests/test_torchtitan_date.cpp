// training.torchtitan_date: a run made from a torchtitan checkout of that date gets the defaults
// torchtitan had then (scenarios/torchtitan_date.cpp), each change at its pull request's merge date,
// and a key the scenario sets itself wins.
#include "scenarios/report.hpp"
#include "scenarios/scenario.hpp"
#include "sim/step.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace tagcsim;
using doctest::Contains;
using models::AttentionKernel;

namespace {

scenarios::Point point(const std::string& training, const std::string& model = "llama3.1-8b",
                       const std::string& cluster = "dgx-h100-ib400") {
  return scenarios::parse_scenario("model: " + model + "\ncluster: {preset: " + cluster + ", nodes: 1}\ntraining:\n" +
                                       "  framework: torchtitan\n" + training + "policies: [fsdp]\n",
                                   "t.yaml")
      .points.at(0);
}

}  // namespace

TEST_CASE("torchtitan_date: before Feb 2025 AdamW is foreach, and before Apr 2025 a compiled run's loss is eager") {
  const auto jan = point("  torchtitan_date: 2025-01-15\n  compile: true\n  activation_checkpointing: full\n");
  const auto& t = jan.setup.training;
  CHECK(t.optimizer == sim::Training::Optimizer::Foreach);
  CHECK_FALSE(t.impl.compiled_loss);
  CHECK(t.impl.checkpoint_early_stop);
  CHECK(jan.torchtitan_settings ==
        std::vector<std::string>{"optimizer foreach (fused from torchtitan#881, 2025-02-24)",
                                 "the loss eager (compiled from torchtitan#1033, 2025-04-02)",
                                 "checkpoint_early_stop true (false from torchtitan#1580, 2025-08-29)",
                                 "repeat_kv true (shared from torchtitan#2259, 2026-01-27)"});
  const auto sept = point("  torchtitan_date: 2025-09-05\n  compile: true\n  activation_checkpointing: full\n");
  CHECK(sept.setup.training.optimizer == sim::Training::Optimizer::Fused);
  CHECK(sept.setup.training.impl.compiled_loss);
  CHECK_FALSE(sept.setup.training.impl.checkpoint_early_stop);
  // After PyTorch 2.9's release a torchtitan checkout runs its fused RMSNorm; before, the scenario says.
  CHECK_FALSE(sept.setup.training.impl.fused_rms_norm);
  const auto nov = point("  torchtitan_date: 2025-11-01\n");
  CHECK(nov.setup.training.impl.fused_rms_norm);
  CHECK(nov.torchtitan_settings.at(1) == "rms_norm fused (PyTorch nightly after PyTorch 2.9, 2025-10-15)");
  // K and V repeated to every head before the attention until Jan 27 2026, read shared after.
  CHECK(*nov.setup.training.impl.repeat_kv);
  const auto feb = point("  torchtitan_date: 2026-02-01\n");
  CHECK_FALSE(*feb.setup.training.impl.repeat_kv);
  CHECK(feb.torchtitan_settings.back() == "repeat_kv false (torchtitan#2259, 2026-01-27)");
  // The day a change merged counts as after it.
  CHECK(point("  torchtitan_date: 2025-02-24\n").setup.training.optimizer == sim::Training::Optimizer::Fused);
  CHECK(point("  torchtitan_date: 2025-02-23\n").setup.training.optimizer == sim::Training::Optimizer::Foreach);
}

TEST_CASE("torchtitan_date: Qwen3 under TP gathers q and k after their norms until Oct 14 2025, and the step shows it") {
  const std::string tp = "  tensor_parallel: 8\n  seq_len: 4096\n  activation_checkpointing: full\n";
  const auto before = point("  torchtitan_date: 2025-09-05\n" + tp, "qwen3-8b");
  const auto after = point("  torchtitan_date: 2025-10-14\n" + tp, "qwen3-8b");
  CHECK(before.setup.training.impl.qk_norm_no_parallel);
  CHECK_FALSE(after.setup.training.impl.qk_norm_no_parallel);
  // The gathers, rotary and repeat_kv on every head cost the earlier checkout time.
  CHECK(sim::simulate_fsdp(before.setup).step_time_s > 1.05 * sim::simulate_fsdp(after.setup).step_time_s);
  // The note that asks whether the run's torchtitan gathered q and k is for undated scenarios only.
  const auto report = [](const std::string& date) {
    const auto s = scenarios::parse_scenario("model: qwen3-8b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\n"
                                             "training: {framework: torchtitan, tensor_parallel: 8, seq_len: 4096" +
                                                 date + "}\npolicies: [fsdp]\n",
                                             "q.yaml");
    return scenarios::format_results(s, scenarios::run(s), scenarios::Format::Table);
  };
  CHECK(report("").find("qwen3 TP plan all-gathered q and k") != std::string::npos);
  CHECK(report("").find("give training.torchtitan_date, the date of the run's checkout") != std::string::npos);
  CHECK(report(", torchtitan_date: 2025-12-01").find("torchtitan's defaults changed") == std::string::npos);
  CHECK(report(", torchtitan_date: 2025-12-01").find("qwen3 TP plan all-gathered q and k") == std::string::npos);
  // A model without q/k norms, or no TP, is left alone.
  CHECK_FALSE(point("  torchtitan_date: 2025-09-05\n" + tp).setup.training.impl.qk_norm_no_parallel);
}

TEST_CASE("torchtitan_date: on Blackwell SDPA runs cuDNN from May 14 2025, and per-op checkpointing re-runs it until Dec 2025") {
  const std::string sac = "  activation_checkpointing: selective_op\n";
  const auto march = point("  torchtitan_date: 2025-03-01\n" + sac, "llama3.1-8b", "dgx-b200-ib400");
  CHECK(march.setup.training.impl.attention == AttentionKernel::Flash2);
  const auto sept = point("  torchtitan_date: 2025-09-01\n" + sac, "llama3.1-8b", "dgx-b200-ib400");
  CHECK(sept.setup.training.impl.attention == AttentionKernel::Cudnn);
  CHECK(sept.setup.training.impl.selective_op_recomputes_attention);
  const auto dec = point("  torchtitan_date: 2025-12-05\n" + sac, "llama3.1-8b", "dgx-b200-ib400");
  CHECK(dec.setup.training.impl.attention == AttentionKernel::Cudnn);
  CHECK_FALSE(dec.setup.training.impl.selective_op_recomputes_attention);
  // Hopper keeps flash until one list asks cuDNN first on every GPU.
  CHECK(point("  torchtitan_date: 2025-09-01\n" + sac).setup.training.impl.attention == AttentionKernel::Flash2);
}

TEST_CASE("torchtitan_date: on every GPU SDPA asks cuDNN first from Oct 9 2025, re-run under per-op checkpointing until Dec 2025") {
  const std::string sac = "  activation_checkpointing: selective_op\n";
  const auto before = point("  torchtitan_date: 2025-10-08\n" + sac);
  CHECK(before.setup.training.impl.attention == AttentionKernel::Flash2);
  CHECK_FALSE(before.setup.training.impl.selective_op_recomputes_attention);
  const auto oct = point("  torchtitan_date: 2025-10-09\n" + sac);
  CHECK(oct.setup.training.impl.attention == AttentionKernel::Cudnn);
  CHECK(oct.setup.training.impl.selective_op_recomputes_attention);
  CHECK(std::count(oct.torchtitan_settings.begin(), oct.torchtitan_settings.end(),
                   "attention cudnn (SDPA asks cuDNN first from torchtitan#1776, 2025-10-09)") == 1);
  CHECK(std::count(oct.torchtitan_settings.begin(), oct.torchtitan_settings.end(),
                   "per-op checkpointing re-runs cuDNN's attention (saved from torchtitan#2095, 2025-12-01)") == 1);
  const auto dec = point("  torchtitan_date: 2025-12-01\n" + sac);
  CHECK(dec.setup.training.impl.attention == AttentionKernel::Cudnn);
  CHECK_FALSE(dec.setup.training.impl.selective_op_recomputes_attention);
  // The step sees it: at 8,192 tokens cuDNN's kernels are faster than FlashAttention-2's on H100.
  const std::string run = "  seq_len: 8192\n  activation_checkpointing: full\n";
  const double flash = sim::simulate_fsdp(point("  torchtitan_date: 2025-10-08\n" + run).setup).step_time_s;
  const double cudnn = sim::simulate_fsdp(point("  torchtitan_date: 2025-10-09\n" + run).setup).step_time_s;
  CHECK(cudnn < 0.95 * flash);
  // A100's profile has no cuDNN attention curve: FlashAttention-2's stands in, and the heading says so.
  const auto a100 = point("  torchtitan_date: 2025-10-09\n", "llama3.1-8b", "dgx-a100-ib200");
  CHECK(a100.setup.training.impl.attention == AttentionKernel::Flash2);
  CHECK(std::count(a100.torchtitan_settings.begin(), a100.torchtitan_settings.end(),
                   "attention flash2 standing in for cuDNN's, which SDPA asks first from torchtitan#1776, 2025-10-09 "
                   "(kernel profile 'device-a100-80gb' has no cuDNN attention measurement)") == 1);
  // The scenario's own key wins.
  CHECK(point("  torchtitan_date: 2025-10-09\n  attention: flash2\n").setup.training.impl.attention ==
        AttentionKernel::Flash2);
}

TEST_CASE("torchtitan_date: per-op checkpointing keeps the all-to-alls from Sept 6 2025, Qwen3's from Mar 23 2026") {
  const std::string ep = "  activation_checkpointing: selective_op\n  expert_parallel: 8\n  document_length: 1024\n";
  const auto rerun = [&](const std::string& date, const std::string& model, const std::string& extra = "") {
    return point("  torchtitan_date: " + date + "\n" + ep + extra, model).setup.training.impl
        .selective_op_recomputes_all_to_all;
  };
  // DeepSeek-V3's list named all_to_all_single from torchtitan#1672; Qwen3's own list never did, and
  // its MoE kept them only when #2357 made one list for every model.
  CHECK(rerun("2025-09-05", "deepseek-v2-lite"));
  CHECK_FALSE(rerun("2025-09-06", "deepseek-v2-lite"));
  CHECK(rerun("2026-03-22", "qwen3-30b-a3b"));
  CHECK_FALSE(rerun("2026-03-23", "qwen3-30b-a3b"));
  // Llama 4 (a shared expert) took #1672's list, with q/k norms (as its released config has them) or not.
  CHECK_FALSE(rerun("2025-10-01", "{preset: llama4-scout-17b-16e, qk_norm: true}"));
  CHECK(rerun("2025-09-05", "llama4-scout-17b-16e"));
  CHECK_FALSE(rerun("2025-09-05", "deepseek-v2-lite", "  selective_op_recomputes_all_to_all: false\n"));
  const auto sept = point("  torchtitan_date: 2025-09-05\n" + ep, "deepseek-v2-lite");
  CHECK(std::find(sept.torchtitan_settings.begin(), sept.torchtitan_settings.end(),
                  "per-op checkpointing re-runs the all-to-alls (saved from torchtitan#1672, 2025-09-06)") !=
        sept.torchtitan_settings.end());
  // Without expert parallelism there is nothing to exchange, and the date says nothing of it.
  const auto alone = point("  torchtitan_date: 2025-09-05\n  activation_checkpointing: selective_op\n"
                           "  document_length: 1024\n",
                           "deepseek-v2-lite");
  CHECK_FALSE(alone.setup.training.impl.selective_op_recomputes_all_to_all);
}

TEST_CASE("torchtitan_date: per-op checkpointing saves float8's abs until Feb 6 2025, and eager float8's memory shows it") {
  const std::string sac = "  activation_checkpointing: selective_op\n  float8: true\n  seq_len: 8192\n";
  const auto jan = point("  torchtitan_date: 2025-02-05\n" + sac);
  CHECK(jan.setup.training.impl.selective_op_saves_abs);
  CHECK(std::find(jan.torchtitan_settings.begin(), jan.torchtitan_settings.end(),
                  "per-op checkpointing saves float8's abs (out of the save list from torchtitan#820, 2025-02-06)") !=
        jan.torchtitan_settings.end());
  const auto feb = point("  torchtitan_date: 2025-02-06\n" + sac);
  CHECK_FALSE(feb.setup.training.impl.selective_op_saves_abs);
  // Without float8 there is no abs to save: the checkout's list names it all the same, and the
  // heading says nothing of it.
  const auto bf16 = point("  torchtitan_date: 2025-02-05\n  activation_checkpointing: selective_op\n");
  CHECK(bf16.setup.training.impl.selective_op_saves_abs);
  CHECK(std::none_of(bf16.torchtitan_settings.begin(), bf16.torchtitan_settings.end(),
                     [](const std::string& s) { return s.find("abs") != std::string::npos; }));
  // Eager, the policy stores each abs: Llama 3.1 8B's Linears on 8,192 tokens, e = 2 bytes, their
  // inputs (q, k, v: 3h; o: h; gate, up: 2h; down: f) and, without float8's all-gather, their
  // weights (q and o h^2 each, k and v h kv each, gate, up and down h f each), on every block.
  const double T = 8192, h = 4096, kv = 1024, f = 14336, L = 32;
  const double abs_bytes = 2 * L * (T * (6 * h + f) + 2 * h * h + 2 * h * kv + 3 * h * f);
  const auto act = [](const scenarios::Point& p) { return sim::simulate_fsdp(p.setup).memory.allocated_bytes(); };
  CHECK(act(jan) - act(feb) == doctest::Approx(abs_bytes).epsilon(0.02));  // about 32 GiB
  // With float8's all-gather the weights' scales are taken after the optimizer step, outside the
  // blocks: only the inputs' abs stay.
  const auto gathered = [&](const std::string& date) {
    return point("  torchtitan_date: " + date + "\n  float8_all_gather: true\n" + sac);
  };
  CHECK(act(gathered("2025-02-05")) - act(gathered("2025-02-06")) ==
        doctest::Approx(2 * L * T * (6 * h + f)).epsilon(0.02));
  // Compiled, the partitioner keeps only what the backward reads: the max, not the abs.
  const auto compiled = [&](const std::string& date) {
    return point("  torchtitan_date: " + date + "\n  compile: true\n" + sac);
  };
  CHECK(act(compiled("2025-02-05")) == doctest::Approx(act(compiled("2025-02-06"))));
}

TEST_CASE("torchtitan_date: since June 9 2026 FlexAttention over documents, whose length the scenario must give") {
  CHECK_THROWS_WITH_AS(point("  torchtitan_date: 2026-07-01\n"),
                       Contains("t.yaml:5: training.torchtitan_date: torchtitan since torchtitan#3571, 2026-06-09 runs "
                                "FlexAttention over each sequence's documents: give training.document_length"),
                       InputError);
  const auto july = point("  torchtitan_date: 2026-07-01\n  document_length: 1500\n");
  CHECK(july.setup.training.impl.attention == AttentionKernel::Flex);
  CHECK(july.setup.training.impl.document_length == 1500);
  // A GPU whose profile has no FlexAttention curve hears it at the date, with what it has.
  CHECK_THROWS_WITH_AS(point("  torchtitan_date: 2026-07-01\n  document_length: 1500\n", "llama3.1-8b", "dgx-b200-ib400"),
                       Contains("t.yaml:5: training.torchtitan_date: torchtitan since torchtitan#3571, 2026-06-09 runs "
                                "FlexAttention, which kernel profile 'device-b200' has no measurement of: set "
                                "training.attention to the nearest it has (flash2, math, cudnn)"),
                       InputError);
  CHECK(point("  torchtitan_date: 2026-07-01\n  document_length: 1500\n  attention: flash2\n", "llama3.1-8b",
              "dgx-b200-ib400")
            .setup.training.impl.attention == AttentionKernel::Flash2);
  // DeepSeek's configs (latent attention) went to FlexAttention over documents first, in Aug 2025.
  CHECK_THROWS_WITH_AS(point("  torchtitan_date: 2025-09-01\n", "deepseek-v2-lite"),
                       Contains("torchtitan since torchtitan#1610, 2025-08-22 runs FlexAttention over each sequence's "
                                "documents"),
                       InputError);
  CHECK(point("  torchtitan_date: 2025-09-01\n  document_length: 1000\n", "deepseek-v2-lite")
            .setup.training.impl.attention == AttentionKernel::Flex);
  // Before it, SDPA over whole sequences: the data's documents, if the scenario gives them, go unmasked.
  const auto june = point("  torchtitan_date: 2026-06-08\n  document_length: 1500\n");
  CHECK(june.setup.training.impl.attention == AttentionKernel::Cudnn);
  CHECK(june.setup.training.impl.document_length == 0);
  CHECK(std::count(june.torchtitan_settings.begin(), june.torchtitan_settings.end(),
                   "documents not masked (SDPA over whole sequences; block-causal from torchtitan#3571, 2026-06-09)") ==
        1);
  const auto b200 = point("  torchtitan_date: 2025-09-01\n  document_length: 1024\n", "llama3.1-8b", "dgx-b200-ib400");
  CHECK(b200.setup.training.impl.attention == AttentionKernel::Cudnn);
  CHECK(b200.setup.training.impl.document_length == 0);
  // Before it, SDPA over whole sequences.
  CHECK(point("  torchtitan_date: 2026-06-08\n").setup.training.impl.attention == AttentionKernel::Cudnn);
}

TEST_CASE("torchtitan_date: a key the scenario sets wins, and the report's heading says what the date set") {
  const auto p = point("  torchtitan_date: 2025-01-15\n  optimizer: fused\n  compile: true\n");
  CHECK(p.setup.training.optimizer == sim::Training::Optimizer::Fused);
  CHECK(p.torchtitan_settings == std::vector<std::string>{"the loss eager (compiled from torchtitan#1033, 2025-04-02)",
                                                          "repeat_kv true (shared from torchtitan#2259, 2026-01-27)"});
  const auto s = scenarios::parse_scenario(
      "model: llama3.1-8b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\ntraining: {framework: torchtitan, "
      "torchtitan_date: 2025-01-15}\npolicies: [fsdp]\n",
      "h.yaml");
  const auto table = scenarios::format_results(s, scenarios::run(s), scenarios::Format::Table);
  CHECK_MESSAGE(table.find("torchtitan as of 2025-01-15: optimizer foreach (fused from torchtitan#881, 2025-02-24)") !=
                    std::string::npos,
                table);
}

TEST_CASE("bad input: torchtitan_date is a YYYY-MM-DD date of a torchtitan run") {
  CHECK_THROWS_WITH_AS(point("  torchtitan_date: 2025-13-01\n"),
                       Contains("t.yaml:5: training.torchtitan_date: expected the date of the run's torchtitan checkout "
                                "as YYYY-MM-DD, got '2025-13-01'"),
                       InputError);
  CHECK_THROWS_WITH_AS(point("  torchtitan_date: last summer\n"), Contains("t.yaml:5: training.torchtitan_date"),
                       InputError);
  CHECK_THROWS_WITH_AS(
      scenarios::parse_scenario("model: llama3.1-8b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\ntraining:\n"
                                "  torchtitan_date: 2025-09-01\npolicies: [fsdp]\n",
                                "p.yaml"),
      Contains("p.yaml:4: training.torchtitan_date: says which torchtitan a run used: set framework: torchtitan"),
      InputError);
}

TEST_CASE("torchtitan_date: a compiled mixture of experts' blocks, eager when checkpointed before #1895, child by child until #2741") {
  using M = models::Implementation::MoeCompile;
  const std::string moe = "qwen3-30b-a3b";
  const auto ac = [&](const std::string& date) {
    return point("  torchtitan_date: " + date + "\n  compile: true\n  activation_checkpointing: full\n", moe);
  };
  CHECK(ac("2025-10-28").setup.training.impl.compile_moe == M::Eager);
  CHECK(ac("2025-10-29").setup.training.impl.compile_moe == M::Submodules);
  CHECK(ac("2026-04-13").setup.training.impl.compile_moe == M::Submodules);
  CHECK(ac("2026-04-14").setup.training.impl.compile_moe == M::Block);
  const auto settings = ac("2026-03-29").torchtitan_settings;
  CHECK(std::count(settings.begin(), settings.end(),
                   "compile_moe submodules (whole blocks compiled from torchtitan#2741, 2026-04-14)") == 1);
  // Without checkpointing the block compiled around its graph break: child by child.
  CHECK(point("  torchtitan_date: 2025-10-01\n  compile: true\n", moe).setup.training.impl.compile_moe == M::Submodules);
  // The scenario's own key wins; eager runs and dense models are left alone.
  CHECK(point("  torchtitan_date: 2025-10-01\n  compile: true\n  compile_moe: block\n", moe).setup.training.impl.compile_moe ==
        M::Block);
  CHECK(point("  torchtitan_date: 2025-10-01\n", moe).setup.training.impl.compile_moe == M::Block);
  CHECK(point("  torchtitan_date: 2025-10-01\n  compile: true\n").setup.training.impl.compile_moe == M::Block);
}

TEST_CASE("torchtitan_date: gpt-oss runs FlexAttention over whole sequences before the block-causal default") {
  const auto oss = point("  torchtitan_date: 2026-03-29\n", "gpt-oss-20b");
  CHECK(oss.setup.training.impl.attention == AttentionKernel::Flex);
  CHECK(oss.setup.training.impl.document_length == 0);
  CHECK(point("  torchtitan_date: 2026-03-29\n  attention: flash2\n", "gpt-oss-20b").setup.training.impl.attention ==
        AttentionKernel::Flash2);
  CHECK(point("  torchtitan_date: 2026-03-29\n").setup.training.impl.attention == AttentionKernel::Cudnn);
}

TEST_CASE("compile_moe: bad input names its line") {
  CHECK_THROWS_WITH_AS(point("  compile_moe: submodules\n", "qwen3-30b-a3b"),
                       Contains("t.yaml:5: training.compile_moe: says what torch.compile covers of a mixture of experts' "
                                "blocks: set compile: true as well"),
                       InputError);
  CHECK_THROWS_WITH_AS(point("  compile: true\n  compile_moe: submodules\n"),
                       Contains("t.yaml:6: training.compile_moe: model 'llama3.1-8b' has no mixture of experts' blocks"),
                       InputError);
  CHECK_THROWS_WITH_AS(point("  compile: true\n  compile_moe: partly\n", "qwen3-30b-a3b"),
                       Contains("t.yaml:6: training.compile_moe"), InputError);
}

TEST_CASE("torchtitan_date: a mixture of experts' router gate runs under fp32 autocast from #2389") {
  const auto at = [](const std::string& date) {
    return point("  torchtitan_date: " + date + "\n", "qwen3-30b-a3b").setup.training.impl.router_fp32;
  };
  CHECK_FALSE(at("2026-03-03"));
  CHECK(at("2026-03-04"));
  CHECK_FALSE(point("  torchtitan_date: 2026-03-04\n  router_fp32: false\n", "qwen3-30b-a3b").setup.training.impl.router_fp32);
  CHECK_FALSE(point("  torchtitan_date: 2026-03-04\n").setup.training.impl.router_fp32);  // dense: no router
  CHECK_THROWS_WITH_AS(point("  router_fp32: true\n"),
                       Contains("t.yaml:5: training.router_fp32: model 'llama3.1-8b' has no mixture of experts, so no router"),
                       InputError);
}

TEST_CASE("torchtitan_date: from Apr 27 2026 the loss runs in 8 slices of the sequence, and memory shows it") {
  const auto before = point("  torchtitan_date: 2026-04-26\n  seq_len: 8192\n");
  const auto after = point("  torchtitan_date: 2026-04-27\n  seq_len: 8192\n");
  CHECK(before.setup.training.impl.loss_chunks == 1);
  CHECK(after.setup.training.impl.loss_chunks == 8);
  CHECK(std::find(after.torchtitan_settings.begin(), after.torchtitan_settings.end(),
                  "loss_chunks 8 (ChunkedCELoss from torchtitan#2937, 2026-04-27)") != after.torchtitan_settings.end());
  // The scenario's own value wins.
  CHECK(point("  torchtitan_date: 2026-05-01\n  loss_chunks: 1\n").setup.training.impl.loss_chunks == 1);
  // Llama 3.1 8B, 8192 tokens, eager fp32 loss over 128,256 logits: 12 bytes a logit of saved log-softmax
  // and backward gradients, 7/8 of which the slices never hold at once (11.0 GiB), less the fp32
  // accumulator of the hidden states' gradient (4 x 4096 bytes a token, 0.125 GiB).
  const double saved = 8192.0 * 128256 * 12 * 7 / 8 - 8192.0 * 4096 * 4;
  const auto peak = [](const scenarios::Point& p) { return sim::simulate_fsdp(p.setup).memory.allocated_bytes(); };
  CHECK(peak(before) - peak(after) == doctest::Approx(saved).epsilon(0.02));
}
