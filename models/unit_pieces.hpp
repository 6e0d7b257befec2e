// Internal to models/: the pieces units.cpp cuts a model into (one per nn.Linear / nn.Embedding),
// each with its FLOPs, memory traffic, saved activations and kernel counts.
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
// Activations kept for backward (autograd's saved tensors; Korthikanti et al. 2022, "Reducing
// Activation Recomputation in Large Transformer Models", section 4.1, counts the same tensors),
// per token, e bytes per element (activation_bytes), a heads, s sequence, kv' the K and V width
// the attention kernel sees (kv, or h when an SDPA-based kernel gets GQA's K and V repeated to
// every head, as torchtitan's repeat_kv and fms's expand do):
//   norm, LayerNorm (PyTorch's native kernel)   input and output (the next Linear's input): 2e h
//   norm, RMSNorm (the Python reference: x.float(), pow, mean, rsqrt, mul, type_as, * weight)
//                                               the fp32 copy of the input (4h), the normalized
//                                               tensor before the weight and the output: (4+2e) h
//   attention, flash kernels (flash2/3, Triton, cuDNN)  Q, K, V (h + 2kv'), the output O (also
//                                               the out-projection's input, h) and the fp32
//                                               log-sum-exp per head: e (2h + 2kv') + 4a bytes
//   attention, math (eager SDPA)                the same, and the softmax output: + e a s
//   GELU MLP                                    the activation's input and output: 2e f
//   SwiGLU MLP                                  g, silu(g), u and their product: 4e f
//   rotary                                      nothing (the complex product saves the constant
//                                               frequencies; type_as saves nothing)
//   residual adds                               nothing
// Under autocast over fp32 parameters the stream is fp32 (the fp32 embedding output promotes every
// residual add): a norm keeps its fp32 input and normalized tensor (RMSNorm 8h, LayerNorm 4h) but
// not its output; each Linear reading it keeps its own e-byte cast (autocast_casts); a checkpointed
// block keeps its fp32 input (4h).
// No dropout masks: every modelled run trains at p = 0, where PyTorch allocates none
// (at::native::dropout returns its input when p is 0, the flash kernels keep no mask). For
// GPT-2 / MPT (f = 4h, kv = h, LayerNorm) that is 16h elements + 4a bytes per token: the
// paper's 34 s b h bytes per block (its count with flash attention) less its two 1-byte dropout
// masks (2 s b h); the paper's eager attention adds 5 a s^2 b bytes, of which only the softmax
// output (2 a s^2 b) is kept at p = 0.
// With checkpointing a block keeps only its input (e h): the checkpoint holds the block's
// inputs for the recompute. Outside the blocks: the final norm (as above; its output is the
// head's input), and the loss by implementation:
//   cross_entropy: fp32 (eager, on logits cast to fp32 as torchtitan's and Hugging Face's losses
//     do; torchtitan's train.py deletes the bf16 logits before backward): log_softmax keeps its
//     fp32 output, 4V bytes per token; its backward holds the fp32 gradients of the log-softmax
//     output and of its input on top (8V). With logit metrics (Composer keeps the model's
//     outputs for its training metrics until after the backward) the e-byte logits stay too.
//   cross_entropy: fused (flash-attn's CrossEntropyLoss, LLM Foundry's fused_crossentropy): the
//     kernel saves its e-byte logits (the same tensor Composer keeps) and a per-token fp32 LSE,
//     eV bytes per token; its backward writes the logits' gradient into a new tensor (eV,
//     inplace_backward is off by default).
//   compile_loss (the loss compiled, as torchtitan does since bbb1b616e, Apr 2025): as fused.
// torch.compile of the model alone does not change the loss's memory: torchtitan compiled each
// block, not the loss, until then (train.py @9dec370: "compiling loss function causes CUDA errors").
// A compiled block (not checkpointed) keeps what AOTAutograd's min-cut partitioner keeps. It
// recomputes element-wise chains in backward, but never a tensor that a backward op it cannot fuse
// reads (ban_recompute_materialized_backward, on by default in torch/_functorch/config.py), and
// never a matmul's output: so it keeps every input of a matmul (each weight gradient is a GEMM
// reading it) and of the attention kernel. That is the block input and the residual after
// attention (e h each) with each norm's fp32 statistics (RMSNorm: rstd, 4 bytes a token;
// LayerNorm: mean and rstd, 8), the two norms' outputs (e h each), q, k and v as the attention
// kernel reads them (q + 2 kv, GQA's K and V q wide when SDPA gets them repeated; q = heads x
// head_dim: h unless the model sets head_dim), q and k before per-head norms (Qwen3), the attention
// output O (q) and log-sum-exp (4a bytes), and the MLP's matmul inputs and outputs (SwiGLU: g, u
// and their product, 3f; GELU: its input and output, 2f). Rotary, the activation function and the
// casts are recomputed. The pieces keep their eager shares of that total.
// The token (and position) embedding keeps nothing of its own: its output is block 0's input,
// kept by block 0's norm or checkpoint.
//
// Memory a unit's backward allocates beyond what it kept (backward_transient_bytes): the loss
// gradients above; under activation checkpointing the recomputed block, which lives while its
// backward runs (compiled: what a compiled block keeps, all its fused recompute materializes); and
// the gradients in flight inside a block's backward (autograd frees a node's
// incoming gradient once the node has run): the block output's gradient (e h) and, at the
// largest, the MLP's (GELU: the gradients of its output and input, 2e f; SwiGLU: of the
// product's two factors and of g, 3e f) or the attention's (flash: dO, the kernel's fp32 dQ
// accumulator, dQ, dK, dV: e (2h + 2kv') + 4h; math: also the softmax's two s x s gradients,
// 2e a s).
// Under the Size policy every piece of a checkpointed block carries the whole block's
// recomputed activations: the block is recomputed once, when the backward reaches its last
// piece, and its pieces' backwards run one at a time; each piece carries its own gradients in
// flight.
//
// Kernels launched (forward_/backward_kernels), counted as eager PyTorch
// launches them at this level of detail: one per GEMM forward and two per GEMM
// backward (grad input, grad weight), one per element-wise row of the traffic
// table above in each direction (the eager softmax path three), one for the
// attention core each way, two for the cross-entropy (log-softmax, NLL) each
// way. A checkpointed block's backward launches its forward's kernels again.
// These counts serve units without a kernel list only: units with one
// (models/kernel_list.hpp) count its kernels.
#pragma once

#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "models/shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace tagcsim::models::detail {

// A unit under construction: raw forward work, turned into FsdpUnit fields by finish().
struct UnitPiece {
  FsdpUnit u;
  double gemm = 0;      // forward GEMM FLOPs
  double core = 0;      // forward attention-core FLOPs
  double core_bwd = 0;  // backward attention-core FLOPs
  double mem_fwd = 0, mem_bwd = 0, act = 0;  // bytes
  double transient = 0;                      // bytes held during the backward only
  double work = 0;                           // gradients in flight while its backward runs (bytes)
  // Its matmuls in forward order as torchtitan's op-level checkpointing (selective_op) sees them:
  // FLOPs, output bytes, and whether the policy counts it as an aten.mm (it keeps every second one's
  // output, the 1st, 3rd, ...) or re-runs it wherever it stands (the router gate, forced; the
  // experts' _grouped_mm, not in its save list). kernel_list.cpp, kernel for kernel, re-runs every
  // float8 _scaled_mm too; here a float8 Linear's output is kept like its bf16 one's, as the
  // published peak memory of torchtitan's float8 rows under this policy says (S32, S60, S62).
  struct MatMul {
    double flops = 0, out = 0;
    bool counted = true;
  };
  std::vector<MatMul> mms;
  double kernel_out = 0;  // the attention kernel's outputs (bytes), saved by selective_op
  double op_saved = 0;    // other outputs selective_op keeps (bytes): the router's top-k
  int kf = 0, kb = 0;                        // kernels, forward and backward (without recompute)
  // The forward work its backward runs again, inside a checkpointed block (summed when pieces merge
  // into one unit: under checkpoint early stop a block re-runs all its pieces but the last).
  double re_gemm = 0, re_core = 0, re_mem = 0;
  int re_k = 0;
  void rerun() { re_gemm = gemm, re_core = core, re_mem = mem_fwd, re_k = kf; }
  // torchtitan's selective_op keeps the attention kernel's output (where its save list names the
  // kernel's op) and those of the matmuls it keeps (kept: their FLOPs and count): their re-run is
  // not paid.
  void keep_for_selective_op(double kept_gemm, int kept, bool keeps_attention) {
    if (re_k == 0) return;
    re_k -= (keeps_attention && core > 0 ? 1 : 0) + kept;
    if (keeps_attention) re_core = 0;
    re_gemm = kept_gemm >= re_gemm ? 0 : re_gemm - kept_gemm;
  }

  UnitPiece& operator+=(const UnitPiece& o) {
    u.params += o.u.params;
    u.attention_params += o.u.attention_params;
    u.mlp_params += o.u.mlp_params;
    u.embedding_params += o.u.embedding_params;
    u.norm_params += o.u.norm_params;
    u.expert_params += o.u.expert_params;
    gemm += o.gemm, core += o.core, core_bwd += o.core_bwd;
    mem_fwd += o.mem_fwd, mem_bwd += o.mem_bwd, act += o.act;
    transient += o.transient;
    work = std::max(work, o.work);  // the pieces' backwards run one after the other
    kf += o.kf, kb += o.kb;
    re_gemm += o.re_gemm, re_core += o.re_core, re_mem += o.re_mem, re_k += o.re_k;
    return *this;
  }
};

struct Ctx {
  const TransformerConfig& m;
  const Implementation& impl;
  double tokens;  // T
  double seq;     // s
  double elem;    // bytes of one per-token element over the micro-batch: T * activation_bytes
  double e;       // activation_bytes
  bool flash;
  double kv_seen;  // the K and V width the attention kernel keeps (kv, or h when SDPA gets GQA's K, V repeated)
  double sp = 1;   // tensor parallelism's sequence shards: the block norms see tokens / sp of the tokens
  // The residual stream's element, in bytes over the micro-batch: elem, or 4 a token-element under
  // autocast over fp32 parameters (the fp32 embedding output promotes every residual add).
  double stream = 0;
  double ep = 1;  // expert parallelism: this GPU holds experts / ep of each block's routed experts
  double expert_rows = 0;  // the rows its experts run (TrainingShape::expert_rows)

  bool fp32_stream() const { return stream != elem; }
  // What a norm keeps for backward over the micro-batch (the head comment's table); an RMSNorm
  // over `width` elements a token keeps its fp32 input and its output. On the fp32 stream under
  // autocast it keeps its input and its fp32 normalized tensor (the weight product's operand); its
  // output is not kept: each Linear reading it keeps its own 16-bit cast (autocast_casts).
  // PyTorch's fused kernel (impl.fused_rms_norm) keeps its input and a fp32 rstd a row (`rows` a
  // token: a per-head norm has one a head).
  double rms_norm_saved(double width, double rows = 1) const {
    if (impl.fused_rms_norm && !impl.compiled) return e * width * tokens + 4 * rows * tokens;
    return (4 + 2 * e) * width * tokens;
  }
  double norm_saved() const {
    if (fp32_stream()) return (m.norm == Norm::RMSNorm ? 8.0 : 4.0) * m.hidden * tokens / sp;
    return (m.norm == Norm::RMSNorm ? rms_norm_saved(m.hidden) : 2 * m.hidden * elem) / sp;
  }
};

inline UnitPiece named(std::string name, UnitKind kind, int layer) {
  UnitPiece p;
  p.u.name = std::move(name);
  p.u.kind = kind;
  p.u.layer = layer;
  return p;
}

inline UnitPiece linear(const Ctx& c, std::string name, UnitKind kind, int layer, std::int64_t in, std::int64_t out) {
  UnitPiece p = named(std::move(name), kind, layer);
  p.u.params = kind == UnitKind::AttentionQKV ? detail::qkv_linear_params(c.m, in, out) : linear_params(c.m, in, out);
  (kind == UnitKind::MlpUp || kind == UnitKind::MlpDown ? p.u.mlp_params : p.u.attention_params) = p.u.params;
  p.gemm = 2.0 * c.tokens * static_cast<double>(in) * static_cast<double>(out);
  p.mms = {{p.gemm, static_cast<double>(out) * c.elem}};
  p.kf = 1, p.kb = 2;
  return p;
}

// torch.autocast over fp32 parameters, on a piece once its own traffic is set: its Linear (gemm / 2T
// weights) casts the weight to 16 bits in forward, and the matmul keeps that copy for its dgrad (a
// checkpointed block drops it with the rest); the backward casts the weight's gradient back to fp32.
// A Linear reading a norm's fp32 output (q, k, v, the MLP's first, the head) casts that input too,
// keeps its cast for its wgrad and casts its gradient back (eager: a compiled block casts once, in
// the norm's kernel; kernel_builder.hpp's linear, kernel for kernel).
inline void autocast_casts(const Ctx& c, UnitPiece& p) {
  if (!c.impl.autocast_casts || !(p.gemm > 0)) return;
  const double w = p.gemm / (2 * c.tokens);
  p.mem_fwd += (4 + c.e) * w;
  p.mem_bwd += (c.e + 4) * w;
  p.act += c.e * w;
  p.kf += 1, p.kb += 1;
  const auto k = p.u.kind;
  if (k != UnitKind::AttentionQKV && k != UnitKind::MlpUp && k != UnitKind::LmHead) return;
  const double x = c.m.hidden * c.tokens;  // the Linear's input
  p.act += c.e * x;
  if (c.impl.compiled) return;
  p.mem_fwd += (4 + c.e) * x;
  p.mem_bwd += (c.e + 4) * x;
  p.kf += 1, p.kb += 1;
}

// Adds `n` element-wise kernels each way to a piece.
inline void elementwise(UnitPiece& p, int n) { p.kf += n, p.kb += n; }

// Gemma's norm on a sub-block's output before its residual add: a block norm's traffic and what it keeps.
inline void post_norm(const Ctx& c, UnitPiece& p) {
  p.mem_fwd += 2 * c.m.hidden * c.stream / c.sp;
  p.mem_bwd += 3 * c.m.hidden * c.stream / c.sp;
  p.act += c.norm_saved();
  elementwise(p, 1);
}

// A mixture of experts' MLP in three pieces (kernel_builder.hpp's router, experts_gate_up and
// experts_down): the router with ln_2 and the token permutation; the experts' gate and up with
// SwiGLU; their down projection, the scores' product, the scatter back and the residual. Over
// Tk = T x experts_per_token permuted rows, balanced. Kept for backward: ln_2's, the fp32 router
// probabilities and the chosen scores and ids; the permuted input, g, silu(g) and u; the product
// (the down projection's input) and the experts' output (the scores' gradient reads it).
std::vector<UnitPiece> moe_pieces(const Ctx& c, int i);  // models/unit_pieces_moe.cpp

// Multi-head latent attention's projections (models/unit_pieces_mla.cpp): q with ln_1 and rotary,
// the latent with its norm and k's rotary part, the up projection to each head's k and v.
std::vector<UnitPiece> mla_projection_pieces(const Ctx& c, int i);

// The pieces of one transformer block, in forward order.
inline std::vector<UnitPiece> layer_pieces(const Ctx& c, int i) {
  const auto& m = c.m;
  const double h = m.hidden, kv = static_cast<double>(kv_dim(m)), f = static_cast<double>(m.ffn);
  const double q = static_cast<double>(detail::q_dim(m));  // q and the attention output: h unless head_dim is set
  const double as = m.heads * c.seq;
  const std::string pre = fmt::format("layers.{}.", i);
  std::vector<UnitPiece> out;

  if (detail::mla(m)) {
    for (auto& p : mla_projection_pieces(c, i)) out.push_back(std::move(p));
  } else if (detail::llama_layout(m)) {
    // Rotary on every head of the TP group under tp_qk_norm: no_parallel (Implementation::qk_norm_no_parallel).
    const double g = c.impl.qk_gathered(int(c.sp));
    auto qp = linear(c, pre + "attn.q", UnitKind::AttentionQKV, i, m.hidden, detail::q_dim(m));
    qp.mem_fwd = 2 * h * c.stream + 2 * g * q * c.elem;  // ln_1, rotary on q
    qp.mem_bwd = 3 * h * c.stream + 2 * g * q * c.elem;
    qp.act = c.norm_saved();  // ln_1: its input (an fp32 copy for RMSNorm) and output, the q/k/v input
    elementwise(qp, 2);       // ln_1, rotary on q
    if (g > 1)  // in flight at once: the gathered dq and repeated K's gradient, and the second's gather buffer
      qp.work = (3 * g * q + h) * c.elem;
    auto k = linear(c, pre + "attn.k", UnitKind::AttentionQKV, i, m.hidden, kv_dim(m));
    k.mem_fwd = k.mem_bwd = 2 * g * kv * c.elem;  // rotary on k
    elementwise(k, 1);
    auto v = linear(c, pre + "attn.v", UnitKind::AttentionQKV, i, m.hidden, kv_dim(m));
    if (m.qk_norm) {
      // Qwen3's q and k norms, per head before rotary: a head_dim weight each (in the q and k units),
      // a norm's traffic, and what an RMSNorm keeps for backward.
      const std::int64_t hd = detail::head_dim(m);
      for (auto [piece, width] : {std::pair{&qp, q}, std::pair{&k, kv}}) {
        piece->u.params += hd, piece->u.norm_params += hd;
        piece->mem_fwd += 2 * width * c.elem, piece->mem_bwd += 3 * width * c.elem;
        piece->act += c.rms_norm_saved(width, width / hd);
        elementwise(*piece, 1);
      }
    }
    out.push_back(std::move(qp));
    out.push_back(std::move(k));
    out.push_back(std::move(v));
  } else {
    auto qkv = linear(c, pre + "attn.c_attn", UnitKind::AttentionQKV, i, m.hidden, detail::q_dim(m) + 2 * kv_dim(m));
    qkv.mem_fwd = 2 * h * c.stream;
    qkv.mem_bwd = 3 * h * c.stream;
    qkv.act = c.norm_saved();  // ln_1: its input and output, the q/k/v input
    elementwise(qkv, 1);       // ln_1
    out.push_back(std::move(qkv));
  }

  auto o = linear(c, pre + (detail::llama_layout(m) || detail::mla(m) ? "attn.o" : "attn.c_proj"),
                  UnitKind::AttentionOut, i, detail::attn_out_dim(m), m.hidden);
  // Flash skips the masked tiles (all outside a sliding window or the query's document too); the
  // math path computes them all.
  const double keys = c.flash ? causal_keys_per_query(c.seq, attention_window(m, i), c.impl.document_length) : c.seq;
  o.core = 4.0 * c.tokens * keys * q;
  o.core_bwd = (c.flash ? 2.5 : 2.0) * o.core;
  o.mem_fwd = (2 * q + 2 * kv + (c.flash ? 0 : 6 * as)) * c.elem + 3 * h * c.stream;
  o.mem_bwd = (4 * q + 4 * kv + (c.flash ? 0 : 7 * as)) * c.elem + 3 * h * c.stream;
  // Q, K, V, the output (the out projection's input), the fp32 log-sum-exp per head; the math
  // path keeps the softmax output too.
  const double kvs = c.kv_seen;
  o.act = (2 * q + 2 * kvs + (c.flash ? 0 : as)) * c.elem + 4.0 * m.heads * c.tokens;
  // Backward: dO, dQ, dK, dV and the kernel's fp32 dQ accumulator (math: the softmax's two
  // s x s gradients instead), with the block output's gradient.
  o.work = (q + (q + 2 * kvs) + h + (c.flash ? 0 : 2 * as)) * c.elem + (c.flash ? 4 * q * c.tokens : 0);
  o.kernel_out = q * c.elem + 4.0 * m.heads * c.tokens;  // O and the log-sum-exp
  if (detail::mla(m)) {
    // Latent attention: K as wide as q, V and the output heads x v_head_dim (vo); QK^T over q's
    // width, AV over V's: 2 T keys (q + vo) FLOPs.
    const double vo = double(detail::attn_out_dim(m));
    o.core = 2.0 * c.tokens * keys * (q + vo);
    o.core_bwd = (c.flash ? 2.5 : 2.0) * o.core;
    o.mem_fwd = (2 * q + 2 * vo + (c.flash ? 0 : 6 * as)) * c.elem + 3 * h * c.stream;
    o.mem_bwd = (4 * q + 4 * vo + (c.flash ? 0 : 7 * as)) * c.elem + 3 * h * c.stream;
    o.act = (2 * q + 2 * vo + (c.flash ? 0 : as)) * c.elem + 4.0 * m.heads * c.tokens;
    o.work = (vo + 2 * q + vo + h + (c.flash ? 0 : 2 * as)) * c.elem + (c.flash ? 4 * q * c.tokens : 0);
    o.kernel_out = vo * c.elem + 4.0 * m.heads * c.tokens;
  }
  elementwise(o, 2 + (c.flash ? 0 : 3));  // attention core, residual add (scale, mask, softmax)
  if (m.attention_sinks) {  // the output rescaled by sigmoid(lse - sink): a new out-projection input
    o.u.params += m.heads, o.u.attention_params += m.heads;
    o.mem_fwd += 3 * q * c.elem, o.mem_bwd += 7 * q * c.elem;
    o.act += q * c.elem;
    o.kf += 4, o.kb += 6;
  }
  if (m.post_norms) post_norm(c, o);
  out.push_back(std::move(o));

  if (detail::moe(m)) {
    for (auto& p : moe_pieces(c, i)) out.push_back(std::move(p));
  } else if (m.gated_mlp) {
    auto gate = linear(c, pre + "mlp.gate", UnitKind::MlpUp, i, m.hidden, m.ffn);
    gate.mem_fwd = 2 * h * c.stream + 2 * f * c.elem;  // ln_2, silu
    gate.mem_bwd = 3 * h * c.stream + 3 * f * c.elem;
    gate.act = c.norm_saved() + 2 * f * c.elem;  // ln_2 (its output is the MLP input), g, silu(g)
    gate.work = (h + 3 * f) * c.elem;             // the block output's, the product's two factors', g's gradients
    elementwise(gate, 2);                 // ln_2, silu
    auto up = linear(c, pre + "mlp.up", UnitKind::MlpUp, i, m.hidden, m.ffn);
    up.mem_fwd = 3 * f * c.elem;  // silu(g) * u
    up.mem_bwd = 5 * f * c.elem;
    up.act = f * c.elem;  // u
    elementwise(up, 1);   // silu(g) * u
    auto down = linear(c, pre + "mlp.down", UnitKind::MlpDown, i, m.ffn, m.hidden);
    down.mem_fwd = down.mem_bwd = 3 * h * c.stream;  // residual
    down.act = f * c.elem;                        // the product
    elementwise(down, 1);                         // residual
    if (m.post_norms) post_norm(c, down);
    out.push_back(std::move(gate));
    out.push_back(std::move(up));
    out.push_back(std::move(down));
  } else {
    auto fc = linear(c, pre + "mlp.c_fc", UnitKind::MlpUp, i, m.hidden, m.ffn);
    fc.mem_fwd = 2 * h * c.stream + 2 * f * c.elem;  // ln_2, GELU
    fc.mem_bwd = 3 * h * c.stream + 3 * f * c.elem;
    fc.act = c.norm_saved() + f * c.elem;  // ln_2 (its output is the MLP input), GELU input
    fc.work = (h + 2 * f) * c.elem;         // the block output's, the GELU output's and input's gradients
    elementwise(fc, 2);             // ln_2, GELU
    auto proj = linear(c, pre + "mlp.c_proj", UnitKind::MlpDown, i, m.ffn, m.hidden);
    proj.mem_fwd = proj.mem_bwd = 3 * h * c.stream;
    proj.act = f * c.elem;  // GELU output
    elementwise(proj, 1);               // residual
    if (m.post_norms) post_norm(c, proj);
    out.push_back(std::move(fc));
    out.push_back(std::move(proj));
  }
  return out;
}

inline UnitPiece token_embedding(const Ctx& c) {
  UnitPiece p = named("wte", UnitKind::Embedding, -1);
  p.u.params = p.u.embedding_params = detail::token_embedding_params(c.m);
  p.mem_fwd = 2.0 * c.m.hidden * c.stream;
  p.mem_bwd = 3.0 * c.m.hidden * c.stream;
  elementwise(p, 1);  // gather; scatter-add of the gradient (its output is kept by block 0)
  return p;
}

inline UnitPiece position_embedding(const Ctx& c) {
  UnitPiece p = named("wpe", UnitKind::PositionEmbedding, -1);
  p.u.params = p.u.embedding_params = detail::position_embedding_params(c.m);
  p.mem_fwd = 5.0 * c.m.hidden * c.stream;  // gather, add to the token embedding
  p.mem_bwd = 3.0 * c.m.hidden * c.stream;
  elementwise(p, 1);
  p.kf += 1;  // the add to the token embedding
  return p;
}

// Final norm's work (not its parameters) plus the output projection and the loss.
inline UnitPiece head(const Ctx& c) {
  const double h = c.m.hidden, V = static_cast<double>(c.m.vocab);
  UnitPiece p = named("lm_head", UnitKind::LmHead, -1);
  p.u.params = p.u.embedding_params = detail::lm_head_params(c.m);
  p.gemm = 2.0 * c.tokens * h * V;
  p.mem_fwd = 2 * h * c.stream + 2 * V * c.elem;
  p.mem_bwd = 3 * h * c.stream + 2 * V * c.elem;
  p.act = c.norm_saved();  // the final norm (its output is the head's input)
  // The loss's logits: this rank's vocabulary slice, or all of them when the head gathers them
  // (tp_plan: per_linear), which its log-softmax then keeps whole.
  const double TV = V * c.tokens * (c.impl.tp_plan == Implementation::TpPlan::PerLinear ? c.sp : 1);
  using CrossEntropy = Implementation::CrossEntropy;
  if (c.impl.cross_entropy == CrossEntropy::Fused || c.impl.compiled_loss) {
    p.act += c.e * TV;        // the logits, saved by the fused (or compiled) kernel
    p.transient = c.e * TV;   // their gradient
  } else if (c.impl.cross_entropy == CrossEntropy::Bf16) {
    p.act += c.e * TV + (c.impl.logit_metrics > 0 ? c.e * TV : 0);  // the 16-bit log-softmax output
    p.transient = 2 * c.e * TV;  // 16-bit gradients of that output and of the logits
  } else {
    p.act += 4 * TV + (c.impl.logit_metrics > 0 ? c.e * TV : 0);  // fp32 log-softmax; logits kept for metrics
    p.transient = 8 * TV;     // fp32 gradients of the log-softmax output and of its input
    // Loss parallelism's backward (torch/distributed/tensor/parallel/loss.py,
    // _nll_loss_and_log_softmax_backward) holds (zeros + exp(out)) and their product with the
    // zeros tensor still alive: three fp32 slices beside the saved output, not two.
    if (c.impl.loss_parallel(int(c.sp))) p.transient = 12 * TV;
  }
  p.kf = 1 + 1 + 2;                            // final norm, GEMM, log-softmax + NLL
  p.kb = 1 + 2 + 2;
  if (c.m.logit_softcap) {  // c tanh(logits / c): the tanh's output is kept for its backward, unless
    p.mem_fwd += 6 * V * c.elem, p.mem_bwd += 7 * V * c.elem;  // the compiled loss recomputes it
    p.act += c.impl.compiled_loss ? 0 : c.e * TV;
    p.kf += 3, p.kb += 3;
  }
  if (const int n = c.impl.loss_chunks; n > 1) {
    // ChunkedCELoss: one slice's logits and their gradients live at a time, beside the fp32
    // accumulator of the hidden states' gradient (4h a token) that waits for the blocks' backward.
    const double loss_act = p.act - c.norm_saved();
    p.act = c.norm_saved() + loss_act / n + 4 * h * c.tokens;
    p.transient /= n;
    // The final norm once; each slice's head and loss kernels; backward, each slice's hidden-state
    // accumulation, n - 1 sums of the head's gradient and the accumulator's cast back.
    p.kf = 1 + n * (p.kf - 1);
    p.kb = 1 + n * (p.kb - 1) + n + (n - 1) + 1;
  }
  autocast_casts(c, p);  // the head's weight (the embedding's, when tied) cast as every Linear's is
  return p;
}

}  // namespace tagcsim::models::detail
