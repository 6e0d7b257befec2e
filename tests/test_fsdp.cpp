// FSDP as PyTorch and its frameworks run it: the scenario keys that choose
// the API and its settings, each framework's defaults, torchtitan's fully_shard
// layout, and what the units tell the host and the memory estimate
// (docs/fsdp-semantics.md).
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "scenarios/report.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/scenario.hpp"
#include "sim/schedule.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace tagcsim;
using namespace tagcsim::sim;

namespace {

const char* kBase = R"(name: t
model: llama3.1-8b
cluster: {preset: dgx-h100-ib400, nodes: 2}
training:
  micro_batch: 1
  seq_len: 2048
)";

scenarios::Scenario parse(const std::string& training_lines) {
  return scenarios::parse_scenario(std::string(kBase) + training_lines, "t.yaml");
}

const Training& training(const scenarios::Scenario& s) { return s.points.at(0).setup.training; }

// A key resolves to itself: the scenario's resolved YAML carries `line`, and read back it gives
// the training block it came from.
Training resolved_back(const scenarios::Scenario& s, const std::string& line) {
  const std::string yaml = scenarios::resolved_yaml(s);
  CHECK_MESSAGE(yaml.find(line) != std::string::npos, line);
  return training(scenarios::parse_scenario(yaml, "resolved.yaml"));
}

int count(const Schedule& s, Category c) {
  int n = 0;
  for (const auto& t : s.tasks) n += t.category == c;
  return n;
}

}  // namespace

TEST_CASE("fix 7: torchtitan's fully_shard layout of Llama-3.1 8B") {
  // apply_fsdp: fully_shard(tok_embeddings), each of the 32 blocks, [norm, output], then the model,
  // whose own fully_shard is left without parameters: 34 units, no root unit.
  const auto m = models::preset("llama3.1-8b");
  const auto units = models::fsdp_units(m, models::WrapPolicy::Torchtitan, {});
  REQUIRE(units.size() == 34);
  CHECK(units[0].name == "tok_embeddings");
  CHECK(units[0].kind == models::UnitKind::Embedding);
  CHECK(units[0].params == 128256LL * 4096);  // 525,336,576
  for (int i = 1; i <= 32; ++i) {
    CAPTURE(i);
    CHECK(units[std::size_t(i)].name == "layers." + std::to_string(i - 1));
    // wq 4096^2 + wk, wv 4096 x 1024 + wo 4096^2 + w1, w2, w3 3 x 4096 x 14336 + two RMSNorms.
    CHECK(units[std::size_t(i)].params == 2LL * 4096 * 4096 + 2LL * 4096 * 1024 + 3LL * 4096 * 14336 + 2 * 4096);
  }
  CHECK(units[33].name == "norm+output");
  CHECK(units[33].kind == models::UnitKind::LmHead);
  CHECK(units[33].params == 128256LL * 4096 + 4096);  // 525,340,672
  std::int64_t total = 0;
  for (const auto& u : units) total += u.params;
  CHECK(total == models::parameter_count(m));  // 8,030,261,248
}

TEST_CASE("fix 7: torchtitan keeps [norm, output] unsharded from forward to backward") {
  // framework: torchtitan picks fully_shard and its layout. Forward all-gathers all 34 units; the
  // backward all-gathers the embedding and the 32 blocks again, not the head (its
  // reshard_after_forward is false); every unit reduce-scatters once.
  const auto s = parse("  framework: torchtitan\n");
  const auto& t = training(s);
  CHECK(t.api == Api::Fsdp2);
  CHECK(t.wrap == models::WrapPolicy::Torchtitan);
  CHECK_FALSE(t.no_sync);
  const auto schedule = build_step(s.points[0].setup);
  CHECK(count(schedule, Category::AllGather) == 34 + 33);
  CHECK(count(schedule, Category::ReduceScatter) == 34);
  for (const auto& task : schedule.tasks) CHECK(task.name != "all-gather bwd norm+output");
}

TEST_CASE("fix 7: reshard_after_forward: 8 keeps a node's shard, so backward all-gathers stay in the node") {
  // 2 nodes x 8 GPUs: forward all-gathers span both nodes (node egress > 0); with
  // reshard_after_forward 8 the backward ones run inside a node, over NVLink only.
  const auto s = parse("  fsdp: 2\n  wrap: torchtitan\n  reshard_after_forward: 8\n");
  const auto& setup = s.points[0].setup;
  REQUIRE(setup.post_forward_group);
  CHECK(setup.post_forward_group->ranks() == 8);
  int forward = 0, backward = 0;
  for (const auto& task : build_step(setup).tasks) {
    if (task.category != Category::AllGather) continue;
    const bool bwd = task.name.rfind("all-gather bwd", 0) == 0;
    (bwd ? backward : forward)++;
    if (bwd) CHECK(task.phases[0].plan.node_egress_bytes == 0);
    else CHECK(task.phases[0].plan.node_egress_bytes > 0);
  }
  CHECK(forward == 34);
  CHECK(backward == 33);
  CHECK(training(parse("  fsdp: 2\n  reshard_after_forward: false\n")).reshard_after_forward == 0);
  CHECK(training(parse("  fsdp: 2\n  sharding: shard_grad_op\n")).reshard_after_forward == 0);
}

TEST_CASE("fix 3: gradient accumulation defaults to what the framework does, and the report says it") {
  // Plain FSDP1 loops call no_sync(); torchtitan and Composer reduce every micro-batch.
  CHECK(training(parse("  grad_accumulation: 4\n")).no_sync);
  CHECK_FALSE(training(parse("  grad_accumulation: 4\n  framework: composer\n")).no_sync);
  CHECK_FALSE(training(parse("  grad_accumulation: 4\n  framework: torchtitan\n")).no_sync);
  CHECK_FALSE(training(parse("  grad_accumulation: 4\n  fsdp: 2\n")).no_sync);
  CHECK(training(parse("  grad_accumulation: 4\n  framework: composer\n  no_sync: true\n")).no_sync);
  // Composer's FSDPConfig: BACKWARD_POST, limit_all_gathers true.
  const auto composer = parse("  grad_accumulation: 4\n  framework: composer\n");
  CHECK(training(composer).backward_prefetch == BackwardPrefetch::Post);
  CHECK(training(composer).limit_all_gathers);
  const std::string report = scenarios::format_results(composer, scenarios::run(composer), scenarios::Format::Table);
  CHECK(report.find("fsdp1 (composer)") != std::string::npos);
  CHECK(report.find("gradients reduced after every micro-batch") != std::string::npos);
  const auto plain = parse("  grad_accumulation: 4\n");
  CHECK(scenarios::format_results(plain, scenarios::run(plain), scenarios::Format::Table)
            .find("no_sync() on all but the last micro-batch") != std::string::npos);
}

TEST_CASE("AdamW's implementation defaults to the framework's: torchtitan fused since its #881, PyTorch foreach") {
  using Optimizer = sim::Training::Optimizer;
  CHECK(training(parse("")).optimizer == Optimizer::Foreach);  // torch.optim.AdamW's own default
  CHECK(training(parse("  framework: composer\n")).optimizer == Optimizer::Foreach);
  CHECK(training(parse("  framework: torchtitan\n")).optimizer == Optimizer::Fused);
  CHECK(training(parse("  framework: torchtitan\n  optimizer: foreach\n")).optimizer == Optimizer::Foreach);
  CHECK(training(parse("  optimizer: fused\n")).optimizer == Optimizer::Fused);
  CHECK_THROWS_WITH_AS(parse("  optimizer: fusd\n"), doctest::Contains("t.yaml:7: training.optimizer"), InputError);
}

TEST_CASE("fix 5: limit_all_gathers is PyTorch's bool, the depth an explicit override") {
  CHECK(training(parse("")).limit_all_gathers);
  CHECK(training(parse("")).max_inflight_all_gathers == 2);
  CHECK_FALSE(training(parse("  limit_all_gathers: false\n")).limit_all_gathers);
  CHECK(training(parse("  max_inflight_all_gathers: 3\n")).max_inflight_all_gathers == 3);
  CHECK_THROWS_WITH_AS(parse("  limit_all_gathers: 2\n"),
                       doctest::Contains("t.yaml:7: training.limit_all_gathers: expected true or false, got '2': "
                                         "PyTorch's limit_all_gathers is a bool"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse("  limit_all_gathers: false\n  max_inflight_all_gathers: 3\n"),
                       doctest::Contains("t.yaml:8: training.max_inflight_all_gathers: only meaningful with "
                                         "limit_all_gathers: true"),
                       InputError);
}

TEST_CASE("bad input: settings of the other FSDP API, or of no API") {
  CHECK_THROWS_WITH_AS(parse("  fsdp: 2\n  backward_prefetch: post\n"),
                       doctest::Contains("t.yaml:8: training.backward_prefetch: an FSDP1 setting"), InputError);
  CHECK_THROWS_WITH_AS(parse("  reshard_after_forward: false\n"),
                       doctest::Contains("t.yaml:7: training.reshard_after_forward: a fully_shard (fsdp: 2) setting"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse("  wrap: torchtitan\n"),
                       doctest::Contains("t.yaml:7: training.wrap: torchtitan's layout leaves the root module"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse("  framework: torchtitan\n  fsdp: 1\n"),
                       doctest::Contains("t.yaml:8: training.fsdp: torchtitan runs fully_shard"), InputError);
  CHECK_THROWS_WITH_AS(parse("  fsdp: 2\n  api: FullyShardedDataParallel\n"),
                       doctest::Contains("t.yaml:8: training.api: contradicts fsdp"), InputError);
  CHECK_THROWS_WITH_AS(parse("  fsdp: 2\n  reshard_after_forward: 3\n"),
                       doctest::Contains("t.yaml:8: training.reshard_after_forward: 3 must divide the shard group's "
                                         "16 GPUs"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse("  fsdp: 2\n  reshard_after_forward: maybe\n"),
                       doctest::Contains("t.yaml:8: training.reshard_after_forward: expected true, false or a number"),
                       InputError);
  CHECK_THROWS_WITH_AS(
      scenarios::parse_scenario("model: gpt2-124m\ncluster: tagc-2x1-1g\ntraining:\n  framework: torchtitan\n",
                                "t.yaml"),
      doctest::Contains("t.yaml:4: training.framework: model 'gpt2-124m' ties its embedding"), InputError);
  CHECK_THROWS_WITH_AS(parse("  host: {kernel_issue: -1 us}\n"),
                       doctest::Contains("t.yaml:7: training.host.kernel_issue: expected a non-negative time"),
                       InputError);
}

TEST_CASE("fix 6: the host's costs are scenario keys, and units count the kernels they launch") {
  const auto& t = training(parse("  host: {kernel_issue: 2 us, hook: 50 us}\n  allocator_fragmentation: 0.2\n"));
  CHECK(t.host.kernel_issue_s == doctest::Approx(2e-6));
  CHECK(t.host.hook_s == doctest::Approx(50e-6));
  CHECK(t.allocator_fragmentation == doctest::Approx(0.2));
  // A Llama block: q (GEMM, ln_1, rotary), k (GEMM, rotary), v, o (GEMM, attention, residual),
  // gate (GEMM, ln_2, silu), up (GEMM, product), down (GEMM, residual): 16 forward kernels;
  // backward two per GEMM and one per element-wise op: 23. Checkpointing adds the forward again,
  // but for down's GEMM and residual under early stop (PyTorch >= 2.1, the default).
  models::TrainingShape shape;
  const auto block = models::fsdp_units(models::preset("llama3.1-8b"), models::WrapPolicy::Block, shape)[1];
  CHECK(block.forward_kernels == 16);
  CHECK(block.backward_kernels == 23);
  shape.activation_checkpointing = true;
  const auto ckpt = models::fsdp_units(models::preset("llama3.1-8b"), models::WrapPolicy::Block, shape)[1];
  CHECK(ckpt.backward_kernels == 23 + 14);
}

TEST_CASE("fix 8: a block's backward holds its gradients in flight, and a checkpointed one its recomputation") {
  models::TrainingShape shape;  // b = 1, s = 1024 (the model's), bf16, FlashAttention-2
  const auto m = models::preset("gpt2-124m");
  const auto plain = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  // Gradients in flight, per token: the block output's (h) with, at the largest, the GELU MLP's
  // two f-wide ones, (768 + 2 x 3072) x 2 = 13,824 bytes; the attention's are fewer: dO, dQ, dK, dV
  // (4h) with the fp32 dQ accumulator (4h bytes): 10,752 bytes.
  CHECK(plain[1].backward_transient_bytes == doctest::Approx(1024.0 * 13824));
  shape.activation_checkpointing = true;
  const auto ckpt = models::fsdp_units(m, models::WrapPolicy::Block, shape);
  CHECK(ckpt[1].backward_transient_bytes == doctest::Approx(plain[1].activation_bytes + 1024.0 * 13824));
  // Under the size policy each piece of the block carries the whole block's recomputation (its
  // backwards run one at a time, so the peak sees it once) and its own gradients in flight.
  const auto size = models::fsdp_units(m, models::WrapPolicy::Size, shape);
  for (const auto& u : size) {
    if (u.layer != 0) continue;
    CAPTURE(u.name);
    const double own = u.name == "layers.0.mlp.c_fc" ? 13824 : u.name == "layers.0.attn.c_proj" ? 10752 : 0;
    CHECK(u.backward_transient_bytes == doctest::Approx(plain[1].activation_bytes + 1024.0 * own));
  }
}

TEST_CASE("fix 8: allocated and reserved memory are reported apart") {
  const auto s = parse("  allocator_fragmentation: 0.1\n");
  const auto r = scenarios::run(s);
  const auto& mem = r.at(0).step.memory;
  // With room to spare the allocator holds every stream's pool at its own peak, plus 0.1 of
  // what churns (the pools beyond the persistent parameter and moment shards, 12 bytes a parameter).
  const double persistent = 12.0 * double(models::parameter_count(models::preset("llama3.1-8b"))) / 16;
  const double pools = mem.pool_peak_bytes[0] + mem.pool_peak_bytes[1] + mem.pool_peak_bytes[2];
  CHECK(mem.cached_bytes == doctest::Approx(persistent + 1.1 * (pools - persistent)));
  CHECK(mem.reserved_bytes() == doctest::Approx(mem.cached_bytes));
  CHECK(mem.peak_bytes() == doctest::Approx(mem.cached_bytes + mem.workspace_bytes));
  CHECK(mem.allocated_bytes() <= pools);  // the live tensors peak once; the pools each at their own moment
  CHECK(!mem.under_pressure());
  const std::string json = scenarios::format_results(s, r, scenarios::Format::Json);
  CHECK(json.find("\"allocated\": ") != std::string::npos);
  CHECK(json.find("\"reserved\": ") != std::string::npos);
}

TEST_CASE("memory: a kind that holds nothing at the peak reports zero bytes, not its rounding") {
  // Found by a property sweep of random scenarios: every unit a single Linear (wrap: size), its
  // activations allocated and freed in sizes whose sum does not cancel exactly in floating point,
  // left -2.8e-17 GiB of activations at a peak where none are live (and, once compiled blocks kept
  // more, +3e-8 bytes).
  const auto s = scenarios::parse_scenario(R"(name: t
model: gpt2-1.5b
cluster: {preset: dgx-h200-ib400, nodes: 16}
training: {fsdp: 2, micro_batch: 1, seq_len: 512, sharding: hybrid_shard, compile: true, wrap: size}
policies: [fsdp]
)",
                                           "t.yaml");
  const auto results = scenarios::run(s);
  const auto& mem = results.at(0).step.memory;
  CHECK(mem.activation_bytes == 0.0);
  CHECK(mem.gradient_bytes >= 0.0);
  CHECK(mem.gathered_params_bytes >= 0.0);
  const std::string json = scenarios::format_results(s, results, scenarios::Format::Json);
  CHECK(json.find("\"activations\": 0,") != std::string::npos);
}

TEST_CASE("activation_checkpointing: selective_op loads, resolves to itself and lowers the activations") {
  const auto op = parse("  activation_checkpointing: selective_op\n");
  const auto& t = op.points.at(0).setup.training;
  CHECK(t.activation_checkpointing);
  CHECK(t.impl.selective_op);
  CHECK(t.impl.checkpoint_fraction == 1);  // every block, each by operator
  CHECK(resolved_back(op, "activation_checkpointing: selective_op").impl.selective_op);
  // Every block keeps part of its tensors instead of half the blocks keeping all of them: fewer
  // activations at the peak than checkpointing half the blocks, more than checkpointing all.
  const auto act = [](const scenarios::Scenario& s) { return scenarios::run(s).at(0).step.memory.activation_bytes; };
  const double half = act(parse("  activation_checkpointing: 0.5\n"));
  const double all = act(parse("  activation_checkpointing: true\n"));
  CHECK(act(op) < half);
  CHECK(act(op) > all);
}

TEST_CASE("selective_op_recomputes_attention: loads with selective_op, resolves to itself, and not without it") {
  const auto on = parse("  activation_checkpointing: selective_op\n  selective_op_recomputes_attention: true\n");
  CHECK(on.points.at(0).setup.training.impl.selective_op_recomputes_attention);
  CHECK(resolved_back(on, "selective_op_recomputes_attention: true").impl.selective_op_recomputes_attention);
  // The re-run attention costs step time.
  const auto step = [](const scenarios::Scenario& s) { return scenarios::run(s).at(0).step.step_time_s; };
  CHECK(step(on) > step(parse("  activation_checkpointing: selective_op\n")));
  CHECK_THROWS_WITH_AS(parse("  activation_checkpointing: true\n  selective_op_recomputes_attention: true\n"),
                       doctest::Contains("selective_op_recomputes_attention: only with activation_checkpointing: selective_op"),
                       InputError);
}

TEST_CASE("selective_op_saves_abs: loads, resolves to itself, and moves memory only with selective_op") {
  const auto on = parse("  activation_checkpointing: selective_op\n  float8: true\n  selective_op_saves_abs: true\n");
  CHECK(on.points.at(0).setup.training.impl.selective_op_saves_abs);
  CHECK(resolved_back(on, "selective_op_saves_abs: true").impl.selective_op_saves_abs);
  // Memory only: the stored abs copies cost no step time.
  const auto off = parse("  activation_checkpointing: selective_op\n  float8: true\n");
  const auto first = [](const scenarios::Scenario& s) { return scenarios::run(s).at(0).step; };
  CHECK(first(on).memory.allocated_bytes() > first(off).memory.allocated_bytes());
  CHECK(first(on).step_time_s == doctest::Approx(first(off).step_time_s));
  // Under whole-block checkpointing nothing is stored by operator.
  const auto full = [&](const char* abs) {
    return first(parse(std::string("  activation_checkpointing: true\n  float8: true\n") + abs)).memory.allocated_bytes();
  };
  CHECK(full("  selective_op_saves_abs: true\n") == doctest::Approx(full("")));
}

TEST_CASE("compile_loss: follows compile unless set, and resolves to itself") {
  CHECK(!training(parse("")).impl.compiled_loss);
  CHECK(training(parse("  compile: true\n")).impl.compiled_loss);  // torchtitan since Apr 2025
  const auto eager_loss = parse("  compile: true\n  compile_loss: false\n");
  CHECK(training(eager_loss).impl.compiled);
  CHECK(!training(eager_loss).impl.compiled_loss);
  CHECK(!resolved_back(eager_loss, "compile_loss: false").impl.compiled_loss);
  // Llama 3.1 8B's 128k vocabulary: the eager fp32 loss keeps 4 bytes a logit, the compiled one 2.
  const auto act = [](const scenarios::Scenario& s) { return scenarios::run(s).at(0).step.memory.peak_bytes(); };
  CHECK(act(eager_loss) > act(parse("  compile: true\n")));
}

TEST_CASE("checkpoint_early_stop: on by default, resolves to itself, and off re-runs the whole block") {
  const auto on = parse("  activation_checkpointing: true\n");
  CHECK(on.points.at(0).setup.training.impl.checkpoint_early_stop);  // PyTorch >= 2.1, non-reentrant
  const auto off = parse("  activation_checkpointing: true\n  checkpoint_early_stop: false\n");
  CHECK(!off.points.at(0).setup.training.impl.checkpoint_early_stop);
  CHECK(!resolved_back(off, "checkpoint_early_stop: false").impl.checkpoint_early_stop);
  // The whole block again costs more compute than stopping at the down projection.
  const auto compute = [](const scenarios::Scenario& s) { return scenarios::run(s).at(0).step.breakdown.compute_s; };
  CHECK(compute(off) > compute(on));
  CHECK_THROWS_AS(parse("  activation_checkpointing: true\n  checkpoint_early_stop: maybe\n"), InputError);
}

TEST_CASE("autocast: fp32 parameters gathered, each Linear's weight cast to bf16 and its gradient back") {
  // Lightning's bf16-mixed with FSDP: param_dtype fp32, reduce_dtype bf16, the step under autocast.
  const auto lightning = parse("  param_dtype: fp32\n  reduce_dtype: bf16\n  autocast: bf16\n");
  const auto pure = parse("  param_dtype: bf16\n  reduce_dtype: bf16\n");
  const auto& t = training(lightning);
  REQUIRE(t.autocast);
  CHECK(t.compute_dtype() == Dtype::BF16);
  CHECK(t.impl.autocast_casts);
  CHECK_FALSE(training(pure).autocast);
  // A Llama 3.1 8B block's seven Linears (no biases): 4096 x (4096 + 1024 + 1024 + 4096) attention
  // and 3 x 4096 x 14336 MLP weights, 218,103,808 in all.
  const auto& block = lightning.points.at(0).setup.units.at(1);
  const auto& plain = pure.points.at(0).setup.units.at(1);
  REQUIRE(block.kind == models::UnitKind::Block);
  const double weights = 4096.0 * (4096 + 1024 + 1024 + 4096) + 3 * 4096.0 * 14336;
  CHECK(double(block.attention_params + block.mlp_params) == weights);
  auto casts = [](const std::vector<models::Kernel>& ks, const std::string& what, double& bytes) {
    int n = 0;
    bytes = 0;
    for (const auto& k : ks)
      if (k.op.find(what) != std::string::npos) ++n, bytes += k.bytes;
    return n;
  };
  double fwd_bytes = 0, bwd_bytes = 0;
  // Forward: one cast per Linear, reading 4 and writing 2 bytes a weight; backward: the gradient's
  // cast back, reading 2 and writing 4.
  CHECK(casts(block.kernels->forward, "autocast weight cast", fwd_bytes) == 7);
  CHECK(fwd_bytes == doctest::Approx(6 * weights));
  CHECK(casts(block.kernels->backward, "autocast weight grad cast", bwd_bytes) == 7);
  CHECK(bwd_bytes == doctest::Approx(6 * weights));
  CHECK(casts(plain.kernels->forward, "autocast", fwd_bytes) == 0);
  // The bf16 copies stay with the matmuls for their dgrad: 2 bytes a weight more activations than a
  // run whose parameters are gathered in bf16, and 2 bytes a token-element for each of the five
  // Linears that cast a norm's output (q, k, v, gate, up: 2048 tokens x 4096). The norms keep 8
  // bytes a token-element either way: bf16, the fp32 input and two bf16 outputs; autocast, the input
  // and the normalized tensor, both fp32.
  const double x = 2048.0 * 4096;
  CHECK(block.activation_bytes - plain.activation_bytes == doctest::Approx(2 * weights + 5 * 2 * x));
  // 7 weight casts and 5 input casts more (the unit's count, where a norm is one kernel; its
  // kernel list drops the RMSNorms' casts, below).
  CHECK(block.forward_kernels - plain.forward_kernels == 7 + 5);
  // torch.compile keeps the weight copies too (what the dgrads read), and its two stream tensors
  // (the block input, the residual after attention) in fp32.
  const auto compiled = [&](const char* dtypes) {
    return parse(std::string("  compile: true\n") + dtypes).points.at(0).setup.units.at(1).activation_bytes;
  };
  CHECK(compiled("  param_dtype: fp32\n  autocast: bf16\n") - compiled("  param_dtype: bf16\n") ==
        doctest::Approx(2 * weights + 2 * 2 * x));
  // The all-gathers move fp32: twice the bytes of the bf16-gathered run, over the same schedule.
  const auto a = scenarios::run(lightning).at(0).step.collectives.at("all_gather");
  const auto b = scenarios::run(pure).at(0).step.collectives.at("all_gather");
  CHECK(a.count == b.count);
  CHECK(a.bytes == doctest::Approx(2 * b.bytes));
  // A checkpointed block re-runs its forward, casts included, but the MLP's down projection (early stop).
  const auto ckpt = parse("  param_dtype: fp32\n  autocast: bf16\n  activation_checkpointing: true\n");
  CHECK(casts(ckpt.points.at(0).setup.units.at(1).kernels->backward, "autocast weight cast", fwd_bytes) == 6);
  // The resolved scenario says it and loads back to the same.
  CHECK(resolved_back(lightning, "autocast: bf16").autocast == Dtype::BF16);
}

TEST_CASE("autocast: the residual stream and the norms in fp32, each Linear casting a norm's output itself") {
  // Llama 3.1 8B, 1 x 2048 tokens: the fp32 embedding output makes every residual add fp32.
  const auto lightning = parse("  param_dtype: fp32\n  reduce_dtype: bf16\n  autocast: bf16\n");
  const auto pure = parse("  param_dtype: bf16\n  reduce_dtype: bf16\n");
  const double x = 2048.0 * 4096;  // token-elements of the stream
  const auto& block = *lightning.points.at(0).setup.units.at(1).kernels;
  const auto& plain = *pure.points.at(0).setup.units.at(1).kernels;
  auto bytes = [](const std::vector<models::Kernel>& ks, const std::string& op, int& n) {
    double b = 0;
    n = 0;
    for (const auto& k : ks)
      if (k.op == op || (op.back() == '*' && k.op.find(op.substr(0, op.size() - 1)) != std::string::npos))
        b += k.bytes, ++n;
    return b;
  };
  int n = 0;
  // q, k, v, gate and up each cast the norm's fp32 output: read 4, write 2 bytes an element.
  CHECK(bytes(block.forward, "autocast input cast*", n) == doctest::Approx(5 * 6 * x));
  CHECK(n == 5);
  CHECK(bytes(block.backward, "autocast input grad cast*", n) == doctest::Approx(5 * 6 * x));
  CHECK(n == 5);
  CHECK(bytes(plain.forward, "autocast input cast*", n) == 0);
  // A residual add reads the fp32 stream and the bf16 sub-block output and writes fp32: 10 bytes,
  // against 6 in bf16; backward sums fp32 gradients (12) and casts one to bf16 (6).
  CHECK(bytes(block.forward, "residual 1", n) == doctest::Approx(10 * x));
  CHECK(bytes(plain.forward, "residual 1", n) == doctest::Approx(6 * x));
  CHECK(bytes(block.backward, "residual 2 grad accumulate", n) == doctest::Approx(12 * x));
  CHECK(bytes(block.backward, "residual 2 grad cast", n) == doctest::Approx(6 * x));
  CHECK(bytes(plain.backward, "residual 2 grad cast", n) == 0);
  // RMSNorm on an fp32 input: x.float() and type_as(x) launch nothing, the weight product is fp32.
  CHECK(bytes(block.forward, "ln_1 to fp32", n) == 0);
  CHECK(bytes(plain.forward, "ln_1 to fp32", n) == doctest::Approx(6 * x));
  CHECK(bytes(block.forward, "ln_1 mul weight", n) == doctest::Approx(8 * x));
  CHECK(bytes(plain.forward, "ln_1 mul weight", n) == doctest::Approx(4 * x));
  // The embedding gathers fp32 rows.
  CHECK(bytes(lightning.points.at(0).setup.units.at(0).kernels->forward, "embedding", n) == doctest::Approx(8 * x));
  // A checkpointed block keeps its input, fp32: 2 bytes a token-element more than bf16's.
  const auto kept = [](const char* dtypes) {
    return parse(std::string("  activation_checkpointing: true\n") + dtypes).points.at(0).setup.units.at(1).activation_bytes;
  };
  CHECK(kept("  param_dtype: fp32\n  autocast: bf16\n") - kept("  param_dtype: bf16\n") == doctest::Approx(2 * x));
  // Compiled, the casts happen inside the norms' kernels: no kernel of their own.
  const auto compiled = parse("  compile: true\n  param_dtype: fp32\n  autocast: bf16\n");
  CHECK(bytes(compiled.points.at(0).setup.units.at(1).kernels->forward, "autocast input cast*", n) == 0);
  CHECK(bytes(compiled.points.at(0).setup.units.at(1).kernels->forward, "ln_2", n) == doctest::Approx((8 + 4) * x));
}

TEST_CASE("bad input: autocast over 16-bit parameters, or beside what it is not modelled with") {
  CHECK_THROWS_WITH_AS(parse("  autocast: bf16\n"),
                       doctest::Contains("t.yaml:7: training.autocast: autocast casts fp32 parameters to 16 bits; "
                                         "with param_dtype bf16"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse("  param_dtype: fp32\n  autocast: fp32\n"), doctest::Contains("t.yaml:8: training.autocast"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse("  param_dtype: fp32\n  tf32: true\n  autocast: bf16\n"),
                       doctest::Contains("t.yaml:9: training.autocast: tf32 speeds fp32 matmuls"), InputError);
  CHECK_THROWS_WITH_AS(parse("  param_dtype: fp32\n  float8: true\n  autocast: bf16\n"),
                       doctest::Contains("t.yaml:9: training.autocast: autocast with float8 Linears"), InputError);
  CHECK_FALSE(training(parse("  param_dtype: fp32\n  autocast: none\n")).autocast);
}

TEST_CASE("a mixture of experts runs as FSDP shards it: the report says so, the resolved scenario keeps it") {
  const auto s = scenarios::parse_scenario(R"(name: moe
model: mixtral-8x7b
cluster: {preset: dgx-h100-ib400, nodes: 2}
training: {framework: torchtitan, micro_batch: 1, seq_len: 4096, activation_checkpointing: true}
policies: [fsdp]
)",
                                           "moe.yaml");
  const auto results = scenarios::run(s);
  const std::string table = scenarios::format_results(s, results, scenarios::Format::Table);
  CHECK(table.find("mixture of experts: 8 experts of 14336 a block, 2 a token (12.88B of the 46.70B parameters") !=
        std::string::npos);
  // The all-gathers move every expert: a block's 1.45B parameters in bf16 each time it is gathered.
  const auto& ag = results.at(0).step.collectives.at("all_gather");
  const double block = 4096.0 * 6144 + 4096.0 * 4096 + 4096.0 * 8 + 8 * 3 * 4096.0 * 14336 + 2 * 4096;
  CHECK(ag.bytes >= 32 * 2 * 2 * block);  // each block gathered in forward and again in backward
  // Megatron MFU counts the active parameters: 12.88B a token, not 46.70B.
  const auto& st = results.at(0).step;
  CHECK(st.mfu_megatron == doctest::Approx(st.tokens_per_s_per_gpu *
                                           models::model_flops_per_token(s.points.at(0).setup.model, 4096) /
                                           989.4e12));
  const std::string yaml = scenarios::resolved_yaml(s);
  CHECK(yaml.find("experts: 8") != std::string::npos);
  CHECK(yaml.find("experts_per_token: 2") != std::string::npos);
  const auto back = scenarios::parse_scenario(yaml, "resolved.yaml");
  CHECK(back.points.at(0).setup.model.experts == 8);
  CHECK(scenarios::run(back).at(0).step.step_time_s == results.at(0).step.step_time_s);
}
