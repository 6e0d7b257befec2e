#include "calibrate/fit.hpp"

#include "common/input.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tagcsim::calibrate {
namespace {

constexpr double us = 1e-6;
constexpr int kMaxIterations = 200;
constexpr double kHuber = 0.05;        // log-errors past 5% count linearly
constexpr double kDetermined = 0.02;   // a parameter moves some point's time by 2% over its range

Param param(int j) { return static_cast<Param>(j); }
bool is_latency(Param p) {
  return p == Param::LaunchLatency || p == Param::HostLaunch || p == Param::HostLaunchPerChannel ||
         p == Param::NvlsChunkOverhead || p == Param::TransportOverhead ||
         p == Param::TransportLatency;
}
bool is_efficiency(Param p) {
  return p == Param::IntraEfficiency || p == Param::NvlsEfficiency || p == Param::NicEfficiency;
}

// Typical range and physical bounds of each parameter.
struct Range {
  double scale, lo, hi;
};
Range range(Param p) {
  switch (p) {
    case Param::LaunchLatency: return {10 * us, 0, 100 * us};
    case Param::HostLaunch: return {5 * us, 0, 50 * us};
    case Param::HostLaunchPerChannel: return {0.5 * us, 0, 5 * us};
    // A pipeline holds at most NCCL_STEPS (8) chunks in flight per stage: depths beyond two stages'
    // worth are not physical; a ring step waits at most a couple of chunks for its first slice.
    case Param::RingDepth: return {0.25, 0, 2};
    case Param::TreeDepth: return {1, 0, 16};
    case Param::NvlsDepth: return {2, 0, 16};
    case Param::NvlsChunkOverhead: return {1 * us, 0, 20 * us};
    case Param::IntraEfficiency:
    case Param::NvlsEfficiency:
    case Param::NicEfficiency: return {0.1, 0.3, 1.0};
    case Param::TransportLatency: return {10 * us, 0, 300 * us};
    case Param::TransportOverhead: return {1 * us, 0, 30 * us};
  }
  return {1, 0, 1};
}

// How far an efficiency may stray from its starting value before it must pay for it, when starting
// from the priors (FitOptions::prior_weight): those are measured or published rates, good to a few
// percent. Latencies and depths have no such anchor. A parameter the data determines well moves
// anyway; one only a secondary effect moves (a link that is not the bottleneck) stays near its source.
double prior_sigma(Param p) {
  switch (p) {
    case Param::IntraEfficiency:
    case Param::NvlsEfficiency: return 0.03;
    case Param::NicEfficiency: return 0.05;
    default: return 0;
  }
}

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
  if (p.algos) cc.nccl.algos = p.algos;
  return sim::plan_collective(cc, *p.op, p.bytes, sim::whole_cluster(cc),
                              sim::PlanOptions{.gpus_per_process = p.gpus_per_process});
}

// The samples' clusters with values x of parameters ids.
std::vector<topologies::Cluster> apply(const std::vector<Sample>& samples, const std::vector<ParamId>& ids,
                                       const std::vector<double>& x) {
  std::vector<topologies::Cluster> out;
  out.reserve(samples.size());
  for (const auto& s : samples) {
    auto c = s.cluster;
    for (std::size_t j = 0; j < ids.size(); ++j) set(c, ids[j], x[j]);
    out.push_back(std::move(c));
  }
  return out;
}

// log(model / measured) per sample.
Eigen::VectorXd log_errors(const std::vector<Sample>& samples, const std::vector<ParamId>& ids,
                           const std::vector<double>& x) {
  const auto clusters = apply(samples, ids, x);
  Eigen::VectorXd r(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i)
    r(i) = std::log(plan_point(clusters[i], samples[i].point).seconds() / samples[i].point.time_s);
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

const char* param_key(Param p) {
  switch (p) {
    case Param::LaunchLatency: return "collectives.launch_latency";
    case Param::HostLaunch: return "collectives.host_launch";
    case Param::HostLaunchPerChannel: return "collectives.host_launch_per_channel";
    case Param::RingDepth: return "collectives.ring_depth";
    case Param::TreeDepth: return "collectives.tree_depth";
    case Param::NvlsDepth: return "collectives.nvls_depth";
    case Param::NvlsChunkOverhead: return "collectives.nvls_chunk_overhead";
    case Param::IntraEfficiency: return "intra_node.efficiency";
    case Param::NvlsEfficiency: return "intra_node.nvls_efficiency";
    case Param::TransportLatency: return "nics.transport.latency";
    case Param::TransportOverhead: return "nics.transport.overhead";
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
    if (text == key.substr(key.rfind('.') + 1)) by_suffix.push_back(param(j));
    known += (j ? ", " : "") + key;
  }
  if (by_suffix.size() == 1) return by_suffix.front();
  throw InputError(fmt::format("{}: unknown parameter '{}'; expected one of: {}", what, text, known));
}

std::string ParamId::name() const { return scope.empty() ? param_key(param) : fmt::format("{}@{}", param_key(param), scope); }

std::vector<ParamId> params_of(const topologies::Cluster& c, const Point& p) {
  std::vector<ParamId> out;
  for (auto q : {Param::LaunchLatency, Param::HostLaunch, Param::HostLaunchPerChannel, Param::RingDepth,
                 Param::TreeDepth, Param::NvlsDepth, Param::NvlsChunkOverhead})
    out.push_back({q, ""});
  const std::string intra = c.intra.name.empty() ? "custom" : c.intra.name;
  if (p.gpus_per_node > 1) {
    out.push_back({Param::IntraEfficiency, intra});
    if (c.intra.nvls_efficiency > 0) out.push_back({Param::NvlsEfficiency, intra});
  }
  if (p.nodes > 1) {
    const std::string tr = c.nics.transport.name.empty() ? "custom" : c.nics.transport.name;
    out.push_back({Param::TransportLatency, tr});
    out.push_back({Param::TransportOverhead, tr});
    out.push_back({Param::NicEfficiency, tr});
  }
  return out;
}

double get(const topologies::Cluster& c, const ParamId& id) {
  const auto& cl = c.collectives;
  switch (id.param) {
    case Param::LaunchLatency: return cl.launch_latency;
    case Param::HostLaunch: return cl.host_launch;
    case Param::HostLaunchPerChannel: return cl.host_launch_per_channel;
    case Param::RingDepth: return cl.ring_depth;
    case Param::TreeDepth: return cl.tree_depth;
    case Param::NvlsDepth: return cl.nvls_depth;
    case Param::NvlsChunkOverhead: return cl.nvls_chunk_overhead;
    case Param::IntraEfficiency: return c.intra.efficiency;
    case Param::NvlsEfficiency: return c.intra.nvls_efficiency;
    case Param::TransportLatency: return c.nics.transport.latency;
    case Param::TransportOverhead: return c.nics.transport.overhead;
    case Param::NicEfficiency: return c.nics.efficiency;
  }
  return 0;
}

void set(topologies::Cluster& c, const ParamId& id, double v) {
  auto& cl = c.collectives;
  const std::string intra = c.intra.name.empty() ? "custom" : c.intra.name;
  const std::string tr = c.nics.transport.name.empty() ? "custom" : c.nics.transport.name;
  switch (id.param) {
    case Param::LaunchLatency: cl.launch_latency = v; break;
    case Param::HostLaunch: cl.host_launch = v; break;
    case Param::HostLaunchPerChannel: cl.host_launch_per_channel = v; break;
    case Param::RingDepth: cl.ring_depth = v; break;
    case Param::TreeDepth: cl.tree_depth = v; break;
    case Param::NvlsDepth: cl.nvls_depth = v; break;
    case Param::NvlsChunkOverhead: cl.nvls_chunk_overhead = v; break;
    case Param::IntraEfficiency:
      if (id.scope == intra) c.intra.efficiency = v;
      break;
    case Param::NvlsEfficiency:
      if (id.scope == intra && c.intra.nvls_efficiency > 0) c.intra.nvls_efficiency = v;
      break;
    case Param::TransportLatency:
      if (id.scope == tr) c.nics.transport.latency = v;
      break;
    case Param::TransportOverhead:
      if (id.scope == tr) c.nics.transport.overhead = v;
      break;
    case Param::NicEfficiency:
      if (id.scope == tr) c.nics.efficiency = c.nics.transport.efficiency = v;
      break;
  }
}

std::string format_param(Param p, double value) {
  if (is_efficiency(p)) return fmt::format("{:.4f}", value);
  if (is_latency(p)) return fmt::format("{:.4g} us", value * 1e6);
  return fmt::format("{:.3f}", value);
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
  std::sort(abs_errors.begin(), abs_errors.end());
  const auto n = abs_errors.size();
  s.median_abs = n % 2 ? abs_errors[n / 2] : (abs_errors[n / 2 - 1] + abs_errors[n / 2]) / 2;
  // Nearest rank: the smallest error at or above which 10% of the points lie.
  s.p90_abs = abs_errors[std::min(n - 1, std::size_t(std::ceil(0.9 * double(n))) - 1)];
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
    if (w.empty()) used.push_back(s);
    else if (why_not.empty()) why_not = fmt::format("{}: {}", s.point.where, w);
  }
  if (used.empty()) throw InputError(fmt::format("no point is covered by the model (first: {})", why_not));

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
  const Eigen::VectorXd r0 = log_errors(used, ids, x);
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
    auto moved = x;
    moved[j] = x[j] + rg.scale <= rg.hi ? x[j] + rg.scale : x[j] - rg.scale;
    const double sens = (log_errors(used, ids, moved) - r0).cwiseAbs().maxCoeff();
    if (sens < kDetermined)
      pf.status = ParamFit::Status::Held,
      pf.why = fmt::format("no point's time moves by {:.0f}% with it (at most {:.2f}%): the data does not "
                           "determine it",
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
  Eigen::VectorXd r = log_errors(used, ids, x);
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
      J.col(k) = (log_errors(used, ids, moved) - r) / (h / rg.scale);
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
      const Eigen::VectorXd rt = log_errors(used, ids, trial);
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
      return total_loss(log_errors(used, ids, v), v);
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
    if (f[best] < loss) x = point(simplex[best]), r = log_errors(used, ids, x), loss = f[best];
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

topologies::Cluster with_fit(topologies::Cluster c, const FitResult& r) {
  for (const auto& p : r.params) set(c, p.id, p.value);
  return c;
}

topologies::Cluster with_priors(topologies::Cluster c) {
  // NCCL's costs as NCCL models them: its latency table and nothing more, except a host launch cost.
  auto& cl = c.collectives;
  cl.latency_scale = 1;
  cl.launch_latency = 0;
  cl.host_launch = 5 * us;
  cl.host_launch_per_channel = 0;
  cl.ring_depth = cl.tree_depth = cl.nvls_depth = 0;
  cl.nvls_chunk_overhead = 0;
  if (c.intra.name == "nvlink3") c.intra.efficiency = 20.0 / 25;
  if (c.intra.name == "nvlink4") {
    c.intra.efficiency = 20.6 / 25;
    if (c.intra.nvls_efficiency > 0) c.intra.nvls_efficiency = 274.3e9 * 9 / 8 / 450e9;
  }
  if (c.nics.transport.name == "efa") {
    c.nics.transport.latency = 75 * us;
    c.nics.transport.overhead = 2 * us;
    c.nics.efficiency = c.nics.transport.efficiency = 0.90;
  }
  return c;
}

std::string prior_sources() {
  return "priors (never from the shipped tables): NCCL's latency table at scale 1 with no launch latency and no "
         "pipeline fill (tuning.cc); host launch 5 us per GPU (a CUDA kernel launch, pytorch/pytorch#41383: ~7 us "
         "per op with dispatch); NVLink ring efficiency = NCCL's own per-link rate / line rate (topo.h: 20 of 25 "
         "GB/s NVLink3, 20.6 of 25 NVLink4); NVLS efficiency 0.686 from the NCCL maintainers' 480 GB/s bus "
         "bandwidth on 8 H100 (NVIDIA/nccl-tests#212); EFA latency 75 us, what aws-ofi-nccl reports to NCCL "
         "(platform-aws.cpp), overhead 2 us, NCCL's per-step post cost on AMD hosts (tuning.cc getNetOverhead), "
         "efficiency 0.90 assumed; other transports as their profiles (none is fitted)";
}

}  // namespace tagcsim::calibrate
