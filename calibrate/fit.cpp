#include "calibrate/fit.hpp"
#include "calibrate/param_ranges.hpp"

#include "common/input.hpp"
#include "common/quantiles.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tagcsim::calibrate {
namespace {

constexpr int kMaxIterations = 200;
constexpr double kHuber = 0.05;        // log-errors past 5% count linearly
constexpr double kDetermined = 0.02;   // a parameter moves some point's time by 2% over its range
constexpr double kLatencyBound = 1 << 20;  // points below this size are latency-bound whatever their rate

// Latency-bound: below 1 MiB, or across nodes at under a quarter of the line rate of the NICs its GPUs
// use in bus bandwidth: then latency is at least half the time at any network efficiency above one half
// (GPUDirect-TCPX takes ~1 ms for every all-gather from 1 to 8 MiB, and its tables start at 1 MiB).
bool latency_bound(const Sample& s) {
  const auto& p = s.point;
  if (p.bytes < kLatencyBound) return true;
  if (p.nodes < 2 || !p.op || p.time_s <= 0) return false;
  const double busbw = sim::bus_factor(*p.op, p.ranks()) * p.bytes / p.time_s;
  // The share of the node's rails its GPUs use (cluster_for keeps the node when they are fewer).
  const auto& c = s.cluster;
  const double share = p.gpus_per_node >= c.gpus_per_node ? 1.0 : double(c.rails_of_gpus(0, p.gpus_per_node)) / c.rails();
  return busbw < 0.25 * c.nics.count * c.nics.bandwidth * share;
}
bool per_message(Param p) { return p == Param::TransportLatency || p == Param::TransportOverhead; }

std::string covers(const topologies::Cluster& c, const Point& p) {
  if (!p.op) return fmt::format("the model has no {}", p.op_name);
  if (p.ranks() < 2) return "one rank exchanges nothing";
  if (p.nodes > 1 && (c.nics.count < 1 || !(c.nics.bandwidth > 0))) return "the cluster has no NICs between nodes";
  if (p.gpus_per_node > 1 && !(c.intra.bandwidth > 0)) return "the cluster has no intra-node bandwidth";
  if (!(p.time_s > 0)) return "no measured time";
  return {};
}

sim::CollectivePlan plan_point(const topologies::Cluster& c, const Point& p) {
  auto cc = cluster_for(c, p);
  // What the run set overrides the machine's defaults (NCCL_ALGO, NCCL_PROTO, its NCCL release).
  if (p.algos) cc.nccl.algos = p.algos;
  if (p.protos) cc.nccl.protos = p.protos;
  if (p.nccl_version) cc.nccl.version = p.nccl_version;
  return sim::plan_collective(cc, *p.op, p.bytes, group_for(p), sim::PlanOptions{.gpus_per_process = p.gpus_per_process});
}

// The fit's working set: the samples' distinct base clusters (one per table, without their long source
// texts, which the model never reads) and, per sample, which base it runs on. Setting the parameters
// once per base instead of once per point keeps a fit over hundreds of points fast.
struct Working {
  std::vector<topologies::Cluster> bases;
  std::vector<std::size_t> base_of;
  std::vector<Point> points;
};

Working working_set(const std::vector<Sample>& samples) {
  Working w;
  for (const auto& s : samples) {
    std::size_t b = 0;
    auto strip = [](topologies::Cluster c) {
      c.source.clear(), c.gpu.source.clear(), c.nics.transport.source.clear(), c.nccl.source.clear();
      return c;
    };
    const auto c = strip(s.cluster);
    // Samples of one table share their cluster: compare against the last base first.
    for (b = w.bases.size(); b > 0; --b) {
      const auto& o = w.bases[b - 1];
      if (o.name == c.name && o.gpu.name == c.gpu.name && o.host_cpu == c.host_cpu && o.intra.name == c.intra.name &&
          o.intra.efficiency == c.intra.efficiency && o.intra.nvls_efficiency == c.intra.nvls_efficiency &&
          o.intra.nvls_tree_efficiency == c.intra.nvls_tree_efficiency &&
          o.intra.ll128_efficiency == c.intra.ll128_efficiency &&
          o.nics.transport.name == c.nics.transport.name && o.nics.efficiency == c.nics.efficiency &&
          o.nics.transport.latency == c.nics.transport.latency && o.nics.transport.overhead == c.nics.transport.overhead &&
          o.nccl.algos == c.nccl.algos && o.nccl.protos == c.nccl.protos && o.nccl.version == c.nccl.version &&
          o.nccl.channels == c.nccl.channels && o.nics.count == c.nics.count && o.nics.bandwidth == c.nics.bandwidth &&
          o.intra.bandwidth == c.intra.bandwidth && o.gpu.sm == c.gpu.sm &&
          std::memcmp(&o.collectives, &c.collectives, sizeof(c.collectives)) == 0)
        break;
    }
    if (b == 0) {
      w.bases.push_back(c);
      b = w.bases.size();
    }
    w.base_of.push_back(b - 1);
    w.points.push_back(s.point);
  }
  return w;
}

// log(model / measured) per sample, with values x of parameters ids.
Eigen::VectorXd log_errors(const Working& w, const std::vector<ParamId>& ids, const std::vector<double>& x) {
  std::vector<topologies::Cluster> bases = w.bases;
  for (auto& c : bases)
    for (std::size_t j = 0; j < ids.size(); ++j) set(c, ids[j], x[j]);
  Eigen::VectorXd r(w.points.size());
  for (std::size_t i = 0; i < w.points.size(); ++i)
    r(Eigen::Index(i)) = std::log(plan_point(bases[w.base_of[i]], w.points[i]).seconds() / w.points[i].time_s);
  return r;
}

// Huber weights: errors within kHuber count squared, beyond it linearly.
Eigen::VectorXd huber_weights(const Eigen::VectorXd& r) {
  Eigen::VectorXd w(r.size());
  for (Eigen::Index i = 0; i < r.size(); ++i) w(i) = std::abs(r(i)) <= kHuber ? 1.0 : std::sqrt(kHuber / std::abs(r(i)));
  return w;
}

double huber_loss(const Eigen::VectorXd& r) {
  double s = 0;
  for (Eigen::Index i = 0; i < r.size(); ++i) {
    const double a = std::abs(r(i));
    s += a <= kHuber ? a * a : kHuber * (2 * a - kHuber);
  }
  return s;
}

}  // namespace

double PointFit::predicted_busbw() const {
  if (!point.op || !(predicted_s > 0)) return 0;
  return point.bytes / predicted_s * sim::bus_factor(*point.op, point.ranks());
}

topologies::Cluster cluster_for(const topologies::Cluster& c, const Point& p) {
  auto out = c;
  out.nodes = p.nodes;
  // A run on k of a node's GPUs keeps the whole node, so that each of its GPUs keeps the NIC it is
  // wired to: NCCL sends a GPU's traffic through its own rail, and one GPU of an 8-NIC node gets one
  // NIC's bandwidth, not the node's (S111: 49 GB/s a GPU on 400 Gb/s NICs, 1, 2 and 4 GPUs a node).
  // A run on more GPUs than the base cluster's node grows the node.
  out.gpus_per_node = std::max(c.gpus_per_node, p.gpus_per_node);
  return out;
}

sim::Group group_for(const Point& p) {
  return sim::Group{.nodes = p.nodes, .gpus_per_node = p.gpus_per_node, .node_stride = 1, .count = 1, .first_gpu = 0};
}

std::vector<PointFit> evaluate(const std::vector<Sample>& samples) {
  std::vector<PointFit> out;
  for (const auto& s : samples) {
    PointFit f;
    f.point = s.point;
    f.table = s.table;
    f.skipped = covers(s.cluster, s.point);
    f.used = f.skipped.empty();
    if (f.used) {
      f.plan = plan_point(s.cluster, s.point);
      f.predicted_s = f.plan.seconds();
      f.error = f.predicted_s / s.point.time_s - 1;
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<PointFit> evaluate(const std::vector<Point>& points, const topologies::Cluster& c) {
  std::vector<Sample> samples;
  for (const auto& p : points) samples.push_back({p, c, ""});
  return evaluate(samples);
}

const std::vector<Band>& size_bands() {
  static const std::vector<Band> bands = {{"< 1 MiB", 0, 1 << 20},
                                          {"1-64 MiB", 1 << 20, 64.0 * (1 << 20)},
                                          {">= 64 MiB", 64.0 * (1 << 20), std::numeric_limits<double>::infinity()},
                                          {"32 KiB-1 MiB", 32 * 1024, 1 << 20},
                                          {">= 1 MiB", 1 << 20, std::numeric_limits<double>::infinity()}};
  return bands;
}

ErrorSummary summarize(const std::vector<PointFit>& points, const Band& band) {
  ErrorSummary s;
  std::vector<double> abs_errors;
  for (const auto& f : points) {
    if (!f.used || f.point.bytes < band.lo || f.point.bytes >= band.hi) continue;
    const double e = std::abs(f.error);
    abs_errors.push_back(e);
    s.mean_abs += e;
    if (e >= s.max_abs) s.max_abs = e, s.worst = f.point.where;
  }
  s.points = int(abs_errors.size());
  if (abs_errors.empty()) return s;
  s.mean_abs /= s.points;
  s.median_abs = median(abs_errors);
  s.p90_abs = nearest_rank(abs_errors, 0.9);
  return s;
}

ErrorSummary summarize(const std::vector<PointFit>& points) {
  return summarize(points, {"all", 0, std::numeric_limits<double>::infinity()});
}

FitResult fit(const std::vector<Point>& points, const topologies::Cluster& base, const FitOptions& opts) {
  std::vector<Sample> samples;
  for (const auto& p : points) samples.push_back({p, base, ""});
  return fit(samples, opts);
}

FitResult fit(const std::vector<Sample>& all, const FitOptions& opts) {
  std::vector<Sample> used;
  std::string why_not;
  for (const auto& s : all) {
    auto w = covers(s.cluster, s.point);
    // An all-to-all is predicted from what the rings and trees fitted, never fitted itself: its
    // point-to-point traffic would pull the ring's parameters towards a mechanism they do not model.
    if (w.empty() && s.point.op == sim::CollectiveOp::AllToAll) w = "an all-to-all is predicted, never fitted";
    if (w.empty()) used.push_back(s);
    else if (why_not.empty()) why_not = fmt::format("{}: {}", s.point.where, w);
  }
  if (used.empty()) throw InputError(fmt::format("no point is covered by the model (first: {})", why_not));

  const Working work = working_set(used);
  // The parameters these points depend on, each starting from the first cluster that has it.
  std::vector<ParamId> ids;
  std::vector<double> x;
  for (const auto& s : used)
    for (const auto& id : params_of(s.cluster, s.point))
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id), x.push_back(get(s.cluster, id));
  FitResult res;
  for (std::size_t j = 0; j < ids.size(); ++j) res.params.push_back({ids[j], ParamFit::Status::Fitted, x[j], x[j], {}});

  // Which parameters the data determines: moving one across its typical range must move some
  // point's time by kDetermined.
  const Eigen::VectorXd r0 = log_errors(work, ids, x);
  for (std::size_t j = 0; j < ids.size(); ++j) {
    auto& pf = res.params[j];
    if (std::find(opts.hold.begin(), opts.hold.end(), ids[j].param) != opts.hold.end()) {
      pf.status = ParamFit::Status::Held, pf.why = "on request (--hold)";
      continue;
    }
    const bool freed = std::find(opts.free.begin(), opts.free.end(), ids[j].param) != opts.free.end();
    if (ids[j].param == Param::LaunchLatency && !freed) {
      pf.status = ParamFit::Status::Held,
      pf.why = "NCCL's base latency per algorithm and protocol stands for it (--free to fit it)";
      continue;
    }
    if (ids[j].param == Param::NvlsChunkOverhead && !freed) {
      pf.status = ParamFit::Status::Held,
      pf.why = "the NVLS pipeline fill stands for it; NVLS trees pin it to what single nodes do not show (--free "
               "to fit it)";
      continue;
    }
    const Range rg = range(ids[j].param);
    // A ceiling shows only once it is reached: probe it from below, whatever else shows from above.
    const double step = ceiling(ids[j].param) ? -rg.scale : rg.scale;
    auto moved = x;
    moved[j] = x[j] + step <= rg.hi && x[j] + step >= rg.lo ? x[j] + step : x[j] - step;
    // A transport's per-message costs (latency, per-step overhead) show in latency-bound points. Larger
    // messages that run slow but not that slow (a tuner plugin's channel choice, a slow flow) would
    // otherwise pass for a long latency.
    const Eigen::VectorXd change = log_errors(work, ids, moved) - r0;
    double sens = 0;
    for (std::size_t i = 0; i < used.size(); ++i)
      if (!per_message(ids[j].param) || latency_bound(used[i]))
        sens = std::max(sens, std::abs(change(Eigen::Index(i))));
    if (sens < kDetermined)
      pf.status = ParamFit::Status::Held,
      pf.why = fmt::format("no {}point's time moves by {:.0f}% with it (at most {:.2f}%): the data does not "
                           "determine it",
                           per_message(ids[j].param) ? "latency-bound (< 1 MiB, or < 25% of the line rate) " : "",
                           kDetermined * 100, sens * 100);
  }
  std::vector<int> free;
  for (std::size_t j = 0; j < ids.size(); ++j)
    if (res.params[j].status == ParamFit::Status::Fitted) free.push_back(int(j));

  auto clip = [&](std::vector<double>& v) {
    for (int j : free) v[j] = std::clamp(v[j], range(ids[j].param).lo, range(ids[j].param).hi);
  };
  // The depths and overheads switch algorithms on and off, so the loss has several basins: start
  // from the given values and from each such parameter at a few typical-range units, keep the best.
  const std::vector<double> x_start = x;
  std::vector<std::vector<double>> starts = {x_start};
  for (double units : {3.0, 10.0}) {
    auto v = x_start;
    for (int j : free)
      if (!is_efficiency(ids[j].param) && ids[j].param != Param::TransportLatency) v[j] = units * range(ids[j].param).scale;
    clip(v);
    starts.push_back(v);
  }
  // The starting values' pull, as extra residual rows: sqrt(w) (x - x0) / sigma.
  auto prior_terms = [&](const std::vector<double>& v) {
    double s2 = 0;
    for (int j : free)
      if (const double sg = prior_sigma(ids[j].param); sg > 0) s2 += opts.prior_weight * std::pow((v[j] - x_start[j]) / sg, 2);
    return s2;
  };
  auto total_loss = [&](const Eigen::VectorXd& r_data, const std::vector<double>& v) {
    return huber_loss(r_data) + prior_terms(v);
  };
  std::vector<double> best_x = x_start;
  double best_loss = std::numeric_limits<double>::infinity();
  int total_iterations = 0;
  for (const auto& start : starts) {
  x = start;
  Eigen::VectorXd r = log_errors(work, ids, x);
  double loss = total_loss(r, x);
  double lambda = 1e-2;
  // Levenberg-Marquardt on Huber-weighted log-errors, in units of each parameter's range.
  for (res.iterations = 0; res.iterations < kMaxIterations && !free.empty(); ++res.iterations) {
    const Eigen::VectorXd w = huber_weights(r);
    Eigen::MatrixXd J(r.size(), free.size());
    for (std::size_t k = 0; k < free.size(); ++k) {
      const int j = free[k];
      const Range rg = range(ids[j].param);
      // A step of 1% of the range; backwards at the upper bound. Algorithm switches make the model
      // piecewise smooth, so steps much smaller than that see no slope where one exists.
      const double h = (x[j] + 0.01 * rg.scale <= rg.hi ? 1 : -1) * 0.01 * rg.scale;
      auto moved = x;
      moved[j] += h;
      J.col(k) = (log_errors(work, ids, moved) - r) / (h / rg.scale);
    }
    const Eigen::MatrixXd Jw = w.asDiagonal() * J;
    const Eigen::VectorXd rw = w.cwiseProduct(r);
    Eigen::MatrixXd A = Jw.transpose() * Jw;
    Eigen::VectorXd g = Jw.transpose() * rw;
    for (std::size_t k = 0; k < free.size(); ++k)
      if (const double sg = prior_sigma(ids[free[k]].param); sg > 0 && opts.prior_weight > 0) {
        const double jp = std::sqrt(opts.prior_weight) * range(ids[free[k]].param).scale / sg;
        A(k, k) += jp * jp;
        g(k) += jp * std::sqrt(opts.prior_weight) * (x[free[k]] - x_start[free[k]]) / sg;
      }
    bool improved = false;
    for (int tries = 0; tries < 12 && !improved; ++tries) {
      Eigen::MatrixXd M = A;
      M.diagonal() += lambda * (A.diagonal().array() + 1e-9).matrix();
      const Eigen::VectorXd step = M.ldlt().solve(-g);
      auto trial = x;
      for (std::size_t k = 0; k < free.size(); ++k) trial[free[k]] += step(k) * range(ids[free[k]].param).scale;
      clip(trial);
      const Eigen::VectorXd rt = log_errors(work, ids, trial);
      const double lt = total_loss(rt, trial);
      if (lt < loss - 1e-12) {
        improved = loss - lt > 1e-10 * std::max(1.0, loss);
        x = trial, r = rt, loss = lt;
        lambda = std::max(lambda / 3, 1e-7);
        if (!improved) break;
      } else {
        lambda *= 4;
      }
    }
    if (!improved) break;
  }
  // Algorithm and protocol switches leave kinks that stop a gradient method short: polish with a
  // bounded Nelder-Mead simplex in the same units, then let Levenberg-Marquardt finish again.
  if (!free.empty()) {
    const int n = int(free.size());
    auto point = [&](const Eigen::VectorXd& u) {
      auto v = x;
      for (int k = 0; k < n; ++k) v[free[k]] = u(k) * range(ids[free[k]].param).scale;
      clip(v);
      return v;
    };
    auto cost = [&](const Eigen::VectorXd& u) {
      const auto v = point(u);
      return total_loss(log_errors(work, ids, v), v);
    };
    std::vector<Eigen::VectorXd> simplex(n + 1, Eigen::VectorXd(n));
    std::vector<double> f(n + 1);
    for (int k = 0; k < n; ++k) simplex[0](k) = x[free[k]] / range(ids[free[k]].param).scale;
    for (int i = 1; i <= n; ++i) {
      simplex[i] = simplex[0];
      simplex[i](i - 1) += simplex[0](i - 1) > 0.5 ? -0.25 * simplex[0](i - 1) : 0.5;
    }
    for (int i = 0; i <= n; ++i) f[i] = cost(simplex[i]);
    for (int it = 0; it < 400 * n; ++it) {
      std::vector<int> order(n + 1);
      for (int i = 0; i <= n; ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](int a, int b) { return f[a] < f[b]; });
      const int best = order[0], worst = order[n], second = order[n - 1];
      if (f[worst] - f[best] < 1e-10 * std::max(1.0, f[best])) break;
      Eigen::VectorXd centre = Eigen::VectorXd::Zero(n);
      for (int i = 0; i <= n; ++i)
        if (i != worst) centre += simplex[i] / n;
      auto towards = [&](double t) { Eigen::VectorXd v = centre + t * (simplex[worst] - centre); return v; };
      const Eigen::VectorXd xr = towards(-1);
      const double fr = cost(xr);
      if (fr < f[best]) {
        const Eigen::VectorXd xe = towards(-2);
        const double fe = cost(xe);
        if (fe < fr) simplex[worst] = xe, f[worst] = fe;
        else simplex[worst] = xr, f[worst] = fr;
      } else if (fr < f[second]) {
        simplex[worst] = xr, f[worst] = fr;
      } else {
        const Eigen::VectorXd xc = towards(0.5);
        const double fc = cost(xc);
        if (fc < f[worst]) {
          simplex[worst] = xc, f[worst] = fc;
        } else {
          for (int i = 0; i <= n; ++i)
            if (i != best) simplex[i] = simplex[best] + 0.5 * (simplex[i] - simplex[best]), f[i] = cost(simplex[i]);
        }
      }
    }
    const int best = int(std::min_element(f.begin(), f.end()) - f.begin());
    if (f[best] < loss) x = point(simplex[best]), r = log_errors(work, ids, x), loss = f[best];
  }
  total_iterations += res.iterations;
  if (loss < best_loss) best_loss = loss, best_x = x;
  }
  x = best_x;
  res.iterations = total_iterations;
  for (int j : free) {
    auto& pf = res.params[j];
    pf.value = x[j];
    const Range rg = range(ids[j].param);
    const bool at_lo = x[j] <= rg.lo + 1e-12 * std::max(1.0, rg.scale), at_hi = x[j] >= rg.hi - 1e-12;
    if (at_lo || at_hi)
      pf.status = ParamFit::Status::AtBound,
      pf.why = fmt::format("the data wants it {} its physical range [{}, {}]: held at the bound", at_lo ? "below" : "above",
                           format_param(ids[j].param, rg.lo), format_param(ids[j].param, rg.hi));
  }
  // Report against all input samples, with the fitted values.
  std::vector<Sample> fitted = all;
  for (auto& s : fitted)
    for (std::size_t j = 0; j < ids.size(); ++j) set(s.cluster, ids[j], x[j]);
  res.points = evaluate(fitted);
  res.error = summarize(res.points);
  for (auto& s : fitted) res.clusters.push_back(s.cluster);
  return res;
}

std::vector<PointFit> held_out_by_table(const std::vector<Sample>& samples, const FitOptions& opts) {
  std::vector<std::string> tables;
  for (const auto& s : samples)
    if (std::find(tables.begin(), tables.end(), s.table) == tables.end()) tables.push_back(s.table);
  if (tables.size() < 2) throw InputError("held out: needs two or more tables (logs), one to predict from the others");
  std::vector<PointFit> out;
  for (const auto& table : tables) {
    std::vector<Sample> train, held;
    for (const auto& s : samples) (s.table == table ? held : train).push_back(s);
    const FitResult r = fit(train, opts);
    for (auto& s : held) s.cluster = with_fit(s.cluster, r);
    const auto pts = evaluate(held);
    out.insert(out.end(), pts.begin(), pts.end());
  }
  return out;
}

}  // namespace tagcsim::calibrate
