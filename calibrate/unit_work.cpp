#include "calibrate/unit_work.hpp"

#include "models/shapes.hpp"

#include <set>
#include <tuple>

namespace tagcsim::calibrate {
namespace {

struct Linear {
  std::string name;
  double in = 0, out = 0;
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The linears of one transformer block, as models/units.cpp lays them out.
std::vector<Linear> block_linears(const models::TransformerConfig& m) {
  const double h = m.hidden, kv = double(models::detail::kv_dim(m)), f = double(m.ffn);
  std::vector<Linear> out;
  if (models::detail::llama_layout(m)) out = {{"attn.q", h, h}, {"attn.k", h, kv}, {"attn.v", h, kv}, {"attn.o", h, h}};
  else out = {{"attn.c_attn", h, h + 2 * kv}, {"attn.c_proj", h, h}};
  if (m.gated_mlp) out.insert(out.end(), {{"mlp.gate", h, f}, {"mlp.up", h, f}, {"mlp.down", f, h}});
  else out.insert(out.end(), {{"mlp.c_fc", h, f}, {"mlp.c_proj", f, h}});
  return out;
}

// The linears a unit of the Size wrap (one module) or a head-carrying unit holds.
std::vector<Linear> unit_linears(const models::TransformerConfig& m, const models::FsdpUnit& u) {
  using models::UnitKind;
  const double h = m.hidden, V = double(m.vocab);
  switch (u.kind) {
    case UnitKind::Block: return block_linears(m);
    case UnitKind::AttentionQKV:
    case UnitKind::AttentionOut:
    case UnitKind::MlpUp:
    case UnitKind::MlpDown:
      for (const auto& l : block_linears(m))
        if (ends_with(u.name, "." + l.name)) return {l};
      return {};
    // The output projection lives on the root (block wrap), on wte when tied (size wrap), or on
    // its own unit; a unit carries it exactly when it has GEMM FLOPs.
    case UnitKind::Root:
    case UnitKind::Embedding:
    case UnitKind::LmHead:
      if (u.forward_flops * u.gemm_fraction > 0) return {{"lm_head", h, V}};
      return {};
    case UnitKind::PositionEmbedding: return {};
  }
  return {};
}

bool has_attention_core(const models::FsdpUnit& u) {
  return u.kind == models::UnitKind::Block || u.kind == models::UnitKind::AttentionOut;
}

}  // namespace

UnitWork unit_work(const models::TransformerConfig& model, const models::FsdpUnit& unit, const sim::Training& t) {
  const double seq = t.seq_len > 0 ? t.seq_len : model.seq_len;
  const double T = double(t.micro_batch) * seq;
  UnitWork w;
  for (const auto& l : unit_linears(model, unit)) {
    w.forward.push_back({T, l.out, l.in, l.name + " fwd"});
  }
  if (has_attention_core(unit))
    w.attention = AttentionShape{double(t.micro_batch) * model.heads, seq, double(models::detail::head_dim(model)),
                                 model.kv_heads, true};
  // Checkpointed blocks (and their pieces) recompute their forward in backward.
  w.recompute = t.activation_checkpointing && unit.layer >= 0;
  if (w.recompute) w.backward = w.forward;
  for (const auto& l : unit_linears(model, unit)) {
    w.backward.push_back({T, l.in, l.out, l.name + " dgrad"});
    w.backward.push_back({l.in, l.out, T, l.name + " wgrad"});
  }
  w.forward_bytes = unit.forward_memory_bytes;
  w.backward_bytes = unit.backward_memory_bytes;
  return w;
}

std::vector<GemmShape> distinct_gemms(const models::TransformerConfig& model,
                                      const std::vector<models::FsdpUnit>& units, const sim::Training& t) {
  std::vector<GemmShape> out;
  std::set<std::tuple<double, double, double>> seen;
  auto add = [&](const GemmShape& g) {
    if (seen.insert({g.m, g.n, g.k}).second) out.push_back(g);
  };
  for (const auto& u : units) {
    const auto w = unit_work(model, u, t);
    for (const auto& g : w.forward) add(g);
    for (const auto& g : w.backward) add(g);
  }
  return out;
}

}  // namespace tagcsim::calibrate
