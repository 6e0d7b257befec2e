// Cutting a model into FSDP units, with the work and memory of each.
//
// Everything is built from the Size-policy pieces (one per nn.Linear /
// nn.Embedding); the Block policy sums a layer's pieces. So both policies give
// the same totals by construction.
//
// FLOP conventions, per micro-batch of T = micro_batch * seq tokens:
//   Linear in->out: forward 2*T*in*out; backward 4*T*in*out (grad input + grad weight).
//   Attention core (QK^T and AV, on the attention-output unit): 4*T*s*h without
//   the causal mask. Flash attention skips the fully masked tiles, so it costs
//   half, 2*T*s*h, and its backward (which recomputes QK^T and softmax) 2.5x
//   that. The eager, non-flash path computes the full s x s scores: 4*T*s*h,
//   backward 2x. The core is not counted as GEMM in gemm_fraction.
//   lm_head: 2*T*h*vocab. Embedding lookups: no FLOPs, memory traffic only.
//   With activation checkpointing the blocks' backward also runs their forward again.
//
// Memory traffic (forward_/backward_memory_bytes): every element-wise op reads
// its inputs and writes its outputs once, in activation_bytes per element, as
// eager PyTorch does (element-wise ops are not fused with each other; bias adds
// are fused into the GEMM epilogue and cost nothing). Per token, in elements:
//   op                         forward        backward
//   LayerNorm/RMSNorm          2h             3h      (read dy, x; write dx)
//   residual add               3h             3h      (accumulating the two gradients)
//   GELU on the FFN            2f             3f
//   SwiGLU silu(g) then * u    2f + 3f        3f + 5f
//   rotary on q and k          2(h+kv)        2(h+kv) (Llama layout only; ALiBi is in-kernel)
//   flash attention I/O        2h+2kv         4h+4kv  (Q,K,V in, O out; backward adds dO,dQ,dK,dV)
//   eager softmax path         +6as           +7as    (scale, mask, softmax over s x s scores per head)
//   embedding gather           2h             3h      (scatter-add of the gradient)
//   position embedding         2h + 3h add    3h
//   cross-entropy on logits    2V             2V      (log-softmax; its gradient)
// (h hidden, kv = kv_heads*head_dim, f ffn, a heads, s seq, V vocab.) Norms
// live in the root unit under the Size policy, but their traffic is charged to
// the unit that runs next to them (ln_1 to the q/c_attn unit, ln_2 to the first
// MLP unit, the final norm to the head), so the time lands where it happens.
//
// Activations kept for backward (Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models", section 4.1), per token in
// elements of activation_bytes: the block's two norm inputs (2h); attention:
// the QKV input (h), Q, K, V (h+2kv), the out-projection input (h) and the
// dropout mask (0.5h, as a 1-byte mask against 2-byte activations); MLP: the
// up-projection input (h), GELU input and output (2f; SwiGLU keeps g, silu(g),
// u and the product: 4f) and its dropout mask (0.5h). For GPT-2 (f = 4h, no
// GQA) that is 17h elements = 34*s*b*h bytes in 16 bit, the paper's count with
// flash attention. The eager path also keeps the softmax output, its dropout
// mask and output: 2.5*a*s per token (the paper's 5*a*s^2*b bytes). With
// checkpointing a block keeps only its input (h). Outside the blocks: the
// embedding output (h; it is also block 0's input, an overlap of under
// 1/(17*layers) that errs on the side of more memory), the final norm's input
// and output (2h) and, for the loss, the fp32 log-softmax of the logits (4V
// bytes per token: the cross-entropy runs on logits upcast to fp32, as
// torchtitan's and Hugging Face's Llama losses do; the bf16 logits themselves
// are not kept: torchtitan's train.py forward_backward_step deletes them
// before backward). The head's backward then holds the fp32 gradients of the
// log-softmax output and of the logits (8V bytes per token) on top.
//
// Memory a unit's backward allocates beyond what it kept
// (backward_transient_bytes): the loss gradients above, and under activation
// checkpointing the recomputed block, which lives while its backward runs.
// Under the Size policy every piece of a checkpointed block carries the whole
// block's recomputed activations: the block is recomputed once, when the
// backward reaches its last piece, and its pieces' backwards run one at a time.
//
// Kernels launched (forward_/backward_kernels), counted as eager PyTorch
// launches them at this level of detail: one per GEMM forward and two per GEMM
// backward (grad input, grad weight), one per element-wise row of the traffic
// table above in each direction (the eager softmax path three), one for the
// attention core each way, two for the cross-entropy (log-softmax, NLL) each
// way. A checkpointed block's backward launches its forward's kernels again.
// These counts serve units without a kernel list only: units with one
// (models/kernel_list.hpp) count its kernels.
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "models/shapes.hpp"

#include <fmt/format.h>

#include <utility>

namespace tagcsim::models {
namespace {

using detail::kv_dim;
using detail::linear_params;

// A unit under construction: raw forward work, turned into FsdpUnit fields by finish().
struct Piece {
  FsdpUnit u;
  double gemm = 0;      // forward GEMM FLOPs
  double core = 0;      // forward attention-core FLOPs
  double core_bwd = 0;  // backward attention-core FLOPs
  double mem_fwd = 0, mem_bwd = 0, act = 0;  // bytes
  double transient = 0;                      // bytes held during the backward only
  int kf = 0, kb = 0;                        // kernels, forward and backward (without recompute)
  bool recompute = false;  // inside a checkpointed block

  Piece& operator+=(const Piece& o) {
    u.params += o.u.params;
    u.attention_params += o.u.attention_params;
    u.mlp_params += o.u.mlp_params;
    u.embedding_params += o.u.embedding_params;
    u.norm_params += o.u.norm_params;
    gemm += o.gemm, core += o.core, core_bwd += o.core_bwd;
    mem_fwd += o.mem_fwd, mem_bwd += o.mem_bwd, act += o.act;
    transient += o.transient;
    kf += o.kf, kb += o.kb;
    recompute = recompute || o.recompute;
    return *this;
  }
};

struct Ctx {
  const TransformerConfig& m;
  double tokens;  // T
  double seq;     // s
  double elem;    // bytes of one per-token element over the micro-batch: T * activation_bytes
  bool flash;
};

Piece named(std::string name, UnitKind kind, int layer) {
  Piece p;
  p.u.name = std::move(name);
  p.u.kind = kind;
  p.u.layer = layer;
  return p;
}

Piece linear(const Ctx& c, std::string name, UnitKind kind, int layer, std::int64_t in, std::int64_t out) {
  Piece p = named(std::move(name), kind, layer);
  p.u.params = linear_params(c.m, in, out);
  (kind == UnitKind::MlpUp || kind == UnitKind::MlpDown ? p.u.mlp_params : p.u.attention_params) = p.u.params;
  p.gemm = 2.0 * c.tokens * static_cast<double>(in) * static_cast<double>(out);
  p.kf = 1, p.kb = 2;
  return p;
}

// Adds `n` element-wise kernels each way to a piece.
void elementwise(Piece& p, int n) { p.kf += n, p.kb += n; }

// The pieces of one transformer block, in forward order.
std::vector<Piece> layer_pieces(const Ctx& c, int i) {
  const auto& m = c.m;
  const double h = m.hidden, kv = static_cast<double>(kv_dim(m)), f = static_cast<double>(m.ffn);
  const double as = m.heads * c.seq;
  const std::string pre = fmt::format("layers.{}.", i);
  std::vector<Piece> out;

  if (detail::llama_layout(m)) {
    auto q = linear(c, pre + "attn.q", UnitKind::AttentionQKV, i, m.hidden, m.hidden);
    q.mem_fwd = (2 * h + 2 * h) * c.elem;  // ln_1, rotary on q
    q.mem_bwd = (3 * h + 2 * h) * c.elem;
    q.act = 2 * h * c.elem;  // ln_1 input; the q/k/v input, saved once for all three
    elementwise(q, 2);       // ln_1, rotary on q
    auto k = linear(c, pre + "attn.k", UnitKind::AttentionQKV, i, m.hidden, kv_dim(m));
    k.mem_fwd = k.mem_bwd = 2 * kv * c.elem;  // rotary on k
    elementwise(k, 1);
    auto v = linear(c, pre + "attn.v", UnitKind::AttentionQKV, i, m.hidden, kv_dim(m));
    out.push_back(std::move(q));
    out.push_back(std::move(k));
    out.push_back(std::move(v));
  } else {
    auto qkv = linear(c, pre + "attn.c_attn", UnitKind::AttentionQKV, i, m.hidden, m.hidden + 2 * kv_dim(m));
    qkv.mem_fwd = 2 * h * c.elem;
    qkv.mem_bwd = 3 * h * c.elem;
    qkv.act = 2 * h * c.elem;
    elementwise(qkv, 1);  // ln_1
    out.push_back(std::move(qkv));
  }

  auto o = linear(c, pre + (detail::llama_layout(m) ? "attn.o" : "attn.c_proj"), UnitKind::AttentionOut, i,
                  m.hidden, m.hidden);
  o.core = (c.flash ? 2.0 : 4.0) * c.tokens * c.seq * h;
  o.core_bwd = (c.flash ? 2.5 : 2.0) * o.core;
  o.mem_fwd = (2 * h + 2 * kv + 3 * h + (c.flash ? 0 : 6 * as)) * c.elem;
  o.mem_bwd = (4 * h + 4 * kv + 3 * h + (c.flash ? 0 : 7 * as)) * c.elem;
  o.act = (h + 2 * kv + 0.5 * h + h + (c.flash ? 0 : 2.5 * as)) * c.elem;
  elementwise(o, 2 + (c.flash ? 0 : 3));  // attention core, residual add (scale, mask, softmax)
  out.push_back(std::move(o));

  if (m.gated_mlp) {
    auto gate = linear(c, pre + "mlp.gate", UnitKind::MlpUp, i, m.hidden, m.ffn);
    gate.mem_fwd = (2 * h + 2 * f) * c.elem;  // ln_2, silu
    gate.mem_bwd = (3 * h + 3 * f) * c.elem;
    gate.act = (2 * h + 2 * f) * c.elem;  // ln_2 input, MLP input, g, silu(g)
    elementwise(gate, 2);                 // ln_2, silu
    auto up = linear(c, pre + "mlp.up", UnitKind::MlpUp, i, m.hidden, m.ffn);
    up.mem_fwd = 3 * f * c.elem;  // silu(g) * u
    up.mem_bwd = 5 * f * c.elem;
    up.act = f * c.elem;  // u
    elementwise(up, 1);   // silu(g) * u
    auto down = linear(c, pre + "mlp.down", UnitKind::MlpDown, i, m.ffn, m.hidden);
    down.mem_fwd = down.mem_bwd = 3 * h * c.elem;  // residual
    down.act = (f + 0.5 * h) * c.elem;            // the product, dropout mask
    elementwise(down, 1);                         // residual
    out.push_back(std::move(gate));
    out.push_back(std::move(up));
    out.push_back(std::move(down));
  } else {
    auto fc = linear(c, pre + "mlp.c_fc", UnitKind::MlpUp, i, m.hidden, m.ffn);
    fc.mem_fwd = (2 * h + 2 * f) * c.elem;  // ln_2, GELU
    fc.mem_bwd = (3 * h + 3 * f) * c.elem;
    fc.act = (2 * h + f) * c.elem;  // ln_2 input, MLP input, GELU input
    elementwise(fc, 2);             // ln_2, GELU
    auto proj = linear(c, pre + "mlp.c_proj", UnitKind::MlpDown, i, m.ffn, m.hidden);
    proj.mem_fwd = proj.mem_bwd = 3 * h * c.elem;
    proj.act = (f + 0.5 * h) * c.elem;  // GELU output, dropout mask
    elementwise(proj, 1);               // residual
    out.push_back(std::move(fc));
    out.push_back(std::move(proj));
  }
  return out;
}

Piece token_embedding(const Ctx& c) {
  Piece p = named("wte", UnitKind::Embedding, -1);
  p.u.params = p.u.embedding_params = detail::token_embedding_params(c.m);
  p.mem_fwd = 2.0 * c.m.hidden * c.elem;
  p.mem_bwd = 3.0 * c.m.hidden * c.elem;
  p.act = 1.0 * c.m.hidden * c.elem;
  elementwise(p, 1);  // gather; scatter-add of the gradient
  return p;
}

Piece position_embedding(const Ctx& c) {
  Piece p = named("wpe", UnitKind::PositionEmbedding, -1);
  p.u.params = p.u.embedding_params = detail::position_embedding_params(c.m);
  p.mem_fwd = 5.0 * c.m.hidden * c.elem;  // gather, add to the token embedding
  p.mem_bwd = 3.0 * c.m.hidden * c.elem;
  elementwise(p, 1);
  p.kf += 1;  // the add to the token embedding
  return p;
}

// Final norm's work (not its parameters) plus the output projection and the loss.
Piece head(const Ctx& c) {
  const double h = c.m.hidden, V = static_cast<double>(c.m.vocab);
  Piece p = named("lm_head", UnitKind::LmHead, -1);
  p.u.params = p.u.embedding_params = detail::lm_head_params(c.m);
  p.gemm = 2.0 * c.tokens * h * V;
  p.mem_fwd = (2 * h + 2 * V) * c.elem;
  p.mem_bwd = (3 * h + 2 * V) * c.elem;
  p.act = 2 * h * c.elem + 4 * V * c.tokens;  // final norm input and output; fp32 log-softmax
  p.transient = 8 * V * c.tokens;              // fp32 gradients of the log-softmax and of the logits
  p.kf = 1 + 1 + 2;                            // final norm, GEMM, log-softmax + NLL
  p.kb = 1 + 2 + 2;
  return p;
}

// Each unit's kernel list (kernel_list.hpp), shared by the units of one kind.
void attach_kernels(std::vector<FsdpUnit>& units, const TransformerConfig& m, WrapPolicy policy,
                    const TrainingShape& shape) {
  auto lists = unit_kernels(m, policy, shape);
  for (std::size_t i = 0; i < units.size() && i < lists.size(); ++i) units[i].kernels = std::move(lists[i]);
}

FsdpUnit finish(Piece p) {
  FsdpUnit u = std::move(p.u);
  u.forward_flops = p.gemm + p.core;
  const double bwd_gemm = 2 * p.gemm + (p.recompute ? p.gemm : 0);
  u.backward_flops = 2 * p.gemm + p.core_bwd + (p.recompute ? u.forward_flops : 0);
  u.gemm_fraction = u.forward_flops > 0 ? p.gemm / u.forward_flops : 1;
  u.backward_gemm_fraction = u.backward_flops > 0 ? bwd_gemm / u.backward_flops : 1;
  u.forward_memory_bytes = p.mem_fwd;
  u.backward_memory_bytes = p.mem_bwd + (p.recompute ? p.mem_fwd : 0);
  u.activation_bytes = p.act;
  u.backward_transient_bytes = p.transient;
  u.forward_kernels = p.kf;
  u.backward_kernels = p.kb + (p.recompute ? p.kf : 0);
  return u;
}

}  // namespace

std::vector<FsdpUnit> fsdp_units(const TransformerConfig& m, WrapPolicy policy, const TrainingShape& shape) {
  validate(m, fmt::format("model '{}'", m.name));
  const int seq = shape.seq_len > 0 ? shape.seq_len : m.seq_len;
  if (shape.micro_batch < 1)
    throw InputError(fmt::format("training shape: micro_batch: expected an integer >= 1, got {}", shape.micro_batch));
  if (!(shape.activation_bytes > 0))
    throw InputError(fmt::format("training shape: activation_bytes: expected a positive number, got {}",
                                 shape.activation_bytes));
  if (m.learned_positions != 0 && seq > m.learned_positions)
    throw InputError(fmt::format("training shape: seq_len: {} is longer than model '{}''s {} learned positions", seq,
                                 m.name, m.learned_positions));

  const double tokens = static_cast<double>(shape.micro_batch) * seq;
  const bool flash = shape.flash_attention && shape.impl.attention != AttentionKernel::Math;
  const Ctx c{m, tokens, static_cast<double>(seq), tokens * shape.activation_bytes, flash};
  const std::int64_t norm = detail::norm_params(m);

  std::vector<std::vector<Piece>> layers;
  std::vector<double> recomputed(m.layers, 0.0);  // a checkpointed block's activations, rebuilt in its backward
  for (int i = 0; i < m.layers; ++i) {
    auto pieces = layer_pieces(c, i);
    if (checkpointed(shape, i)) {
      for (auto& p : pieces) recomputed[i] += p.act, p.act = 0, p.recompute = true;
      pieces.front().act = m.hidden * c.elem;  // the block input, kept by the checkpoint
    }
    layers.push_back(std::move(pieces));
  }
  if (policy == WrapPolicy::Torchtitan) {
    if (m.tied_embeddings)
      throw InputError(fmt::format("model '{}': wrap: torchtitan puts the embedding and the output projection in "
                                   "units of their own, which a tied model cannot (use wrap: block)",
                                   m.name));
    std::vector<FsdpUnit> units;
    Piece emb = token_embedding(c);
    emb.u.name = "tok_embeddings";
    if (m.learned_positions > 0) emb += position_embedding(c);
    units.push_back(finish(std::move(emb)));
    for (int i = 0; i < m.layers; ++i) {
      Piece block = named(fmt::format("layers.{}", i), UnitKind::Block, i);
      for (const auto& p : layers[i]) block += p;
      block.u.params += 2 * norm;
      block.u.norm_params += 2 * norm;
      block.transient += recomputed[i];
      units.push_back(finish(std::move(block)));
    }
    Piece out = head(c);
    out.u.name = "norm+output";
    out.u.params += norm;  // final norm
    out.u.norm_params += norm;
    units.push_back(finish(std::move(out)));
    for (auto& u : units) u.gemm_width = m.hidden;
    attach_kernels(units, m, policy, shape);
    return units;
  }

  std::vector<FsdpUnit> units;
  if (policy == WrapPolicy::Block) {
    Piece root = named("root", UnitKind::Root, -1);
    root += token_embedding(c);
    if (m.learned_positions > 0) root += position_embedding(c);
    root += head(c);
    root.u.params += norm;  // final norm
    root.u.norm_params += norm;
    units.push_back(finish(std::move(root)));
    for (int i = 0; i < m.layers; ++i) {
      Piece block = named(fmt::format("block.{}", i), UnitKind::Block, i);
      for (const auto& p : layers[i]) block += p;
      block.u.params += 2 * norm;
      block.u.norm_params += 2 * norm;
      block.transient += recomputed[i];
      units.push_back(finish(std::move(block)));
    }
    for (auto& u : units) u.gemm_width = m.hidden;
    attach_kernels(units, m, policy, shape);
    return units;
  }

  Piece root = named("root", UnitKind::Root, -1);
  root.u.params = root.u.norm_params = (2LL * m.layers + 1) * norm;
  units.push_back(finish(std::move(root)));
  Piece wte = token_embedding(c);
  Piece lm_head = head(c);
  if (m.tied_embeddings) {
    // The shared matrix lives in wte's unit, so the head's work happens there.
    wte += lm_head;
  }
  units.push_back(finish(std::move(wte)));
  if (m.learned_positions > 0) units.push_back(finish(position_embedding(c)));
  for (int i = 0; i < m.layers; ++i)
    for (auto& p : layers[i]) {
      p.transient += recomputed[i];
      units.push_back(finish(std::move(p)));
    }
  if (!m.tied_embeddings) units.push_back(finish(std::move(lm_head)));
  for (auto& u : units) u.gemm_width = m.hidden;
  attach_kernels(units, m, policy, shape);
  return units;
}

}  // namespace tagcsim::models
