// Fitting the collective model's physical parameters to measured nccl-tests times.
//
// For a fixed algorithm (ring or tree) and a fixed bottleneck (NVLink or the NICs) the model's
// time is linear in five parameters:
//   t = L0 + launch + n_intra * step_latency_intra + n_inter * step_latency_inter
//         + C_bw / efficiency            (C_bw: the bottleneck's bytes / line rate)
// with L0 the links' own latency and n_intra, n_inter the step counts. For one sweep of one
// collective that is t(S) = a + S / b: `a` maps to the step latencies through the step counts,
// `b` to the bottleneck's efficiency through its line rate. The coefficients are read off
// sim::plan_collective itself, so the fit stays in step with the model.
//
// The fit is a weighted linear least squares (Eigen) on the relative error of the time, so a
// 10 us point counts as much as a 100 ms one: small messages pin the latencies, large ones
// the efficiencies. The algorithm and bottleneck of each point are those the model picks with
// the current parameters; the fit is repeated until they stop changing.
//
// A parameter is fitted only when the data determines it:
//   - latencies from points where latency is at least half the time (small messages),
//     efficiencies from points where bandwidth is (large messages);
//   - parameters the small messages cannot tell apart (one rank count: launch and per-step
//     latency always occur together) are held at the base value, launch latency first;
//   - a value beyond its physical range (negative latency, efficiency above 1) is held at the
//     bound and reported: the data is outside what the model can represent (NVLink SHARP, ...).
#pragma once

#include "calibrate/nccl_tests.hpp"
#include "topologies/cluster.hpp"

#include <array>
#include <string>
#include <vector>

namespace tagcsim::calibrate {

enum class Param { LaunchLatency, StepLatencyIntra, StepLatencyInter, IntraEfficiency, NicEfficiency };
inline constexpr int kParams = 5;
// The cluster-YAML key: "collectives.launch_latency", ..., "nics.efficiency".
const char* param_key(Param p);

struct ParamFit {
  Param param = Param::LaunchLatency;
  enum class Status { Fitted, Held, AtBound } status = Status::Held;
  double base = 0;       // value in the base cluster
  double value = 0;      // value after the fit (s, or a fraction for efficiencies)
  std::string why;       // why it was held
};
const char* to_string(ParamFit::Status s);

// The model against one point.
struct PointFit {
  Point point;
  bool used = false;          // the model covers this point
  std::string skipped;        // why not
  bool fitted = false;        // in a fit: it entered the least squares (latency- or bandwidth-dominated)
  sim::Algorithm algorithm = sim::Algorithm::Ring;
  bool nvlink_bound = false;  // NVLink, not the NICs, sets the pace
  double predicted_s = 0;
  double latency_share = 0;   // latency / predicted time
  double error = 0;           // predicted / measured time - 1
  double predicted_busbw() const;
};

struct ErrorSummary {
  int points = 0;
  double mean_abs = 0;   // mean |error| over the used points
  double max_abs = 0;
  std::string worst;     // where the largest |error| is
};

struct FitResult {
  topologies::Cluster cluster;                // the base cluster with the fitted values
  std::array<ParamFit, kParams> params;       // in Param order
  std::vector<PointFit> points;               // every input point, fitted or skipped
  ErrorSummary error;                         // over the fitted points
  int iterations = 0;
  bool converged = false;                     // algorithm/bottleneck choices settled
};

struct FitOptions {
  // A point is latency-bound when latency is at least this share of its time, bandwidth-bound when
  // bandwidth is. Points that are neither (the protocol-switching middle of a sweep) are reported
  // but not fitted; 0.5 fits every point.
  double dominant_share = 0.5;
  std::vector<Param> hold;      // held at the base value whatever the data (e.g. NVLS data for a ring model)
};
// "collectives.launch_latency" or its last part ("launch_latency"); InputError naming `what` otherwise.
Param parse_param(const std::string& text, const std::string& what);

// Evaluation cluster for a point: `c` resized to the point's nodes x GPUs per node.
topologies::Cluster cluster_for(const topologies::Cluster& c, const Point& p);
// The model's prediction for each point (algorithm chosen as the simulator does).
std::vector<PointFit> evaluate(const std::vector<Point>& points, const topologies::Cluster& c);
ErrorSummary summarize(const std::vector<PointFit>& points);
// Throws InputError when no point is covered by the model.
FitResult fit(const std::vector<Point>& points, const topologies::Cluster& base, const FitOptions& opts = {});

}  // namespace tagcsim::calibrate
