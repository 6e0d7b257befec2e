// `tagcsim validate --kernels`: the device profiles' kernel times against measurements they were
// not built from (docs/compute-model.md, "How well the profiles time kernels").
#include "scenarios/kernel_validation.hpp"

#include "common/input.hpp"
#include "common/quantiles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace tagcsim::scenarios {
namespace {

using sim::KernelProfile;

// The profile as measured: no fitted training scale, no what-if device scale.
KernelProfile raw(const KernelProfile& p) {
  KernelProfile q = p;
  q.fitted = {};
  q.device = {};
  return q;
}

// What the profile's GEMM model gives for a measured point's shape (KernelProfile::gemm_seconds,
// with the point's batch).
double gemm_model_time(const KernelProfile& p, const KernelProfile::GemmPoint& q, bool fp8) {
  const double model = fp8 ? p.fp8_gemm_model_seconds(q.m, q.n, q.k, q.batch)
                           : p.gemm_model_seconds(q.m, q.n, q.k, q.batch, sim::Dtype::BF16, false);
  return std::max(model / p.gemm_correction(q.m, q.n, q.k, q.batch, fp8), p.min_kernel_seconds);
}

std::string gemm_shape(const KernelProfile::GemmPoint& q) {
  const std::string mnk = fmt::format("{:g} x {:g} x {:g}", q.m, q.n, q.k);
  return q.batch > 1 ? fmt::format("{:g} x ({})", q.batch, mnk) : mnk;
}

KernelCheck gemm_check(const KernelProfile& p, const KernelProfile::GemmPoint& q, bool fp8) {
  return {.profile = p.name, .kind = fp8 ? "gemm fp8" : "gemm bf16", .shape = gemm_shape(q), .source = q.source,
          .measured_seconds = q.seconds};
}

// TFLOP/s of a measured attention curve's direction, from the profile's per-direction rates.
double attention_rate(const KernelProfile& p, const KernelProfile::AttentionCurve& c, double seq) {
  const auto rate = [&](bool backward) { return p.attention_tflops(c.kernel, backward, seq, c.head_dim, c.causal); };
  if (c.direction == "fwd") return rate(false);
  if (c.direction == "bwd") return rate(true);
  return 3.5 / (1 / rate(false) + 2.5 / rate(true));  // fwd+bwd: the backward does 2.5x the forward's FLOPs
}

std::string attention_shape(const KernelProfile::AttentionCurve& c, double seq) {
  return fmt::format("{} {} {} hd{:g} seq {:g}", models::to_string(c.kernel), c.direction,
                     c.causal ? "causal" : "non-causal", c.head_dim, seq);
}

// Whether a point's source text names `source` (a derived point, "model: <id> x <id> / <id>", names
// every measurement it came from).
bool names(const std::string& text, const std::string& source) {
  for (auto at = text.find(source); at != std::string::npos; at = text.find(source, at + 1)) {
    const auto end = at + source.size();
    if (end == text.size() || !std::isalnum(static_cast<unsigned char>(text[end]))) return true;
  }
  return false;
}

bool derived(const std::string& source) { return source.rfind("model:", 0) == 0; }

}  // namespace

std::string gemm_point_source(const std::string& s) {
  if (s.rfind("measured:", 0) == 0) return s.substr(0, s.find(',', s.find(',') + 1));
  const auto dash = s.rfind('-');
  if (dash == std::string::npos) return s;
  const std::string last = s.substr(dash + 1);
  const bool shape = !last.empty() && std::all_of(last.begin(), last.end(), [](unsigned char ch) {
    return std::isdigit(ch) || ch == 'x';
  });
  return shape ? s.substr(0, dash) : s;
}

std::string attention_point_source(const std::string& s) {
  if (s.rfind("measured:", 0) == 0) return gemm_point_source(s);
  std::size_t dash = s.find('-');  // the id up to its third dash: "attn", the GPU, the reference
  for (int more = 2; more > 0 && dash != std::string::npos; --more) dash = s.find('-', dash + 1);
  return dash == std::string::npos ? s : s.substr(0, dash);
}

std::vector<KernelCheck> attention_leave_one_source_out(const KernelProfile& profile) {
  const KernelProfile p = raw(profile);
  std::map<std::string, KernelProfile> held_out;  // by source: the profile without its points
  const auto without_source = [&](const std::string& source) -> const KernelProfile& {
    if (auto it = held_out.find(source); it != held_out.end()) return it->second;
    KernelProfile without = p;
    auto& curves = without.attention.curves;
    for (auto& o : curves)
      o.points.erase(std::remove_if(o.points.begin(), o.points.end(),
                                    [&](const auto& q) { return names(q.source, source); }),
                     o.points.end());
    curves.erase(std::remove_if(curves.begin(), curves.end(), [](const auto& o) { return o.points.empty(); }),
                 curves.end());
    return held_out.emplace(source, std::move(without)).first->second;
  };
  std::vector<KernelCheck> out;
  for (const auto& c : p.attention.curves)
    for (const auto& pt : c.points) {
      if (derived(pt.source)) continue;
      const KernelProfile& without = without_source(attention_point_source(pt.source));
      KernelCheck check{.profile = p.name, .kind = "attention", .shape = attention_shape(c, pt.seq),
                        .source = pt.source, .measured_seconds = 1 / pt.tflops};
      if (without.has_attention(c.kernel)) check.predicted_seconds = 1 / attention_rate(without, c, pt.seq);
      out.push_back(check);
    }
  return out;
}

std::vector<KernelCheck> gemm_leave_one_source_out(const KernelProfile& profile) {
  const KernelProfile p = raw(profile);
  std::vector<KernelCheck> out;
  for (const bool fp8 : {false, true}) {
    const auto& points = fp8 ? p.gemm.fp8_points : p.gemm.points;
    for (const auto& q : points) {
      const std::string source = gemm_point_source(q.source);
      KernelProfile without = p;
      for (auto* list : {&without.gemm.points, &without.gemm.fp8_points})
        list->erase(std::remove_if(list->begin(), list->end(),
                                   [&](const auto& o) { return gemm_point_source(o.source) == source; }),
                    list->end());
      auto check = gemm_check(p, q, fp8);
      // A float8 GEMM borrows the 16-bit points' corrections when no float8 point is left.
      if (!without.gemm.points.empty() || (fp8 && !without.gemm.fp8_points.empty()))
        check.predicted_seconds = gemm_model_time(without, q, fp8);
      out.push_back(check);
    }
  }
  return out;
}

std::vector<KernelCheck> predict_measured(const KernelProfile& shipped_profile, const KernelProfile& measured) {
  const KernelProfile p = raw(shipped_profile);
  // A box profile carries the shipped curves it did not measure (with their published ids): those
  // would check the profile against itself.
  const auto own = [](const std::string& source) { return source.rfind("measured:", 0) == 0; };
  std::vector<KernelCheck> out;
  for (const bool fp8 : {false, true})
    for (const auto& q : fp8 ? measured.gemm.fp8_points : measured.gemm.points) {
      if (!own(q.source)) continue;
      auto check = gemm_check(p, q, fp8);
      if (!fp8 || p.peak.fp8 > 0) check.predicted_seconds = gemm_model_time(p, q, fp8);
      out.push_back(check);
    }
  for (const auto& c : measured.attention.curves)
    for (const auto& pt : c.points) {
      if (!own(pt.source)) continue;
      KernelCheck check{.profile = p.name, .kind = "attention", .shape = attention_shape(c, pt.seq),
                        .source = pt.source, .measured_seconds = 1 / pt.tflops};
      if (p.has_attention(c.kernel)) check.predicted_seconds = 1 / attention_rate(p, c, pt.seq);
      out.push_back(check);
    }
  return out;
}

std::string format_kernel_checks(const std::string& title, const std::vector<KernelCheck>& checks) {
  std::string out = fmt::format("# {}\n# error = model time / measured time - 1 (attention: measured / model TFLOP/s - 1)\n",
                                title);
  out += fmt::format("{:<18} {:<10} {:<44} {:>9}  {:<}\n", "profile", "kind", "shape", "error", "source");
  std::map<std::pair<std::string, std::string>, std::vector<double>> by;
  std::map<std::pair<std::string, std::string>, int> unpredicted;
  for (const auto& c : checks) {
    const auto key = std::make_pair(c.profile, c.kind);
    if (!c.predicted()) {
      ++unpredicted[key];
      out += fmt::format("{:<18} {:<10} {:<44} {:>9}  {}\n", c.profile, c.kind, c.shape, "-", c.source);
      continue;
    }
    by[key].push_back(std::abs(c.error()));
    out += fmt::format("{:<18} {:<10} {:<44} {:>+8.1f}%  {}\n", c.profile, c.kind, c.shape, 100 * c.error(), c.source);
  }
  out += fmt::format("\n# Summary: |error| per profile and kind\n{:<18} {:<10} {:>5} {:>8} {:>8} {:>8} {:>12}\n",
                     "profile", "kind", "n", "median", "p90", "max", "unpredicted");
  std::vector<double> all;
  std::map<std::string, std::vector<double>> by_family;  // "gemm" (bf16 and fp8), "attention"
  for (const auto& [key, errors] : by) {
    all.insert(all.end(), errors.begin(), errors.end());
    auto& family = by_family[key.second.substr(0, key.second.find(' '))];
    family.insert(family.end(), errors.begin(), errors.end());
    out += fmt::format("{:<18} {:<10} {:>5} {:>7.1f}% {:>7.1f}% {:>7.1f}% {:>12}\n", key.first, key.second,
                       errors.size(), 100 * median(errors), 100 * nearest_rank(errors, 0.9),
                       100 * nearest_rank(errors, 1.0), unpredicted[key]);
  }
  for (const auto& [key, n] : unpredicted)
    if (!by.count(key)) out += fmt::format("{:<18} {:<10} {:>5} {:>8} {:>8} {:>8} {:>12}\n", key.first, key.second, 0, "-", "-", "-", n);
  const auto total = [&](const std::string& kind, const std::vector<double>& errors) {
    out += fmt::format("{:<18} {:<10} {:>5} {:>7.1f}% {:>7.1f}% {:>7.1f}%\n", "all", kind, errors.size(),
                       100 * median(errors), 100 * nearest_rank(errors, 0.9), 100 * nearest_rank(errors, 1.0));
  };
  if (by_family.size() > 1)
    for (const auto& [family, errors] : by_family) total(family, errors);
  total("", all);
  return out;
}

}  // namespace tagcsim::scenarios
