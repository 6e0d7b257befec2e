// A mixture of experts' MLP as unit pieces (the router, the experts' gate and up, their down
// projection, and the shared experts): what each runs, keeps and re-runs, for units.cpp; the
// kernels themselves are kernel_builder_moe.cpp's.
#include "models/unit_pieces.hpp"

namespace tagcsim::models::detail {

std::vector<UnitPiece> moe_pieces(const Ctx& c, int i) {
  const auto& m = c.m;
  const double h = m.hidden, f = double(m.ffn), E = m.experts, Tk = c.tokens * m.experts_per_token;
  const double e = c.e, tke = Tk * e;  // bytes of one Tk-row element
  const double re = c.expert_rows * e;  // ... of one row element this GPU's experts run
  const std::string pre = fmt::format("layers.{}.", i);
  UnitPiece router = named(pre + "mlp.router", UnitKind::MlpUp, i);
  router.u.params = router.u.mlp_params = detail::router_params(m);
  router.gemm = 2.0 * c.tokens * h * detail::router_width(m);
  router.mem_fwd = 2 * h * c.stream + c.tokens * E * (e + 4 + 8 + 4) + Tk * (12 + 8 + 24) + 2 * h * tke;
  router.mem_bwd = 3 * h * c.stream + c.tokens * E * (4 + 12 + 4 + e) + 12 * Tk + (2 * Tk * e + 2 * c.tokens * e) * h;
  router.act = c.norm_saved() + 4 * c.tokens * E + 12 * Tk;
  router.kf = 1 + 1 + 6, router.kb = 2 + 6;  // ln_2, GEMM, cast/softmax/topk/counts/argsort/permute
  if (c.impl.router_fp32) {  // the gate under fp32 autocast: its input and weight cast, their gradients back
    const double w = detail::router_width(m);
    router.mem_fwd += (c.e + 4) * (c.tokens + w) * h, router.mem_bwd += (4 + c.e) * (c.tokens + w) * h;
    router.kf += 1, router.kb += 1;  // two casts each way in place of the scores' one
  }
  router.mms = {{router.gemm, c.tokens * E * e, false}};  // the gate: re-run by selective_op, not counted
  router.op_saved = 12 * Tk;                              // ... which keeps the top-k scores and ids
  if (c.ep > 1) {  // the tokens received from the all-to-all gathered into local-expert order, and back
    router.mem_fwd += 2 * h * re, router.mem_bwd += 2 * h * re;
    router.kf += 1, router.kb += 1;
    // ... and the all-to-alls' outputs, which the per-op policy keeps (unless the run's list did not
    // name them): the counts, the rows this GPU's experts received, their outputs come home.
    if (!c.impl.selective_op_recomputes_all_to_all) router.op_saved += 8 * E + h * re + h * tke;
  }
  UnitPiece up = named(pre + "mlp.experts.gate_up", UnitKind::MlpUp, i);
  // This GPU's experts: all E, or E / ep under expert parallelism (the same Tk rows reach them).
  const std::int64_t local = m.experts / std::int64_t(c.ep);
  up.u.params = up.u.mlp_params = up.u.expert_params = local * detail::expert_up_params(m);
  up.gemm = 2.0 * Tk * h * 2 * f;  // the model's FLOPs (MFU): the busiest GPU's extra rows are others' fewer
  up.mem_fwd = 5 * f * re;  // silu, mul
  up.mem_bwd = 9 * f * re;
  up.act = h * re + 3 * f * re;  // permuted input, g, silu(g), u
  up.work = (h + 3 * f) * re;
  up.kf = 2 + 2, up.kb = 4 + 3;
  if (m.swiglu_limit > 0) {  // gpt-oss's clamped SwiGLU, eager (kernel_builder_moe.cpp): one GEMM, 7 ops
    up.mem_fwd = 18 * f * re, up.mem_bwd = 44 * f * re;
    up.act = h * re + 6 * f * re;  // permuted input, x (gate and up), clamped glu, sigmoid, glu product, linear + 1
    up.kf = 1 + 7, up.kb = 2 + 14;
  }
  if (m.expert_bias) {  // gathered to the rows and added; its gradient an index_add
    up.mem_fwd += 8 * f * re, up.mem_bwd += 2 * f * re;
    up.kf += 4, up.kb += 2;
  }
  up.mms = {{up.gemm / 2, f * re, false}, {up.gemm / 2, f * re, false}};  // torch._grouped_mm: re-run
  UnitPiece down = named(pre + "mlp.experts.down", UnitKind::MlpDown, i);
  down.u.params = down.u.mlp_params = down.u.expert_params = local * detail::expert_down_params(m);
  down.gemm = 2.0 * Tk * f * h;
  down.mem_fwd = 4 * h * tke + 2 * h * c.elem + 3 * h * c.stream;  // scores' product, scatter back, residual
  down.mem_bwd = 7 * h * tke + 3 * h * c.stream;
  down.act = f * re + h * tke + 4 * Tk;  // the product, the experts' output (back home), the scores
  down.kf = 1 + 4, down.kb = 2 + 4;
  down.mms = {{down.gemm, h * re, false}};
  if (m.expert_bias) {  // gathered to the rows and added; its gradient an index_add
    down.mem_fwd += 4 * h * re, down.mem_bwd += h * re;
    down.kf += 4, down.kb += 2;
  }
  if (c.ep > 1) {  // the experts' output scattered back to the order the all-to-all returns it in
    down.mem_fwd += 2 * h * re, down.mem_bwd += 2 * h * re;
    down.kf += 1, down.kb += 1;
  }
  if (m.shared_experts == 0) return {std::move(router), std::move(up), std::move(down)};
  // The shared experts: a dense SwiGLU of s = shared_experts x ffn over the T tokens.
  const double s = double(detail::shared_ffn(m));
  auto shared_gate = linear(c, pre + "mlp.shared.gate", UnitKind::MlpUp, i, m.hidden, detail::shared_ffn(m));
  auto shared_up = linear(c, pre + "mlp.shared.up", UnitKind::MlpUp, i, m.hidden, detail::shared_ffn(m));
  shared_up.mem_fwd = 5 * s * c.elem, shared_up.mem_bwd = 9 * s * c.elem;  // silu, mul
  shared_up.act = 3 * s * c.elem;  // g, silu(g), u
  elementwise(shared_up, 2);
  auto shared_down = linear(c, pre + "mlp.shared.down", UnitKind::MlpDown, i, detail::shared_ffn(m), m.hidden);
  shared_down.mem_fwd = 3 * h * c.elem;  // the add to the routed experts' output
  shared_down.act = s * c.elem;          // the product
  elementwise(shared_down, 1);
  return {std::move(router), std::move(shared_gate), std::move(shared_up), std::move(shared_down), std::move(up),
          std::move(down)};
}

}  // namespace tagcsim::models::detail
