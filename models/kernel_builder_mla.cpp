// The kernels of multi-head latent attention's projections (DeepSeek-V2/V3, as torchtitan's
// deepseek_v3 Attention runs them): the pieces kernel_builder.hpp's Builder declares for q, k and v.
// The attention kernel and the out projection are the block's `out` piece, V and the output heads
// x v_head_dim wide.
#include "models/kernel_builder.hpp"

namespace tagcsim::models::detail {

KernelPiece Builder::mla_q() {
  KernelPiece p;
  norm(p, "ln_1");
  if (m_.q_lora_rank > 0) {
    linear(p, "attn.q_a", m_.hidden, m_.q_lora_rank, Bias::None, false, Sublayer::Attention);
    qk_norm(p, "q_norm", double(m_.q_lora_rank), 1);
    linear(p, "attn.q_b", m_.q_lora_rank, detail::q_dim(m_), Bias::None, false, Sublayer::Attention);
  } else {
    linear(p, "attn.q", m_.hidden, detail::q_dim(m_), Bias::None, false, Sublayer::Attention);
  }
  rotary(p, "rotary q", double(m_.heads) * m_.rope_head_dim);
  return p;
}

KernelPiece Builder::mla_kv_a() {
  KernelPiece p;
  linear(p, "attn.kv_a", m_.hidden, detail::mla_kv_a_dim(m_), Bias::None, /*shares_input=*/true, Sublayer::Attention);
  qk_norm(p, "kv_norm", double(m_.kv_lora_rank), 1);
  rotary(p, "rotary k", double(m_.rope_head_dim));
  return p;
}

KernelPiece Builder::mla_kv_b() {
  KernelPiece p;
  linear(p, "attn.kv_b", m_.kv_lora_rank, detail::mla_kv_b_dim(m_), Bias::None, false, Sublayer::Attention);
  // K: each head's non-rotary part beside the shared rotary part, expanded to every head.
  mem(p.fwd, "k concat", 2 * e_ * T_ * q_width());
  mem(p.bwd, "k concat bwd", 2 * e_ * T_ * q_width());
  return p;
}

}  // namespace tagcsim::models::detail
