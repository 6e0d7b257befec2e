// Timing attention kernels from a device profile's curves (docs/compute-model.md).
//
// TFLOP/s by sequence length, linear in log(seq) between points (flat outside, but a causal
// curve past its end keeps closing in on the non-causal one), linear in log(head dim) between the
// curves of neighbouring head dims (the nearest outside). A direction not measured comes from the
// others: forward + backward minus forward (or backward), else the measured direction times the
// profile's backward/forward rate ratio. A causality not measured comes from the other at the
// causal / non-causal ratio of the curves measured both ways.
#include "sim/kernel_profile.hpp"

#include "common/input.hpp"
#include "models/kernel_list.hpp"
#include "sim/log_interp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace tagcsim::sim {
namespace {

// TFLOP/s of one curve at `seq`: linear in log(seq), flat outside the measured range (but see
// causal_rate).
double curve_rate(const KernelProfile::AttentionCurve& c, double seq) {
  const auto& p = c.points;
  if (seq <= p.front().seq) return p.front().tflops;
  if (seq >= p.back().seq) return p.back().tflops;
  std::size_t i = 0;
  while (p[i + 1].seq < seq) ++i;
  return lerp_log(seq, p[i].seq, p[i + 1].seq, p[i].tflops, p[i + 1].tflops);
}

// A causal curve past its last point. A causal kernel skips the tiles above the diagonal and masks
// the ones on it; the diagonal's share of the work falls as the sequence grows, so the causal rate
// keeps closing in on the non-causal one. Its gap, 1 - causal / non-causal, shrinks per doubling of
// the sequence as it did between the curve's last two points (for FlashAttention-1 on A100 at head
// dim 64: 16% at 8k, 12% at 16k). Without a non-causal curve to close in on, flat.
double causal_rate(const KernelProfile& prof, const KernelProfile::AttentionCurve& c, double seq) {
  const auto& p = c.points;
  const KernelProfile::AttentionCurve* open = nullptr;
  for (const auto& o : prof.attention.curves)
    if (!o.causal && o.kernel == c.kernel && o.direction == c.direction && o.head_dim == c.head_dim) open = &o;
  if (seq <= p.back().seq || !open || p.size() < 2) return curve_rate(c, seq);
  const auto& last = p.back();
  const auto& prev = p[p.size() - 2];
  const double gap_last = 1 - last.tflops / curve_rate(*open, last.seq);
  const double gap_prev = 1 - prev.tflops / curve_rate(*open, prev.seq);
  if (!(gap_last > 0 && gap_prev > gap_last)) return curve_rate(c, seq);
  const double per_doubling = std::pow(gap_last / gap_prev, 1 / std::log2(last.seq / prev.seq));
  return curve_rate(*open, seq) * (1 - gap_last * std::pow(per_doubling, std::log2(seq / last.seq)));
}

// TFLOP/s measured for this kernel, direction and causality at (seq, head_dim), if any curve has it.
std::optional<double> measured_rate(const KernelProfile& prof, models::AttentionKernel kernel,
                                    const std::string& direction, bool causal, double seq, double head_dim) {
  const KernelProfile::AttentionCurve *below = nullptr, *above = nullptr;
  for (const auto& c : prof.attention.curves) {
    if (c.kernel != kernel || c.direction != direction || c.causal != causal) continue;
    if (c.head_dim <= head_dim && (!below || c.head_dim > below->head_dim)) below = &c;
    if (c.head_dim >= head_dim && (!above || c.head_dim < above->head_dim)) above = &c;
  }
  if (!below && !above) return std::nullopt;
  const auto rate = [&](const KernelProfile::AttentionCurve& c) {
    return c.causal ? causal_rate(prof, c, seq) : curve_rate(c, seq);
  };
  if (!below) return rate(*above);
  if (!above) return rate(*below);
  return lerp_log(head_dim, below->head_dim, above->head_dim, rate(*below), rate(*above));
}

// Forward (or backward) TFLOP/s from whatever directions were measured, per unit of forward FLOPs
// the backward does 2.5x the work: time(fwd+bwd) = 3.5 F / R_c = F / R_f + 2.5 F / R_b.
std::optional<double> direction_rate(const KernelProfile& prof, models::AttentionKernel kernel, bool backward,
                                     bool causal, double seq, double hd) {
  const double rho = prof.attention.bwd_fwd_rate_ratio;
  const auto fwd = measured_rate(prof, kernel, "fwd", causal, seq, hd);
  const auto bwd = measured_rate(prof, kernel, "bwd", causal, seq, hd);
  const auto both = measured_rate(prof, kernel, "fwd+bwd", causal, seq, hd);
  if (!backward) {
    if (fwd) return fwd;
    if (both && bwd) {
      const double t = 3.5 / *both - 2.5 / *bwd;
      if (t > 0) return 1 / t;
    }
    if (both) return *both * (1 + 2.5 / rho) / 3.5;
    if (bwd) return *bwd / rho;
    return std::nullopt;
  }
  if (bwd) return bwd;
  if (both && fwd) {
    const double t = 3.5 / *both - 1 / *fwd;
    if (t > 0) return 2.5 / t;
  }
  if (both) return rho * *both * (1 + 2.5 / rho) / 3.5;
  if (fwd) return rho * *fwd;
  return std::nullopt;
}

// Causal over non-causal TFLOP/s at (seq, head_dim), from directions measured both ways. A tiled
// kernel skips the blocks above the diagonal and masks those on it, so its causal rate trails the
// non-causal one by a share that shrinks as the sequence grows: 0.59-0.76 at 512 tokens, 0.84-0.94
// at 8k for FlashAttention-2 and -3, cuDNN and Triton's kernel, forward and backward, on A100 and
// H100 (the shipped profiles). The kernel's own directions first, else the geometric mean over the
// profile's other tiled kernels; never math's, which computes every score and masks after.
std::optional<double> causal_ratio(const KernelProfile& prof, models::AttentionKernel kernel, double seq, double hd) {
  using models::AttentionKernel;
  double log_sum = 0;
  int n = 0;
  std::vector<AttentionKernel> seen;
  const auto add = [&](AttentionKernel k) {
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) return;
    seen.push_back(k);
    for (const char* direction : {"fwd", "bwd", "fwd+bwd"}) {
      const auto causal = measured_rate(prof, k, direction, true, seq, hd);
      const auto open = measured_rate(prof, k, direction, false, seq, hd);
      if (causal && open) log_sum += std::log(*causal / *open), ++n;
    }
  };
  add(kernel);
  if (n == 0 && kernel != AttentionKernel::Math)
    for (const auto& c : prof.attention.curves)
      if (c.kernel != AttentionKernel::Math) add(c.kernel);
  if (n == 0) return std::nullopt;
  return std::exp(log_sum / n);
}

}  // namespace

bool KernelProfile::has_attention(models::AttentionKernel kernel) const {
  return std::any_of(attention.curves.begin(), attention.curves.end(),
                     [&](const auto& c) { return c.kernel == kernel; });
}

std::vector<std::string> KernelProfile::attention_kernels() const {
  std::vector<std::string> out;
  for (const auto& c : attention.curves) {
    const std::string k = models::to_string(c.kernel);
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}

double KernelProfile::attention_tflops(models::AttentionKernel kernel, bool backward, double seq, double head_dim,
                                       bool causal) const {
  // The causality asked for first; a kernel measured only the other way stands in for it, at the
  // causal / non-causal ratio of the curves measured both ways (docs/compute-model.md).
  if (auto r = direction_rate(*this, kernel, backward, causal, seq, head_dim)) return *r;
  if (auto r = direction_rate(*this, kernel, backward, !causal, seq, head_dim)) {
    const double ratio = causal_ratio(*this, kernel, seq, head_dim).value_or(1);
    return causal ? *r * ratio : *r / ratio;
  }
  std::string have;
  for (const auto& k : attention_kernels()) have += (have.empty() ? "" : ", ") + k;
  throw InputError(fmt::format("{}: kernel profile '{}' has no {} attention curves (it has: {})", file, name,
                               models::to_string(kernel), have.empty() ? "none" : have));
}

double KernelProfile::attention_seconds(models::AttentionKernel kernel, bool backward, double batch_heads, double seq,
                                        double head_dim, bool causal, double window, double query_shards,
                                        double document) const {
  models::Kernel k;
  k.kind = models::KernelKind::Attention;
  k.batch_heads = batch_heads, k.seq = seq, k.head_dim = head_dim, k.causal = causal, k.backward = backward;
  k.window = window;
  k.query_shards = query_shards;
  auto rate_at = [&](double s, bool c) {
    return attention_tflops(kernel, backward, s, head_dim, c) * 1e12 * fitted.tensor_scale * device.tensor;
  };
  if (query_shards > 1 && causal) {
    // PyTorch's load-balanced context parallel (_templated_ring_attention): step 0 is the GPU's own
    // chunk, causal, s/c x s/c; each of the c - 1 others half a block, non-causal (all its queries
    // against half the chunk's keys, or half its queries against all of them): 1/c of the GPU's
    // work each.
    const double c = query_shards, share = k.flops() / c;
    const double diagonal = share / rate_at(seq / c, true);
    const double blocks = (c - 1) * share / rate_at(seq / (2 * c), false);
    return std::max(diagonal + blocks, c * min_kernel_seconds);
  }
  if (causal && document > 0 && document < seq) {
    // Documents packed into the sequence, each attending within itself: seq / d causal sequences of
    // d tokens, each with its diagonal's masked tiles, so at the causal rate of d tokens. flash-attn's
    // varlen call tiles each document from its own start. FlexAttention's block mask tiles the
    // sequence in 128 x 128 blocks from its start (torch.nn.attention.flex_attention's
    // _DEFAULT_SPARSE_BLOCK_SIZE): a document that starts anywhere in a block touches, on average,
    // the blocks of an aligned one 128 tokens longer, all computed.
    constexpr double kFlexBlock = 128;
    const double d = kernel == models::AttentionKernel::Flex ? std::min(seq, document + kFlexBlock) : document;
    models::Kernel doc = k;
    doc.seq = d, doc.batch_heads = batch_heads * seq / document, doc.document = 0;
    return std::max(doc.flops() / rate_at(window > 0 && window < d ? window : d, true), min_kernel_seconds);
  }
  // Within a window w < seq, each query block loops over about w keys, and the masked tiles (the
  // band's two edges) are the same share of its work as the diagonal is of a causal sequence of w
  // tokens: the causal curve's rate at w, not at seq.
  const double rate_seq = causal && window > 0 && window < seq ? window : seq;
  const double rate = rate_at(rate_seq, causal);
  return std::max(k.flops() / rate, min_kernel_seconds);
}

}  // namespace tagcsim::sim
