// Internal to models/: the sizes of a transformer's modules, shared by the
// parameter count and the FSDP unit builder so that the two cannot disagree.
#pragma once

#include "models/model.hpp"

#include <algorithm>
#include <cstdint>

namespace tagcsim::models::detail {

inline std::int64_t head_dim(const TransformerConfig& m) { return m.head_dim > 0 ? m.head_dim : m.hidden / m.heads; }
// The width of q and of the attention output (the out projection's input): hidden, unless the
// model sets its own head_dim.
inline std::int64_t q_dim(const TransformerConfig& m) { return head_dim(m) * m.heads; }
inline std::int64_t kv_dim(const TransformerConfig& m) { return head_dim(m) * m.kv_heads; }

// Llama-style models (SwiGLU or GQA) have separate q/k/v Linear modules and
// rotary position embeddings; GPT-2 and MPT fuse q/k/v into one Linear and use
// learned positions or ALiBi (which costs no extra memory traffic: the bias is
// added inside the attention kernel).
inline bool llama_layout(const TransformerConfig& m) { return m.gated_mlp || m.kv_heads != m.heads; }

// LayerNorm has a bias exactly when the linear layers do (GPT-2: both, nanoGPT
// bias=False and MPT no_bias: neither); RMSNorm is weight only.
inline std::int64_t norm_params(const TransformerConfig& m) {
  return m.norm == Norm::LayerNorm && m.bias ? 2LL * m.hidden : m.hidden;
}

// The norms of a block: before attention and MLP, and with post_norms after each too.
inline int block_norms(const TransformerConfig& m) { return m.post_norms ? 4 : 2; }

inline std::int64_t linear_params(const TransformerConfig& m, std::int64_t in, std::int64_t out) {
  return in * out + (m.bias ? out : 0);
}
// q, k and v have biases in every model with biases, and in Qwen2's, which has no others.
inline bool qkv_biased(const TransformerConfig& m) { return m.bias || m.qkv_bias; }
inline std::int64_t qkv_linear_params(const TransformerConfig& m, std::int64_t in, std::int64_t out) {
  return in * out + (qkv_biased(m) ? out : 0);
}

// Multi-head latent attention (TransformerConfig::kv_lora_rank).
inline bool mla(const TransformerConfig& m) { return m.kv_lora_rank > 0; }
// The attention's output width, the out projection's input: heads x v_head_dim under MLA, else q's.
inline std::int64_t attn_out_dim(const TransformerConfig& m) {
  return mla(m) ? std::int64_t(m.heads) * m.v_head_dim : q_dim(m);
}
// MLA's down projection (the latent and the shared rotary part of k) and up projection (each head's
// k without rotary, and its v).
inline std::int64_t mla_kv_a_dim(const TransformerConfig& m) { return std::int64_t(m.kv_lora_rank) + m.rope_head_dim; }
inline std::int64_t mla_kv_b_dim(const TransformerConfig& m) {
  return std::int64_t(m.heads) * (head_dim(m) - m.rope_head_dim + m.v_head_dim);
}
// MLA's q: hidden -> heads x head_dim, or through a q_lora_rank latent and its RMSNorm.
inline std::int64_t mla_q_params(const TransformerConfig& m) {
  return m.q_lora_rank > 0 ? std::int64_t(m.hidden) * m.q_lora_rank + m.q_lora_rank + std::int64_t(m.q_lora_rank) * q_dim(m)
                           : std::int64_t(m.hidden) * q_dim(m);
}

inline std::int64_t attention_params(const TransformerConfig& m) {
  if (mla(m))  // q, wkv_a, the latent's RMSNorm, wkv_b, out (no biases)
    return mla_q_params(m) + m.hidden * mla_kv_a_dim(m) + m.kv_lora_rank + m.kv_lora_rank * mla_kv_b_dim(m) +
           attn_out_dim(m) * m.hidden;
  // Fused or not, q/k/v hold the same weights and biases; attention sinks one logit a head.
  return qkv_linear_params(m, m.hidden, q_dim(m) + 2 * kv_dim(m)) + linear_params(m, q_dim(m), m.hidden) +
         (m.attention_sinks ? m.heads : 0);
}

// Mixture of experts: the router and every expert's three matrices (no biases).
inline bool moe(const TransformerConfig& m) { return m.experts > 0; }
// The router's columns: one an expert, and Qwen2-MoE's shared-expert gate.
inline int router_width(const TransformerConfig& m) { return m.experts + (m.shared_expert_gate ? 1 : 0); }
inline std::int64_t router_params(const TransformerConfig& m) { return std::int64_t(m.hidden) * router_width(m); }
// An expert's gate and up (2 ffn x hidden) and down (hidden x ffn), with gpt-oss's biases on them.
inline std::int64_t expert_up_params(const TransformerConfig& m) {
  return 2LL * m.hidden * m.ffn + (m.expert_bias ? 2 * m.ffn : 0);
}
inline std::int64_t expert_down_params(const TransformerConfig& m) {
  return std::int64_t(m.hidden) * m.ffn + (m.expert_bias ? m.hidden : 0);
}
// The shared experts (models/unit_pieces_moe.cpp) have no biases in any modelled family.
inline std::int64_t expert_params(const TransformerConfig& m) { return 3LL * m.hidden * m.ffn; }
inline std::int64_t routed_expert_params(const TransformerConfig& m) { return expert_up_params(m) + expert_down_params(m); }

// Whether block `layer` runs the experts (the rest of a mixture of experts' blocks are dense).
inline bool moe_layer(const TransformerConfig& m, int layer) {
  return moe(m) && layer >= m.dense_layers && (layer + 1) % std::max(1, m.moe_every) == 0;
}
inline int moe_layers(const TransformerConfig& m) {
  int n = 0;
  for (int i = 0; i < m.layers; ++i) n += moe_layer(m, i) ? 1 : 0;
  return n;
}
// A mixture of experts' dense blocks, as a dense model of their width (the model itself when dense).
inline TransformerConfig dense_view(const TransformerConfig& m) {
  if (!moe(m)) return m;
  TransformerConfig d = m;
  d.experts = d.experts_per_token = d.shared_experts = 0;
  d.ffn = m.dense_ffn > 0 ? m.dense_ffn : m.ffn;
  d.dense_layers = 0, d.moe_every = 1, d.dense_ffn = 0;
  return d;
}

// The shared experts, one SwiGLU MLP of shared_experts x ffn (as DeepSeek's code fuses them).
inline std::int64_t shared_ffn(const TransformerConfig& m) { return std::int64_t(m.shared_experts) * m.ffn; }

inline std::int64_t mlp_params(const TransformerConfig& m) {
  if (moe(m)) return router_params(m) + m.experts * routed_expert_params(m) + m.shared_experts * expert_params(m);
  std::int64_t up = linear_params(m, m.hidden, m.ffn) * (m.gated_mlp ? 2 : 1);
  return up + linear_params(m, m.ffn, m.hidden);
}
// The MLP weights one token's matmuls use: a MoE token runs the router and experts_per_token experts.
inline std::int64_t active_mlp_params(const TransformerConfig& m) {
  return moe(m) ? router_params(m) + m.experts_per_token * routed_expert_params(m) + m.shared_experts * expert_params(m)
                : mlp_params(m);
}

// The window block `layer` attends within (0: the whole causal prefix). With full_attention_every K,
// blocks K-1, 2K-1, ... attend fully, as Gemma 2 (K = 2) and Gemma 3 (K = 6, HF's
// sliding_window_pattern) interleave them.
inline int attention_window(const TransformerConfig& m, int layer) {
  if (m.sliding_window <= 0) return 0;
  if (m.full_attention_every > 0 && (layer + 1) % m.full_attention_every == 0) return 0;
  return m.sliding_window;
}
// The keys a query attends on average over a causal sequence of s tokens within a window of w (0:
// none), as flash attention counts them (the diagonal half-tiles as half): s/2 without a window,
// w - w^2/(2s) with one shorter than the sequence (the first w queries see their prefix, the rest w).
inline double causal_keys_per_query(double s, double w) { return w <= 0 || w >= s ? s / 2 : w - w * w / (2 * s); }
// With documents of d tokens packed into the sequence, each query sees its own document's prefix:
// the count for a sequence of d (d <= 0 or >= s: the one sequence).
inline double causal_keys_per_query(double s, double w, double d) {
  return causal_keys_per_query(d > 0 && d < s ? d : s, w);
}

// Qwen3's per-head q and k norms: one head_dim weight each, shared by the heads.
inline std::int64_t qk_norm_params(const TransformerConfig& m) { return m.qk_norm ? 2 * head_dim(m) : 0; }

inline std::int64_t token_embedding_params(const TransformerConfig& m) { return m.vocab * m.hidden; }
inline std::int64_t position_embedding_params(const TransformerConfig& m) {
  return static_cast<std::int64_t>(m.learned_positions) * m.hidden;
}
// The output projection has no bias in any of the families modelled here.
inline std::int64_t lm_head_params(const TransformerConfig& m) {
  return m.tied_embeddings ? 0 : m.vocab * m.hidden;
}

}  // namespace tagcsim::models::detail
