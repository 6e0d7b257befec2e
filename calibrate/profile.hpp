// Writing a fit as a calibration profile: cluster-YAML overrides plus a comment header that
// says how it was made (command, data, base cluster) and how well it fits (residuals).
#pragma once

#include "calibrate/fit.hpp"

#include <string>
#include <vector>

namespace tagcsim::calibrate {

// `--cluster` as given on the command line: a preset name ("dgx-h100-ib400"), an inline YAML map
// ("{preset: dgx-h100-ib400, nodes: 1}"), or a YAML file (a cluster map, or one under `cluster:`).
topologies::Cluster load_cluster_arg(const std::string& arg, const std::string& what = "--cluster");

struct Provenance {
  std::string command;             // the exact command line that produced the profile
  std::vector<std::string> data;   // one line each: inputs, sources, caveats
  std::string base_cluster;        // the --cluster argument
};

// The profile's text. The `cluster:` map holds `preset:` (and `nodes:`, `gpu:`) when the base is
// a preset, and only the parameters the fit determined; held ones are listed in the comments.
// load_cluster() reads it back.
std::string profile_yaml(const FitResult& fit, const Provenance& how);

// The residual table, one line per point (also used by the CLI).
std::string residual_table(const std::vector<PointFit>& points, const std::string& prefix);

// "12.3 us" / "0.8123": how parameter values are written.
std::string format_param(Param p, double value);

}  // namespace tagcsim::calibrate
