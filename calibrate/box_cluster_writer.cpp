// The box as a cluster file: a `cluster:` map that topologies::load_cluster reads as it is, and
// that a scenario names with `cluster: {file: cluster-<gpu>-<n>gpu.yaml}` (overrides beside `file`
// apply on top). Written against main's cluster keys; the collective-fidelity work (issue 9) adds
// NCCL protocol and transport keys, listed in the header until its loader is on main.
#include "calibrate/box_fit.hpp"

#include "calibrate/profile.hpp"
#include "common/json.hpp"

#include <fmt/format.h>

namespace tagcsim::calibrate {
namespace {

std::string q(const std::string& s) { return json_string(s); }
std::string us(double s) { return fmt::format("{:.4g} us", s * 1e6); }
std::string gbs(double b) { return fmt::format("{:.6g} GB/s", b / 1e9); }

}  // namespace

std::string cluster_yaml(const BoxFit& f) {
  const auto& c = f.cluster;
  const auto& b = f.measured.box;
  std::string out = fmt::format("# This box as a tagcsim cluster, measured by `tagcsim calibrate box` ({}).\n"
                                "# Use it as `cluster: {{file: <this file>}}` (keys beside `file` override it).\n"
                                "# GPUs: {} x {}; driver {}; CUDA {} (driver supports {}); NCCL {}; cuBLASLt {}; "
                                "cuDNN {}.\n",
                                b.date, c.gpus_per_node, b.gpus.empty() ? "?" : b.gpus.front().name, b.driver,
                                b.cuda_runtime, b.cuda_driver, b.nccl, b.cublaslt, b.cudnn);
  if (f.nccl) {
    out += "# NCCL fit (calibrate/fit.hpp, the nccl-tests fit) over this box's own collectives:\n";
    for (const auto& p : f.nccl->params)
      out += fmt::format("#   {:<32} {:>12}  {}{}\n", p.id.name(), format_param(p.id.param, p.value),
                         to_string(p.status), p.status == ParamFit::Status::Fitted ? "" : ": " + p.why);
    out += fmt::format("#   residuals: mean |error| {:.1f}%, max {:.1f}% ({}), {} points (report.txt has each)\n",
                       f.nccl->error.mean_abs * 100, f.nccl->error.max_abs * 100, f.nccl->error.worst,
                       f.nccl->error.points);
  } else {
    out += "# NCCL fit skipped: " + f.nccl_skipped + ". Link and NCCL values below are the starting ones.\n";
  }
  out += fmt::format("# GPU: gemm_efficiency {:.4f} ({}); memory_efficiency {:.4f} (stream {:.0f} GB/s, floor "
                     "{:.2f} us).\n",
                     f.device.gemm_efficiency, f.device.gemm_basis, f.device.memory_efficiency,
                     f.device.memory.rate / 1e9, f.device.memory.intercept_s * 1e6);
  out += "# Not written until the collective-fidelity loader is on main (issue 9): collectives.latency_scale,\n"
         "# host_launch, host_launch_per_channel, ring_depth, tree_depth, nvls_depth, nvls_chunk_overhead,\n"
         "# intra_node.nvls_efficiency and name; nics.transport does not apply to one node.\n";

  const auto& g = c.gpu;
  out += fmt::format("cluster:\n  name: {}\n  nodes: 1\n  gpus_per_node: {}\n", q(c.name), c.gpus_per_node);
  const std::string preset = b.gpus.empty() ? "" : device_preset_for(b.gpus.front().name, g.memory_bytes);
  if (!preset.empty() && topologies::device(preset).name == g.name) {
    out += fmt::format("  gpu: {{preset: {}, memory_bytes: {:.0f}, gemm_efficiency: {:.4f}, memory_efficiency: {:.4f}}}\n",
                       preset, g.memory_bytes, g.gemm_efficiency, g.memory_efficiency);
  } else {
    out += fmt::format("  gpu:\n    name: {}\n    peak_flops_bf16: {:.6g} TFLOP/s\n    peak_flops_fp32: {:.6g} TFLOP/s\n"
                       "    peak_flops_tf32: {:.6g} TFLOP/s\n    memory_bytes: {:.0f}\n    memory_bandwidth: {}\n"
                       "    gemm_efficiency: {:.4f}\n    memory_efficiency: {:.4f}\n    source: {}\n",
                       q(g.name), g.peak_flops_bf16 / 1e12, g.peak_flops_fp32 / 1e12, g.peak_flops_tf32 / 1e12,
                       g.memory_bytes, gbs(g.memory_bandwidth), g.gemm_efficiency, g.memory_efficiency, q(g.source));
  }
  out += fmt::format("  intra_node: {{kind: {}, bandwidth: {}, latency: {}, efficiency: {:.4f}}}\n", c.intra.kind,
                     gbs(c.intra.bandwidth), us(c.intra.latency), c.intra.efficiency);
  out += fmt::format("  nics: {{count: {}, bandwidth: {}, latency: {}, efficiency: {:.4f}}}  # not measured: see source\n",
                     c.nics.count, gbs(c.nics.bandwidth), us(c.nics.latency), c.nics.efficiency);
  out += fmt::format("  fabric: {{kind: {}{}{}, oversubscription: {:g}, switch_latency: {}}}\n",
                     topologies::fabric_kind_name(c.fabric.kind),
                     c.fabric.nodes_per_leaf > 0 ? fmt::format(", nodes_per_leaf: {}", c.fabric.nodes_per_leaf) : "",
                     c.fabric.leaves_per_pod > 0 ? fmt::format(", leaves_per_pod: {}", c.fabric.leaves_per_pod) : "",
                     c.fabric.oversubscription, us(c.fabric.switch_latency));
  out += fmt::format("  collectives: {{step_latency_intra: {}, step_latency_inter: {}, launch_latency: {}}}\n",
                     us(c.collectives.step_latency_intra), us(c.collectives.step_latency_inter),
                     us(c.collectives.launch_latency));
  out += fmt::format("  source: {}\n", q(c.source));
  return out;
}

}  // namespace tagcsim::calibrate
