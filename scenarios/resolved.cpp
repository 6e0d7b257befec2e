#include "scenarios/resolved.hpp"

#include "common/yaml_writer.hpp"
#include "models/model.hpp"
#include "models/shapes.hpp"
#include "topologies/cluster_yaml.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tagcsim::scenarios {
namespace {

std::string index_name(kernels::IndexEncoding e) { return kernels::to_string(e); }

std::string selection_yaml(const sim::Selection& s) {
  switch (s.rule) {
    case sim::Selection::Rule::Tagc: return "tagc";
    case sim::Selection::Rule::All: return "all";
    case sim::Selection::Rule::MinParams: return fmt::format("{{min_params: {}}}", s.min_params);
    case sim::Selection::Rule::Kinds: {
      std::string kinds;
      for (auto k : s.kinds) kinds += (kinds.empty() ? "" : ", ") + std::string(models::to_string(k));
      return fmt::format("{{kinds: [{}]}}", kinds);
    }
  }
  return "tagc";
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Whether a sweep over `key` still means the same thing on the expanded part. A swept preset
// would be overridden by every expanded field; a model key may carry others with it (heads and
// kv_heads); the compression settings are folded into each policy.
bool hidden_by_expansion(const std::string& key, const YAML::Node& doc) {
  if (key == "model" || starts_with(key, "model.") || key == "cluster" || key == "cluster.gpu") return true;
  if (starts_with(key, "cluster.") && key.size() >= 7 && key.substr(key.size() - 7) == ".preset") return true;
  if (starts_with(key, "cluster.nics.")) {
    if (key == "cluster.nics.per_node") return true;
    const YAML::Node cluster = doc["cluster"];
    const YAML::Node nics = cluster && cluster.IsMap() ? cluster["nics"] : YAML::Node();
    if (nics && nics.IsMap() && nics["per_node"]) return true;  // a per-NIC value derived from it
  }
  return starts_with(key, "compression") || starts_with(key, "policies") || starts_with(key, "policy");
}

std::string as_written(const YAML::Node& doc, const std::string& key, const std::string& why) {
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << key << YAML::Value << doc[key] << YAML::EndMap;
  return fmt::format("# {}: as written, {}\n{}\n", key, why, e.c_str());
}

}  // namespace

std::string model_yaml(const models::TransformerConfig& m, const std::string& key) {
  std::string out;
  YamlMap root(out, 0);
  YamlMap k = root.open(key, fmt::format("{:.3f}B parameters", double(models::parameter_count(m)) / 1e9));
  k.put("name", yaml_scalar(m.name));
  k.put("layers", yaml_number(m.layers));
  k.put("hidden", yaml_number(m.hidden), "d_model");
  k.put("heads", yaml_number(m.heads));
  k.put("kv_heads", yaml_number(m.kv_heads), m.kv_heads == m.heads ? "multi-head attention" : "grouped-query attention");
  if (m.head_dim > 0) k.put("head_dim", yaml_number(m.head_dim), "per head (q is heads x head_dim wide)");
  if (m.qk_norm) k.put("qk_norm", yaml_flag(true), "RMSNorm on each head of q and k");
  if (m.kv_lora_rank > 0) {
    k.put("kv_lora_rank", yaml_number(m.kv_lora_rank), "latent attention: K and V from a latent this wide");
    if (m.q_lora_rank > 0) k.put("q_lora_rank", yaml_number(m.q_lora_rank), "q through a latent this wide");
    k.put("rope_head_dim", yaml_number(m.rope_head_dim), "of each q and k head, the rotary part");
    k.put("v_head_dim", yaml_number(m.v_head_dim), "V's width a head");
  }
  if (m.sliding_window > 0) k.put("sliding_window", yaml_number(m.sliding_window), "keys a query attends at most");
  if (m.attention_chunk > 0)
    k.put("attention_chunk", yaml_number(m.attention_chunk), "each query attends within its chunk of this many tokens");
  if (m.full_attention_every > 0)
    k.put("full_attention_every", yaml_number(m.full_attention_every), "every K-th block attends fully");
  if (m.attention_sinks) k.put("attention_sinks", "true", "one learned logit a head rescales the attention's output (gpt-oss)");
  if (m.post_norms) k.put("post_norms", yaml_flag(true), "norms on the attention's and the MLP's outputs too");
  if (m.logit_softcap) k.put("logit_softcap", yaml_flag(true), "c tanh(logits / c) before the loss");
  k.put("ffn", yaml_number(double(m.ffn)), "FFN inner size");
  k.put("gated_mlp", yaml_flag(m.gated_mlp), m.gated_mlp ? "gated (SwiGLU, GeGLU): three FFN matrices" : "two FFN matrices");
  if (m.experts > 0) {
    k.put("experts", yaml_number(m.experts), "a mixture of experts: a router and this many SwiGLU experts, ffn wide");
    k.put("experts_per_token", yaml_number(m.experts_per_token), "experts each token runs (top-k routing)");
    if (m.shared_experts > 0)
      k.put("shared_experts", yaml_number(m.shared_experts), "experts every token runs beside its routed ones");
    if (m.shared_expert_gate)
      k.put("shared_expert_gate", "true", "a sigmoid gate (a Linear hidden -> 1) on the shared experts' output (Qwen2-MoE)");
    if (m.dense_layers > 0) k.put("dense_layers", yaml_number(m.dense_layers), "first blocks with a dense MLP instead");
    if (m.moe_every > 1) k.put("moe_every", yaml_number(m.moe_every), "every this-many-th block has the experts, the others a dense MLP");
    if (m.dense_ffn > 0) k.put("dense_ffn", yaml_number(double(m.dense_ffn)), "the dense blocks' MLP width");
    if (m.expert_bias) k.put("expert_bias", "true", "biases on each expert's matrices, gathered to its rows (gpt-oss)");
    if (m.swiglu_limit > 0)
      k.put("swiglu_limit", yaml_number(m.swiglu_limit), "the clamped SwiGLU, gate and up interleaved (gpt-oss)");
  }
  k.put("vocab", yaml_number(double(m.vocab)));
  k.put("tied_embeddings", yaml_flag(m.tied_embeddings));
  k.put("seq_len", yaml_number(m.seq_len), "tokens per sequence, unless training.seq_len says otherwise");
  k.put("learned_positions", yaml_number(m.learned_positions), m.learned_positions ? "GPT-2 style" : "rotary or ALiBi");
  k.put("norm", m.norm == models::Norm::RMSNorm ? "rmsnorm" : "layernorm");
  if (m.qkv_bias && !m.bias) k.put("bias", "qkv", "biases on the q, k and v projections only");
  else k.put("bias", yaml_flag(m.bias), "biases on the linear layers");
  k.put("source", yaml_scalar(m.source));
  return out;
}

std::string training_yaml(const sim::Training& t, const models::TransformerConfig& m, int global_batch,
                          const std::string& key) {
  std::string out;
  YamlMap root(out, 0);
  YamlMap k = root.open(key);
  // Every value is written out, so the framework only names whose loop this is.
  k.put("framework", sim::to_string(t.framework));
  k.put("fsdp", t.api == sim::Api::Fsdp1 ? "1" : "2", sim::to_string(t.api));
  const bool fsdp2_sgo = t.api == sim::Api::Fsdp2 && t.sharding == sim::Sharding::ShardGradOp;
  k.put("sharding", sim::to_string(t.sharding));
  if (t.tensor_parallel > 1) {
    k.put("tensor_parallel", yaml_number(t.tensor_parallel), "GPUs of a node splitting each block's matmuls");
    k.put("async_tp", yaml_flag(t.async_tp), "TP collectives hidden behind their matmuls");
    k.put("tp_plan", t.impl.tp_plan == models::Implementation::TpPlan::PerLinear ? "per_linear" : "torchtitan",
          "who gathers the sequence shards: each Linear, or each attention / MLP once");
    if (t.impl.qk_norm_no_parallel)
      k.put("tp_qk_norm", "no_parallel", "q and k gathered over every head after their norms (torchtitan's qwen3 before #1870)");
  }
  if (t.context_parallel > 1)
    k.put("context_parallel", yaml_number(t.context_parallel), "GPUs of a node splitting each sequence");
  if (t.expert_parallel > 1)
    k.put("expert_parallel", yaml_number(t.expert_parallel), "consecutive GPUs splitting each block's routed experts");
  if (t.expert_parallel > 1 && t.expert_imbalance > 1)
    k.put("expert_imbalance", yaml_number(t.expert_imbalance), "the busiest GPU's routed rows over the balanced share");
  if (t.pipeline_parallel > 1) {
    k.put("pipeline_parallel", yaml_number(t.pipeline_parallel), "pipeline ranks, each on nodes / this many nodes");
    k.put("pipeline_schedule", sim::to_string(t.pipeline_schedule));
    k.put("pipeline_microbatches", yaml_number(t.microbatches()), "micro-batches a step");
    if (t.pipeline_schedule == sim::PipelineSchedule::Interleaved1F1B)
      k.put("stages_per_rank", yaml_number(t.stages_per_rank));
  }
  if (t.sharding == sim::Sharding::HybridShard && t.hybrid_shard_gpus > 0)
    k.put("hybrid_shard_gpus", yaml_number(t.hybrid_shard_gpus), "GPUs per shard group");
  k.put("wrap", t.wrap == models::WrapPolicy::Block  ? "block"
                : t.wrap == models::WrapPolicy::Size ? "size"
                                                     : "torchtitan");
  k.put("micro_batch", yaml_number(t.micro_batch), "sequences per GPU per micro-batch");
  if (t.seq_len > 0) k.put("seq_len", yaml_number(t.seq_len), "tokens per sequence");
  if (t.pipeline_parallel > 1) {
    // A step's micro-batches are pipeline_microbatches, above.
  } else if (global_batch > 0)
    k.put("global_batch", yaml_number(global_batch),
          fmt::format("sequences per step; {} micro-batch(es) at the first point", t.grad_accumulation));
  else
    k.put("grad_accumulation", yaml_number(t.grad_accumulation), "micro-batches per step");
  k.put("no_sync", yaml_flag(t.no_sync));
  k.put("param_dtype", sim::to_string(t.param_dtype));
  k.put("reduce_dtype", sim::to_string(t.reduce_dtype));
  if (t.autocast) k.put("autocast", sim::to_string(*t.autocast), "matmuls and activations under torch.autocast");
  k.put("master_dtype", sim::to_string(t.master_dtype), "sharded parameters, gradients and AdamW moments");
  k.put("optimizer", t.optimizer == sim::Training::Optimizer::Fused ? "fused" : "foreach", "AdamW's implementation");
  if (t.impl.selective_op)
    k.put("activation_checkpointing", "selective_op",
          "by operator: every block keeps its odd matmuls' and the attention's outputs");
  else
    k.put("activation_checkpointing",
          t.activation_checkpointing && t.impl.checkpoint_fraction < 1 ? yaml_number(t.impl.checkpoint_fraction)
                                                                        : yaml_flag(t.activation_checkpointing),
          t.activation_checkpointing && t.impl.checkpoint_fraction < 1 ? "the share of the blocks checkpointed" : "");
  if (t.impl.selective_op_recomputes_attention)
    k.put("selective_op_recomputes_attention", "true",
          "the attention kernel's op is not in the policy's save list: it is re-run too");
  if (t.impl.selective_op_saves_abs)
    k.put("selective_op_saves_abs", "true",
          "the policy's save list names aten.abs: eager float8 keeps each abs its scales take");
  if (t.impl.router_fp32)
    k.put("router_fp32", "true", "the MoE router's gate under fp32 autocast: fp32 GEMMs on CUDA cores");
  if (t.impl.selective_op_recomputes_all_to_all)
    k.put("selective_op_recomputes_all_to_all", "true",
          "the all-to-alls' outputs are not in the policy's save list: they are exchanged again");
  if (t.activation_checkpointing)
    k.put("checkpoint_early_stop", yaml_flag(t.impl.checkpoint_early_stop),
          t.impl.checkpoint_early_stop ? "PyTorch >= 2.1 non-reentrant: the down projection is not re-run"
          : t.impl.compiled            ? "compiled blocks re-run only what their backward reads: not the down projection"
                                       : "the whole block is re-run");
  k.put("attention", models::to_string(t.impl.attention), "the attention kernel");
  if (t.impl.repeat_kv)
    k.put("repeat_kv", yaml_flag(*t.impl.repeat_kv),
          *t.impl.repeat_kv ? "GQA's K and V repeated to every head before the call" : "K and V read shared");
  if (t.impl.document_length > 0)
    k.put("document_length", yaml_number(t.impl.document_length),
          "tokens a document; each attends only within itself (block-causal)");
  k.put("compile", yaml_flag(t.impl.compiled), "torch.compile: element-wise chains fused");
  k.put("compile_loss", yaml_flag(t.impl.compiled_loss), "the loss compiled: one kernel, 16-bit logits kept");
  if (t.impl.compiled && t.impl.compile_moe != models::Implementation::MoeCompile::Block)
    k.put("compile_moe", t.impl.compile_moe == models::Implementation::MoeCompile::Submodules ? "submodules" : "eager",
          "what torch.compile covers of a mixture of experts' blocks");
  if (t.impl.unpadded_attention)
    k.put("unpadded_attention", "true", "flash-attn's varlen kernels, q/k/v unpadded and the output padded per layer");
  if (models::detail::llama_layout(m) || models::detail::mla(m)) {
    const bool complex = t.impl.rotary == models::Implementation::Rotary::Complex;
    k.put("rotary", complex ? "complex" : "cos_sin",
          complex ? "q and k turned as complex numbers in fp32: compiled, the multiply still runs eager"
                  : "q and k turned by real cos/sin tables: compiled, one kernel");
  }
  using CrossEntropy = models::Implementation::CrossEntropy;
  k.put("cross_entropy", t.impl.cross_entropy == CrossEntropy::Fused  ? "fused"
                         : t.impl.cross_entropy == CrossEntropy::Bf16 ? "bf16"
                                                                      : "fp32");
  k.put("rms_norm", t.impl.fused_rms_norm ? "fused" : "reference",
        t.impl.fused_rms_norm ? "eager RMSNorms as PyTorch >= 2.9's fused kernels" : "eager RMSNorms op by op");
  k.put("float8", yaml_flag(t.impl.float8_linears), t.impl.float8_linears ? "torchao Float8Linear (tensorwise) on the blocks' Linears" : "");
  if (t.impl.float8_linears)
    k.put("float8_all_gather", yaml_flag(t.impl.float8_all_gather), "the blocks' Linear weights all-gathered in float8");
  if (t.impl.loss_chunks > 1)
    k.put("loss_chunks", yaml_number(t.impl.loss_chunks), "the head and loss in slices of the sequence (ChunkedCELoss)");
  if (t.impl.logit_metrics > 0)
    k.put("logit_metrics", yaml_number(t.impl.logit_metrics), "training metrics computed from the logits per micro-batch");
  k.put("tf32", yaml_flag(t.tf32));
  if (t.api == sim::Api::Fsdp1) {
    k.put("limit_all_gathers", yaml_flag(t.limit_all_gathers));
    if (t.limit_all_gathers && t.max_inflight_all_gathers != 2)
      k.put("max_inflight_all_gathers", yaml_number(t.max_inflight_all_gathers), "a what-if: PyTorch fixes it at 2");
    k.put("backward_prefetch", t.backward_prefetch == sim::BackwardPrefetch::Pre    ? "pre"
                               : t.backward_prefetch == sim::BackwardPrefetch::Post ? "post"
                                                                                    : "none");
  } else if (!fsdp2_sgo) {
    k.put("reshard_after_forward", t.reshard_after_forward < 0    ? "true"
                                   : t.reshard_after_forward == 0 ? "false"
                                                                  : yaml_number(t.reshard_after_forward));
  }
  k.put("reduce_scatter_group", t.reduce_scatter_group == sim::ReduceScatterGroup::Shared ? "shared" : "separate");
  // Unset host costs come from the GPU's kernel profile, as they would from the original.
  if (t.host.kernel_issue_s >= 0 || t.host.hook_s >= 0) {
    YamlMap h = k.open("host", "the CPU thread that issues the kernels");
    if (t.host.kernel_issue_s >= 0)
      h.put("kernel_issue", yaml_seconds(t.host.kernel_issue_s), "per kernel");
    if (t.host.hook_s >= 0)
      h.put("hook", yaml_seconds(t.host.hook_s), "per FSDP hook");
  }
  k.put("allocator_fragmentation", yaml_number(t.allocator_fragmentation), "caching allocator reserve / allocated");
  return out;
}

std::string policies_yaml(const std::vector<sim::Policy>& policies, const std::string& key) {
  std::string out = key + ":\n";
  for (const auto& p : policies) {
    std::string m = fmt::format("name: {}, label: {}", sim::to_string(p.kind), yaml_scalar(p.label));
    if (p.kind == sim::PolicyKind::Fsdp) {
      if (p.reduce_dtype) m += fmt::format(", reduce_dtype: {}", sim::to_string(*p.reduce_dtype));
    } else {
      m += fmt::format(", ratio: {}, sparsity: {}, index: {}, sparsify: {}, select: {}, overlap: {}, process_group: {}",
                       yaml_number(p.ratio), yaml_number(p.sparsity), index_name(p.index),
                       p.exact_topk ? "topk" : "bisect", selection_yaml(p.selection), yaml_number(p.overlap),
                       p.own_process_group ? "own" : "default");
    }
    out += fmt::format("  - {{{}}}\n", m);
  }
  return out;
}

std::string resolved_yaml(const Scenario& s) {
  if (s.points.empty()) return "";
  const YAML::Node doc = YAML::Load(s.text);
  auto swept = [&](auto pred) { return std::any_of(s.sweep_keys.begin(), s.sweep_keys.end(), pred); };
  auto hides = [&](const std::string& part) {
    return swept([&](const std::string& k) {
      return (k == part || starts_with(k, part + ".")) && hidden_by_expansion(k, doc);
    });
  };
  const Point& p = s.points.front();
  std::string out = fmt::format("# {}: resolved by tagcsim run --resolved (presets expanded{})\n", s.file,
                                s.points.size() > 1 ? ", at the first sweep point where the sweep does not say" : "");
  out += fmt::format("name: {}\n", yaml_scalar(s.name));
  if (!s.description.empty()) out += fmt::format("description: {}\n", yaml_scalar(s.description));
  out += hides("model") ? as_written(doc, "model", "because the sweep changes its keys") : model_yaml(p.setup.model);
  out += hides("cluster") ? as_written(doc, "cluster", "because the sweep changes its preset")
                          : topologies::cluster_yaml(p.setup.cluster);
  out += training_yaml(p.setup.training, p.setup.model, p.global_batch);
  if (hides("compression") || hides("policies") || hides("policy")) {
    for (const char* k : {"policies", "policy", "compression"})
      if (doc[k]) out += as_written(doc, k, "because the sweep changes the compression settings");
  } else {
    out += policies_yaml(p.policies);
  }
  out += budget_yaml(p.budget);
  if (doc["sweep"]) {
    YAML::Emitter e;
    e << YAML::BeginMap << YAML::Key << "sweep" << YAML::Value << doc["sweep"] << YAML::EndMap;
    out += std::string(e.c_str()) + "\n";
  }
  return out;
}

}  // namespace tagcsim::scenarios
