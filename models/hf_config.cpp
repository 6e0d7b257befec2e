// A model's shape from its Hugging Face config.json (`model: {hf_config: PATH}`): the file a user
// already has for the model they train, read by its model_type. Each architecture's fields map to
// TransformerConfig as its transformers modelling code uses them; what tagcsim cannot time as the
// code runs it (biases on every projection, Qwen2's per-layer windows, a MoE layer frequency) is
// refused with the file, the line and the key. Fields that do not change the step (rope_theta,
// rope_scaling, dropout at 0, initializer ranges, token ids) are not read.
#include "models/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace tagcsim::models {
namespace {

const std::vector<std::string> kModelTypes = {"gpt2",      "llama",  "mistral",     "mixtral",     "phi3",
                                              "qwen2",     "qwen3",  "qwen2_moe",   "qwen3_moe",   "olmo2",
                                              "glm4_moe",  "gemma2", "gemma3",      "gemma3_text", "deepseek_v2",
                                              "deepseek_v3", "gpt_oss",   "llama4",      "llama4_text"};

int int_of(const Input& v, int min) {
  const auto n = v.as_int_at_least(min);
  if (n > 1'000'000'000) v.fail(fmt::format("expected an integer <= 1000000000, got {}", n));
  return int(n);
}
int required(const Input& c, std::string_view key, int min = 1) { return int_of(c[key], min); }
int optional(const Input& c, std::string_view key, int fallback, int min = 0) {
  const auto v = c.find(key);
  return v && !v->is_null() ? int_of(*v, min) : fallback;
}
bool flag(const Input& c, std::string_view key, bool fallback) {
  const auto v = c.find(key);
  return v && !v->is_null() ? v->as_bool() : fallback;
}
void refuse_if(const Input& c, std::string_view key, const std::string& why) {
  if (flag(c, key, false)) c[key].fail(why);
}

// The fields every decoder of Llama's layout shares: RMSNorm, a gated MLP, rotary positions.
TransformerConfig llama_layout(const Input& c, const std::string& type) {
  TransformerConfig m;
  m.layers = required(c, "num_hidden_layers");
  m.hidden = required(c, "hidden_size");
  m.heads = required(c, "num_attention_heads");
  m.kv_heads = optional(c, "num_key_value_heads", m.heads, 1);
  const int head_dim = optional(c, "head_dim", 0, 1);
  if (head_dim != 0 && head_dim * m.heads != m.hidden) m.head_dim = head_dim;
  m.ffn = c["intermediate_size"].as_int_at_least(1);
  m.gated_mlp = true;
  m.vocab = c["vocab_size"].as_int_at_least(1);
  m.tied_embeddings = flag(c, "tie_word_embeddings", type.rfind("gemma", 0) == 0);
  m.norm = Norm::RMSNorm;
  refuse_if(c, "mlp_bias", "biases on the MLP's Linears are not modelled");
  if (type != "qwen2" && type != "glm4_moe" && type != "gpt_oss")
    refuse_if(c, "attention_bias",
              "biases on every attention projection are not modelled (the model's bias: qkv covers q, k and v, "
              "as Qwen2's)");
  // Training runs at the pretraining context, not the longest the positions reach.
  m.seq_len = std::min(optional(c, "max_position_embeddings", 4096, 1), 4096);
  return m;
}

void sliding_window(const Input& c, TransformerConfig& m) {
  if (const auto v = c.find("sliding_window"); v && !v->is_null()) m.sliding_window = int_of(*v, 1);
}

TransformerConfig gpt2(const Input& c) {
  TransformerConfig m;
  m.layers = required(c, "n_layer");
  m.hidden = required(c, "n_embd");
  m.heads = required(c, "n_head");
  m.kv_heads = m.heads;
  m.ffn = optional(c, "n_inner", 4 * m.hidden, 1);
  m.vocab = c["vocab_size"].as_int_at_least(1);
  m.learned_positions = required(c, "n_positions");
  m.seq_len = m.learned_positions;
  m.tied_embeddings = flag(c, "tie_word_embeddings", true);
  m.norm = Norm::LayerNorm;
  m.bias = true;
  return m;
}

// Qwen3's MoE: every decoder_sparse_step-th block's MLP a mixture of experts of
// moe_intermediate_size; mlp_only_layers dense (modelled when they are the first blocks).
void qwen3_moe(const Input& c, TransformerConfig& m) {
  m.dense_ffn = m.ffn;
  m.ffn = c["moe_intermediate_size"].as_int_at_least(1);
  m.experts = required(c, "num_experts", 2);
  m.experts_per_token = required(c, "num_experts_per_tok");
  m.moe_every = optional(c, "decoder_sparse_step", 1, 1);
  if (const auto dense = c.find("mlp_only_layers"); dense && !dense->is_null() && dense->size() > 0) {
    for (std::size_t i = 0; i < dense->size(); ++i)
      if (dense->at(i).as_int() != std::int64_t(i))
        dense->fail("dense blocks other than the first ones are not modelled (the model's dense_layers: the first k)");
    m.dense_layers = int(dense->size());
  }
  if (m.dense_layers == 0 && m.moe_every == 1) m.dense_ffn = 0;
}

// Qwen2's MoE (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): Qwen3-MoE's expert fields, and a shared expert of
// shared_expert_intermediate_size (whole multiples of moe_intermediate_size: shared_experts of them)
// behind its sigmoid gate (shared_expert_gate, a Linear hidden -> 1).
void qwen2_moe(const Input& c, TransformerConfig& m) {
  qwen3_moe(c, m);
  if (const int shared = optional(c, "shared_expert_intermediate_size", 0); shared > 0) {
    if (shared % m.ffn != 0)
      c["shared_expert_intermediate_size"].fail(fmt::format(
          "a shared expert of {} is not a whole number of experts of moe_intermediate_size {}", shared, m.ffn));
    m.shared_experts = int(shared / m.ffn);
    m.shared_expert_gate = true;
  }
}

// DeepSeek's expert fields, which GLM-4.5 shares: the first first_k_dense_replace blocks dense (of
// intermediate_size), then n_routed_experts and n_shared_experts of moe_intermediate_size.
void deepseek_experts(const Input& c, TransformerConfig& m) {
  m.dense_ffn = m.ffn;
  m.ffn = c["moe_intermediate_size"].as_int_at_least(1);
  m.experts = required(c, "n_routed_experts", 2);
  m.experts_per_token = required(c, "num_experts_per_tok");
  m.shared_experts = optional(c, "n_shared_experts", 0);
  m.dense_layers = optional(c, "first_k_dense_replace", 0);
  if (m.dense_layers == 0) m.dense_ffn = 0;  // no dense block to size
}

// GLM-4.5 (glm4_moe): q and k normed per head (use_qk_norm), biases on q, k and v (attention_bias),
// the first first_k_dense_replace blocks dense, then n_routed_experts and n_shared_experts of
// moe_intermediate_size. Its grouped routing, rotary on part of each head (partial_rotary_factor:
// rotary is timed on the whole head) and multi-token prediction layers are not modelled.
void glm4_moe(const Input& c, TransformerConfig& m) {
  m.qk_norm = flag(c, "use_qk_norm", false);
  m.qkv_bias = flag(c, "attention_bias", false);
  deepseek_experts(c, m);
}

// DeepSeek-V2/V3: latent attention, the first first_k_dense_replace blocks dense, the rest routed
// and shared experts of moe_intermediate_size. Grouped routing (n_group, topk_group) and V3's
// multi-token prediction module are not modelled.
void deepseek(const Input& c, TransformerConfig& m) {
  m.kv_lora_rank = required(c, "kv_lora_rank");
  m.q_lora_rank = optional(c, "q_lora_rank", 0);
  m.rope_head_dim = required(c, "qk_rope_head_dim");
  m.head_dim = required(c, "qk_nope_head_dim") + m.rope_head_dim;
  m.v_head_dim = required(c, "v_head_dim");
  m.kv_heads = m.heads;
  deepseek_experts(c, m);
  if (optional(c, "moe_layer_freq", 1, 1) != 1)
    c["moe_layer_freq"].fail("a mixture of experts in every k-th block after the dense ones is not modelled (1)");
}

// Llama 4 (llama4, whose text_config is llama4_text): num_local_experts of intermediate_size, one a
// token and one shared expert beside it, in every interleave_moe_layer_step-th block (moe_layers
// must say the same), the other blocks a dense MLP of intermediate_size_mlp; q and k normed
// (use_qk_norm: an L2 norm without weights, timed as tagcsim's per-head norm, whose 2 x head_dim
// weights a block it also counts); chunked attention (attention_chunk_size), which is timed as
// the causal mask up to one chunk and refused past it (its every-fourth global, unrotated blocks
// then make no difference). The router's scores scaling the tokens before the experts is not
// modelled (one element-wise kernel).
void llama4(const Input& c, TransformerConfig& m) {
  m.experts = required(c, "num_local_experts", 2);
  m.experts_per_token = required(c, "num_experts_per_tok");
  m.shared_experts = 1;
  m.moe_every = optional(c, "interleave_moe_layer_step", 1, 1);
  if (m.moe_every > 1) m.dense_ffn = c["intermediate_size_mlp"].as_int_at_least(1);
  if (const auto listed = c.find("moe_layers"); listed && !listed->is_null()) {
    std::size_t n = 0;
    for (int i = m.moe_every - 1; i < m.layers; i += m.moe_every) ++n;
    bool same = listed->size() == n;
    for (std::size_t i = 0; same && i < n; ++i) same = listed->at(i).as_int() == std::int64_t((i + 1) * m.moe_every - 1);
    if (!same)
      listed->fail(fmt::format("expected the blocks interleave_moe_layer_step {} gives the experts ({}, {}, ... "
                               "up to {}): other layouts of the mixture of experts are not modelled",
                               m.moe_every, m.moe_every - 1, 2 * m.moe_every - 1, m.layers / m.moe_every * m.moe_every - 1));
  }
  m.qk_norm = flag(c, "use_qk_norm", false);
  m.attention_chunk = optional(c, "attention_chunk_size", 0, 1);
}

// Gemma 2 and 3: local (sliding window) blocks among global ones, norms after the attention and
// the MLP too; Gemma 2 caps its logits, Gemma 3 norms q and k.
void gemma(const Input& c, const std::string& type, TransformerConfig& m) {
  sliding_window(c, m);
  m.post_norms = true;
  if (type == "gemma2") {
    m.full_attention_every = 2;
    m.logit_softcap = c.find("final_logit_softcapping") && !c["final_logit_softcapping"].is_null();
    return;
  }
  m.qk_norm = true;
  m.full_attention_every = optional(c, "sliding_window_pattern", 6, 1);
}

// gpt-oss: num_local_experts of intermediate_size, num_experts_per_tok a token, each expert with
// biases and the clamped SwiGLU (swiglu_limit); biases on q, k and v (attention_bias; those on the
// out projection and the router, 0.0003% of the parameters, are not modelled: models/presets_moe.cpp);
// the attention sinks; a sliding window in every other block, the first one local, as layer_types
// lists them.
void gpt_oss(const Input& c, TransformerConfig& m) {
  m.qkv_bias = flag(c, "attention_bias", true);
  m.expert_bias = true;
  m.attention_sinks = true;
  m.swiglu_limit = 7.0;
  if (const auto v = c.find("swiglu_limit"); v && !v->is_null()) {
    m.swiglu_limit = v->as_double();
    if (!(m.swiglu_limit > 0)) v->fail(fmt::format("expected the clamped SwiGLU's limit (> 0), got {}", m.swiglu_limit));
  }
  m.experts = required(c, "num_local_experts", 2);
  m.experts_per_token = required(c, "num_experts_per_tok");
  sliding_window(c, m);
  m.full_attention_every = 2;
  if (const auto types = c.find("layer_types"); types && !types->is_null())
    for (std::size_t i = 0; i < types->size(); ++i)
      if (types->at(i).as_string() != (i % 2 == 1 ? "full_attention" : "sliding_attention"))
        types->at(i).fail("expected sliding_attention and full_attention alternating, the first one sliding (the "
                          "layout tagcsim models)");
}

}  // namespace

TransformerConfig model_from_hf_config(const Input& file_root) {
  // Gemma 3's multimodal config holds its language model under text_config.
  const Input c = file_root.has("text_config") ? file_root["text_config"] : file_root;
  const auto type_key = c.find("model_type") ? c["model_type"] : file_root["model_type"];
  std::string type = type_key.as_string();
  if (std::find(kModelTypes.begin(), kModelTypes.end(), type) == kModelTypes.end()) {
    std::string known;
    for (const auto& t : kModelTypes) known += (known.empty() ? "" : ", ") + t;
    type_key.fail(fmt::format("'{}' is not an architecture tagcsim reads ({}); give the model's shape instead "
                              "(docs/scenarios.md, model)",
                              type, known));
  }
  // Phi-3 fuses q, k, v into one Linear and gate, up into another: the same FLOPs and parameters as
  // Llama's separate projections, which is how they are timed (a few launches more).
  TransformerConfig m = type == "gpt2" ? gpt2(c) : llama_layout(c, type);
  if (type == "mistral" || type == "mixtral" || type == "phi3") sliding_window(c, m);
  if (type == "qwen2" || type == "qwen2_moe") {
    m.qkv_bias = true;
    refuse_if(c, "use_sliding_window", "Qwen2's sliding window on the layers past max_window_layers is not modelled");
  }
  if (type == "qwen3" || type == "qwen3_moe" || type == "olmo2") m.qk_norm = true;
  if (type == "mixtral") {
    m.experts = required(c, "num_local_experts", 2);
    m.experts_per_token = required(c, "num_experts_per_tok");
  }
  if (type == "qwen3_moe") qwen3_moe(c, m);
  if (type == "qwen2_moe") qwen2_moe(c, m);
  if (type == "glm4_moe") glm4_moe(c, m);
  if (type == "deepseek_v2" || type == "deepseek_v3") deepseek(c, m);
  if (type == "gpt_oss") gpt_oss(c, m);
  if (type == "llama4" || type == "llama4_text") llama4(c, m);
  if (type.rfind("gemma", 0) == 0) gemma(c, type == "gemma2" ? type : "gemma3", m);

  const auto named = file_root.find("_name_or_path");
  m.name = named && !named->is_null() && !named->as_string().empty()
               ? named->as_string()
               : std::filesystem::path(file_root.file()).parent_path().filename().string();
  if (m.name.empty()) m.name = std::filesystem::path(file_root.file()).stem().string();
  m.source = fmt::format("Hugging Face config {} (model_type {}); the sequence {} unless seq_len is given", file_root.file(),
                         type, m.seq_len);
  return m;
}

}  // namespace tagcsim::models
