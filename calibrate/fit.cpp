#include "calibrate/fit.hpp"

#include "common/input.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tagcsim::calibrate {
namespace {

constexpr int kMaxIterations = 50;
constexpr double kRankThreshold = 1e-9;  // on unit-norm columns: only exact collinearity counts

bool is_latency(Param p) { return p != Param::IntraEfficiency && p != Param::NicEfficiency; }
Param param(int j) { return static_cast<Param>(j); }

// The parameter as the least squares sees it: latencies in s, efficiencies as 1 / efficiency
// (the time is linear in those).
double get(const topologies::Cluster& c, Param p) {
  switch (p) {
    case Param::LaunchLatency: return c.collectives.launch_latency;
    case Param::StepLatencyIntra: return c.collectives.step_latency_intra;
    case Param::StepLatencyInter: return c.collectives.step_latency_inter;
    case Param::IntraEfficiency: return 1 / c.intra.efficiency;
    case Param::NicEfficiency: return 1 / c.nics.efficiency;
  }
  return 0;
}

void set(topologies::Cluster& c, Param p, double v) {
  switch (p) {
    case Param::LaunchLatency: c.collectives.launch_latency = v; break;
    case Param::StepLatencyIntra: c.collectives.step_latency_intra = v; break;
    case Param::StepLatencyInter: c.collectives.step_latency_inter = v; break;
    case Param::IntraEfficiency: c.intra.efficiency = 1 / v; break;
    case Param::NicEfficiency: c.nics.efficiency = 1 / v; break;
  }
}

// The model at one point, linearised: t = fixed + sum_j coef[j] * get(c, j), exact for the
// algorithm and bottleneck the model picks at the current parameters.
struct Row {
  double t = 0;  // measured
  double fixed = 0;
  std::array<double, kParams> coef{};
  sim::Algorithm algorithm = sim::Algorithm::Ring;
  bool nvlink_bound = false;
  double latency_share = 0;
  bool in_fit = true;  // latency- or bandwidth-dominated (not in the protocol-switching middle)
  bool operator==(const Row& o) const {
    return algorithm == o.algorithm && nvlink_bound == o.nvlink_bound && in_fit == o.in_fit;
  }
};

Row linearize(const topologies::Cluster& c, const Point& p) {
  const auto cc = cluster_for(c, p);
  const auto g = sim::whole_cluster(cc);
  const auto plan = sim::plan_collective(cc, *p.op, p.bytes, g, sim::Algorithm::Auto);
  Row r;
  r.t = p.time_s;
  r.algorithm = plan.algorithm;
  r.nvlink_bound = plan.nvlink_seconds >= plan.network_seconds;
  r.latency_share = plan.latency_seconds / plan.seconds();
  // Latency coefficients (step counts) by probing the model with one latency at a time.
  auto latency = [&](const topologies::Cluster& k) {
    return sim::plan_collective(k, *p.op, p.bytes, g, plan.algorithm).latency_seconds;
  };
  auto zero = cc;
  zero.collectives = {};
  r.fixed = latency(zero);
  for (auto q : {Param::LaunchLatency, Param::StepLatencyIntra, Param::StepLatencyInter}) {
    auto k = zero;
    set(k, q, 1.0);
    r.coef[int(q)] = latency(k) - r.fixed;
  }
  // Bandwidth: seconds at efficiency 1 on the bottleneck, times 1 / efficiency.
  if (r.nvlink_bound) r.coef[int(Param::IntraEfficiency)] = plan.nvlink_seconds * cc.intra.efficiency;
  else r.coef[int(Param::NicEfficiency)] = plan.network_seconds * cc.nics.efficiency;
  return r;
}

std::string covers(const topologies::Cluster& c, const Point& p) {
  if (!p.op) return fmt::format("the model has no {}", p.op_name);
  if (p.ranks() < 2) return "one rank exchanges nothing";
  if (p.nodes > 1 && (c.nics.count < 1 || !(c.nics.bandwidth > 0))) return "the cluster has no NICs between nodes";
  if (p.gpus_per_node > 1 && !(c.intra.bandwidth > 0)) return "the cluster has no intra-node bandwidth";
  if (!(p.time_s > 0)) return "no measured time";
  return {};
}

// Does the data determine each parameter? Fills status/why for the held ones.
void choose_free(const std::vector<Row>& rows, const FitOptions& o, std::array<ParamFit, kParams>& st) {
  for (int j = 0; j < kParams; ++j) {
    st[j].status = ParamFit::Status::Fitted;
    st[j].why.clear();
    if (std::find(o.hold.begin(), o.hold.end(), param(j)) != o.hold.end()) {
      st[j].status = ParamFit::Status::Held;
      st[j].why = "on request (--hold)";
      continue;
    }
    bool any = false, dominant = false;
    for (const auto& r : rows) {
      if (r.coef[j] == 0) continue;
      any = true;
      const double share = is_latency(param(j)) ? r.latency_share : 1 - r.latency_share;
      dominant = dominant || share >= o.dominant_share;
    }
    if (!any)
      st[j].why = is_latency(param(j)) ? "no point takes such a step" : "no point is limited by this link";
    else if (!dominant)
      st[j].why = is_latency(param(j)) ? "no point is latency-bound (small messages are needed)"
                                       : "no point is bandwidth-bound on this link (large messages are needed)";
    if (!st[j].why.empty()) st[j].status = ParamFit::Status::Held;
  }
  // Latencies must be separable on the latency-bound points, efficiencies on the bandwidth-bound
  // ones. Hold in priority order until they are: launch latency first (it only adds a constant).
  for (bool latency_group : {true, false}) {
    std::vector<const Row*> dom;
    for (const auto& r : rows)
      if ((latency_group ? r.latency_share : 1 - r.latency_share) >= o.dominant_share) dom.push_back(&r);
    for (;;) {
      std::vector<int> free;
      for (int j = 0; j < kParams; ++j)
        if (is_latency(param(j)) == latency_group && st[j].status == ParamFit::Status::Fitted) free.push_back(j);
      if (free.empty()) break;
      Eigen::MatrixXd A(dom.size(), free.size());
      for (std::size_t i = 0; i < dom.size(); ++i)
        for (std::size_t k = 0; k < free.size(); ++k) A(i, k) = dom[i]->coef[free[k]] / dom[i]->t;
      for (Eigen::Index k = 0; k < A.cols(); ++k) A.col(k).normalize();
      Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
      qr.setThreshold(kRankThreshold);
      if (qr.rank() == A.cols()) break;
      std::string others;
      for (std::size_t k = 1; k < free.size(); ++k) others += (k > 1 ? ", " : "") + std::string(param_key(param(free[k])));
      st[free[0]].status = ParamFit::Status::Held;
      st[free[0]].why = fmt::format("not separable from {} on these points (they all take the same steps)", others);
    }
  }
}

// Weighted least squares over the free parameters, with the physical bounds enforced by holding
// a violating parameter at its bound and solving again.
std::array<double, kParams> solve(const std::vector<Row>& rows, std::array<double, kParams> x,
                                  std::array<ParamFit, kParams>& st) {
  for (;;) {
    std::vector<int> free;
    for (int j = 0; j < kParams; ++j)
      if (st[j].status == ParamFit::Status::Fitted) free.push_back(j);
    if (free.empty()) return x;
    Eigen::MatrixXd A(rows.size(), free.size());
    Eigen::VectorXd b(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      double rhs = r.t - r.fixed;  // move the held parameters' share to the right-hand side
      for (int j = 0; j < kParams; ++j)
        if (st[j].status != ParamFit::Status::Fitted) rhs -= r.coef[j] * x[j];
      b(i) = rhs / r.t;  // relative error: divide each equation by the measured time
      for (std::size_t k = 0; k < free.size(); ++k) A(i, k) = r.coef[free[k]] / r.t;
    }
    Eigen::VectorXd scale = A.colwise().norm().transpose();
    for (Eigen::Index k = 0; k < A.cols(); ++k) A.col(k) /= scale(k);
    const Eigen::VectorXd y = A.colPivHouseholderQr().solve(b);
    bool clipped = false;
    for (std::size_t k = 0; k < free.size(); ++k) {
      const int j = free[k];
      const double v = y(k) / scale(k);
      x[j] = v;
      const double bound = is_latency(param(j)) ? 0.0 : 1.0;  // latency >= 0, 1 / efficiency >= 1
      if (v < bound) {
        x[j] = bound;
        clipped = true;
        st[j].status = ParamFit::Status::AtBound;
        st[j].why = is_latency(param(j))
                        ? fmt::format("the fit wants {:.3g} us < 0: the points are faster than the fixed link "
                                      "latencies allow; held at 0",
                                      v * 1e6)
                        : fmt::format("the fit wants efficiency {:.3f} > 1: the measured bandwidth exceeds what "
                                      "the model's algorithm can get from this link (e.g. NVLink SHARP, or a "
                                      "tree that moves fewer bytes than modelled); held at 1",
                                      1 / v);
      }
    }
    if (!clipped) return x;
  }
}

topologies::Cluster with(const topologies::Cluster& c, const std::array<double, kParams>& x) {
  auto out = c;
  for (int j = 0; j < kParams; ++j) set(out, param(j), x[j]);
  return out;
}

}  // namespace

const char* param_key(Param p) {
  switch (p) {
    case Param::LaunchLatency: return "collectives.launch_latency";
    case Param::StepLatencyIntra: return "collectives.step_latency_intra";
    case Param::StepLatencyInter: return "collectives.step_latency_inter";
    case Param::IntraEfficiency: return "intra_node.efficiency";
    case Param::NicEfficiency: return "nics.efficiency";
  }
  return "?";
}

Param parse_param(const std::string& text, const std::string& what) {
  std::string known;
  std::vector<Param> by_suffix;  // "launch_latency" is unique; "efficiency" is not
  for (int j = 0; j < kParams; ++j) {
    const std::string key = param_key(param(j));
    if (text == key) return param(j);
    if (text == key.substr(key.find('.') + 1)) by_suffix.push_back(param(j));
    known += (j ? ", " : "") + key;
  }
  if (by_suffix.size() == 1) return by_suffix.front();
  throw InputError(fmt::format("{}: unknown parameter '{}'; expected one of: {}", what, text, known));
}

const char* to_string(ParamFit::Status s) {
  switch (s) {
    case ParamFit::Status::Fitted: return "fitted";
    case ParamFit::Status::Held: return "held";
    case ParamFit::Status::AtBound: return "at bound";
  }
  return "?";
}

double PointFit::predicted_busbw() const {
  if (!point.op || !(predicted_s > 0)) return 0;
  return point.bytes / predicted_s * sim::bus_factor(*point.op, point.ranks());
}

topologies::Cluster cluster_for(const topologies::Cluster& c, const Point& p) {
  auto out = c;
  out.nodes = p.nodes;
  out.gpus_per_node = p.gpus_per_node;
  return out;
}

std::vector<PointFit> evaluate(const std::vector<Point>& points, const topologies::Cluster& c) {
  std::vector<PointFit> out;
  for (const auto& p : points) {
    PointFit f;
    f.point = p;
    f.skipped = covers(c, p);
    f.used = f.skipped.empty();
    if (f.used) {
      const auto cc = cluster_for(c, p);
      const auto plan = sim::plan_collective(cc, *p.op, p.bytes, sim::whole_cluster(cc), sim::Algorithm::Auto);
      f.algorithm = plan.algorithm;
      f.nvlink_bound = plan.nvlink_seconds >= plan.network_seconds;
      f.predicted_s = plan.seconds();
      f.latency_share = plan.latency_seconds / plan.seconds();
      f.error = f.predicted_s / p.time_s - 1;
    }
    out.push_back(std::move(f));
  }
  return out;
}

ErrorSummary summarize(const std::vector<PointFit>& points) {
  ErrorSummary s;
  for (const auto& f : points) {
    if (!f.used) continue;
    ++s.points;
    s.mean_abs += std::abs(f.error);
    if (std::abs(f.error) >= s.max_abs) s.max_abs = std::abs(f.error), s.worst = f.point.where;
  }
  if (s.points) s.mean_abs /= s.points;
  return s;
}

FitResult fit(const std::vector<Point>& points, const topologies::Cluster& base, const FitOptions& opts) {
  std::vector<const Point*> used;
  std::string why_not;
  for (const auto& p : points) {
    auto w = covers(base, p);
    if (w.empty()) used.push_back(&p);
    else if (why_not.empty()) why_not = fmt::format("{}: {}", p.where, w);
  }
  if (used.empty()) throw InputError(fmt::format("no point is covered by the model (first: {})", why_not));

  FitResult res;
  std::array<double, kParams> x{};
  for (int j = 0; j < kParams; ++j) {
    x[j] = get(base, param(j));
    res.params[j].param = param(j);
    res.params[j].base = x[j];
  }
  auto score = [&](const topologies::Cluster& c) {
    double sse = 0;
    for (const auto& f : evaluate(points, c))
      if (f.used) sse += f.error * f.error;
    return sse;
  };
  auto cur = base;
  std::vector<Row> prev;
  std::array<ParamFit, kParams> prev_st = res.params;
  double best_score = std::numeric_limits<double>::infinity();
  topologies::Cluster best = base;
  std::array<ParamFit, kParams> best_st = res.params;
  for (res.iterations = 0; res.iterations < kMaxIterations; ++res.iterations) {
    std::vector<Row> all, rows;
    for (const Point* p : used) all.push_back(linearize(cur, *p));
    for (auto& r : all) {
      r.in_fit = std::max(r.latency_share, 1 - r.latency_share) >= opts.dominant_share;
      if (r.in_fit) rows.push_back(r);
    }
    if (rows.empty()) throw InputError("no point is dominated by latency or by bandwidth");
    auto st = res.params;
    choose_free(rows, opts, st);
    for (int j = 0; j < kParams; ++j)  // a held parameter keeps its base value
      if (st[j].status == ParamFit::Status::Held) x[j] = get(base, param(j));
    // Converged when the choices made at the last solution are the ones it was solved under.
    bool same = res.iterations > 0 && all == prev;
    for (int j = 0; j < kParams && same; ++j)
      same = (st[j].status == ParamFit::Status::Held) == (prev_st[j].status == ParamFit::Status::Held);
    if (same) {
      res.converged = true;
      break;
    }
    auto x_new = solve(rows, x, st);
    cur = with(base, x_new);
    x = x_new;
    prev = std::move(all);
    prev_st = st;
    if (const double s = score(cur); s < best_score) best_score = s, best = cur, best_st = st;
  }
  if (!res.converged) cur = best, prev_st = best_st;  // the choices cycle: keep the best solution seen
  for (int j = 0; j < kParams; ++j) {
    res.params[j] = prev_st[j];
    res.params[j].base = get(base, param(j));
    res.params[j].value = get(cur, param(j));
    if (!is_latency(param(j))) res.params[j].base = 1 / res.params[j].base, res.params[j].value = 1 / res.params[j].value;
  }
  res.cluster = cur;
  res.points = evaluate(points, cur);
  for (auto& f : res.points)
    f.fitted = f.used && std::max(f.latency_share, 1 - f.latency_share) >= opts.dominant_share;
  res.error = summarize(res.points);
  return res;
}

}  // namespace tagcsim::calibrate
