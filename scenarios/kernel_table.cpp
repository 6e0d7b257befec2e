// `tagcsim run --kernels`: the kernels behind a step's compute time, unit kind by unit kind, each
// with its shape and the time the GPU's profile gives it. Nothing here is new arithmetic: the
// times are sim::unit_compute's, split open so that a user can see which kernel a prediction
// rests on.
#include "scenarios/report.hpp"

#include "sim/compute.hpp"

#include <fmt/format.h>

#include <map>

namespace tagcsim::scenarios {
namespace {

const char* kind_name(models::KernelKind k) {
  return k == models::KernelKind::Gemm ? "gemm" : k == models::KernelKind::Attention ? "attention" : "memory";
}
const char* pass_name(models::Pass p) {
  return p == models::Pass::Forward ? "forward" : p == models::Pass::Backward ? "backward" : "recompute";
}

std::string shape_of(const models::Kernel& k) {
  switch (k.kind) {
    case models::KernelKind::Gemm: return fmt::format("{:g} x {:g} x {:g}", k.m, k.n, k.k);
    case models::KernelKind::Attention:
      return fmt::format("{:g} seqs x {:g} x d{:g}{}{}{}{}{}", k.batch_heads, k.seq, k.head_dim, k.causal ? " causal" : "",
                         k.kv_heads > 0 && k.kv_heads * 1.0 < k.batch_heads ? fmt::format(" kv{}", k.kv_heads) : "",
                         k.window > 0 ? fmt::format(" window {:g}", k.window) : "",
                         k.document > 0 ? fmt::format(" in {:g}-token documents", k.document) : "",
                         k.query_shards > 1 ? fmt::format(", 1/{:g} of the queries", k.query_shards) : "");
    case models::KernelKind::Memory:
      return fmt::format("{:.3g} MB{}", k.bytes / 1e6, k.host_sync ? ", the host reads back" : "");
  }
  return "";
}

// Seconds per category, for the totals.
struct Sums {
  double gemm = 0, attention = 0, memory = 0;
  double all() const { return gemm + attention + memory; }
  void add(models::KernelKind k, double s) {
    (k == models::KernelKind::Gemm ? gemm : k == models::KernelKind::Attention ? attention : memory) += s;
  }
};

}  // namespace

std::string kernel_table(const sim::StepSetup& setup) {
  const auto& t = setup.training;
  const auto& gpu = setup.cluster.gpu;
  const sim::KernelProfile* prof = sim::device_kernel_profile(gpu);
  std::string out = fmt::format("kernels of one micro-batch ({} x {} tokens) per unit kind, on {}: {}\n", t.micro_batch,
                                t.seq_len, gpu.name, sim::compute_model_description(gpu));
  if (!prof) return out + "no kernel profile: every unit is timed by the datasheet roofline, kernel by kernel it is not\n";
  auto seconds = [&](const models::Kernel& k) {  // the call sim::unit_compute makes for each kernel
    return prof->kernel_seconds(k, t.impl.attention, t.compute_dtype(), t.tf32);
  };

  // Units of one kind share one kernel list: print each list once, with the units it serves.
  std::map<const models::UnitKernels*, std::vector<const models::FsdpUnit*>> kinds;
  std::vector<const models::UnitKernels*> order;
  for (const auto& u : setup.units) {
    if (!u.kernels) continue;
    auto& users = kinds[u.kernels.get()];
    if (users.empty()) order.push_back(u.kernels.get());
    users.push_back(&u);
  }
  Sums step;
  for (const auto* list : order) {
    const auto& users = kinds[list];
    out += fmt::format("\n{} ({} unit{}{})\n", users.front()->name, users.size(), users.size() == 1 ? "" : "s",
                       users.size() > 1 ? fmt::format(", to {}", users.back()->name) : "");
    out += fmt::format("  {:<9} {:<30} {:<9} {:<34} {:>9} {:>10} {:>8} {:>8}\n", "pass", "op", "kind", "shape",
                       "GFLOP", "time (us)", "TFLOP/s", "GB/s");
    Sums unit;
    std::size_t launches = 0;
    for (const auto* pass : {&list->forward, &list->backward})
      for (const auto& k : *pass) {
        const double s = seconds(k);
        launches += std::size_t(prof->launches(k));
        unit.add(k.kind, s);
        const double f = k.flops();
        // PyTorch's fallback runs a grouped GEMM as one mm a group, after reading the offsets back.
        const std::string shape =
            prof->per_group(k) ? fmt::format("{}, {} mm after a read back", shape_of(k), k.groups) : shape_of(k);
        out += fmt::format("  {:<9} {:<30} {:<9} {:<34} {:>9.2f} {:>10.1f} {:>8} {:>8}\n", pass_name(k.pass), k.op,
                           kind_name(k.kind), shape, f / 1e9, s * 1e6,
                           f > 0 ? fmt::format("{:.1f}", f / s / 1e12) : "-",
                           k.kind == models::KernelKind::Memory ? fmt::format("{:.0f}", k.bytes / s / 1e9) : "-");
      }
    out += fmt::format("  per unit: {:.3f} ms = gemm {:.3f} + attention {:.3f} + memory-bound {:.3f} ({} kernels)\n",
                       unit.all() * 1e3, unit.gemm * 1e3, unit.attention * 1e3, unit.memory * 1e3, launches);
    const double n = double(users.size());
    step.gemm += n * unit.gemm, step.attention += n * unit.attention, step.memory += n * unit.memory;
  }
  const double mb = t.grad_accumulation;
  out += fmt::format(
      "\nper step ({} micro-batch{} x every unit): {:.3f} s of kernels = gemm {:.3f} s ({:.0f}%), attention {:.3f} s "
      "({:.0f}%), memory-bound {:.3f} s ({:.0f}%); FSDP's own copies and the optimizer are the schedule's tasks "
      "(docs/compute-model.md)\n",
      t.grad_accumulation, t.grad_accumulation == 1 ? "" : "es", mb * step.all(), mb * step.gemm,
      100 * step.gemm / step.all(), mb * step.attention, 100 * step.attention / step.all(), mb * step.memory,
      100 * step.memory / step.all());
  return out;
}

}  // namespace tagcsim::scenarios
