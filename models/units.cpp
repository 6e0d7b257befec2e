// Cutting a model into FSDP units, with the work and memory of each.
//
// Everything is built from the Size-policy pieces (one per nn.Linear /
// nn.Embedding); the Block policy sums a layer's pieces. So both policies give
// the same totals by construction.
//
// The conventions of each piece's FLOPs, memory traffic, saved activations and kernel counts are
// written where the pieces are built, unit_pieces.hpp; this file wraps pieces into units and
// applies activation checkpointing and torch.compile's saved tensors to them.
#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "models/shapes.hpp"
#include "models/unit_pieces.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace tagcsim::models {
namespace {

using detail::Ctx;
using detail::kv_dim;
using detail::named;
using Piece = detail::UnitPiece;

// Each unit's kernel list (kernel_list.hpp), shared by the units of one kind.
void attach_kernels(std::vector<FsdpUnit>& units, const TransformerConfig& m, WrapPolicy policy,
                    const TrainingShape& shape) {
  auto lists = unit_kernels(m, policy, shape);
  for (std::size_t i = 0; i < units.size() && i < lists.size(); ++i) units[i].kernels = std::move(lists[i]);
}

// A checkpointed block's backward re-runs its pieces' forward; with early stop not the last one
// (the down projection: the backward needs nothing it computes; kernel_list.cpp).
void rerun_block(std::vector<Piece>& pieces, bool early_stop) {
  for (std::size_t j = 0; j + (early_stop ? 1 : 0) < pieces.size(); ++j) pieces[j].rerun();
}

// Whether checkpoint early stop spares a block's last piece its re-run: a dense MLP's down
// projection, whose output only the residual add reads. A mixture of experts weighs its experts'
// outputs by their scores after the down projection (torchtitan's score_before_experts false, as
// Qwen3 and DeepSeek-V3 set it; Mixtral's reference code likewise), and that product's backward
// reads them: the re-run goes through the down projection (kernel_builder.hpp, early_stop_forward).
bool early_stop_skips_last(const TrainingShape& shape, const TransformerConfig& block) {
  return shape.impl.rerun_stops_early() && !detail::moe(block);
}

FsdpUnit finish(Piece p) {
  FsdpUnit u = std::move(p.u);
  u.forward_flops = p.gemm + p.core;
  const double bwd_gemm = 2 * p.gemm + p.re_gemm;
  u.backward_flops = 2 * p.gemm + p.core_bwd + p.re_gemm + p.re_core;
  u.gemm_fraction = u.forward_flops > 0 ? p.gemm / u.forward_flops : 1;
  u.backward_gemm_fraction = u.backward_flops > 0 ? bwd_gemm / u.backward_flops : 1;
  u.forward_memory_bytes = p.mem_fwd;
  u.backward_memory_bytes = p.mem_bwd + p.re_mem;
  u.activation_bytes = p.act;
  u.backward_transient_bytes = p.transient;
  u.forward_kernels = p.kf;
  u.backward_kernels = p.kb + p.re_k;
  return u;
}

// What a compiled block's backward reads of its forward, over the micro-batch: what it keeps when
// not checkpointed, and what its recompute materializes when it is.
double compiled_block_reads(const Ctx& c, const TrainingShape& shape, const std::vector<Piece>& pieces) {
  const TransformerConfig& lm = c.m;  // this block's: a mixture of experts' dense blocks are dense
  const double h = lm.hidden, q = double(detail::q_dim(lm)), kv = double(kv_dim(lm)), f = double(lm.ffn);
  const double stats = (lm.norm == Norm::RMSNorm ? 4.0 : 8.0) * c.tokens;
  // The partitioner never recomputes a tensor that a backward op it cannot fuse reads
  // (ban_recompute_materialized_backward, on by default): every matmul's input stays, since its
  // weight gradient is a GEMM. So each norm's output (the q/k/v and gate/up projections' input,
  // e h each, on top of the block input and the residual after attention, the stream's), and the
  // MLP's last activation (SwiGLU: g, u and their product; GELU: its input and output).
  // A mixture of experts' MLP keeps its router logits, the rows its experts run as their grouped
  // GEMMs read them (the permuted tokens, g, u and the product), each token's experts' outputs
  // and its shared experts' g, u and product.
  const double k = lm.experts_per_token, rows = c.expert_rows / c.tokens;
  const double mlp = detail::moe(lm)
                         ? double(lm.experts) + rows * (h + 3 * f) + k * h + 3 * double(detail::shared_ffn(lm))
                         : (lm.gated_mlp ? 3 * f : 2 * f);
  // q, k, v and O as the attention kernel reads them (SDPA's K and V repeated for GQA: kv_seen),
  // and q and k before their per-head norms (Qwen3); latent attention's K is q wide, its V and O
  // heads x v_head_dim, and its up projection reads the normed latent (and q's, with q_lora_rank).
  const double qk_norm_inputs = lm.qk_norm ? q + kv : 0;
  const double attn = detail::mla(lm) ? 2 * q + 2 * double(detail::attn_out_dim(lm)) + lm.kv_lora_rank + lm.q_lora_rank
                                      : (q + 2 * c.kv_seen) + q + qk_norm_inputs;
  const double norm_outputs = 2 * h;
  double kept = 2 * h * c.stream + (norm_outputs + attn + mlp) * c.elem + 2 * stats + 4.0 * lm.heads * c.tokens;
  if (shape.impl.autocast_casts)  // and autocast's 16-bit weight copies, which the matmuls' dgrads read
    for (const auto& p : pieces) kept += c.e * p.gemm / (2 * c.tokens);
  return kept;
}

// Eager float8 under a per-op policy that saves aten.abs (selective_op_saves_abs): each float8
// Linear's tensorwise scales take abs of its input, and of its weight where FSDP did not all-gather
// it in float8, and the policy stores each abs, e bytes an element. The Linears are the counted
// matmuls (the router's gate and the experts' grouped GEMMs stay in bf16).
double float8_abs_saved(const Piece& p, const Ctx& c, bool float8_all_gather) {
  double bytes = 0;
  for (const auto& x : p.mms) {
    if (!x.counted || !(x.out > 0)) continue;
    const double out_features = x.out / c.elem;
    const double input = x.flops / (2 * out_features), weight = x.flops / (2 * c.tokens);
    bytes += c.e * (input + (float8_all_gather ? 0 : weight));
  }
  return bytes;
}

}  // namespace

TransformerConfig tensor_parallel_shard(const TransformerConfig& m, int t) {
  if (t == 1) return m;
  auto check = [&](const char* what, std::int64_t n) {
    if (t < 1 || n % t != 0)
      throw InputError(fmt::format("training.tensor_parallel: {} GPUs do not split model '{}''s {} {} evenly", t,
                                   m.name, n, what));
  };
  check("heads", m.heads);
  check("KV heads", m.kv_heads);
  check("FFN columns", m.ffn);
  check("vocabulary rows", m.vocab);
  TransformerConfig r = m;
  r.head_dim = int(detail::head_dim(m));
  r.heads = m.heads / t, r.kv_heads = m.kv_heads / t, r.ffn = m.ffn / t, r.vocab = m.vocab / t;
  return r;
}

std::vector<FsdpUnit> fsdp_units(const TransformerConfig& model, WrapPolicy policy, const TrainingShape& shape) {
  validate(model, fmt::format("model '{}'", model.name));
  if (shape.tensor_parallel > 1 && policy == WrapPolicy::Size)
    throw InputError("training.tensor_parallel: wrap: size cuts blocks into single Linears; tensor parallelism "
                     "needs whole blocks (wrap: block or torchtitan)");
  if (detail::mla(model) && (shape.tensor_parallel > 1 || shape.context_parallel > 1 || shape.impl.autocast_casts))
    throw InputError(fmt::format("training.{}: model '{}''s latent attention (kv_lora_rank) with tensor or context "
                                 "parallelism or autocast is not modelled",
                                 shape.tensor_parallel > 1    ? "tensor_parallel"
                                 : shape.context_parallel > 1 ? "context_parallel"
                                                              : "autocast",
                                 model.name));
  if (shape.expert_parallel != 1) {
    if (!detail::moe(model))
      throw InputError(fmt::format("training.expert_parallel: model '{}' has no experts to split (model.experts)",
                                   model.name));
    if (shape.expert_parallel < 1 || model.experts % shape.expert_parallel != 0)
      throw InputError(fmt::format("training.expert_parallel: {} GPUs do not split model '{}''s {} experts evenly",
                                   shape.expert_parallel, model.name, model.experts));
  }
  if (detail::moe(model)) {
    // A mixture of experts: every GPU runs its experts (all of them, or 1/ep under expert
    // parallelism) on the tokens routed to them, whole blocks gathered.
    auto refuse = [&](const char* key, const char* what) {
      throw InputError(fmt::format("training.{}: {} with a mixture of experts (model '{}') is not modelled", key, what,
                                   model.name));
    };
    if (policy == WrapPolicy::Size) refuse("wrap", "wrap: size");
    if (shape.tensor_parallel > 1) refuse("tensor_parallel", "tensor parallelism");
    if (shape.context_parallel > 1) refuse("context_parallel", "context parallelism");
    if (shape.impl.float8_linears) refuse("float8", "float8 Linears (grouped GEMMs in float8)");
    if (shape.impl.autocast_casts) refuse("autocast", "autocast over fp32 parameters");
  }
  if (shape.impl.qk_norm_no_parallel && !model.qk_norm)
    throw InputError(fmt::format("training.tp_qk_norm: no_parallel wraps q_norm and k_norm, and model '{}' has none",
                                 model.name));
  const TransformerConfig m = tensor_parallel_shard(model, shape.tensor_parallel);
  const int seq = shape.seq_len > 0 ? shape.seq_len : m.seq_len;
  if (shape.micro_batch < 1)
    throw InputError(fmt::format("training shape: micro_batch: expected an integer >= 1, got {}", shape.micro_batch));
  if (!(shape.activation_bytes > 0))
    throw InputError(fmt::format("training shape: activation_bytes: expected a positive number, got {}",
                                 shape.activation_bytes));
  if (m.learned_positions != 0 && seq > m.learned_positions)
    throw InputError(fmt::format("training shape: seq_len: {} is longer than model '{}''s {} learned positions", seq,
                                 m.name, m.learned_positions));

  if (shape.context_parallel < 1 || seq % (2 * shape.context_parallel) != 0)
    throw InputError(fmt::format("training.context_parallel: {} GPUs cannot split a {}-token sequence into the "
                                 "2 x {} equal chunks load balancing deals out",
                                 shape.context_parallel, seq, shape.context_parallel));
  if (shape.context_parallel > 1 && m.sliding_window > 0)
    throw InputError("training.context_parallel: a model with a sliding window under context parallelism is not "
                     "modelled");
  // A GPU's tokens: its share of the micro-batch's sequences under context parallelism.
  const double tokens = static_cast<double>(shape.micro_batch) * seq / shape.context_parallel;
  const bool flash = shape.flash_attention && shape.impl.attention != AttentionKernel::Math;
  // SDPA-based kernels see GQA's K and V repeated to every head (torchtitan's repeat_kv); the others
  // take them as they are.
  const bool repeated_kv = shape.impl.repeats_kv(m, seq);
  const Ctx c{m,    shape.impl, tokens, static_cast<double>(seq), tokens * shape.activation_bytes, shape.activation_bytes,
              flash, double(repeated_kv ? detail::q_dim(m) : detail::kv_dim(m)), double(shape.tensor_parallel),
              tokens * (shape.impl.autocast_casts ? 4.0 : shape.activation_bytes), double(shape.expert_parallel),
              shape.expert_rows(tokens, m.experts_per_token)};
  // A mixture of experts' dense blocks are those of a dense model of their width.
  const TransformerConfig dense = detail::dense_view(m);
  const Ctx dense_c{dense, c.impl, c.tokens, c.seq, c.elem, c.e, c.flash, c.kv_seen, c.sp, c.stream, c.ep, 0};
  auto ctx_of = [&](int i) -> const Ctx& { return detail::moe(m) && !detail::moe_layer(m, i) ? dense_c : c; };
  const std::int64_t norm = detail::norm_params(m);

  std::vector<std::vector<Piece>> layers;
  std::vector<double> recomputed(m.layers, 0.0);  // a checkpointed block's activations, rebuilt in its backward
  std::vector<double> work(m.layers, 0.0);        // a block's largest set of gradients in flight
  for (int i = 0; i < m.layers; ++i) {
    const Ctx& lc = ctx_of(i);
    auto pieces = layer_pieces(lc, i);
    for (auto& p : pieces) autocast_casts(lc, p);
    for (const auto& p : pieces) work[i] = std::max(work[i], p.work);
    if (shape.activation_checkpointing && shape.impl.selective_op) {
      // torchtitan's op-level policy (_custom_policy in its activation checkpointing): every block
      // saves the outputs of its 1st, 3rd, 5th, ... matmul and of the attention kernel, with its
      // input; the rest is rebuilt while its backward runs.
      // Compiled, the block keeps only what its backward reads: the policy's MUST_SAVE marks a
      // tensor to keep, and AOTAutograd's partitioner drops the ones no backward op uses, the
      // last matmul's output (the down projection's, which only the residual add reads). Eager
      // checkpointing stores every MUST_SAVE output.
      const bool keeps_attention = !shape.impl.selective_op_recomputes_attention;
      double full = 0, saved = m.hidden * c.stream / c.sp;
      int counted = 0, mm = 0;
      for (const auto& p : pieces)
        for (const auto& x : p.mms) counted += x.counted;
      std::vector<std::pair<double, int>> kept(pieces.size());  // each piece's kept matmuls: FLOPs, count
      for (std::size_t j = 0; j < pieces.size(); ++j) {
        auto& p = pieces[j];
        full += p.act;
        for (const auto& x : p.mms) {
          if (!x.counted || ++mm % 2 == 0) continue;
          kept[j].first += x.flops, ++kept[j].second;
          const bool unread = shape.impl.compiled && mm == counted;
          if (!unread) saved += x.out;
        }
        saved += (keeps_attention ? p.kernel_out : 0) + p.op_saved;
        if (shape.impl.selective_op_saves_abs && shape.impl.float8_linears && !shape.impl.compiled)
          saved += float8_abs_saved(p, c, shape.impl.float8_all_gather);
        p.act = 0;
      }
      pieces.front().act = saved;
      recomputed[i] = std::max(0.0, full - saved);
      // The backward re-runs what it did not keep: the even-numbered matmuls, the router gate and
      // the experts' grouped GEMMs, the element-wise work around them, and the attention kernel only
      // where it was not kept (kernel_list.cpp, kept_by_selective_op).
      if (checkpointed(shape, i)) {
        rerun_block(pieces, early_stop_skips_last(shape, lc.m));
        for (std::size_t j = 0; j < pieces.size(); ++j)
          pieces[j].keep_for_selective_op(kept[j].first, kept[j].second, keeps_attention);
      }
    } else if (checkpointed(shape, i)) {
      for (auto& p : pieces) recomputed[i] += p.act, p.act = 0;
      pieces.front().act = m.hidden * c.stream / c.sp;  // the block input (its sequence shard), kept by the checkpoint
      // Compiled, the recompute is fused into the backward's kernels: it materializes only what the
      // backward's GEMMs and attention kernel read, the set a compiled block keeps without checkpointing.
      if (shape.impl.compiled)
        recomputed[i] = std::min(recomputed[i], compiled_block_reads(lc, shape, pieces) - pieces.front().act);
      rerun_block(pieces, early_stop_skips_last(shape, lc.m));
    } else if (shape.impl.compiled) {
      const double kept = compiled_block_reads(lc, shape, pieces);
      double eager = 0;
      for (const auto& p : pieces) eager += p.act;
      if (eager > 0)
        for (auto& p : pieces) p.act *= kept / eager;
    }
    layers.push_back(std::move(pieces));
  }
  // A whole block as one unit (block and torchtitan wrapping), with its norms.
  auto block_unit = [&](const char* prefix, int i) {
    Piece block = named(fmt::format("{}.{}", prefix, i), UnitKind::Block, i);
    for (const auto& p : layers[std::size_t(i)]) block += p;
    block.u.params += detail::block_norms(m) * norm;
    block.u.norm_params += detail::block_norms(m) * norm;
    block.transient += recomputed[std::size_t(i)] + work[std::size_t(i)];
    return finish(std::move(block));
  };
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
    for (int i = 0; i < m.layers; ++i) units.push_back(block_unit("layers", i));
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
    for (int i = 0; i < m.layers; ++i) units.push_back(block_unit("block", i));
    for (auto& u : units) u.gemm_width = m.hidden;
    attach_kernels(units, m, policy, shape);
    return units;
  }

  Piece root = named("root", UnitKind::Root, -1);
  root.u.params = root.u.norm_params = (std::int64_t(detail::block_norms(m)) * m.layers + 1) * norm;
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
      p.transient += recomputed[i] + p.work;
      units.push_back(finish(std::move(p)));
    }
  if (!m.tied_embeddings) units.push_back(finish(std::move(lm_head)));
  for (auto& u : units) u.gemm_width = m.hidden;
  attach_kernels(units, m, policy, shape);
  return units;
}

}  // namespace tagcsim::models
