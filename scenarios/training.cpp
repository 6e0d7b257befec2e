// The training block of a scenario: the framework and its defaults, FSDP's settings, the shape of
// a step, and how the training code runs the model's kernels (docs/scenarios.md, "training").
#include "scenarios/scenario.hpp"

#include "models/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace tagcsim::scenarios {
namespace {

const std::vector<std::string> kTrainingKeys = {
    "framework",         "pytorch",       "torchtitan_date", "fsdp",          "api",          "sharding",          "hybrid_shard_gpus",
    "wrap",              "micro_batch",   "seq_len",      "grad_accumulation", "global_batch",
    "no_sync",           "param_dtype",   "reduce_dtype", "autocast", "master_dtype", "optimizer", "activation_checkpointing", "checkpoint_early_stop",
    "selective_op_recomputes_attention", "selective_op_recomputes_all_to_all", "selective_op_saves_abs", "router_fp32",
    "tf32",              "limit_all_gathers", "max_inflight_all_gathers", "backward_prefetch",
    "reshard_after_forward", "reduce_scatter_group", "host", "allocator_fragmentation",
    "attention",         "unpadded_attention", "document_length", "repeat_kv", "compile", "compile_loss", "compile_moe", "rotary", "cross_entropy", "loss_chunks", "rms_norm", "logit_metrics", "float8",
    "float8_all_gather", "tensor_parallel", "tp_plan", "tp_qk_norm", "async_tp", "context_parallel", "expert_parallel",
    "expert_imbalance",  "pipeline_parallel",
    "pipeline_schedule", "pipeline_microbatches", "stages_per_rank"};

sim::Dtype load_dtype(const Input& in) {
  const auto s = in.as_choice({"bf16", "fp16", "fp32"});
  return s == "bf16" ? sim::Dtype::BF16 : s == "fp16" ? sim::Dtype::FP16 : sim::Dtype::FP32;
}

// torch.autocast over fp32 FSDP parameters (sim::Training::autocast), after every other key: it
// needs param_dtype fp32 and is not modelled beside float8 Linears or model parallelism.
void load_autocast(const Input& in, sim::Training& t) {
  const auto v = in.find("autocast");
  if (!v) return;
  const auto s = v->as_choice({"bf16", "fp16", "none"});
  if (s == "none") return;
  if (t.param_dtype != sim::Dtype::FP32)
    v->fail(fmt::format("autocast casts fp32 parameters to 16 bits; with param_dtype {} FSDP already gathers them "
                        "in 16 bits: drop autocast, or set param_dtype: fp32 (Lightning's bf16-mixed)",
                        sim::to_string(t.param_dtype)));
  if (t.tf32) v->fail("tf32 speeds fp32 matmuls; under autocast they run in 16 bits: drop tf32 or autocast");
  if (t.impl.float8_linears) v->fail("autocast with float8 Linears is not modelled");
  if (t.tensor_parallel > 1 || t.context_parallel > 1 || t.pipeline_parallel > 1)
    v->fail("autocast with tensor, context or pipeline parallelism is not modelled");
  t.autocast = s == "bf16" ? sim::Dtype::BF16 : sim::Dtype::FP16;
  t.impl.autocast_casts = true;
}

// Documents packed into each sequence (models::Implementation::document_length), after every other
// key: only a kernel that takes their boundaries can mask them, and neither LLM Foundry's unpadding
// nor context parallelism's ring is modelled with them.
void load_documents(const Input& in, sim::Training& t) {
  const auto v = in.find("document_length");
  if (!v) return;
  t.impl.document_length = v->as_positive();
  if (t.impl.document_length < 1 || t.impl.document_length > 1e9)
    v->fail(fmt::format("expected a document length in tokens, from 1 to 1e9, got {:g}", t.impl.document_length));
  const auto a = t.impl.attention;
  if (a != models::AttentionKernel::Flex && a != models::AttentionKernel::Flash2 && a != models::AttentionKernel::Flash3)
    v->fail(fmt::format("documents need an attention kernel that takes their boundaries: flex (FlexAttention's "
                        "block mask, torchtitan's attn_backend flex) or flash2 / flash3 (flash-attn's varlen call, "
                        "torchtitan's varlen); {} attends over the whole sequence (SDPA takes only is_causal)",
                        models::to_string(a)));
  if (t.impl.unpadded_attention)
    v->fail("LLM Foundry's unpadded path with documents is not modelled: drop unpadded_attention or document_length");
  if (t.context_parallel > 1) v->fail("context parallelism with documents is not modelled");
}

// Expert parallelism as torchtitan runs it (sim::Training::expert_parallel), after every other key:
// modelled with fully_shard and plain data parallelism only. Whether the model has experts to split
// is the model's check (models::fsdp_units).
void load_expert_parallel(const Input& in, sim::Training& t) {
  const auto v = in.find("expert_parallel");
  const auto imbalance = in.find("expert_imbalance");
  if (v) t.expert_parallel = v->as_int_between(1, 1 << 16);
  if (imbalance) {
    // Without expert parallelism every GPU runs every expert on its own tokens: T k rows whatever
    // the routing. With it, the busiest GPU receives at most every GPU's rows.
    if (t.expert_parallel == 1)
      imbalance->fail("only with expert_parallel > 1: without it every GPU runs all the experts on its own tokens, "
                      "whatever the routing");
    const double r = imbalance->as_double();
    if (!(r >= 1 && r <= t.expert_parallel))
      imbalance->fail(fmt::format("expected the busiest GPU's routed rows over the balanced share, from 1 (balanced) "
                                  "to expert_parallel ({}: every row to one GPU), got {}",
                                  t.expert_parallel, r));
    t.expert_imbalance = r;
  }
  if (auto v = in.find("router_fp32")) t.impl.router_fp32 = v->as_bool();
  if (auto rerun = in.find("selective_op_recomputes_all_to_all")) {
    t.impl.selective_op_recomputes_all_to_all = rerun->as_bool();
    if (!t.impl.selective_op)
      rerun->fail("only with activation_checkpointing: selective_op (it says what that policy re-runs)");
    if (t.expert_parallel == 1)
      rerun->fail("only with expert_parallel > 1: without it a block exchanges nothing to re-run");
  }
  if (t.expert_parallel == 1) return;
  if (t.api != sim::Api::Fsdp2) v->fail("expert parallelism is modelled with fully_shard (fsdp: 2, or framework: torchtitan)");
  if (t.sharding == sim::Sharding::HybridShard) v->fail("expert parallelism with hybrid_shard is not modelled (use full_shard)");
  if (t.tensor_parallel > 1 || t.context_parallel > 1 || t.pipeline_parallel > 1)
    v->fail("expert parallelism together with tensor, context or pipeline parallelism is not modelled");
  if (t.reshard_after_forward > 1)
    v->fail("expert parallelism with reshard_after_forward to a number of GPUs is not modelled (true or false)");
}

// Pipeline parallelism as torchtitan runs torch.distributed.pipelining (sim/pipeline.hpp): its
// layout's units split into stages, the schedule's micro-batches instead of gradient accumulation.
void load_pipeline(const Input& in, sim::Training& t) {
  const auto v = in.find("pipeline_parallel");
  if (!v) {
    for (const char* key : {"pipeline_schedule", "pipeline_microbatches", "stages_per_rank"})
      if (auto k = in.find(key)) k->fail("only meaningful with pipeline_parallel > 1");
    return;
  }
  t.pipeline_parallel = v->as_int_between(1, 256);
  if (t.pipeline_parallel == 1) return;
  if (t.api != sim::Api::Fsdp2 || t.wrap != models::WrapPolicy::Torchtitan)
    v->fail("pipeline stages split torchtitan's layout (framework: torchtitan, or fsdp: 2 with wrap: torchtitan)");
  if (t.sharding == sim::Sharding::HybridShard) v->fail("pipeline parallelism with hybrid_shard is not modelled (use full_shard)");
  if (t.context_parallel > 1) v->fail("pipeline parallelism together with context parallelism is not modelled");
  for (const char* key : {"grad_accumulation", "global_batch"})
    if (auto k = in.find(key))
      k->fail("under pipeline parallelism a step's micro-batches are pipeline_microbatches (micro_batch sequences each)");
  if (auto k = in.find("pipeline_schedule")) {
    const auto s = k->as_choice({"1f1b", "interleaved_1f1b", "gpipe"});
    t.pipeline_schedule = s == "1f1b" ? sim::PipelineSchedule::OneFOneB
                          : s == "gpipe" ? sim::PipelineSchedule::Gpipe
                                         : sim::PipelineSchedule::Interleaved1F1B;
  }
  const bool looped = t.pipeline_schedule == sim::PipelineSchedule::Interleaved1F1B;
  t.stages_per_rank = looped ? 2 : 1;  // torchtitan's default split for a looped schedule
  if (auto k = in.find("stages_per_rank")) {
    t.stages_per_rank = k->as_int_between(1, 64);
    if (!looped && t.stages_per_rank != 1) k->fail("GPipe and 1F1B run one stage a rank (interleaved_1f1b runs more)");
    if (looped && t.stages_per_rank < 2) k->fail("interleaved_1f1b runs 2 or more stages a rank");
  }
  if (auto k = in.find("pipeline_microbatches")) {
    t.pipeline_microbatches = k->as_int_between(1, 1 << 16);
    // torch.distributed.pipelining's ScheduleInterleaved1F1B runs its micro-batches in rounds of one per rank.
    if (looped && t.pipeline_microbatches % t.pipeline_parallel != 0)
      k->fail(fmt::format("interleaved_1f1b runs its micro-batches in rounds of {} (one a rank): give a multiple",
                          t.pipeline_parallel));
  }
}

}  // namespace

const std::vector<std::string>& training_keys() { return kTrainingKeys; }

sim::Training load_training(const Input& in) {
  in.expect_keys(kTrainingKeys);
  sim::Training t;
  // The framework first: it decides the defaults of the keys below (docs/scenarios.md).
  if (auto v = in.find("framework")) {
    const auto s = v->as_choice({"pytorch", "torchtitan", "composer"});
    t.framework = s == "pytorch" ? sim::Framework::PyTorch
                  : s == "torchtitan" ? sim::Framework::Torchtitan
                                      : sim::Framework::Composer;
  }
  std::optional<Input> api_key;
  if (auto v = in.find("fsdp")) {
    t.api = v->as_int_between(1, 2) == 1 ? sim::Api::Fsdp1 : sim::Api::Fsdp2;
    api_key = v;
  }
  if (auto v = in.find("api")) {
    const auto api = v->as_choice({"FullyShardedDataParallel", "fully_shard"}) == "fully_shard" ? sim::Api::Fsdp2
                                                                                                 : sim::Api::Fsdp1;
    if (api_key && api != t.api) v->fail("contradicts fsdp: give one of them");
    t.api = api;
    api_key = v;
  } else if (!api_key && t.framework == sim::Framework::Torchtitan) {
    t.api = sim::Api::Fsdp2;
  }
  if (api_key && t.framework == sim::Framework::Torchtitan && t.api != sim::Api::Fsdp2)
    api_key->fail("torchtitan runs fully_shard (fsdp: 2)");
  const bool fsdp1 = t.api == sim::Api::Fsdp1;
  // Keys that exist in one API only.
  for (const char* key : {"limit_all_gathers", "max_inflight_all_gathers", "backward_prefetch"})
    if (auto v = in.find(key); v && !fsdp1)
      v->fail("an FSDP1 setting; fully_shard (fsdp: 2) has no rate limiter and prefetches one unit in backward");
  if (auto v = in.find("reshard_after_forward"); v && fsdp1)
    v->fail("a fully_shard (fsdp: 2) setting; FSDP1 says it with sharding: full_shard or shard_grad_op");

  if (auto v = in.find("sharding")) {
    const auto s = v->as_choice({"full_shard", "shard_grad_op", "hybrid_shard", "no_shard"});
    t.sharding = s == "full_shard"      ? sim::Sharding::FullShard
                 : s == "shard_grad_op" ? sim::Sharding::ShardGradOp
                                        : sim::Sharding::HybridShard;
    // FSDP1's NO_SHARD (and FSDP2's replicate) keeps every parameter whole on every GPU and
    // all-reduces the gradients: hybrid sharding over shard groups of one GPU, which is how
    // PyTorch runs it too (FULL_SHARD on a world of one becomes NO_SHARD).
    if (s == "no_shard") {
      if (auto g = in.find("hybrid_shard_gpus"))
        g->fail("no_shard keeps every parameter on every GPU (a shard group of one): give hybrid_shard for groups");
      t.hybrid_shard_gpus = 1;
    }
    // fully_shard's SHARD_GRAD_OP is reshard_after_forward=False.
    if (!fsdp1 && t.sharding == sim::Sharding::ShardGradOp) {
      if (in.has("reshard_after_forward")) v->fail("with fsdp: 2 give reshard_after_forward: false instead");
      t.reshard_after_forward = 0;
    }
  }
  if (auto v = in.find("hybrid_shard_gpus")) {
    if (t.sharding != sim::Sharding::HybridShard) v->fail("only meaningful with sharding: hybrid_shard");
    t.hybrid_shard_gpus = v->as_int_between(1, 1 << 24);
  }
  // torchtitan's apply_fsdp (models/llama3/infra/parallelize.py) wraps its own way.
  if (t.framework == sim::Framework::Torchtitan) t.wrap = models::WrapPolicy::Torchtitan;
  if (auto v = in.find("wrap")) {
    const auto w = v->as_choice({"block", "size", "torchtitan"});
    t.wrap = w == "block" ? models::WrapPolicy::Block
             : w == "size" ? models::WrapPolicy::Size
                           : models::WrapPolicy::Torchtitan;
    if (fsdp1 && t.wrap == models::WrapPolicy::Torchtitan)
      v->fail("torchtitan's layout leaves the root module without parameters, which is fully_shard's (fsdp: 2)");
  }
  // Tensor and context parallelism: GPUs of a node that share a micro-batch, inside whole blocks.
  auto model_parallel_degree = [&](const Input& v, const char* what) {
    const int degree = v.as_int_between(1, 64);
    if (degree > 1 && t.sharding == sim::Sharding::HybridShard)
      v.fail(fmt::format("{} parallelism with hybrid_shard is not modelled (use full_shard)", what));
    if (degree > 1 && t.wrap == models::WrapPolicy::Size)
      v.fail(fmt::format("wrap: size cuts blocks into single Linears; {} parallelism needs whole blocks (wrap: "
                         "block or torchtitan)",
                         what));
    return degree;
  };
  if (auto v = in.find("tensor_parallel")) t.tensor_parallel = model_parallel_degree(*v, "tensor");
  if (auto v = in.find("context_parallel")) {
    t.context_parallel = model_parallel_degree(*v, "context");
    if (t.context_parallel > 1 && t.tensor_parallel > 1)
      v->fail("context parallelism together with tensor parallelism is not modelled (set one of them)");
  }
  if (auto v = in.find("async_tp")) {
    t.async_tp = v->as_bool();
    if (t.async_tp && t.tensor_parallel == 1) v->fail("async_tp needs tensor_parallel > 1");
  }
  if (auto v = in.find("tp_plan")) {
    const bool per_linear = v->as_choice({"torchtitan", "per_linear"}) == "per_linear";
    if (t.tensor_parallel == 1) v->fail("only meaningful with tensor_parallel > 1");
    if (per_linear && t.async_tp)
      v->fail("async TP fuses the collectives of torchtitan's plan; per_linear with async_tp is not modelled");
    t.impl.tp_plan = per_linear ? models::Implementation::TpPlan::PerLinear : models::Implementation::TpPlan::Torchtitan;
  }
  if (auto v = in.find("tp_qk_norm")) {
    // Whether the model has q and k norms is the model's check (models::fsdp_units).
    t.impl.qk_norm_no_parallel = v->as_choice({"sharded", "no_parallel"}) == "no_parallel";
    if (t.impl.qk_norm_no_parallel && t.tensor_parallel == 1) v->fail("no_parallel needs tensor_parallel > 1");
    if (t.impl.qk_norm_no_parallel && t.impl.tp_plan == models::Implementation::TpPlan::PerLinear)
      v->fail("no_parallel is torchtitan's qwen3 plan (q and k stay DTensors into their norms); under tp_plan: "
              "per_linear they are local tensors and their norms run on this GPU's heads");
  }
  load_pipeline(in, t);
  if (auto v = in.find("micro_batch")) t.micro_batch = v->as_int_between(1, 1 << 20);
  if (auto v = in.find("seq_len")) t.seq_len = v->as_int_between(1, 1 << 24);
  // global_batch needs the cluster's size: load_point derives grad_accumulation from it.
  if (auto v = in.find("grad_accumulation")) t.grad_accumulation = v->as_int_between(1, 1 << 16);
  // Only plain FSDP1 loops call no_sync(); torchtitan (train.py Trainer.train_step) and Composer
  // (composer/distributed/dist_strategy.py ddp_sync_context: no no_sync for FSDP) reduce every micro-batch.
  t.no_sync = t.framework == sim::Framework::PyTorch && fsdp1;
  if (auto v = in.find("no_sync")) t.no_sync = v->as_bool();
  if (auto v = in.find("param_dtype")) t.param_dtype = load_dtype(*v);
  if (auto v = in.find("reduce_dtype")) t.reduce_dtype = load_dtype(*v);
  if (auto v = in.find("master_dtype")) {
    t.master_dtype = load_dtype(*v);
    if (t.master_dtype == sim::Dtype::FP16)
      v->fail("AdamW state kept in fp16 is not modelled: fp32 (master weights) or bf16 (a model cast before wrapping)");
  }
  // torchtitan's AdamW is fused by default since pytorch/torchtitan#881 (2025-02-24); earlier runs say foreach.
  if (t.framework == sim::Framework::Torchtitan) t.optimizer = sim::Training::Optimizer::Fused;
  if (auto v = in.find("optimizer"))
    t.optimizer = v->as_choice({"foreach", "fused"}) == "fused" ? sim::Training::Optimizer::Fused
                                                                : sim::Training::Optimizer::Foreach;
  if (auto v = in.find("activation_checkpointing")) {
    // true / false, the fraction of the blocks checkpointed (selective checkpointing by block), or
    // selective_op (torchtitan's selective checkpointing by operator). torchtitan's mode names
    // full and none are accepted as they read; its bare "selective" needs its option spelled out.
    const auto text = v->is_scalar() ? v->as_string() : "";
    char* end = nullptr;
    const double number = std::strtod(text.c_str(), &end);
    const bool is_number = !text.empty() && end == text.c_str() + text.size();
    const bool op = text == "selective_op";
    const bool all = text == "true" || text == "full";
    const bool off = text == "false" || text == "none";
    if (text == "selective")
      v->fail("torchtitan's selective mode has two options: selective_op (selective_ac_option = \"op\"), or the "
              "share of the blocks checkpointed (selective_ac_option = \"2\": 0.5)");
    if (!all && !off && !op && (!is_number || number < 0 || number > 1))
      v->fail(fmt::format("expected true (or full), false (or none), selective_op or the share of the blocks "
                          "checkpointed, in [0, 1]; got '{}'",
                          text));
    const double p = op || all ? 1 : off ? 0 : number;
    t.activation_checkpointing = p > 0;
    t.impl.checkpoint_fraction = p > 0 ? p : 1;
    t.impl.selective_op = op;
  }
  if (auto v = in.find("checkpoint_early_stop")) t.impl.checkpoint_early_stop = v->as_bool();
  if (auto v = in.find("selective_op_recomputes_attention")) {
    t.impl.selective_op_recomputes_attention = v->as_bool();
    if (!t.impl.selective_op)
      v->fail("only with activation_checkpointing: selective_op (it says what that policy re-runs)");
  }
  // What a torchtitan checkout's per-op policy saves: a property of the checkout, so accepted with
  // any checkpointing (it moves memory only with selective_op and eager float8).
  if (auto v = in.find("selective_op_saves_abs")) t.impl.selective_op_saves_abs = v->as_bool();
  if (auto v = in.find("attention")) {
    const auto names = models::attention_kernel_names();
    const auto s = v->as_string();
    const auto it = std::find(names.begin(), names.end(), s);
    if (it == names.end()) v->fail(unknown_name("attention kernel", s, names));
    t.impl.attention = models::AttentionKernel(it - names.begin());
  }
  if (auto v = in.find("unpadded_attention")) {
    t.impl.unpadded_attention = v->as_bool();
    const auto a = t.impl.attention;
    if (t.impl.unpadded_attention && a != models::AttentionKernel::Flash2 && a != models::AttentionKernel::Flash3)
      v->fail(fmt::format("flash-attn's unpadded (varlen) path runs its own kernels: set attention: flash2 or flash3 "
                          "(attention is {})",
                          models::to_string(a)));
  }
  if (auto v = in.find("repeat_kv")) t.impl.repeat_kv = v->as_bool();
  if (auto v = in.find("compile")) t.impl.compiled = v->as_bool();
  // Async TP is a torch.compile pass over the compiled blocks (torchtitan refuses it without compile).
  if (auto v = in.find("async_tp"); v && t.async_tp && !t.impl.compiled)
    v->fail("async TP is torch.compile's micro-pipelining of the compiled blocks: set compile: true as well");
  // The loss is compiled with the model unless the scenario says it is not (torchtitan before
  // Apr 2025, or a loss computed outside the compiled model).
  t.impl.compiled_loss = t.impl.compiled;
  if (auto v = in.find("compile_loss")) t.impl.compiled_loss = v->as_bool();
  // What of a mixture of experts' blocks torch.compile covers (models::Implementation::MoeCompile;
  // scenario.cpp refuses it on a dense model).
  if (auto v = in.find("compile_moe")) {
    const auto s = v->as_choice({"block", "submodules", "eager"});
    if (!t.impl.compiled)
      v->fail("says what torch.compile covers of a mixture of experts' blocks: set compile: true as well");
    using M = models::Implementation::MoeCompile;
    t.impl.compile_moe = s == "block" ? M::Block : s == "submodules" ? M::Submodules : M::Eager;
  }
  // torchao's Float8Linear on the blocks' Linears (torchtitan: model.converters float8), and FSDP2's
  // float8 all-gather of their weights (enable_fsdp_float8_all_gather).
  if (auto v = in.find("float8")) {
    t.impl.float8_linears = v->as_bool();
    if (t.impl.float8_linears && t.impl.tp_plan == models::Implementation::TpPlan::PerLinear)
      v->fail("float8 tensor parallelism (torchao's Float8ColwiseParallel) is modelled under tp_plan: torchtitan only");
  }
  if (auto v = in.find("float8_all_gather")) {
    t.impl.float8_all_gather = v->as_bool();
    if (t.impl.float8_all_gather && !t.impl.float8_linears)
      v->fail("float8 all-gather needs float8 Linears: set float8: true as well");
    if (t.impl.float8_all_gather && fsdp1)
      v->fail("torchao's float8 all-gather works with FSDP2 (fully_shard) only: set fsdp: 2");
  }
  if (auto v = in.find("cross_entropy")) {
    using CrossEntropy = models::Implementation::CrossEntropy;
    const auto kind = v->as_choice({"fp32", "fused", "bf16"});
    t.impl.cross_entropy = kind == "fused" ? CrossEntropy::Fused : kind == "bf16" ? CrossEntropy::Bf16 : CrossEntropy::Fp32;
    // DTensor's loss parallelism runs its own log-softmax in fp32 (torch/distributed/tensor/parallel/loss.py).
    if (t.impl.cross_entropy == CrossEntropy::Bf16 && t.impl.loss_parallel(t.tensor_parallel))
      v->fail("torchtitan's TP plan takes the loss with DTensor's loss parallelism, which casts to fp32: "
              "cross_entropy: bf16 needs tp_plan: per_linear or no tensor parallelism");
  }
  if (auto v = in.find("rotary"))
    t.impl.rotary = v->as_choice({"complex", "cos_sin"}) == "complex" ? models::Implementation::Rotary::Complex
                                                                      : models::Implementation::Rotary::CosSin;
  // Eager RMSNorms: PyTorch's fused kernels (nn.RMSNorm from 2.9) or the op-by-op reference.
  if (auto v = in.find("rms_norm")) t.impl.fused_rms_norm = v->as_choice({"reference", "fused"}) == "fused";
  // Metrics the training loop computes from the logits after each micro-batch (LLM Foundry's
  // ComposerModel: language cross-entropy and perplexity, evaluated by Composer every micro-batch).
  if (auto v = in.find("logit_metrics")) t.impl.logit_metrics = v->as_int_between(0, 16);
  if (auto v = in.find("loss_chunks")) t.impl.loss_chunks = v->as_int_between(1, 1024);
  if (auto v = in.find("tf32")) t.tf32 = v->as_bool();
  if (auto v = in.find("limit_all_gathers")) {
    if (v->is_scalar() && v->raw().Scalar().find_first_not_of("0123456789") == std::string::npos)
      v->fail(fmt::format("expected true or false, got '{}': PyTorch's limit_all_gathers is a bool (true: at most "
                          "2 all-gathers in flight); set max_inflight_all_gathers for another depth",
                          v->raw().Scalar()));
    t.limit_all_gathers = v->as_bool();
  }
  if (auto v = in.find("max_inflight_all_gathers")) {
    if (!t.limit_all_gathers) v->fail("only meaningful with limit_all_gathers: true");
    t.max_inflight_all_gathers = v->as_int_between(1, 1 << 16);
  }
  // Composer's FSDPConfig (composer/utils/parallelism.py): BACKWARD_POST, limit_all_gathers True.
  if (t.framework == sim::Framework::Composer) t.backward_prefetch = sim::BackwardPrefetch::Post;
  if (auto v = in.find("backward_prefetch")) {
    const auto s = v->as_choice({"pre", "post", "none"});
    t.backward_prefetch = s == "pre"    ? sim::BackwardPrefetch::Pre
                          : s == "post" ? sim::BackwardPrefetch::Post
                                        : sim::BackwardPrefetch::None;
  }
  // torchtitan keeps a pipeline stage's parameters unsharded after forward (apply_fsdp:
  // reshard_after_forward = not pp_enabled) unless told otherwise.
  if (t.pipeline_parallel > 1) t.reshard_after_forward = 0;
  if (auto v = in.find("reshard_after_forward")) {
    const std::string text = v->is_scalar() ? v->raw().Scalar() : "";
    if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos)
      t.reshard_after_forward = v->as_int_between(2, 1 << 24);
    else if (text == "true" || text == "false")
      t.reshard_after_forward = v->as_bool() ? -1 : 0;
    else
      v->fail(fmt::format("expected true, false or a number of GPUs (> 1) to reshard to, got '{}'", text));
  }
  if (auto v = in.find("reduce_scatter_group"))
    t.reduce_scatter_group = v->as_choice({"shared", "separate"}) == "shared" ? sim::ReduceScatterGroup::Shared
                                                                              : sim::ReduceScatterGroup::Separate;
  if (auto h = in.find("host")) {
    h->expect_keys({"kernel_issue", "hook"});
    if (auto v = h->find("kernel_issue")) t.host.kernel_issue_s = v->as_seconds();
    if (auto v = h->find("hook")) t.host.hook_s = v->as_seconds();
  }
  if (auto v = in.find("allocator_fragmentation")) t.allocator_fragmentation = v->as_non_negative();
  load_autocast(in, t);
  load_documents(in, t);
  load_expert_parallel(in, t);
  return t;
}

}  // namespace tagcsim::scenarios
