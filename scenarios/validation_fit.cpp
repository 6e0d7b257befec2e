// The fit of `tagcsim validate`: each device's tensor scale and the shared memory scale, by least
// squares over the counted rows, and the families' scales that stand in for unmeasured devices
// (docs/validation.md, docs/compute-model.md); and the fit file it writes.
#include "scenarios/validation.hpp"

#include "sim/kernel_profile.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tagcsim::scenarios {

// One tensor_scale per device and one memory_scale for all, fitted together. A device's tensor
// scale is the rate its chip sustains in training against the microbenchmarks of its kernel
// profile: its clocks under a training load at its power limit, and the profile's own sources.
// That belongs to the chip and its power design, not to the architecture: one H200 runs PyTorch at
// its profile's rates while H100 clusters reach ~0.7 of theirs (docs/validation.md). Any source
// measuring a device fits its scale. The memory-bound kernels share one scale: a scale per device
// predicted the held-out sources worse (with one source out, a device's other rows do not pin it;
// docs/validation.md), and a streaming kernel's share of peak is mostly the kernels'.
//
// A family's scale stands in for its devices that fewer than two sources measured (an unseen GPU,
// one source's device, or a device whose other sources a fold left out): the geometric mean of
// its fitted devices' scales, each weighted by its sources, when their rows come from two sources
// or more. A family below that keeps no fit and borrows (sim/kernel_profile.cpp: its predecessor's).
FamilyFits fit(const std::vector<ValidationRow>& rows, const std::vector<std::size_t>& train) {
  // No device's fit from the file or an earlier fold survives: a device without rows here must
  // take its family's.
  for (const auto& r : rows) {
    if (!r.device.empty()) sim::remove_fitted_parameters(sim::device_fit_key(r.device));
    if (r.family != "roofline") sim::remove_fitted_parameters(r.family);
  }
  // A device is fitted only where two sources or more measured it: one source's rows share its
  // software, its power limit and its way of timing, so a scale fitted on them alone is that
  // source's factor, not the chip's. Its rows then take the family's scale, as an unseen GPU does.
  // A fit of one source's rows alone (one's own runs, `validate --root --fit`) has nothing else to
  // say: it fits that source's factor, and says so in the basis.
  auto fittable = [&](std::size_t i) {
    return rows[i].counted && rows[i].fitted && rows[i].family != "roofline" && !rows[i].device.empty();
  };
  std::map<std::string, std::set<std::string>> sources_of;
  std::set<std::string> all_sources;
  for (auto i : train)
    if (fittable(i)) sources_of[rows[i].device].insert(rows[i].source), all_sources.insert(rows[i].source);
  const std::size_t min_sources = all_sources.size() >= 2 ? 2 : 1;
  std::vector<std::string> devices;
  std::vector<std::size_t> idx;
  for (auto i : train)
    if (fittable(i) && sources_of[rows[i].device].size() >= min_sources) {
      idx.push_back(i);
      if (std::find(devices.begin(), devices.end(), rows[i].device) == devices.end())
        devices.push_back(rows[i].device);
    }
  FamilyFits out;
  if (idx.empty()) return out;
  std::sort(devices.begin(), devices.end());
  auto family_of = [&](const std::string& device) {
    for (auto i : idx)
      if (rows[i].device == device) return rows[i].family;
    return std::string();
  };
  const int D = int(devices.size()), P = D + 1;  // x = (log tensor_scale per device..., log memory_scale)
  Eigen::VectorXd x(P);
  for (int d = 0; d < D; ++d)
    x[d] = std::log(sim::fitted_parameters(devices[std::size_t(d)], family_of(devices[std::size_t(d)])).tensor_scale);
  x[D] = std::log(sim::fitted_parameters(family_of(devices.front())).memory_scale);
  auto apply = [&](const Eigen::VectorXd& p) {
    for (int d = 0; d < D; ++d)
      sim::override_fitted_parameters(sim::device_fit_key(devices[std::size_t(d)]),
                                      {std::exp(p[d]), std::exp(p[D]), "fitting", ""});
  };
  // Residuals log(predicted / measured); only the rows a parameter touches are rerun.
  auto residuals = [&](const Eigen::VectorXd& p, const Eigen::VectorXd* base, int changed) {
    apply(p);
    Eigen::VectorXd r(Eigen::Index(idx.size()));
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const auto& row = rows[idx[k]];
      const bool touched = changed < 0 || changed == D || devices[std::size_t(changed)] == row.device;
      r[Eigen::Index(k)] = touched || !base ? std::log(predict(row).tps / row.measured_tps) : (*base)[Eigen::Index(k)];
    }
    return r;
  };
  // Gauss-Newton, Levenberg-damped, in log parameters, kept in a physical range (a kernel does
  // not run 5x faster or slower in training than profiled).
  Eigen::VectorXd r = residuals(x, nullptr, -1);
  for (int it = 0; it < 8; ++it) {
    Eigen::MatrixXd J(r.size(), P);
    for (int p = 0; p < P; ++p) {
      Eigen::VectorXd xp = x;
      xp[p] += 0.02;
      J.col(p) = (residuals(xp, &r, p) - r) / 0.02;
    }
    Eigen::MatrixXd A = J.transpose() * J;
    A += Eigen::MatrixXd((1e-3 * A.diagonal()).asDiagonal()) + 1e-9 * Eigen::MatrixXd::Identity(P, P);
    Eigen::VectorXd step = -A.ldlt().solve(J.transpose() * r);
    for (int p = 0; p < P; ++p) step[p] = std::clamp(x[p] + step[p], std::log(0.2), std::log(2.0)) - x[p];
    Eigen::VectorXd xn = x + step;
    Eigen::VectorXd rn = residuals(xn, nullptr, -1);
    if (rn.squaredNorm() > r.squaredNorm()) break;
    x = xn, r = rn;
    if (step.norm() < 1e-4) break;
  }
  apply(x);
  const double memory = std::exp(x[D]);
  // The devices, with what fitted each.
  std::map<std::string, std::vector<int>> family_devices;
  std::map<std::string, std::set<std::string>> family_sources;
  std::vector<double> device_sources(std::size_t(D), 0);
  for (int d = 0; d < D; ++d) {
    const auto& device = devices[std::size_t(d)];
    const std::set<std::string>& sources = sources_of.at(device);  // every fittable row of it is in idx
    double ss = 0;
    int n = 0;
    for (std::size_t k = 0; k < idx.size(); ++k)
      if (rows[idx[k]].device == device) ss += r[Eigen::Index(k)] * r[Eigen::Index(k)], ++n;
    const auto family = family_of(device);
    family_devices[family].push_back(d);
    family_sources[family].insert(sources.begin(), sources.end());
    device_sources[std::size_t(d)] = double(sources.size());
    sim::FittedParameters fp{
        std::exp(x[d]), memory,
        fmt::format("least squares on log(predicted / measured tokens/s/GPU): tensor_scale over {} row{} of {} "
                    "({} source{}: {}; rms {:.1f}%), memory_scale shared over all {} rows{}",
                    n, n == 1 ? "" : "s", device, sources.size(), sources.size() == 1 ? "" : "s", fmt::join(sources, ", "),
                    100 * std::sqrt(ss / std::max(n, 1)), idx.size(),
                    sources.size() == 1 ? " (the fit's only source: that source's factor, not the chip's)" : ""),
        ""};
    sim::override_fitted_parameters(sim::device_fit_key(device), fp);
    out[sim::device_fit_key(device)] = fp;
  }
  // The families: for their devices without rows. A family under two sources is removed, so that
  // it borrows rather than keep an earlier fit.
  for (const auto& [family, ds] : family_devices) {
    if (family_sources[family].size() < 2) {
      sim::remove_fitted_parameters(family);
      continue;
    }
    // Each source is one estimate of what the family's chips sustain: a device counts as often as
    // sources measured it.
    double log_sum = 0, weight = 0;
    std::string parts;
    for (int d : ds) {
      const double w = device_sources[std::size_t(d)];
      log_sum += w * x[d], weight += w;
      parts += fmt::format("{}{} {:.3f} x {:g}", parts.empty() ? "" : ", ", devices[std::size_t(d)], std::exp(x[d]), w);
    }
    sim::FittedParameters fp{std::exp(log_sum / weight), memory,
                             fmt::format("for its devices without rows: its fitted devices' tensor scales, geometric "
                                         "mean weighted by their sources ({}); memory_scale the shared one",
                                         parts),
                             ""};
    sim::override_fitted_parameters(family, fp);
    out[family] = fp;
  }
  return out;
}

std::string fit_file_text(const FamilyFits& fits, const std::string& command,
                          const std::map<std::string, std::string>& what_if) {
  std::string out =
      "# The devices' and their families' fitted physical parameters (docs/compute-model.md, docs/validation.md).\n"
      "# tensor_scale: tensor-core kernels (GEMM, attention) in training relative to the kernel profile;\n"
      "# memory_scale: memory-bound kernels likewise. Written by the command below; do not edit by hand.\n";
  out += "format: tagcsim-training-fit/1\n";
  out += fmt::format("command: \"{}\"\n", command);
  for (bool devices : {false, true}) {
    out += devices ? "devices:\n" : "families:\n";
    for (const auto& [f, p] : fits)
      if (sim::is_device_fit_key(f) == devices)
        out += fmt::format("  {}: {{tensor_scale: {:.4f}, memory_scale: {:.4f}, basis: \"{}\"{}}}\n",
                           sim::fit_key_label(f), p.tensor_scale, p.memory_scale, p.basis,
                           p.held_out.empty() ? "" : fmt::format(", held_out: \"{}\"", p.held_out));
  }
  // How the model's speedups came out on published pairs, by the setting they changed (held out).
  if (!what_if.empty()) {
    out += "what_if:\n";
    for (const auto& [setting, line] : what_if) out += fmt::format("  {}: \"{}\"\n", setting, line);
  }
  return out;
}

}  // namespace tagcsim::scenarios
