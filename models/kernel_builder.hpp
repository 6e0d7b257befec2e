// Internal to models/: the kernels of each piece of a unit (a Linear with what runs next to it),
// as eager PyTorch (or torch.compile) launches them; kernel_list.cpp assembles them into units'
// lists. The table of every kernel and its bytes is docs/compute-model.md, "The kernels of a unit".
#pragma once

#include "models/kernel_list.hpp"
#include "models/shapes.hpp"

#include <string>
#include <vector>

namespace tagcsim::models::detail {

// The kernels of one piece of a unit (a Linear with what runs next to it), forward and backward
// in the order they run.
struct KernelPiece {
  std::vector<Kernel> fwd, bwd;
  // As its block's last piece under checkpoint early stop, how many of its forward kernels the
  // re-run still needs: none for a dense MLP's down projection (only the residual add reads its
  // output); a mixture of experts weighs its experts' outputs by their scores after the experts,
  // and that product's backward reads them, so the re-run goes through it (kernel_builder_moe.cpp).
  std::size_t early_stop_forward = 0;
};

class Builder {
 public:
  Builder(const TransformerConfig& m, const TrainingShape& shape)
      : m_(m), impl_(shape.impl), s_(shape.seq_len > 0 ? shape.seq_len : m.seq_len), cp_(shape.context_parallel),
        b_(shape.micro_batch), T_(double(shape.micro_batch) * s_ / cp_), e_(shape.activation_bytes),
        r_(shape.impl.autocast_casts ? 4 : e_), Tsp_(T_ / shape.tensor_parallel), tp_(shape.tensor_parallel),
        ep_(shape.expert_parallel), rows_(shape.expert_rows(T_, m.experts_per_token)) {
    // A mixture of experts' blocks under torch.compile: as impl.compile_moe says (models/model.hpp).
    if (impl_.compiled && detail::moe(m_)) {
      if (impl_.compile_moe == Implementation::MoeCompile::Eager) impl_.compiled = false;
      submodules_ = impl_.compile_moe == Implementation::MoeCompile::Submodules;
    }
  }

  // The sliding window the next blocks' attention keeps to (0: none); the math path computes the
  // whole score matrix and masks it, so only the flash-style kernels skip what is outside it.
  void set_window(int window) { window_ = impl_.attention == AttentionKernel::Math ? 0 : window; }

  // --- the pieces of a block, as units.cpp cuts them ---
  KernelPiece qkv_fused() {  // GPT-2 / MPT: ln_1 and one Linear h -> h + 2kv, split into q, k, v
    KernelPiece p;
    norm(p, "ln_1");
    const double width = double(detail::q_dim(m_) + 2 * detail::kv_dim(m_));
    // The split's backward concatenates dq, dk, dv into the Linear's output gradient.
    mem(p.bwd, "attn.qkv split bwd", 2 * e_ * T_ * width);
    linear(p, "attn.qkv", m_.hidden, detail::q_dim(m_) + 2 * detail::kv_dim(m_), Bias::Qkv, false, Sublayer::Attention);
    return p;
  }
  KernelPiece q() {  // Llama: ln_1, q, rotary on q
    KernelPiece p;
    norm(p, "ln_1");
    linear(p, "attn.q", m_.hidden, detail::q_dim(m_), Bias::Qkv, false, Sublayer::Attention);
    if (m_.qk_norm) qk_norm(p, "q_norm", q_width(), m_.heads);
    rotary(p, "rotary q", q_width() * qk_gathered());
    return p;
  }
  KernelPiece k() {
    KernelPiece p;
    linear(p, "attn.k", m_.hidden, detail::kv_dim(m_), Bias::Qkv, /*shares_input=*/true, Sublayer::Attention);
    if (m_.qk_norm) qk_norm(p, "k_norm", double(detail::kv_dim(m_)), m_.kv_heads);
    rotary(p, "rotary k", double(detail::kv_dim(m_)) * qk_gathered());
    return p;
  }
  KernelPiece v() {
    KernelPiece p;
    linear(p, "attn.v", m_.hidden, detail::kv_dim(m_), Bias::Qkv, /*shares_input=*/true, Sublayer::Attention);
    return p;
  }
  KernelPiece out() {  // attention core, out projection, first residual
    KernelPiece p;
    attention(p);
    linear(p, "attn.out", detail::attn_out_dim(m_), m_.hidden, Bias::Block, false, Sublayer::Attention);
    if (m_.post_norms) norm(p, "post_attention_norm");
    residual(p, "residual 1");
    return p;
  }
  KernelPiece gate() {  // Llama: ln_2, gate, silu
    KernelPiece p;
    norm(p, "ln_2");
    linear(p, "mlp.gate", m_.hidden, m_.ffn, Bias::Block, false, Sublayer::Mlp);
    if (!impl_.compiled) {
      mem(p.fwd, "silu", 2 * e_ * T_ * f());
      mem(p.bwd, "silu bwd", 3 * e_ * T_ * f());
    }
    return p;
  }
  KernelPiece up() {  // Llama: up, silu(g) * u
    KernelPiece p;
    linear(p, "mlp.up", m_.hidden, m_.ffn, Bias::Block, /*shares_input=*/true, Sublayer::Mlp);
    if (impl_.compiled) {
      swiglu(p, T_);
    } else {  // the silu ran with the gate's piece
      mem(p.fwd, "mul", 3 * e_ * T_ * f());
      mem(p.bwd, "mul bwd", 3 * e_ * T_ * f(), 2);
    }
    return p;
  }
  // silu(g) * u over `rows` rows of `width` (the FFN's): one kernel each way compiled, eager silu and mul.
  void swiglu(KernelPiece& p, double rows, double width = 0) {
    const double n = rows * (width > 0 ? width : f());
    if (impl_.compiled) {
      mem(p.fwd, "swiglu", 3 * e_ * n);
      mem(p.bwd, "swiglu bwd", 5 * e_ * n);
      return;
    }
    mem(p.fwd, "silu", 2 * e_ * n);
    mem(p.fwd, "mul", 3 * e_ * n);
    mem(p.bwd, "mul bwd", 3 * e_ * n, 2);
    mem(p.bwd, "silu bwd", 3 * e_ * n);
  }
  // --- latent attention's projections, for q, k and v (models/kernel_builder_mla.cpp) ---
  KernelPiece mla_q();     // ln_1, q (directly or through its normed latent), rotary on q's rotary part
  KernelPiece mla_kv_a();  // the latent and k's shared rotary part, the latent's norm, rotary
  KernelPiece mla_kv_b();  // each head's k and v from the latent, K joined with the rotary part
  // --- a mixture of experts' MLP (models/kernel_builder_moe.cpp) ---
  KernelPiece router();           // ln_2, the router, softmax and top-k in fp32, the tokens sorted by expert
  KernelPiece experts_gate_up();  // the experts' gate and up projections, SwiGLU
  KernelPiece experts_down();     // the experts' down projection, weighted by the scores, scattered back
  KernelPiece shared_gate_up();   // the shared experts' gate and up projections over every token, SwiGLU
  KernelPiece shared_down();      // their down projection, added to the routed experts' output
  void expert_bias(KernelPiece& p, const std::string& name, double width);  // gpt-oss's, gathered to the rows
  void clamped_swiglu(KernelPiece& p, double n);                            // gpt-oss's, op by op

  KernelPiece fc() {  // GPT-2 / MPT: ln_2, up, GELU
    KernelPiece p;
    norm(p, "ln_2");
    linear(p, "mlp.fc", m_.hidden, m_.ffn, Bias::Block, false, Sublayer::Mlp);
    mem(p.fwd, "gelu", 2 * e_ * T_ * f());
    mem(p.bwd, "gelu bwd", 3 * e_ * T_ * f());
    return p;
  }
  KernelPiece down() {  // down projection, second residual
    KernelPiece p;
    linear(p, "mlp.down", m_.ffn, m_.hidden, Bias::Block, false, Sublayer::Mlp);
    if (m_.post_norms) norm(p, "post_mlp_norm");
    residual(p, "residual 2");
    return p;
  }

  // --- outside the blocks ---
  KernelPiece token_embedding() {
    KernelPiece p;
    // In the parameters' dtype: under autocast the fp32 weight gives an fp32 residual stream.
    const double h = m_.hidden, V = double(m_.vocab);
    mem(p.fwd, "embedding", 2 * r_ * T_ * h);
    mem(p.bwd, "embedding bwd zero", r_ * V * h);
    mem(p.bwd, "embedding bwd sort", 16 * T_, 3);
    mem(p.bwd, "embedding bwd scatter", 2 * r_ * T_ * h);
    if (m_.tied_embeddings) mem(p.bwd, "tied grad accumulate", 3 * r_ * V * h);
    return p;
  }
  KernelPiece position_embedding() {
    KernelPiece p;
    const double h = m_.hidden, P = m_.learned_positions;
    mem(p.fwd, "position embedding", 2 * r_ * s_ * h);
    mem(p.fwd, "add positions", 3 * r_ * T_ * h);
    mem(p.bwd, "positions grad sum", r_ * (T_ + s_) * h);
    mem(p.bwd, "position embedding bwd", r_ * P * h + 2 * r_ * s_ * h, 2);
    return p;
  }
  KernelPiece head() {  // final norm, output projection, loss
    KernelPiece p;
    norm(p, "ln_f");
    const int n = std::max(1, impl_.loss_chunks);
    if (n == 1) {
      head_slice(p);
      return p;
    }
    // ChunkedCELoss (impl.loss_chunks): the projection and the loss of one slice of the sequence at
    // a time, so each GEMM has 1/n of the tokens.
    KernelPiece slice;
    const double T = T_, Tsp = Tsp_;
    T_ /= n, Tsp_ /= n;
    head_slice(slice);
    T_ = T, Tsp_ = Tsp;
    const double h = m_.hidden, V = double(m_.vocab);
    // torch.chunk along the sequence of [b, s, h] is a strided view unless b is 1; .contiguous() copies it.
    if (b_ > 1) mem(p.fwd, "loss slices contiguous", 2 * e_ * T_ * h);
    for (int i = 0; i < n; ++i) {
      p.fwd.insert(p.fwd.end(), slice.fwd.begin(), slice.fwd.end());
      p.bwd.insert(p.bwd.end(), slice.bwd.begin(), slice.bwd.end());
      // The gathered weight's gradient, in the parameters' dtype, summed over the slices by autograd;
      // the slice's hidden-state gradient written into the fp32 accumulator.
      if (i > 0) mem(p.bwd, "lm_head grad accumulate", 3 * r_ * V * h);
      mem(p.bwd, "hidden grad accumulate", (e_ + 4) * T_ / n * h);
    }
    mem(p.bwd, "hidden grad to bf16", (4 + e_) * T_ * h);
    return p;
  }

 private:
  // The output projection and the loss over T_ tokens.
  void head_slice(KernelPiece& p) {
    linear(p, "lm_head", m_.hidden, m_.vocab, Bias::None, false, Sublayer::None);
    // The loss's logits: this rank's vocabulary slice under loss parallelism, all of them when the
    // head gathers them first (tp_plan: per_linear).
    const double vocab = double(m_.vocab) * (impl_.tp_plan == Implementation::TpPlan::PerLinear ? tp_ : 1);
    const double TV = T_ * vocab;
    // Gemma 2's cap, c tanh(logits / c), on the 16-bit logits: eager a division, tanh and product
    // each way; compiled one kernel each way, or inside the compiled loss's.
    if (m_.logit_softcap && !impl_.compiled) {
      for (const char* op : {"softcap div", "softcap tanh", "softcap mul"}) mem(p.fwd, op, 2 * e_ * TV);
      mem(p.bwd, "softcap mul bwd", 2 * e_ * TV);
      mem(p.bwd, "softcap tanh bwd", 3 * e_ * TV);
      mem(p.bwd, "softcap div bwd", 2 * e_ * TV);
    } else if (m_.logit_softcap && !impl_.compiled_loss) {
      mem(p.fwd, "softcap", 2 * e_ * TV);
      mem(p.bwd, "softcap bwd", 3 * e_ * TV);
    }
    if (impl_.cross_entropy == Implementation::CrossEntropy::Fused || impl_.compiled_loss) {
      mem(p.fwd, "cross_entropy", e_ * TV);
      mem(p.fwd, "loss mean", 8 * T_);
      mem(p.bwd, "cross_entropy bwd", 2 * e_ * TV);
    } else if (loss_parallel()) {
      // DTensor's loss parallelism (torch/distributed/tensor/parallel/loss.py) runs its own Python
      // for the vocabulary slice: _log_softmax as max, subtract, exp, sum and subtract, each
      // element-wise over the fp32 logits (the max and the sum all-reduced over the TP group), and
      // backward one fused nll/log_softmax step, (zeros with the targets' -1 + exp(out)) * grad.
      mem(p.fwd, "logits to fp32", (e_ + 4) * TV);
      mem(p.fwd, "log_softmax max", 4 * TV);
      mem(p.fwd, "log_softmax shift", 8 * TV);
      mem(p.fwd, "log_softmax exp", 8 * TV);
      mem(p.fwd, "log_softmax sum", 4 * TV);
      mem(p.fwd, "log_softmax subtract", 8 * TV);
      mem(p.fwd, "nll_loss", 16 * T_, 2);
      mem(p.bwd, "nll_loss bwd zeros", 4 * TV);
      mem(p.bwd, "nll_loss bwd scatter", 16 * T_);
      mem(p.bwd, "log_softmax bwd exp", 8 * TV);
      mem(p.bwd, "log_softmax bwd add", 12 * TV);
      mem(p.bwd, "log_softmax bwd mul", 8 * TV);
      mem(p.bwd, "logits grad to bf16", (4 + e_) * TV);
    } else if (impl_.cross_entropy == Implementation::CrossEntropy::Bf16) {
      // F.cross_entropy on the 16-bit logits: no cast either way, every pass at their width.
      mem(p.fwd, "log_softmax", 2 * e_ * TV);
      mem(p.fwd, "nll_loss", 16 * T_, 2);
      mem(p.bwd, "nll_loss bwd", e_ * TV);
      mem(p.bwd, "nll_loss bwd scatter", 16 * T_);
      mem(p.bwd, "log_softmax bwd", 3 * e_ * TV);
    } else {
      mem(p.fwd, "logits to fp32", (e_ + 4) * TV);
      mem(p.fwd, "log_softmax", 8 * TV);
      mem(p.fwd, "nll_loss", 16 * T_, 2);
      mem(p.bwd, "nll_loss bwd", 4 * TV);
      mem(p.bwd, "nll_loss bwd scatter", 16 * T_);
      mem(p.bwd, "log_softmax bwd", 12 * TV);
      mem(p.bwd, "logits grad to bf16", (4 + e_) * TV);
    }
    // Training metrics on the logits, after the micro-batch's backward under no_grad: each an eager
    // cross-entropy (log_softmax over the 16-bit logits, written out, then the NLL sum).
    for (int i = 0; i < impl_.logit_metrics; ++i) {
      mem(p.bwd, "metric log_softmax", 2 * e_ * TV);
      mem(p.bwd, "metric nll", 16 * T_);
    }
  }

  double f() const { return double(m_.ffn); }
  double h() const { return double(m_.hidden); }
  double q_width() const { return double(detail::q_dim(m_)); }  // q (and the attention output, but under MLA)
  // Under loss parallelism an eager loss runs DTensor's Python for the vocabulary slice.
  bool loss_parallel() const { return impl_.loss_parallel(tp_); }
  // All of the TP group's heads under tp_qk_norm: no_parallel, else this GPU's.
  double qk_gathered() const { return impl_.qk_gathered(tp_); }
  double out_width() const { return double(detail::attn_out_dim(m_)); }  // the attention output

  void mem(std::vector<Kernel>& to, std::string op, double bytes, int count = 1) {
    for (int i = 0; i < count; ++i) {
      Kernel k;
      k.kind = KernelKind::Memory;
      k.op = op;
      k.bytes = bytes;
      to.push_back(std::move(k));
    }
  }
  // One torch._grouped_mm over the experts, its groups stacked (Kernel::groups).
  void grouped_gemm(std::vector<Kernel>& to, std::string op, double m, double n, double k) {
    gemm(to, std::move(op), m, n, k);
    to.back().groups = local_experts();
    to.back().grouped = true;
  }
  void gemm(std::vector<Kernel>& to, std::string op, double m, double n, double k, bool fp8 = false) {
    Kernel g;
    g.kind = KernelKind::Gemm;
    g.op = std::move(op);
    g.m = m, g.n = n, g.k = k;
    g.fp8 = fp8;
    to.push_back(std::move(g));
  }

  // Which Linears have a bias: every one but the head with `bias: true`; q, k and v also with
  // `bias: qkv` (Qwen2's); the head never.
  enum class Bias { Block, Qkv, None };

  // Where in a block a Linear sits: its tensor-parallel collectives are the sublayer's.
  enum class Sublayer { None, Attention, Mlp };
  // How tensor parallelism splits a Linear (both false without it).
  struct Parallel {
    bool column = false, row = false;
  };

  // shares_input: the Linear reads the same tensor as the one before it (k and v after q, up after
  // gate), whose float8 casts a compiled block computes once (common subexpressions are merged).
  void linear(KernelPiece& p, const std::string& name, std::int64_t in, std::int64_t out, Bias bias,
              bool shares_input, Sublayer sublayer) {
    const double i = double(in), o = double(out);
    const bool fp8 = impl_.float8_linears && name != "lm_head";
    // Under tensor parallelism: a column-parallel Linear reads the gathered sequence; a row-parallel
    // one's output is reduce-scattered to the sequence shards and its gradient gathered back.
    const Parallel tp{.column = Tsp_ < T_ && in == m_.hidden, .row = Tsp_ < T_ && out == m_.hidden};
    // torchao casts a column-parallel Linear's input once, before the all-gather
    // (PrepareFloat8ModuleInput), eager or compiled.
    const bool cast_input = !((impl_.compiled || tp.column) && shares_input);
    // The block collective its forward GEMM (and a row-parallel one's dgrad) sits beside.
    const bool attention = sublayer == Sublayer::Attention;
    const TpSite site = sublayer == Sublayer::None ? TpSite::None
                        : tp.column                ? (attention ? TpSite::AttentionIn : TpSite::MlpIn)
                        : tp.row                   ? (attention ? TpSite::AttentionOut : TpSite::MlpOut)
                                                   : TpSite::None;
    if (fp8) float8_casts(p.fwd, name, i, o, false, cast_input, tp);
    // autocast's weight cast: reads the fp32 weight, writes its 16-bit copy. A Linear reading a
    // norm's fp32 output casts that too, each Linear its own copy (autocast caches only leaf
    // tensors' casts; a compiled block makes one copy, inside the norm's kernel); backward casts
    // the input's gradient back to fp32.
    const bool casts_input = impl_.autocast_casts && !impl_.compiled && reads_norm(name);
    if (impl_.autocast_casts) mem(p.fwd, name + " autocast weight cast", (4 + e_) * i * o);
    if (casts_input) mem(p.fwd, name + " autocast input cast", (4 + e_) * T_ * i);
    gemm(p.fwd, name, T_, o, i, fp8);
    p.fwd.back().tp_site = site;
    if (fp8) float8_casts(p.bwd, name, i, o, true, cast_input, tp);
    gemm(p.bwd, name + " dgrad", T_, i, o, fp8);
    if (tp.row) p.bwd.back().tp_site = site;
    gemm(p.bwd, name + " wgrad", o, i, T_, fp8);
    if (impl_.autocast_casts) mem(p.bwd, name + " autocast weight grad cast", (e_ + 4) * i * o);
    if (casts_input) mem(p.bwd, name + " autocast input grad cast", (e_ + 4) * T_ * i);
    // The bias add rides in the GEMM's epilogue; its gradient is a reduction over the tokens.
    const bool biased = bias == Bias::Qkv ? detail::qkv_biased(m_) : bias == Bias::Block && m_.bias;
    if (biased) mem(p.bwd, name + " bias grad", e_ * T_ * o);
  }

  // torchao's Float8Linear casts around a Linear's GEMMs (tensorwise dynamic scaling, eager or compiled,
  // under tensor parallelism too): models/kernel_builder_float8.cpp.
  void float8_casts(std::vector<Kernel>& to, const std::string& name, double i, double o, bool backward,
                    bool cast_input, Parallel tp);

  // Qwen3's RMSNorm on each head of q or k (`heads` rows of head_dim a token). Compiled, it joins
  // the rotary kernel after it both ways, leaving the weight gradient's reduction; eager, it runs
  // op by op as the block norms do.
  void qk_norm(KernelPiece& p, const std::string& name, double width, int heads) {
    if (impl_.compiled) {
      mem(p.bwd, name + " weight grad", 2 * e_ * T_ * width);
      return;
    }
    rms_norm_eager(p, name, T_ * width, T_ * heads, e_);
  }

  // A norm on the residual stream (r_ bytes an element: fp32 under autocast, whose fp32 embedding
  // output promotes every residual add, and layer_norm is on its fp32 list).
  void norm(KernelPiece& p, const std::string& name) {
    const double n = Tsp_ * h();
    if (impl_.compiled && submodules_) {
      // A norm compiled alone (its residual add before it eager): the stream in, the normalized
      // input out, each row's statistics kept; backward as a compiled block's (LayerNorm's native
      // kernels are one each way already).
      if (m_.norm == Norm::RMSNorm) {
        mem(p.fwd, name, (r_ + e_) * n + 4 * Tsp_);
        mem(p.bwd, name + " bwd", (2 * r_ + e_) * n + 4 * Tsp_);
        mem(p.bwd, name + " weight grad", (r_ + e_) * n);
        return;
      }
    } else if (impl_.compiled) {
      // Fused with the residual add before it: the stream and the sub-block's output in, the
      // stream and the normalized input of the next Linears out (16-bit: autocast's cast fused).
      mem(p.fwd, name, (2 * r_ + 2 * e_) * n);
      mem(p.bwd, name + " bwd", (3 * r_ + e_) * n);
      mem(p.bwd, name + " weight grad", (r_ + e_) * n);
      return;
    }
    if (m_.norm == Norm::LayerNorm) {
      mem(p.fwd, name, 2 * r_ * n);
      mem(p.bwd, name + " bwd", 3 * r_ * n);
      mem(p.bwd, name + " weight grad", 2 * r_ * n);
      return;
    }
    rms_norm_eager(p, name, n, Tsp_, r_);
  }

  // RMSNorm as the Python reference implementations write it, op by op in fp32, over n elements
  // in `rows` rows of `in` bytes an element: from 16 bits it casts to fp32 and back (x.float(),
  // type_as(x)); an fp32 input (the stream under autocast) skips both casts, and its weight
  // product runs in fp32.
  void rms_norm_eager(KernelPiece& p, const std::string& name, double n, double rows, double in) {
    if (impl_.fused_rms_norm) {
      // PyTorch's fused kernels: x in, y and the rows' rstd out; backward dy, x and rstd in, dx out,
      // the weight's gradient reduced in the same pass. The output keeps the input's dtype.
      mem(p.fwd, name, 2 * in * n + 4 * rows);
      mem(p.bwd, name + " bwd", 3 * in * n + 4 * rows);
      return;
    }
    const bool cast = in != 4;
    const double y = cast ? e_ : 4;  // the weight product's element
    if (cast) mem(p.fwd, name + " to fp32", (e_ + 4) * n);
    mem(p.fwd, name + " pow", 8 * n);
    mem(p.fwd, name + " mean", 4 * n + 4 * rows);
    mem(p.fwd, name + " add eps", 8 * rows);
    mem(p.fwd, name + " rsqrt", 8 * rows);
    mem(p.fwd, name + " mul", 8 * n + 4 * rows);
    if (cast) mem(p.fwd, name + " to bf16", (4 + e_) * n);
    mem(p.fwd, name + " mul weight", 2 * y * n);
    mem(p.bwd, name + " bwd mul weight", 2 * y * n);
    mem(p.bwd, name + " bwd weight grad mul", 3 * y * n);
    mem(p.bwd, name + " bwd weight grad sum", y * n);
    if (cast) mem(p.bwd, name + " bwd to fp32", (e_ + 4) * n);
    mem(p.bwd, name + " bwd mul", 8 * n);
    mem(p.bwd, name + " bwd rsqrt grad mul", 12 * n);
    mem(p.bwd, name + " bwd rsqrt grad sum", 4 * n);
    mem(p.bwd, name + " bwd rsqrt", 12 * rows, 2);
    mem(p.bwd, name + " bwd mean", 4 * n);
    mem(p.bwd, name + " bwd pow", 8 * n);
    mem(p.bwd, name + " bwd pow mul", 12 * n);
    mem(p.bwd, name + " bwd accumulate", 12 * n);
    if (cast) mem(p.bwd, name + " bwd to bf16", (4 + e_) * n);
  }

  // The stream plus a sub-block's 16-bit output. Under autocast the sum is fp32, and backward casts
  // the stream's gradient to the sub-block output's dtype (autograd's engine casts a gradient to
  // its input's).
  void residual(KernelPiece& p, const std::string& name) {
    if (impl_.compiled && !submodules_) return;  // fused into the next norm
    const double n = Tsp_ * h();
    mem(p.fwd, name, (2 * r_ + e_) * n);
    mem(p.bwd, name + " grad accumulate", 3 * r_ * n);
    if (r_ != e_) mem(p.bwd, name + " grad cast", (r_ + e_) * n);
  }

  // The Linears that read a norm's output (the rest read a 16-bit attention or MLP output).
  static bool reads_norm(const std::string& name) {
    for (const char* n : {"attn.qkv", "attn.q", "attn.k", "attn.v", "attn.q_a", "attn.kv_a", "mlp.gate", "mlp.up",
                          "mlp.fc", "lm_head"})
      if (name == n) return true;
    return false;
  }

  void rotary(KernelPiece& p, const std::string& name, double width) {
    const double n = T_ * width;
    if (impl_.compiled && impl_.rotary == Implementation::Rotary::CosSin) {
      mem(p.fwd, name, 2 * e_ * n);
      mem(p.bwd, name + " bwd", 2 * e_ * n);
      return;
    }
    for (auto* list : {&p.fwd, &p.bwd}) {
      const std::string suffix = list == &p.bwd ? " bwd" : "";
      mem(*list, name + suffix + " to fp32", (e_ + 4) * n);
      mem(*list, name + suffix + " complex mul", 8 * n);
      mem(*list, name + suffix + " to bf16", (4 + e_) * n);
    }
  }

  // The attention kernel forward and backward with the copies around it (GQA's repeat, the output's
  // layout, flash-attn's unpadding): models/kernel_builder_attention.cpp.
  void attention(KernelPiece& p);
  void unpad_qkv(KernelPiece& p, double kv);
  void sinks(KernelPiece& p);

  const TransformerConfig& m_;
  Implementation impl_;
  double s_;
  int cp_;  // context parallelism: this GPU holds 1/cp_ of each sequence's tokens
  int window_ = 0;
  int b_;
  double T_, e_;
  double r_;    // the residual stream's element (and the fp32 parameters' under autocast): e_, or 4 under autocast
  double Tsp_;  // the tokens of one sequence shard under tensor parallelism: the norms' and residuals'
  int tp_;      // tensor parallelism's degree
  int ep_;      // expert parallelism's degree: this GPU runs experts / ep_ of them
  bool submodules_ = false;  // a compiled mixture of experts' block, compiled child by child (compile_moe)
  // Whether the experts' element-wise work runs compiled: under submodules only the generic
  // experts' function is, not gpt-oss's (its biases or clamped SwiGLU).
  bool experts_compiled() const {
    return impl_.compiled && !(submodules_ && (m_.expert_bias || m_.swiglu_limit > 0));
  }
  double rows_;  // the rows this GPU's experts run (TrainingShape::expert_rows)
  double local_experts() const { return double(m_.experts / ep_); }
};

}  // namespace tagcsim::models::detail
