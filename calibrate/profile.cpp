#include "calibrate/profile.hpp"

#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>

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

std::string header(const FitResult& fit, const Provenance& how, const char* what) {
  std::string out = fmt::format("# tagcsim calibration profile: {} fitted to nccl-tests timings\n"
                                "# (tagcsim calibrate; method in calibrate/fit.hpp and docs/calibration.md).\n"
                                "# Produced by:\n#   {}\n",
                                what, how.command);
  if (!how.data.empty()) {
    out += "# Data:\n";
    for (const auto& d : how.data) out += "#   " + d + "\n";
  }
  if (!how.base_cluster.empty()) out += fmt::format("# Base cluster: {}\n", how.base_cluster);
  out += fmt::format("# Fit: Levenberg-Marquardt on Huber-weighted log(model / measured time), {} iteration(s).\n",
                     fit.iterations);
  out += "# Parameters:\n" + param_table(fit, "#   ");
  out += fmt::format("# Residuals (model / measured time - 1): median |error| {:.1f}%, p90 {:.1f}%, max {:.1f}% ({}), "
                     "{} points.\n",
                     fit.error.median_abs * 100, fit.error.p90_abs * 100, fit.error.max_abs * 100, fit.error.worst,
                     fit.error.points);
  out += "# By size: " + band_line(fit.points) + "\n";
  out += comment_lines(residual_table(fit.points, ""), "#   ");
  return out;
}

bool fitted(const ParamFit& p) { return p.status == ParamFit::Status::Fitted; }

std::string short_key(Param p) {
  const std::string key = param_key(p);
  return key.substr(key.rfind('.') + 1);
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

std::string residual_table(const std::vector<PointFit>& points, const std::string& prefix) {
  std::string out = prefix + fmt::format("{:>14} {:>5} {:>12} {:>12} {:>8} {:>9} {:>9} {:>9} {:>6} {:>3}  {}\n", "bytes",
                                         "ranks", "measured_us", "model_us", "error", "busbw", "model_bw", "algo",
                                         "proto", "ch", "point");
  for (const auto& f : points) {
    const auto& p = f.point;
    if (!f.used) {
      out += prefix + fmt::format("{:>14.0f} {:>5} {:>12.2f} {:>12} {:>8} {:>9.2f} {:>9} {:>9} {:>6} {:>3}  {} (skipped: {})\n",
                                  p.bytes, p.ranks(), p.time_s * 1e6, "-", "-", p.busbw / 1e9, "-", "-", "-", "-",
                                  p.where, f.skipped);
      continue;
    }
    out += prefix + fmt::format("{:>14.0f} {:>5} {:>12.2f} {:>12.2f} {:>+7.1f}% {:>9.2f} {:>9.2f} {:>9} {:>6} {:>3}  {}{}\n",
                                p.bytes, p.ranks(), p.time_s * 1e6, f.predicted_s * 1e6, f.error * 100, p.busbw / 1e9,
                                f.predicted_busbw() / 1e9, sim::to_string(f.plan.algorithm),
                                sim::to_string(f.plan.protocol), f.plan.channels, p.where,
                                p.time_derived ? " (time derived)" : "");
  }
  return out;
}

std::string param_table(const FitResult& fit, const std::string& prefix) {
  std::string out;
  for (const auto& p : fit.params) {
    out += prefix + fmt::format("{:<40} {:>12}  {}", p.id.name(), format_param(p.id.param, p.value), to_string(p.status));
    if (fitted(p)) out += fmt::format(" (from {})", format_param(p.id.param, p.base));
    else out += ": " + p.why;
    out += "\n";
  }
  return out;
}

std::string band_line(const std::vector<PointFit>& points) {
  std::string out;
  for (const auto& b : size_bands()) {
    const auto s = summarize(points, b);
    if (s.points == 0) continue;
    out += fmt::format("{}{} median {:.1f}% p90 {:.1f}% (n={})", out.empty() ? "" : "; ", b.name, s.median_abs * 100,
                       s.p90_abs * 100, s.points);
  }
  return out;
}

std::string held_out_table_lines(const std::vector<PointFit>& held, const std::string& prefix) {
  std::vector<std::string> tables;
  for (const auto& p : held)
    if (std::find(tables.begin(), tables.end(), p.table) == tables.end()) tables.push_back(p.table);
  std::string out;
  for (const auto& t : tables) {
    std::vector<PointFit> pts;
    std::copy_if(held.begin(), held.end(), std::back_inserter(pts), [&](const PointFit& p) { return p.table == t; });
    out += prefix + t + ": " + band_line(pts) + "\n";
  }
  return out;
}

std::string profile_yaml(const FitResult& fit, const Provenance& how) {
  std::string out = header(fit, how, "collective-model parameters");
  // One table: overrides of its cluster, read back by load_cluster.
  if (!how.base_cluster.empty() && !fit.clusters.empty()) {
    const auto& c = fit.clusters.front();
    out += "cluster:\n";
    if (is_preset(c.name)) {
      const auto base = topologies::preset(c.name);
      out += fmt::format("  preset: {}\n  nodes: {}\n", c.name, c.nodes);
      if (c.gpu.name != base.gpu.name && !device_key(c.gpu).empty()) out += fmt::format("  gpu: {}\n", device_key(c.gpu));
    }
    std::map<std::string, std::string> maps;  // "intra_node" -> "efficiency: 0.8, ..."
    for (const auto& p : fit.params) {
      if (!fitted(p)) continue;
      const std::string key = param_key(p.id.param);
      std::string group = key.substr(0, key.find('.'));
      std::string entry = fmt::format("{}: {}", short_key(p.id.param), format_param(p.id.param, p.value));
      if (p.id.param == Param::TransportLatency || p.id.param == Param::TransportOverhead)
        continue;  // written with the transport below
      auto& m = maps[group];
      m += (m.empty() ? "" : ", ") + entry;
    }
    const bool transport = std::any_of(fit.params.begin(), fit.params.end(), [](const ParamFit& p) {
      return fitted(p) && p.id.param == Param::TransportLatency;
    });
    if (transport) {
      const auto& t = c.nics.transport;
      auto& m = maps["nics"];
      m += fmt::format("{}transport: {{name: {}, kind: {}, latency: {}, overhead: {}, efficiency: {}, source: "
                       "\"fitted: see this file\"}}",
                       m.empty() ? "" : ", ", t.name, t.kind, format_param(Param::TransportLatency, t.latency),
                       format_param(Param::TransportOverhead, t.overhead),
                       format_param(Param::NicEfficiency, c.nics.efficiency));
    }
    for (const auto& [group, entries] : maps) out += fmt::format("  {}: {{{}}}\n", group, entries);
    return out;
  }
  // Several tables: the values per scope, for the presets to carry.
  std::string coll, intra, tr;
  std::map<std::string, std::string> intra_by, tr_by, host_by;
  for (const auto& p : fit.params) {
    const std::string entry = fmt::format("{}: {}", short_key(p.id.param), format_param(p.id.param, p.value));
    if (p.id.scope.empty()) coll += (coll.empty() ? "" : ", ") + entry;
    else if (p.id.param == Param::IntraEfficiency || p.id.param == Param::NvlsEfficiency ||
             p.id.param == Param::NvlsTreeEfficiency || p.id.param == Param::Ll128Efficiency ||
             p.id.param == Param::IntraStepLatency || p.id.param == Param::SliceLatency ||
             p.id.param == Param::NetChannelRate)
      intra_by[p.id.scope] += (intra_by[p.id.scope].empty() ? "" : ", ") + entry;
    else if (p.id.param == Param::HostLaunch || p.id.param == Param::HostLaunchPerChannel)
      host_by[p.id.scope] += (host_by[p.id.scope].empty() ? "" : ", ") + entry;
    else
      tr_by[p.id.scope] += (tr_by[p.id.scope].empty() ? "" : ", ") + entry;
  }
  out += "collectives: {latency_scale: 1, " + coll + "}\n";
  if (!host_by.empty()) {
    out += "host_cpu:\n";
    for (const auto& [scope, entries] : host_by) out += fmt::format("  {}: {{{}}}\n", scope, entries);
  }
  if (!intra_by.empty()) {
    out += "intra_node:\n";
    for (const auto& [scope, entries] : intra_by) out += fmt::format("  {}: {{{}}}\n", scope, entries);
  }
  if (!tr_by.empty()) {
    out += "transports:\n";
    for (const auto& [scope, entries] : tr_by) out += fmt::format("  {}: {{{}}}\n", scope, entries);
  }
  return out;
}

std::string transport_yaml(const FitResult& fit, const Provenance& how, const topologies::Transport& base) {
  topologies::Transport t = base;
  bool any = false;
  std::string status;
  for (const auto& p : fit.params) {
    if (p.id.scope != base.name) continue;
    if (p.id.param == Param::TransportLatency) t.latency = p.value, any = true;
    if (p.id.param == Param::TransportOverhead) t.overhead = p.value, any = true;
    if (p.id.param == Param::NicEfficiency) t.efficiency = p.value, any = true;
    status += fmt::format("{}{} {} ({})", status.empty() ? "" : ", ", short_key(p.id.param),
                          format_param(p.id.param, p.value), to_string(p.status));
  }
  if (!any) throw InputError(fmt::format("--transport-out: the fit has no parameter of transport '{}'", base.name));
  std::string out = header(fit, how, fmt::format("transport '{}'", base.name).c_str());
  out += fmt::format("transport:\n  name: {}\n  kind: {}\n  latency: {}\n  overhead: {}\n  efficiency: {}\n  source: "
                     "\"{}: {}, fitted by `{}` (median |error| {:.1f}% over {} points; residuals in this file)\"\n",
                     t.name, t.kind, format_param(Param::TransportLatency, t.latency),
                     format_param(Param::TransportOverhead, t.overhead), format_param(Param::NicEfficiency, t.efficiency),
                     t.kind, status, how.command,
                     fit.error.median_abs * 100, fit.error.points);
  return out;
}

}  // namespace tagcsim::calibrate
