#include "calibrate/unit_work.hpp"

#include "common/input.hpp"

#include <fmt/format.h>

#include <numeric>
#include <set>
#include <tuple>

namespace tagcsim::calibrate {
namespace {

PassWork split(const std::vector<models::Kernel>& list) {
  PassWork w;
  for (const auto& k : list) switch (k.kind) {
      case models::KernelKind::Gemm: w.gemms.push_back(k); break;
      case models::KernelKind::Attention: w.attention.push_back(k); break;
      case models::KernelKind::Memory: w.memory_bytes.push_back(k.bytes); break;
    }
  return w;
}

}  // namespace

double PassWork::bytes() const { return std::accumulate(memory_bytes.begin(), memory_bytes.end(), 0.0); }

const models::UnitKernels& kernels_of(const models::FsdpUnit& unit) {
  if (!unit.kernels)
    throw InputError(fmt::format("unit '{}' has no kernel list (the simulator times it from its FLOPs: wrap: "
                                 "torchtitan, or a unit built by hand), so calibrate cannot run its kernels; use wrap: "
                                 "block or size",
                                 unit.name));
  return *unit.kernels;
}

UnitWork unit_work(const models::FsdpUnit& unit) {
  const auto& k = kernels_of(unit);
  return {split(k.forward), split(k.backward), k.recomputes};
}

std::vector<models::Kernel> distinct_gemms(const std::vector<models::FsdpUnit>& units) {
  std::vector<models::Kernel> out;
  std::set<std::tuple<double, double, double>> seen;
  for (const auto& u : units) {
    if (!u.kernels) continue;
    const auto& k = *u.kernels;
    for (const auto* list : {&k.forward, &k.backward})
      for (const auto& g : *list)
        if (g.kind == models::KernelKind::Gemm && seen.insert({g.m, g.n, g.k}).second) out.push_back(g);
  }
  return out;
}

std::vector<models::Kernel> distinct_attention(const std::vector<models::FsdpUnit>& units) {
  std::vector<models::Kernel> out;
  std::set<std::tuple<double, double, double, bool>> seen;
  for (const auto& u : units)
    if (u.kernels)
      for (const auto& a : u.kernels->forward)
        if (a.kind == models::KernelKind::Attention && seen.insert({a.batch_heads, a.seq, a.head_dim, a.causal}).second)
          out.push_back(a);
  return out;
}

}  // namespace tagcsim::calibrate
