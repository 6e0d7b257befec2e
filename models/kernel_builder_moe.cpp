// The kernels of a mixture of experts' MLP: the pieces kernel_builder.hpp's Builder declares for
// it, beside the dense ones (docs/compute-model.md, "The kernels of a unit").
#include "models/kernel_builder.hpp"

#include <string>

namespace tagcsim::models::detail {

// A mixture of experts' MLP, as torchtitan's MoE runs it: a router, the tokens permuted into
// expert order, one grouped GEMM (torch._grouped_mm) per expert matrix, the outputs weighted by
// their routing scores and scattered back. Routing is taken as balanced (T k / E tokens an
// expert): a grouped GEMM is timed as the GEMM of its groups stacked, the experts' token rows
// (T k x out x in), and its wgrad as their weight gradients stacked (E out x in x T k / E), the
// same FLOPs, at the profile's measured grouped rate (Kernel::groups; sim/kernel_profile.hpp).
// Under expert parallelism over ep GPUs (torchtitan's ExpertParallel) the permuted tokens go to
// their experts' GPUs in an all-to-all and come back in another (sim/model_parallel.cpp): each GPU
// runs its E / ep experts over the rows it receives (T k balanced, the busiest GPU's share with
// training.expert_imbalance: rows_), after gathering them into its experts' order
// (generate_permute_indices), and scatters their outputs back before the return all-to-all. The host reads the token counts back to size the all-to-alls (`.tolist()` of the
// splits): it issues nothing more until the GPU has caught up.
KernelPiece Builder::router() {
  KernelPiece p;
  norm(p, "ln_2");
  const double E = m_.experts, Tk = T_ * m_.experts_per_token, W = detail::router_width(m_);
  // Under fp32 autocast (router_fp32) the input and the weight are cast and the GEMMs run on CUDA
  // cores in fp32, so the scores need no cast of their own.
  const bool fp32 = impl_.router_fp32, scores_cast = !fp32 && !impl_.compiled;
  if (fp32) {
    mem(p.fwd, "router input to fp32", (e_ + 4) * T_ * h());
    mem(p.fwd, "router weight to fp32", (e_ + 4) * W * h());
  }
  gemm(p.fwd, "mlp.router", T_, W, h());
  p.fwd.back().fp32 = fp32;
  if (scores_cast) mem(p.fwd, "router scores to fp32", (e_ + 4) * T_ * E);
  mem(p.fwd, "router softmax", 8 * T_ * E);
  mem(p.fwd, "router topk", 4 * T_ * E + 12 * Tk);
  mem(p.fwd, "tokens per expert", 8 * Tk + 8 * E);
  if (ep_ > 1) p.fwd.back().host_sync = true;
  mem(p.fwd, "routing argsort", 24 * Tk);
  mem(p.fwd, "permute tokens", 2 * e_ * Tk * h());
  if (ep_ > 1) {
    mem(p.fwd, "permute received tokens", 2 * e_ * rows_ * h());
    mem(p.bwd, "permute received tokens bwd", 2 * e_ * rows_ * h());
  }
  // Backward: the permuted rows' gradients scattered onto the tokens (zeroed first), the scores'.
  mem(p.bwd, "permute tokens bwd zero", e_ * T_ * h());
  mem(p.bwd, "permute tokens bwd scatter", (2 * e_ * Tk + e_ * T_) * h());
  mem(p.bwd, "router topk bwd", 4 * T_ * E + 12 * Tk);
  mem(p.bwd, "router softmax bwd", 12 * T_ * E);
  if (scores_cast) mem(p.bwd, "router scores grad to bf16", (4 + e_) * T_ * E);
  gemm(p.bwd, "mlp.router dgrad", T_, h(), W);
  p.bwd.back().fp32 = fp32;
  gemm(p.bwd, "mlp.router wgrad", W, h(), T_);
  p.bwd.back().fp32 = fp32;
  if (fp32) {  // the gradients cast back to the bf16 input and weight
    mem(p.bwd, "router input grad to bf16", (4 + e_) * T_ * h());
    mem(p.bwd, "router weight grad to bf16", (4 + e_) * W * h());
  }
  return p;
}
KernelPiece Builder::experts_gate_up() {
  KernelPiece p;
  const double E = local_experts(), R = rows_;
  if (m_.swiglu_limit > 0) {  // gpt-oss: gate and up interleaved in one matrix, mlp1
    grouped_gemm(p.fwd, "mlp.experts.mlp1 (grouped)", R, 2 * f(), h());
    expert_bias(p, "mlp1", 2 * f());
    clamped_swiglu(p, R * f());
    grouped_gemm(p.bwd, "mlp.experts.mlp1 dgrad (grouped)", R, h(), 2 * f());
    grouped_gemm(p.bwd, "mlp.experts.mlp1 wgrad (grouped)", E * 2 * f(), h(), R / E);
    return p;
  }
  for (const std::string w : {"mlp.experts.gate", "mlp.experts.up"}) {
    grouped_gemm(p.fwd, w + " (grouped)", R, f(), h());
    grouped_gemm(p.bwd, w + " dgrad (grouped)", R, h(), f());
    grouped_gemm(p.bwd, w + " wgrad (grouped)", E * f(), h(), R / E);
  }
  expert_bias(p, "mlp1", 2 * f());
  swiglu(p, R);
  return p;
}

// gpt-oss's expert biases (TransformerConfig::expert_bias), as torchtitan's
// _run_experts_grouped_mm adds them: the bias table with a zero row for the padding
// (torch.cat), repeat_interleave'd to the rows by the experts' counts (an index, then an
// index_select writing every row's bias) and added to the grouped GEMM's output. Backward,
// index_select's gradient is an index_add of the rows' gradients into a zeroed table (the add
// passes the gradient on as it is). Compiled, the gather and the add join the next element-wise
// kernel, and the gradient's reduction stays a kernel of its own.
void Builder::expert_bias(KernelPiece& p, const std::string& name, double width) {
  if (!m_.expert_bias) return;
  const double E = local_experts(), R = rows_;
  if (!experts_compiled()) {
    mem(p.fwd, name + " bias cat", 2 * e_ * (E + 1) * width);
    mem(p.fwd, name + " bias repeat index", 8 * R + 16 * (E + 1));
    mem(p.fwd, name + " bias gather", e_ * R * width + 8 * R);
    mem(p.fwd, name + " bias add", 3 * e_ * R * width);
    mem(p.bwd, name + " bias grad zeros", e_ * (E + 1) * width);
  }
  mem(p.bwd, name + " bias grad index_add", e_ * R * width + 8 * R);
}

// gpt-oss's clamped SwiGLU over n elements (rows x ffn) of the mlp1 output's 2n, as its reference
// code and torchtitan write it: x_glu, x_linear = x[..., ::2], x[..., 1::2] (strided views, whose
// reads touch every element of x), each clamped, glu * sigmoid(1.702 glu) * (linear + 1), op by
// op; backward each op's gradient, the two clamps' masks (reading x again), and each slice's
// gradient scattered into a zeroed tensor as wide as x, the two then summed. Compiled, one kernel
// each way as the plain SwiGLU: x in, the product out; x and the product's gradient in, x's out.
void Builder::clamped_swiglu(KernelPiece& p, double n) {
  if (experts_compiled()) return swiglu(p, n, 1);
  mem(p.fwd, "swiglu clamp glu", 3 * e_ * n);
  mem(p.fwd, "swiglu clamp linear", 3 * e_ * n);
  mem(p.fwd, "swiglu alpha mul", 2 * e_ * n);
  mem(p.fwd, "swiglu sigmoid", 2 * e_ * n);
  mem(p.fwd, "swiglu glu mul", 3 * e_ * n);
  mem(p.fwd, "swiglu linear add 1", 2 * e_ * n);
  mem(p.fwd, "swiglu mul", 3 * e_ * n);
  mem(p.bwd, "swiglu mul bwd", 3 * e_ * n, 2);
  mem(p.bwd, "swiglu glu mul bwd", 3 * e_ * n, 2);
  mem(p.bwd, "swiglu sigmoid bwd", 3 * e_ * n);
  mem(p.bwd, "swiglu alpha mul bwd", 2 * e_ * n);
  mem(p.bwd, "swiglu glu grad accumulate", 3 * e_ * n);
  mem(p.bwd, "swiglu clamp bwd", 4 * e_ * n, 2);
  mem(p.bwd, "swiglu slice bwd zeros", 2 * e_ * n, 2);
  mem(p.bwd, "swiglu slice bwd copy", 3 * e_ * n, 2);
  mem(p.bwd, "swiglu slices grad accumulate", 6 * e_ * n);
}
KernelPiece Builder::experts_down() {
  KernelPiece p;
  const double E = local_experts(), Tk = T_ * m_.experts_per_token, R = rows_;
  grouped_gemm(p.fwd, "mlp.experts.down (grouped)", R, h(), f());
  expert_bias(p, "down", h());
  if (ep_ > 1) {
    mem(p.fwd, "unpermute received tokens", 2 * e_ * R * h());
    mem(p.bwd, "unpermute received tokens bwd", 2 * e_ * R * h());
  }
  mem(p.fwd, "routing scores mul", 3 * e_ * Tk * h());
  p.early_stop_forward = p.fwd.size();  // the product's backward reads the experts' outputs
  mem(p.fwd, "unpermute zero", e_ * T_ * h());
  mem(p.fwd, "unpermute scatter_add", (e_ * Tk + 2 * e_ * T_) * h());
  mem(p.bwd, "unpermute bwd gather", 2 * e_ * Tk * h());
  mem(p.bwd, "routing scores mul bwd", 3 * e_ * Tk * h());
  mem(p.bwd, "routing scores grad", 2 * e_ * Tk * h());
  grouped_gemm(p.bwd, "mlp.experts.down dgrad (grouped)", R, f(), h());
  grouped_gemm(p.bwd, "mlp.experts.down wgrad (grouped)", E * h(), f(), R / E);
  residual(p, "residual 2");
  return p;
}

// The shared experts: one dense SwiGLU MLP of shared_experts x ffn over every token, reading the
// normed input the router reads; its output joins the routed experts' before the residual.
KernelPiece Builder::shared_gate_up() {
  KernelPiece p;
  const std::int64_t width = detail::shared_ffn(m_);
  linear(p, "mlp.shared.gate", m_.hidden, width, Bias::None, /*shares_input=*/true, Sublayer::Mlp);
  linear(p, "mlp.shared.up", m_.hidden, width, Bias::None, /*shares_input=*/true, Sublayer::Mlp);
  swiglu(p, T_, double(width));
  return p;
}
KernelPiece Builder::shared_down() {
  KernelPiece p;
  linear(p, "mlp.shared.down", detail::shared_ffn(m_), m_.hidden, Bias::None, false, Sublayer::Mlp);
  if (!impl_.compiled) mem(p.fwd, "shared experts add", 3 * e_ * T_ * h());
  return p;
}

}  // namespace tagcsim::models::detail
