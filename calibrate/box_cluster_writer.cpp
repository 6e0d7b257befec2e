// The box as a cluster file: the `cluster:` map topologies::cluster_yaml writes (every key the
// loader knows), so that a scenario names it with `cluster: {file: cluster-<gpu>-<n>gpu.yaml}`
// (keys beside `file` override, e.g. `nodes: 16` for a cluster of such boxes). Above it, in
// comments, the box and what was fitted, held, or left to the DGX preset of its generation.
#include "calibrate/box_fit.hpp"

#include "calibrate/profile.hpp"
#include "topologies/cluster_yaml.hpp"

#include <fmt/format.h>

namespace tagcsim::calibrate {

std::string box_cluster_yaml(const BoxFit& f, const std::string& profile_file) {
  auto c = f.cluster;
  c.gpu.profile = profile_file;
  const auto& b = f.measured.box;
  std::string out = fmt::format("# This box as a tagcsim cluster, measured by `tagcsim calibrate box` ({}).\n"
                                "# Use it as `cluster: {{file: <this file>}}` (keys beside `file` override it).\n"
                                "# GPUs: {} x {}; driver {}; CUDA {} (driver supports {}); NCCL {}; cuBLASLt {}; "
                                "cuDNN {}.\n",
                                b.date, c.gpus_per_node, b.gpus.empty() ? "?" : b.gpus.front().name, b.driver,
                                b.cuda_runtime, b.cuda_driver, b.nccl, b.cublaslt, b.cudnn);
  if (f.nccl) {
    out += "# NCCL fit (calibrate/fit.hpp) over this box's own collectives:\n";
    out += param_table(*f.nccl, "#   ");
    out += fmt::format("#   residuals: median |error| {:.1f}%, max {:.1f}% ({}), {} points (report.txt has each)\n",
                       f.nccl->error.median_abs * 100, f.nccl->error.max_abs * 100, f.nccl->error.worst,
                       f.nccl->error.points);
  } else {
    out += "# NCCL fit skipped: " + f.nccl_skipped + ". Link and NCCL values below are the starting ones.\n";
  }
  out += profile_file.empty()
             ? "# Kernels: the datasheet roofline with the fitted efficiencies (no device profile was written).\n"
             : fmt::format("# Kernels: timed by the device profile {} (beside this file), measured on this box.\n",
                           profile_file);
  out += fmt::format("# GPU: gemm_efficiency {:.4f} ({}); memory_efficiency {:.4f} (stream {:.0f} GB/s, floor "
                     "{:.2f} us): what the roofline uses without the profile.\n",
                     f.device.gemm_efficiency, f.device.gemm_basis, f.device.memory_efficiency,
                     f.device.memory.rate / 1e9, f.device.memory.intercept_s * 1e6);
  out += "# NICs, transport, rails and fabric are not measured by one box: the DGX preset's stand in.\n";
  return out + topologies::cluster_yaml(c);
}

}  // namespace tagcsim::calibrate
