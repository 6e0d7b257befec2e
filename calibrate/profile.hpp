// Writing a fit as a calibration profile: cluster-YAML overrides (or, for a fit over several
// tables, the values per scope) plus a comment header that says how it was made (command, data,
// base clusters) and how well it fits (residuals per point, per size band).
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
  std::string base_cluster;        // the --cluster argument ("" for several tables)
};

// One table's fit: a `cluster:` map holding `preset:` (and `nodes:`, `gpu:`) when the base is a
// preset, and only the parameters the fit determined; load_cluster() reads it back.
// Several tables: the fitted values by scope (collectives, intra_node.<name>, transports.<name>).
std::string profile_yaml(const FitResult& fit, const Provenance& how);
// A transport profile (topologies::load_transport reads it) for transport `name`, with the fitted
// latency and efficiency; InputError when the fit has no such transport.
std::string transport_yaml(const FitResult& fit, const Provenance& how, const topologies::Transport& base);

// The residual table, one line per point (also used by the CLI).
std::string residual_table(const std::vector<PointFit>& points, const std::string& prefix);
// The fitted parameters, one line each.
std::string param_table(const FitResult& fit, const std::string& prefix);
// "points  median  p90  max" per size band.
std::string band_line(const std::vector<PointFit>& points);
// Held-out points (held_out_by_table) as one line per table, in their order: PREFIX table: band_line.
std::string held_out_table_lines(const std::vector<PointFit>& held, const std::string& prefix);

}  // namespace tagcsim::calibrate
