// Multi-head latent attention's projections (DeepSeek-V2/V3, torchtitan's deepseek_v3 Attention):
// the unit pieces that replace q, k and v; the attention core and the out projection are the
// block's 'o' piece (unit_pieces.hpp), with V and the output heads x v_head_dim wide.
#include "models/unit_pieces.hpp"

namespace tagcsim::models::detail {

std::vector<UnitPiece> mla_projection_pieces(const Ctx& c, int i) {
  const auto& m = c.m;
  const double h = m.hidden, q = double(q_dim(m)), heads = m.heads, rope = m.rope_head_dim;
  const double kv_lora = m.kv_lora_rank, q_lora = m.q_lora_rank;
  const std::string pre = fmt::format("layers.{}.", i);
  // q: ln_1, then hidden -> heads x head_dim, or hidden -> q_lora_rank, its RMSNorm, -> heads x
  // head_dim; rotary on each head's last rope_head_dim.
  UnitPiece qp = named(pre + "attn.q", UnitKind::AttentionQKV, i);
  qp.u.params = qp.u.attention_params = mla_q_params(m);
  qp.gemm = 2.0 * c.tokens * (q_lora > 0 ? h * q_lora + q_lora * q : h * q);
  qp.mms = q_lora > 0 ? std::vector<UnitPiece::MatMul>{{2.0 * c.tokens * h * q_lora, q_lora * c.elem},
                                                       {2.0 * c.tokens * q_lora * q, q * c.elem}}
                      : std::vector<UnitPiece::MatMul>{{qp.gemm, q * c.elem}};
  qp.mem_fwd = 2 * h * c.stream + 2 * heads * rope * c.elem;  // ln_1, rotary on q's rotary part
  qp.mem_bwd = 3 * h * c.stream + 2 * heads * rope * c.elem;
  qp.act = c.norm_saved();  // ln_1: the projections' input
  qp.kf = 1 + 2, qp.kb = 2 + 2;  // the GEMM, ln_1, rotary
  if (q_lora > 0) {  // the second GEMM and the latent's RMSNorm
    qp.mem_fwd += 2 * q_lora * c.elem, qp.mem_bwd += 3 * q_lora * c.elem;
    qp.act += c.rms_norm_saved(q_lora);
    qp.kf += 2, qp.kb += 3;
  }
  // The latent: hidden -> kv_lora_rank + rope_head_dim (k's rotary part, shared by the heads), the
  // latent's RMSNorm, rotary on the shared part.
  UnitPiece kv_a = named(pre + "attn.kv_a", UnitKind::AttentionQKV, i);
  kv_a.u.params = kv_a.u.attention_params = std::int64_t(m.hidden) * mla_kv_a_dim(m) + m.kv_lora_rank;
  kv_a.gemm = 2.0 * c.tokens * h * double(mla_kv_a_dim(m));
  kv_a.mms = {{kv_a.gemm, double(mla_kv_a_dim(m)) * c.elem}};
  kv_a.mem_fwd = 2 * kv_lora * c.elem + 2 * rope * c.elem;  // the norm, rotary
  kv_a.mem_bwd = 3 * kv_lora * c.elem + 2 * rope * c.elem;
  kv_a.act = c.rms_norm_saved(kv_lora);  // the norm's input and output, the up projection's input
  kv_a.kf = 1 + 2, kv_a.kb = 2 + 2;
  // The up projection: kv_lora_rank -> heads x (head_dim - rope_head_dim + v_head_dim), each head's k
  // joined with the shared rotary part (the K the kernel reads, q wide).
  UnitPiece kv_b = named(pre + "attn.kv_b", UnitKind::AttentionQKV, i);
  kv_b.u.params = kv_b.u.attention_params = std::int64_t(m.kv_lora_rank) * mla_kv_b_dim(m);
  kv_b.gemm = 2.0 * c.tokens * kv_lora * double(mla_kv_b_dim(m));
  kv_b.mms = {{kv_b.gemm, double(mla_kv_b_dim(m)) * c.elem}};
  kv_b.mem_fwd = kv_b.mem_bwd = 2 * q * c.elem;  // the concatenation into K
  kv_b.kf = 1 + 1, kv_b.kb = 2 + 1;
  return {std::move(qp), std::move(kv_a), std::move(kv_b)};
}

}  // namespace tagcsim::models::detail
