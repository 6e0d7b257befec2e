#include "calibrate/profile.hpp"

#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace tagcsim::calibrate {
namespace {

bool is_preset(const std::string& name) {
  const auto names = topologies::preset_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The device preset key whose profile carries this name ("h200-sxm" for "H200-SXM-141GB").
std::string device_key(const topologies::DeviceProfile& d) {
  for (const auto& n : topologies::device_names())
    if (topologies::device(n).name == d.name) return n;
  return {};
}

std::string comment_lines(const std::string& text, const std::string& prefix) {
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    out += prefix + text.substr(pos, end - pos) + "\n";
    pos = end + 1;
  }
  return out;
}

}  // namespace

topologies::Cluster load_cluster_arg(const std::string& arg, const std::string& what) {
  if (arg.empty()) throw InputError(fmt::format("{}: expected a cluster preset, an inline YAML map or a file", what));
  if (arg.front() == '{') {
    const Input doc = Input::load_string(arg, what);
    return topologies::load_cluster(doc.has("cluster") ? doc["cluster"] : doc);
  }
  if (std::filesystem::exists(arg)) {
    const Input doc = Input::load_file(arg);
    return topologies::load_cluster(doc.is_map() && doc.has("cluster") ? doc["cluster"] : doc);
  }
  // A preset name; load_cluster gives the did-you-mean message for a misspelt one.
  return topologies::load_cluster(Input::load_string(arg, what));
}

std::string format_param(Param p, double value) {
  if (p == Param::IntraEfficiency || p == Param::NicEfficiency) return fmt::format("{:.4f}", value);
  return fmt::format("{:.4g} us", value * 1e6);
}

std::string residual_table(const std::vector<PointFit>& points, const std::string& prefix) {
  std::string out = prefix + fmt::format("{:>14} {:>5} {:>12} {:>12} {:>8} {:>9} {:>9} {:>5} {:>6}  {}\n", "bytes",
                                         "ranks", "measured_us", "model_us", "error", "busbw", "model_bw",
                                         "algo", "limit", "point");
  // Only a fit's table says which points stayed out of the least squares.
  const bool fit_table = std::any_of(points.begin(), points.end(), [](const PointFit& f) { return f.fitted; });
  for (const auto& f : points) {
    const auto& p = f.point;
    if (!f.used) {
      out += prefix + fmt::format("{:>14.0f} {:>5} {:>12.2f} {:>12} {:>8} {:>9.2f} {:>9} {:>5} {:>6}  {} (skipped: {})\n",
                                  p.bytes, p.ranks(), p.time_s * 1e6, "-", "-", p.busbw / 1e9, "-", "-", "-",
                                  p.where, f.skipped);
      continue;
    }
    out += prefix + fmt::format("{:>14.0f} {:>5} {:>12.2f} {:>12.2f} {:>+7.1f}% {:>9.2f} {:>9.2f} {:>5} {:>6}  {}{}{}\n",
                                p.bytes, p.ranks(), p.time_s * 1e6, f.predicted_s * 1e6, f.error * 100,
                                p.busbw / 1e9, f.predicted_busbw() / 1e9, sim::to_string(f.algorithm),
                                f.nvlink_bound ? "nvlink" : "nics", p.where, p.time_derived ? " (time derived)" : "",
                                f.fitted || !fit_table ? "" : " (not fitted: protocol-switching middle)");
  }
  return out;
}

std::string profile_yaml(const FitResult& fit, const Provenance& how) {
  const auto& c = fit.cluster;
  std::string out =
      "# tagcsim calibration profile: collective-model parameters fitted to nccl-tests timings\n"
      "# (tagcsim calibrate; method in calibrate/fit.hpp and docs/calibration.md).\n"
      "# Produced by:\n#   " +
      how.command + "\n";
  if (!how.data.empty()) {
    out += "# Data:\n";
    for (const auto& d : how.data) out += "#   " + d + "\n";
  }
  out += fmt::format("# Base cluster: {} ({})\n", how.base_cluster, c.name);
  out += fmt::format("# Fit: weighted least squares on the relative time error, {} iteration(s), {}.\n",
                     fit.iterations,
                     fit.converged ? "converged" : "algorithm choices kept cycling; the best solution is kept");
  out += "# Parameters:\n";
  for (const auto& p : fit.params) {
    out += fmt::format("#   {:<32} {:>12}  {}", param_key(p.param), format_param(p.param, p.value), to_string(p.status));
    if (p.status == ParamFit::Status::Fitted) out += fmt::format(" (base {})", format_param(p.param, p.base));
    else out += ": " + p.why;
    out += "\n";
  }
  out += fmt::format("# Residuals (model / measured time - 1): mean |error| {:.1f}%, max {:.1f}% ({}), {} points.\n",
                     fit.error.mean_abs * 100, fit.error.max_abs * 100, fit.error.worst, fit.error.points);
  out += comment_lines(residual_table(fit.points, ""), "#   ");

  // Only what the fit determined overrides the base; the rest stays with the preset.
  auto fitted = [&](Param p) { return fit.params[int(p)].status == ParamFit::Status::Fitted; };
  out += "cluster:\n";
  if (is_preset(c.name)) {
    const auto base = topologies::preset(c.name);
    out += fmt::format("  preset: {}\n  nodes: {}\n", c.name, c.nodes);
    if (c.gpu.name != base.gpu.name && !device_key(c.gpu).empty()) out += fmt::format("  gpu: {}\n", device_key(c.gpu));
  }
  if (fitted(Param::IntraEfficiency))
    out += fmt::format("  intra_node: {{efficiency: {}}}\n", format_param(Param::IntraEfficiency, c.intra.efficiency));
  if (fitted(Param::NicEfficiency))
    out += fmt::format("  nics: {{efficiency: {}}}\n", format_param(Param::NicEfficiency, c.nics.efficiency));
  std::string coll;
  for (auto p : {Param::StepLatencyIntra, Param::StepLatencyInter, Param::LaunchLatency}) {
    if (!fitted(p)) continue;
    const std::string key = param_key(p);
    coll += fmt::format("{}{}: {}", coll.empty() ? "" : ", ", key.substr(key.find('.') + 1),
                        format_param(p, fit.params[int(p)].value));
  }
  if (!coll.empty()) out += "  collectives: {" + coll + "}\n";
  return out;
}

}  // namespace tagcsim::calibrate
