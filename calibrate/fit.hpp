// Fitting the collective model's physical parameters to measured nccl-tests times.
//
// sim::plan_collective is NCCL's own tuning model fed with the cluster's link rates; what is not
// known from datasheets is fitted here, a few physical parameters, each shared by every table it
// describes:
//   - NCCL's costs (collectives.*): launch latency, the host's launch cost per GPU, the pipeline
//     depths of rings, trees and NVLS, the per-chunk overhead of NVLS, the per-slice flag of
//     single-node Simple rings; one set for all tables;
//   - the NVLink fabric (intra_node.efficiency, nvls_efficiency, ll128_efficiency): one per
//     generation (intra_node.name: nvlink3, nvlink4), shared by every table on it;
//   - the transport (nics.transport.latency, nics.efficiency): one per transport profile (efa, ib).
// Algorithm, protocol and channels switch with size, so the time is not linear in them: the fit is
// a Levenberg-Marquardt least squares (Eigen) on log(model / measured time) with numerical
// derivatives, Huber-weighted (errors past 10% count linearly, so one odd table cannot drag a
// shared parameter), each parameter kept inside its physical range.
//
// A parameter is fitted only when the data determines it: some point's time must move by at least
// 2% over the parameter's typical range (10 us of latency, 0.1 of efficiency, 1 chunk of depth);
// otherwise it stays at its starting value and the report says why. A value that runs into its
// physical bound is held there and reported as "at bound".
#pragma once

#include "calibrate/nccl_tests.hpp"
#include "topologies/cluster.hpp"

#include <string>
#include <vector>

namespace tagcsim::calibrate {

enum class Param {
  LaunchLatency, HostLaunch, HostLaunchPerChannel, RingDepth, TreeDepth, NvlsDepth,  // NCCL's costs
  NvlsChunkOverhead, SliceLatency,
  IntraEfficiency, NvlsEfficiency, Ll128Efficiency, IntraStepLatency,             // per NVLink generation
  TransportLatency, TransportOverhead, NicEfficiency,                             // per transport
  NvlsTreeEfficiency, NetChannelRate,                                             // per NVLink generation
};
inline constexpr int kParams = 17;
// The cluster-YAML key: "collectives.launch_latency", ..., "nics.efficiency".
const char* param_key(Param p);
// "collectives.ring_depth" or its last part ("ring_depth"); InputError naming `what` otherwise.
Param parse_param(const std::string& text, const std::string& what);

// One parameter of one scope: "intra_node.efficiency@nvlink4", "nics.transport.latency@efa".
struct ParamId {
  Param param = Param::LaunchLatency;
  std::string scope;  // "" for NCCL's costs, the NVLink generation or the transport otherwise
  std::string name() const;
  bool operator==(const ParamId&) const = default;
};
// The parameters that shape a point's time on cluster `c` (their scopes taken from it).
std::vector<ParamId> params_of(const topologies::Cluster& c, const Point& p);
double get(const topologies::Cluster& c, const ParamId& id);
// Sets the value when `c` is in the parameter's scope.
void set(topologies::Cluster& c, const ParamId& id, double v);
std::string format_param(Param p, double value);  // "12.3 us", "0.8123", "2.00"

struct ParamFit {
  ParamId id;
  enum class Status { Fitted, Held, AtBound } status = Status::Held;
  double base = 0;       // starting value
  double value = 0;      // after the fit
  std::string why;       // why it was held
};
const char* to_string(ParamFit::Status s);

// A measured point and the cluster it ran on (before the fit).
struct Sample {
  Point point;
  topologies::Cluster cluster;  // the table's base cluster; resized to the point by cluster_for
  std::string table;            // the published table (or log file) it came from
};

// The model against one point.
struct PointFit {
  Point point;
  std::string table;
  bool used = false;          // the model covers this point
  std::string skipped;        // why not
  sim::CollectivePlan plan;   // what NCCL would run, as planned on the fitted cluster
  double predicted_s = 0;
  double error = 0;           // predicted / measured time - 1
  double predicted_busbw() const;
};

struct ErrorSummary {
  int points = 0;
  double mean_abs = 0;   // mean |error| over the used points
  double median_abs = 0;
  double p90_abs = 0;    // 90th percentile of |error|
  double max_abs = 0;
  std::string worst;     // where the largest |error| is
};
ErrorSummary summarize(const std::vector<PointFit>& points);
// Size bands of the validation report: [lo, hi) bytes.
struct Band {
  const char* name;
  double lo, hi;
};
const std::vector<Band>& size_bands();  // < 1 MiB, 1-64 MiB, >= 64 MiB, and 32 KiB-1 MiB
ErrorSummary summarize(const std::vector<PointFit>& points, const Band& band);

struct FitResult {
  std::vector<ParamFit> params;
  std::vector<PointFit> points;   // every input point, fitted or skipped
  ErrorSummary error;
  int iterations = 0;
  // The samples' clusters with the fitted values, in input order of their tables.
  std::vector<topologies::Cluster> clusters;
};

struct FitOptions {
  std::vector<Param> hold;      // held at the starting value whatever the data
  std::vector<Param> free;      // fitted although held by default (launch latency)
  // Pull of the starting efficiencies (a penalty of w x ((x - x0) / sigma)^2, sigma 0.03 for NVLink,
  // 0.05 for NICs): 0 lets the data alone speak; kPriorWeight when the start is the priors, so that
  // an efficiency only a secondary effect moves stays near its datasheet value.
  double prior_weight = 0;
};
inline constexpr double kPriorWeight = 0.01;

// Evaluation cluster for a point: `c` on the point's nodes, its node grown to the point's GPUs per node
// where the point used more, kept where it used fewer.
topologies::Cluster cluster_for(const topologies::Cluster& c, const Point& p);
// The point's GPUs on that cluster: its GPUs per node on each of its nodes, from each node's first GPU.
sim::Group group_for(const Point& p);
// The model's prediction for each sample.
std::vector<PointFit> evaluate(const std::vector<Sample>& samples);
std::vector<PointFit> evaluate(const std::vector<Point>& points, const topologies::Cluster& c);
// Throws InputError when no point is covered by the model.
FitResult fit(const std::vector<Sample>& samples, const FitOptions& opts = {});
FitResult fit(const std::vector<Point>& points, const topologies::Cluster& base, const FitOptions& opts = {});
// Applies a fit's values to another cluster (those of its scopes).
topologies::Cluster with_fit(topologies::Cluster c, const FitResult& r);
// Each table (an nccl-tests log, or a published run) predicted by a fit to all the others: what a
// fit does on a run it has not seen. Grouped by table, in the order the tables first appear.
// InputError for fewer than two tables.
std::vector<PointFit> held_out_by_table(const std::vector<Sample>& samples, const FitOptions& opts = {});

// Values before any fit, each from a datasheet, NCCL's sources or a maintainer's statement (never
// from the shipped tables), for validation that holds data out: NCCL's costs at its own model (no
// fill, no launch), NVLink at NCCL's per-link rates, NVLS at the maintainers' 480 GB/s, transports
// at their plugin's latency.
topologies::Cluster with_priors(topologies::Cluster c);
std::string prior_sources();

}  // namespace tagcsim::calibrate
