// The kernels of each FSDP unit, as eager PyTorch (or torch.compile) launches them.
//
// Per micro-batch of T = micro_batch * seq tokens, hidden h, KV width kv, FFN width f, vocab V,
// heads a, head dim d, e bytes per activation element (2 in bf16); bytes are reads plus writes.
// Every Linear is a forward GEMM (T, out, in), a dgrad (T, in, out) and a wgrad (out, in, T);
// the attention core one flash-attention call each way with its helper kernels; the rest are
// memory-bound kernels by the bytes they move, eager (one kernel per PyTorch op) or compiled (one
// per element-wise chain). docs/compute-model.md, "The kernels of a unit", is the table of every
// kernel and its bytes, with the PyTorch code each follows; detail::Builder (kernel_builder.hpp)
// writes it down, and this file assembles its pieces into each unit's lists.
//
// Which unit runs what follows units.cpp: ln_1 with the q (or fused qkv) projection, rotary on q
// with q and on k with k, the attention core and the first residual with the out projection,
// ln_2 and the activation with the first MLP Linear, the second residual with the last; outside
// the blocks the embeddings, then the final norm, the head and the loss.
#include "models/kernel_list.hpp"

#include "models/kernel_builder.hpp"
#include "models/shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

namespace tagcsim::models {

double Kernel::flops() const {
  switch (kind) {
    case KernelKind::Gemm: return 2.0 * m * n * k;
    case KernelKind::Attention: {
      const double keys = causal ? detail::causal_keys_per_query(seq, window, document) : seq;
      const double fwd = 4.0 * batch_heads * seq * keys * head_dim / query_shards;
      return backward ? 2.5 * fwd : fwd;
    }
    case KernelKind::Memory: return 0;
  }
  return 0;
}

bool checkpointed(const TrainingShape& shape, int layer) {
  if (!shape.activation_checkpointing) return false;
  const double p = std::clamp(shape.impl.checkpoint_fraction, 0.0, 1.0);
  // Block i is checkpointed when the running count floor((i+1) p) steps up at i: p = 1 takes
  // every block, p = 0.5 every second one (1, 3, 5, ...), p = 0.25 every fourth.
  return std::floor((layer + 1) * p + 1e-9) > std::floor(layer * p + 1e-9);
}

namespace {

using detail::Builder;
using Piece = detail::KernelPiece;

void tag(std::vector<Kernel>& list, Pass pass) {
  for (auto& k : list) k.pass = pass;
}

// What torchtitan's op-level selective checkpointing keeps from a block's forward instead of
// re-running it (_save_list and _custom_policy in torchtitan/parallelisms/parallelize_llama.py
// @9dec370; for a mixture of experts, _get_save_ops and _apply_op_sac in
// torchtitan/distributed/activation_checkpoint.py @0014ac2): every aten.mm's output but every
// second one's (the 1st, 3rd, ... the block counts), the SDPA flash kernel's, aten.abs / aten.max
// (float8's amax reductions) and aten.topk (the router's choice). The router gate's mm is re-run
// and not counted (per_op_sac_force_recompute_mm_shapes_by_fqns: ["moe.router.gate"]); a float8
// Linear's aten._scaled_mm and the experts' torch._grouped_mm are not aten.mm, never counted,
// always re-run. The rest of the forward runs again: norms, rotary, activations, residuals, float8
// casts, the token permutation. Under expert parallelism the policy keeps the host's copy of the
// token counts (torchtitan#1672 on) and every all-to-all's output, the counts' and the rows' both
// ways: the re-run exchanges nothing (sim/model_parallel.cpp), unless the run's list did not name
// them (selective_op_recomputes_all_to_all).
bool counted_mm(const Kernel& k) { return k.kind == KernelKind::Gemm && !k.fp8 && !k.grouped && k.op != "mlp.router"; }

bool kept_by_selective_op(const Kernel& k, int mm_ordinal, bool keeps_attention) {
  if (k.kind == KernelKind::Attention) return keeps_attention;
  if (k.kind == KernelKind::Gemm) return counted_mm(k) && mm_ordinal % 2 == 1;
  return k.op.find(" fp8 amax ") != std::string::npos || k.op == "router topk";
}

int counted_mms(const Piece& p) {
  return int(std::count_if(p.fwd.begin(), p.fwd.end(), counted_mm));
}

// How a unit's backward re-runs its forward under activation checkpointing.
struct Recompute {
  bool on = false;
  // The unit's last piece is its block's last, and the re-run stops once the backward has every
  // tensor it saved back (checkpoint_early_stop): only that piece's early_stop_forward kernels run.
  bool early_stop = false;
  bool by_op = false;           // torchtitan's selective_op: not what kept_by_selective_op keeps
  bool keeps_attention = true;  // ... and its save list names the attention kernel's op
  int mms_before = 0;           // the aten.mm the policy counted in the block before the unit's first piece
};

// One unit's lists from its pieces: forward in order, backward in reverse piece order, and
// under checkpointing the forward again at the start of backward; with early stop, without what
// follows the last tensor the backward saved (a dense block's down projection).
std::shared_ptr<const UnitKernels> assemble(const std::vector<Piece>& pieces, Recompute recompute = {}) {
  auto u = std::make_shared<UnitKernels>();
  for (const auto& p : pieces) u->forward.insert(u->forward.end(), p.fwd.begin(), p.fwd.end());
  tag(u->forward, Pass::Forward);
  if (recompute.on) {
    int mm = recompute.mms_before;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const auto& fwd = pieces[i].fwd;
      const bool stops = recompute.early_stop && i + 1 == pieces.size();
      const std::size_t n = stops ? std::min(pieces[i].early_stop_forward, fwd.size()) : fwd.size();
      for (std::size_t j = 0; j < n; ++j) {
        Kernel k = fwd[j];
        if (counted_mm(k)) ++mm;
        if (recompute.by_op) {
          if (kept_by_selective_op(k, mm, recompute.keeps_attention)) continue;
          // The policy keeps every CUDA-to-CPU copy: the token counts are not read back again.
          k.host_sync = false;
        }
        u->backward.push_back(std::move(k));
      }
    }
    tag(u->backward, Pass::Recompute);
    u->recomputes = true;
  }
  for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
    std::vector<Kernel> b = it->bwd;
    tag(b, Pass::Backward);
    u->backward.insert(u->backward.end(), b.begin(), b.end());
  }
  return u;
}

// In units.cpp's order: separate q/k/v for the Llama layout, one fused Linear otherwise; a mixture
// of experts' router and experts in place of the MLP's Linears.
std::vector<Piece> layer_pieces(Builder& b, const TransformerConfig& m) {
  std::vector<Piece> out;
  if (detail::mla(m))
    out = {b.mla_q(), b.mla_kv_a(), b.mla_kv_b(), b.out()};
  else if (detail::llama_layout(m))
    out = {b.q(), b.k(), b.v(), b.out()};
  else
    out = {b.qkv_fused(), b.out()};
  if (detail::moe(m)) {
    out.push_back(b.router());
    if (m.shared_experts > 0) {
      out.push_back(b.shared_gate_up());
      out.push_back(b.shared_down());
    }
    out.push_back(b.experts_gate_up());
    out.push_back(b.experts_down());
    return out;
  }
  if (m.gated_mlp) {
    out.push_back(b.gate());
    out.push_back(b.up());
  } else {
    out.push_back(b.fc());
  }
  out.push_back(b.down());
  return out;
}

}  // namespace

std::vector<std::shared_ptr<const UnitKernels>> unit_kernels(const TransformerConfig& m, WrapPolicy policy,
                                                            const TrainingShape& shape) {
  Builder b(m, shape);
  const Recompute block_recompute{true, shape.impl.rerun_stops_early(), shape.impl.selective_op,
                                  !shape.impl.selective_op_recomputes_attention, 0};
  // Blocks come in up to four kinds of pieces: with a sliding window or not (their attention kernel
  // differs), and a mixture of experts' dense blocks (those of a dense model of their width).
  const TransformerConfig dense = detail::dense_view(m);
  Builder dense_b(dense, shape);
  std::map<std::pair<bool, bool>, std::vector<Piece>> pieces;  // (windowed, dense)
  auto pieces_for = [&](bool windowed, bool is_dense) -> const std::vector<Piece>& {
    auto& p = pieces[{windowed, is_dense}];
    if (p.empty()) {
      Builder& builder = is_dense ? dense_b : b;
      builder.set_window(windowed ? m.sliding_window : 0);
      p = layer_pieces(builder, is_dense ? dense : m);
      builder.set_window(0);
    }
    return p;
  };
  // Block i's kind: (windowed attention, re-run under checkpointing, dense among experts); each
  // kind's lists are built once, when a block first needs them.
  using Kind = std::tuple<bool, bool, bool>;
  auto kind_of = [&](int i) {
    return Kind{detail::attention_window(m, i) > 0, checkpointed(shape, i), detail::moe(m) && !detail::moe_layer(m, i)};
  };
  auto pieces_of = [&](const Kind& k) -> const std::vector<Piece>& { return pieces_for(std::get<0>(k), std::get<2>(k)); };
  std::vector<std::shared_ptr<const UnitKernels>> out;

  std::map<Kind, std::shared_ptr<const UnitKernels>> blocks;
  auto block = [&](int i) {
    const Kind k = kind_of(i);
    auto& list = blocks[k];
    if (!list) list = std::get<1>(k) ? assemble(pieces_of(k), block_recompute) : assemble(pieces_of(k));
    return list;
  };

  if (policy == WrapPolicy::Torchtitan) {
    // torchtitan's fully_shard layout: the token embedding, each block, then [norm, output].
    std::vector<Piece> emb = {b.token_embedding()};
    if (m.learned_positions > 0) emb.push_back(b.position_embedding());
    out.push_back(assemble(emb));
    for (int i = 0; i < m.layers; ++i) out.push_back(block(i));
    out.push_back(assemble({b.head()}));
    return out;
  }

  if (policy == WrapPolicy::Block) {
    std::vector<Piece> root = {b.token_embedding()};
    if (m.learned_positions > 0) root.push_back(b.position_embedding());
    root.push_back(b.head());
    out.push_back(assemble(root));
    for (int i = 0; i < m.layers; ++i) out.push_back(block(i));
    return out;
  }

  // Size policy: the root holds only norms, whose work runs with their neighbours.
  out.push_back(assemble({}));
  std::vector<Piece> wte = {b.token_embedding()};
  if (m.tied_embeddings) wte.push_back(b.head());
  out.push_back(assemble(wte));
  if (m.learned_positions > 0) out.push_back(assemble({b.position_embedding()}));
  using Lists = std::vector<std::shared_ptr<const UnitKernels>>;
  auto per_piece = [&](const std::vector<Piece>& pieces, bool rerun) {
    Lists lists;
    int mms_before = 0;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      // Each Linear's unit re-runs its own piece; with early stop the down projection's is not re-run.
      const bool last = i + 1 == pieces.size();
      lists.push_back(rerun ? assemble({pieces[i]}, {!(block_recompute.early_stop && last), false, block_recompute.by_op,
                                                     block_recompute.keeps_attention, mms_before})
                            : assemble({pieces[i]}));
      mms_before += counted_mms(pieces[i]);
    }
    return lists;
  };
  std::map<Kind, Lists> piece_lists;
  for (int i = 0; i < m.layers; ++i) {
    const Kind k = kind_of(i);
    auto& kind = piece_lists[k];
    if (kind.empty()) kind = per_piece(pieces_of(k), std::get<1>(k));
    out.insert(out.end(), kind.begin(), kind.end());
  }
  if (!m.tied_embeddings) out.push_back(assemble({b.head()}));
  return out;
}

}  // namespace tagcsim::models
