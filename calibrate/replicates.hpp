// Replicates: where two published tables measured the same thing. Two nccl-tests points are the same
// measurement when the model cannot tell them apart: the same machine (replicate_machine), collective,
// GPUs a node, GPUs a process (-g) and size, and the same predicted time from the shipped presets
// (within 0.5%), so that NCCL pins or releases that change nothing the model runs do not part them.
// Tables that disagree there bound what any one prediction can do: no time is closer than
// (hi - lo) / (hi + lo) to both a time lo and a time hi. `tagcsim calibrate validate` reports it beside its held-out
// errors, so a reader can tell a miss of the model from a disagreement of the measurements.
#pragma once

#include "calibrate/fit.hpp"

#include <string>
#include <vector>

namespace tagcsim::calibrate {

// One measured point with the model's error on it (held out where it was) and the cluster it ran on.
struct ReplicateInput {
  std::string system;  // the machine: its base cluster as YAML ("{preset: aws-p5, nodes: 2}"), or one node's GPUs, NVLink and host
  PointFit fit;        // the error reported; fit.table and fit.point.source say where it came from
  double shipped_s = 0;  // the shipped presets' time for it: what decides that two points are the same
};

// The points of two or more tables at one set of model inputs.
struct ReplicateGroup {
  std::vector<ReplicateInput> points;  // in input order; at least two tables among them
  double lo_s = 0, hi_s = 0;           // the fastest and slowest measured time
  double spread() const { return hi_s / lo_s - 1; }
  // The least |error| one prediction can have on every point of the group: (hi - lo) / (hi + lo),
  // reached at the harmonic mean of lo and hi.
  double floor() const { return (hi_s - lo_s) / (hi_s + lo_s); }
};

// The machine a table ran on, as the model sees it. Across nodes, its base cluster (`base_cluster`,
// the YAML its preset and nodes make): the preset carries the fabric. On one node there is no
// fabric, so two presets of the same node (a DGX A100 and Azure's ND A100 v4: 8 A100 on NVLink3,
// AMD hosts) are one machine, named by its GPUs, NVLink and host CPU.
std::string replicate_machine(const topologies::Cluster& c, const std::string& base_cluster);

// Groups the points of distinct tables that the model cannot tell apart, in the order their first
// point comes; a point no other table measured is no group. Only used points count.
std::vector<ReplicateGroup> find_replicates(const std::vector<ReplicateInput>& points);

// Two tables that measured the same thing, summed over the sizes they share in one band.
struct ReplicatePair {
  std::string table_a, table_b;  // input order
  std::string source_a, source_b;
  int release_a = 0, release_b = 0;  // NCCL releases as stated (21805), 0 = not stated
  int sizes = 0;
  double median_spread = 0, max_spread = 0;  // of max/min - 1 over the shared sizes
  double median_model_a = 0, median_model_b = 0;  // the model's median |error| on each table's points
};
// The table pairs of `groups` (each pair of points of two tables in one group counts once), with
// points of `lo` <= bytes < `hi` only.
std::vector<ReplicatePair> replicate_pairs(const std::vector<ReplicateGroup>& groups, double lo, double hi);

// What the replicates say about a set of points (one size band): how far the sources disagree and
// what that leaves any model, against the model's own errors.
struct ReplicateSummary {
  int groups = 0, points = 0;  // replicated points among `all`
  double spread_median = 0, spread_p90 = 0;  // over the groups
  double model_median = 0, model_p90 = 0;    // the model's |error| on the replicated points
  // The p90 |error| of `all` that a model would have if it were exact wherever one table measured
  // a point and at each group's floor wherever two or more did: the least p90 they allow.
  double floor_p90 = 0;
  int past_15 = 0;          // replicated points whose floor alone exceeds 15%
};
ReplicateSummary summarize_replicates(const std::vector<ReplicateInput>& all, const std::vector<ReplicateGroup>& groups,
                                      double lo, double hi);

}  // namespace tagcsim::calibrate
