// The attention kernel of a block's `out` piece and the copies PyTorch makes around it, for the
// Builder of kernel_builder.hpp (docs/compute-model.md, "The kernels of a unit").
#include "models/kernel_builder.hpp"

#include <string>
#include <utility>

namespace tagcsim::models::detail {

void Builder::attention(KernelPiece& p) {
  const double kv = double(detail::kv_dim(m_));
  const bool head_major = impl_.head_major_layout();
  // K repeated from every head of the group under tp_qk_norm: no_parallel, V from this GPU's.
  const double g = qk_gathered();
  if (impl_.repeats_kv(m_, s_)) {
    mem(p.fwd, "repeat_kv", (g + 1) * e_ * T_ * (kv + q_width()));
    mem(p.bwd, "repeat_kv bwd", (g + 1) * e_ * T_ * (kv + q_width()));
  }
  // SDPA's sharding rule takes the replicated q and K back to this GPU's heads: DTensor's
  // Replicate -> Shard clones each one's chunk. Backward gathers their gradients
  // (sim/model_parallel.cpp).
  if (g > 1) mem(p.fwd, "q, k heads sharded again", 2 * e_ * T_ * q_width(), 2);
  Kernel a;
  a.kind = KernelKind::Attention;
  a.op = "attention";
  a.batch_heads = double(b_) * m_.heads;
  a.seq = s_;
  // Latent attention's V heads are narrower than q's and k's: its QK^T and AV are timed as heads of
  // their mean width, which does the same FLOPs.
  a.head_dim = detail::mla(m_) ? (double(detail::head_dim(m_)) + m_.v_head_dim) / 2 : double(detail::head_dim(m_));
  a.kv_heads = m_.kv_heads;
  a.causal = true;
  a.window = window_;
  a.document = impl_.documents(s_) ? impl_.document_length : 0;
  a.query_shards = cp_;
  const bool unpad = impl_.unpadded_attention;
  if (unpad) unpad_qkv(p, kv);
  p.fwd.push_back(a);
  // Context parallelism runs the attention as cp_ calls against the key chunks and merges each
  // partial output into an fp32 one (convert_to_f32): read it, the partial and its log-sum-exp,
  // write it back; backward, each chunk's dQ is added into an fp32 accumulator the same way.
  for (int i = 1; i < cp_; ++i) {
    mem(p.fwd, "context parallel merge", (8 + 4 + e_) * T_ * q_width());
    mem(p.bwd, "context parallel dq accumulate", (8 + e_) * T_ * q_width());
  }
  if (m_.attention_sinks) sinks(p);
  if (unpad) {  // pad_input: zeros, then index_put of the unpadded rows; backward gathers them
    mem(p.fwd, "pad output zeros", e_ * T_ * q_width());
    mem(p.fwd, "pad output index_put", 2 * e_ * T_ * q_width());
    mem(p.bwd, "pad output bwd gather", 2 * e_ * T_ * q_width());
  } else if (head_major) {
    mem(p.fwd, "attention out transpose", 2 * e_ * T_ * out_width());
    mem(p.bwd, "attention grad transpose", 2 * e_ * T_ * out_width());
  }
  if (impl_.attention != AttentionKernel::Math) {
    // flash_attn_triton.py zeroes its fp32 dQ accumulator (the autotuner's init_to_zero('DQ') hook).
    if (impl_.attention == AttentionKernel::FlashTriton) mem(p.bwd, "attention bwd dQ zero", 4 * T_ * q_width());
    mem(p.bwd, "attention bwd dO.O", 2 * e_ * T_ * out_width());
    mem(p.bwd, "attention bwd dQ cast", (4 + e_) * T_ * q_width());
  }
  a.backward = true;
  a.op = "attention bwd";
  p.bwd.push_back(a);
}

// gpt-oss's attention sinks as torchtitan applies them to FlexAttention's output and its fp32
// log-sum-exp (b x heads x s): scale = sigmoid(lse - sink) cast to the output's dtype, output *
// scale. Backward: the output's gradient times the scale, the scale's gradient as the sum over
// each head's width of the gradient times the output, then back through the cast, the sigmoid
// and the subtraction (the sinks' gradient a sum over the tokens; the lse's flows into the
// attention kernel's backward). Compiled, the forward joins the output's layout copy, and the
// backward is one kernel: the gradient and the output in, the output's and the lse's gradients out.
void Builder::sinks(KernelPiece& p) {
  const double n = T_ * q_width(), lse = double(b_) * m_.heads * s_ / cp_;
  if (impl_.compiled) {
    mem(p.bwd, "sinks bwd", 3 * e_ * n + 4 * lse);
    return;
  }
  mem(p.fwd, "sinks lse sub", 8 * lse);
  mem(p.fwd, "sinks sigmoid", 8 * lse);
  mem(p.fwd, "sinks scale cast", (4 + e_) * lse);
  mem(p.fwd, "sinks rescale", 3 * e_ * n);
  mem(p.bwd, "sinks rescale bwd", 3 * e_ * n);
  mem(p.bwd, "sinks scale grad mul", 3 * e_ * n);
  mem(p.bwd, "sinks scale grad sum", e_ * n + e_ * lse);
  mem(p.bwd, "sinks scale cast bwd", (e_ + 4) * lse);
  mem(p.bwd, "sinks sigmoid bwd", 12 * lse);
  mem(p.bwd, "sinks grad sum", 4 * lse);
}

// flash-attn's unpad_input for q, k and v (bert_padding.py): the mask's row sums, torch.nonzero
// (the host reads its size back), the longest row's .item() (read back again), the cumulative
// sums and their padding, then a gather of the rows (IndexFirstAxis); backward zeroes the padded
// gradient and scatters the rows into it.
void Builder::unpad_qkv(KernelPiece& p, double kv) {
  for (const auto& [what, width] : {std::pair{"q", q_width()}, std::pair{"k", kv}, std::pair{"v", kv}}) {
    const std::string name = std::string("unpad ") + what;
    mem(p.fwd, name + " mask sum", T_);
    mem(p.fwd, name + " nonzero", 9 * T_);
    p.fwd.back().host_sync = true;
    mem(p.fwd, name + " max", 4.0 * b_);
    p.fwd.back().host_sync = true;
    mem(p.fwd, name + " cumsum", 8.0 * b_, 2);
    mem(p.fwd, name + " gather", 2 * e_ * T_ * width);
    mem(p.bwd, name + " bwd zeros", e_ * T_ * width);
    mem(p.bwd, name + " bwd scatter", 2 * e_ * T_ * width);
  }
}

}  // namespace tagcsim::models::detail
