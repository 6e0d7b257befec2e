#include "sim/tune.hpp"

#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <tuple>

namespace tagcsim::sim {

std::string KindOption::describe() const {
  if (!compress) return "plain reduce-scatter";
  return fmt::format("r={:g} s={:g} {}", ratio, sparsity, kernels::to_string(index));
}

namespace {

using kernels::IndexEncoding;

// A duration for a reason: ms below a second, s above (3 significant digits).
std::string ms(double s) { return s < 1 ? fmt::format("{:.3g} ms", 1e3 * s) : fmt::format("{:.3g} s", s); }

struct Cost {
  double seconds = 0, kernel_s = 0, latency_s = 0;
  int collectives = 0;
};

// Costs one unit's gradient reduction by building the schedule of a model
// holding only that unit with build_policy_step, so the tuner prices exactly
// the tasks (and formulas) the replay will see, without copying policy.cpp.
// Kernels and collectives are summed, not overlapped: they sit on different
// streams, and either can end up on the step's critical path. Units of equal
// size cost the same, so the cache key is the size, not the unit (overlap,
// which sets the decode rounds, is fixed for one tuning).
class UnitCoster {
 public:
  explicit UnitCoster(const StepSetup& setup) : one_(setup), kp_(kernel_profile_for(setup.cluster.gpu)) {}

  Cost plain(const models::FsdpUnit& u) { return cost(u, Policy{}, {u.params, -1, 0, 0, -1}); }
  Cost compressed(const models::FsdpUnit& u, const Policy& p) {
    return cost(u, p, {u.params, int(p.kind), p.ratio, p.sparsity, int(p.index)});
  }
  int evaluations = 0;

 private:
  using Key = std::tuple<std::int64_t, int, double, double, int>;
  Cost cost(const models::FsdpUnit& u, const Policy& p, const Key& key) {
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    ++evaluations;
    one_.units = {u};
    const Schedule s = build_policy_step(one_, p, kp_);
    Cost c;
    for (const auto& t : s.tasks) {
      const bool reduction = t.category == Category::CompressionKernel || t.category == Category::ReduceScatter ||
                             t.category == Category::AllReduce || t.category == Category::CompressedCollective;
      if (t.unit != 0 || !reduction) continue;
      c.seconds += t.seconds;
      if (t.category == Category::CompressionKernel) c.kernel_s += t.seconds;
      for (const auto& ph : t.phases) {
        c.seconds += ph.count * ph.plan.seconds();
        c.latency_s += ph.count * ph.plan.latency_seconds;
        c.collectives += ph.count;
      }
    }
    return cache_[key] = c;
  }
  StepSetup one_;
  kernels::KernelProfile kp_;
  std::map<Key, Cost> cache_;
};

struct KindGroup {
  models::UnitKind kind;
  std::vector<int> units;
  std::int64_t params = 0;
};

// One whole-model candidate: an option index per unit kind (0 = plain).
struct Combo {
  PolicyKind kind = PolicyKind::Fsdp;
  std::vector<int> choice;
  double analytic_s = 0;
  bool compresses() const {
    return std::any_of(choice.begin(), choice.end(), [](int c) { return c != 0; });
  }
};

// Multiple-choice knapsack: one option per kind, minimum summed time, summed
// weight (the kind's share of the squared total error) within cap = bound^2.
// Weights are rounded up onto kBins bins, so a combination that fits the bins
// fits the bound exactly; that may cost a sliver of optimality, never validity.
constexpr int kBins = 4096;
// Savings below this fraction of the fsdp step (split over the unit kinds)
// are within the analytic model's noise: no error is spent on them.
constexpr double kNegligible = 1e-3;

Combo knapsack(PolicyKind kind, const std::vector<std::vector<KindOption>>& table,
               const std::vector<std::vector<bool>>& worth, const std::vector<double>& share, double cap,
               const std::vector<bool>& forced_plain) {
  const std::size_t K = table.size();
  auto bins_of = [&](std::size_t k, const KindOption& o) -> int {
    const double w = o.unit_error * o.unit_error * share[k];
    if (w <= 0) return 0;
    if (cap <= 0 || w > cap) return kBins + 1;  // never fits
    return int(std::ceil(w / cap * kBins));
  };
  constexpr double kInf = 1e300;
  std::vector<double> dp(kBins + 1, 0.0), next(kBins + 1);
  std::vector<std::vector<int>> pick(K, std::vector<int>(kBins + 1, -1));
  for (std::size_t k = 0; k < K; ++k) {
    std::fill(next.begin(), next.end(), kInf);
    const std::size_t n = forced_plain[k] ? 1 : table[k].size();
    for (std::size_t o = 0; o < n; ++o) {
      const int w = bins_of(k, table[k][o]);
      if (w > kBins || !worth[k][o]) continue;
      for (int b = w; b <= kBins; ++b) {
        const double t = dp[b - w] + table[k][o].seconds;
        if (t < next[b]) next[b] = t, pick[k][b] = int(o);  // strict: ties keep the earlier (plainer) option
      }
    }
    dp.swap(next);
  }
  Combo c{kind, std::vector<int>(K, 0), dp[kBins]};
  for (std::size_t k = K, b = kBins; k-- > 0;) {
    c.choice[k] = pick[k][b];
    b -= bins_of(k, table[k][c.choice[k]]);
  }
  return c;
}

// Error is not spent on savings the model cannot resolve: an option is
// dropped when another (plain included) has at most half its error and is at
// most `tol` slower. The search then loses at most `tol` per kind.
// Nor is a setting whose decode error reaches `max_unit_error` ever chosen.
std::vector<std::vector<bool>> worth_it(const std::vector<std::vector<KindOption>>& table, double tol,
                                        double max_unit_error) {
  std::vector<std::vector<bool>> worth;
  for (const auto& opts : table) {
    auto& w = worth.emplace_back(opts.size(), true);
    for (std::size_t i = 0; i < opts.size(); ++i) {
      if (opts[i].unit_error >= max_unit_error) w[i] = false;
      for (const auto& other : opts)
        if (other.unit_error <= 0.5 * opts[i].unit_error && opts[i].unit_error > 0 &&
            other.seconds <= opts[i].seconds + tol) {
          w[i] = false;
          break;
        }
    }
  }
  return worth;
}

struct Replayed {
  Combo combo;
  Policy policy;
  StepResult step;
  double error = 0;
};

}  // namespace

TuneResult tune(const StepSetup& setup, const TuneOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  TuneOptions o = options;
  o.kinds.clear();  // each policy kind once, in the order given
  for (auto k : options.kinds)
    if (std::find(o.kinds.begin(), o.kinds.end(), k) == o.kinds.end()) o.kinds.push_back(k);
  const double bound = o.max_grad_error;
  if (!(bound >= 0) || !std::isfinite(bound))
    throw InputError(fmt::format("--max-grad-error: expected a finite error bound >= 0, got {}", bound));
  for (double r : o.ratios)
    if (!(r > 1)) throw InputError(fmt::format("tune: ratio must be > 1, got {}", r));
  for (double s : o.sparsities)
    if (!(s >= 0 && s < 1)) throw InputError(fmt::format("tune: sparsity must be in [0, 1), got {}", s));
  for (auto k : o.kinds)
    if (k == PolicyKind::Fsdp) throw InputError("tune: fsdp is the baseline, not a compressing policy to search");
  if (o.kinds.empty()) throw InputError("tune: no policy kind to search");
  if (!(o.max_unit_error > 0))
    throw InputError(fmt::format("tune: max_unit_error must be > 0, got {}", o.max_unit_error));
  if (o.finalists < 1) throw InputError(fmt::format("tune: finalists must be >= 1, got {}", o.finalists));

  TuneResult res;
  const int ranks = setup.shard_size();
  std::vector<KindGroup> groups;
  std::int64_t total = 0;
  for (int u = 0; u < int(setup.units.size()); ++u) {
    const auto& unit = setup.units[u];
    auto g = std::find_if(groups.begin(), groups.end(), [&](const KindGroup& x) { return x.kind == unit.kind; });
    if (g == groups.end()) g = groups.insert(groups.end(), KindGroup{unit.kind, {}, 0});
    g->units.push_back(u);
    g->params += unit.params;
    total += unit.params;
  }
  const std::size_t K = groups.size();
  std::vector<double> share(K);
  for (std::size_t k = 0; k < K; ++k) share[k] = total > 0 ? double(groups[k].params) / double(total) : 0;

  // Encodings: the lossy 1-bit SUM only on request; the rest as check_policy
  // allows at this rank count (a 4-bit SUM overflows above 15 ranks).
  std::vector<IndexEncoding> encodings;
  for (auto e : o.encodings) {
    if (std::find(encodings.begin(), encodings.end(), e) != encodings.end()) continue;
    if (kernels::is_lossy(e) && !o.allow_lossy_index) {
      res.notes.push_back(
          fmt::format("{} not searched: it is lossy (pass --allow-lossy-index)", kernels::to_string(e)));
      continue;
    }
    Policy probe;
    probe.kind = PolicyKind::TagcBatched;
    probe.label = "tune";
    probe.index = e;
    try {
      check_policy(probe, ranks, "tune");
      encodings.push_back(e);
    } catch (const InputError& err) {
      std::string why = err.what();  // "tune: policy tune: <problem>": keep the problem
      if (auto at = why.find("policy tune: "); at != std::string::npos) why = why.substr(at + 13);
      res.notes.push_back(fmt::format("{} not searched: {}", kernels::to_string(e), why));
    }
  }

  Policy fsdp;
  fsdp.label = "fsdp";
  res.fsdp_step = simulate(setup, fsdp);
  res.replays = 1;
  res.finalists.push_back({"fsdp", PolicyKind::Fsdp, 0, res.fsdp_step.step_time_s, 0, "baseline"});

  // Stage 1: the analytic tables, table[policy kind][unit kind][option].
  UnitCoster coster(setup);
  // by (ratio, sparsity, encoding, shard elements)
  std::map<std::tuple<double, double, int, double>, kernels::QualityEstimate> quality;
  std::vector<std::vector<std::vector<KindOption>>> tables;
  const bool searchable = ranks > 1 && !encodings.empty();
  if (ranks <= 1)
    res.notes.push_back(
        "the shard group is one GPU: there is no reduce-scatter to compress (every policy sends HYBRID_SHARD's "
        "replica all-reduce uncompressed)");
  for (auto pk : o.kinds) {
    auto& table = tables.emplace_back(K);
    double combos = 1;
    for (std::size_t k = 0; k < K; ++k) {
      KindOption plain;
      for (int u : groups[k].units) plain.seconds += coster.plain(setup.units[u]).seconds;
      table[k].push_back(plain);
      if (!searchable) continue;
      for (double r : o.ratios)
        for (double s : o.sparsities)
          for (auto e : encodings) {
            Policy p;
            p.label = "tune";
            p.kind = pk;
            p.ratio = r, p.sparsity = s, p.index = e, p.overlap = o.overlap;
            p.selection.rule = Selection::Rule::All;
            KindOption opt{.compress = true, .ratio = r, .sparsity = s, .index = e};
            for (int u : groups[k].units) {
              const Cost c = coster.compressed(setup.units[u], p);
              opt.seconds += c.seconds, opt.kernel_s += c.kernel_s, opt.latency_s += c.latency_s;
              opt.collectives += c.collectives;
            }
            // Small shards have few sketch rows and decode worse: judge the kind by its smallest unit.
            double shard = 0;
            for (int u : groups[k].units) {
              const double e_u = double(setup.units[u].params) / ranks;
              shard = shard == 0 ? e_u : std::min(shard, e_u);
            }
            const auto key = std::make_tuple(r, s, int(e), shard);
            if (!quality.count(key)) quality[key] = unit_quality(p, ranks, shard);
            opt.unit_error = quality[key].relative_l2_error;
            opt.load = quality[key].load;
            table[k].push_back(opt);
            ++res.candidates_considered;
          }
      combos *= double(table[k].size());
    }
    res.combinations += combos;
  }
  res.cost_evaluations = coster.evaluations;

  // Stage 2: replay the finalists.
  const double cap = bound * bound;
  const double tol = kNegligible * res.fsdp_step.step_time_s / double(std::max<std::size_t>(K, 1));
  std::vector<std::vector<std::vector<bool>>> worth;
  for (const auto& t : tables) worth.push_back(worth_it(t, tol, o.max_unit_error));
  std::vector<Replayed> replayed;  // indices, not pointers, name its entries: it grows
  auto index_of = [&](PolicyKind k) {
    return std::size_t(std::find(o.kinds.begin(), o.kinds.end(), k) - o.kinds.begin());
  };
  auto to_policy = [&](const Combo& c) {
    Policy p;
    p.kind = c.kind;
    p.overlap = o.overlap;
    p.selection.rule = Selection::Rule::Kinds;  // every kind is in by_kind; this catches nothing
    p.label = fmt::format("tuned {}", to_string(c.kind));
    const auto& table = tables[index_of(c.kind)];
    for (std::size_t k = 0; k < K; ++k) {
      const auto& opt = table[k][c.choice[k]];
      p.by_kind.push_back({groups[k].kind, opt.compress, opt.ratio, opt.sparsity, opt.index});
    }
    return p;
  };
  auto finalist_label = [&](const Combo& c) {
    std::string s = to_string(c.kind);
    const auto& table = tables[index_of(c.kind)];
    for (std::size_t k = 0; k < K; ++k)
      if (c.choice[k] != 0)
        s += fmt::format(" {}({})", models::to_string(groups[k].kind), table[k][c.choice[k]].describe());
    return s;
  };
  // Returns the step time of `c` (fsdp's when it compresses nothing), replaying it only if new.
  auto evaluate = [&](const Combo& c, const std::string& why) -> double {
    if (!c.compresses()) return res.fsdp_step.step_time_s;
    for (const auto& r : replayed)
      if (r.combo.kind == c.kind && r.combo.choice == c.choice) return r.step.step_time_s;
    Replayed r{c, to_policy(c), {}, 0};
    r.step = simulate(setup, r.policy);
    r.error = expected_error(setup, r.policy).relative_l2_error;
    ++res.replays;
    res.finalists.push_back({finalist_label(c), c.kind, c.analytic_s, r.step.step_time_s, r.error, why});
    replayed.push_back(std::move(r));
    return replayed.back().step.step_time_s;
  };
  const int budget = o.finalists + 1;  // + fsdp
  if (searchable) {
    for (std::size_t i = 0; i < o.kinds.size() && res.replays < budget; ++i)
      evaluate(knapsack(o.kinds[i], tables[i], worth[i], share, cap, std::vector<bool>(K, false)),
               "analytic optimum under the bound");
  }

  // Greedy: the replay may show a compressed kind not paying (its plain
  // reduction hidden under compute, or its kernels in the way). Try leaving
  // kinds plain, least analytic saving first, re-solving the knapsack with
  // the freed error budget; keep each change the replay confirms.
  std::map<std::size_t, std::pair<double, double>> dropped;  // kind -> (step with, step without)
  auto fastest_replay = [&]() -> const Replayed* {
    const Replayed* f = nullptr;
    for (const auto& r : replayed)
      if (!f || r.step.step_time_s < f->step.step_time_s) f = &r;
    return f;
  };
  if (const Replayed* lead = fastest_replay()) {
    const std::size_t ti = index_of(lead->combo.kind);
    const auto& table = tables[ti];
    Combo current = lead->combo;  // copied: `lead` dangles once evaluate() replays more
    double current_t = lead->step.step_time_s;
    std::vector<bool> forced(K, false);
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < K; ++k)
      if (current.choice[k] != 0) order.push_back(k);
    auto saving = [&](std::size_t k) { return table[k][0].seconds - table[k][current.choice[k]].seconds; };
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return saving(a) < saving(b); });
    for (std::size_t k : order) {
      if (res.replays >= budget) break;
      if (current.choice[k] == 0) continue;
      auto f = forced;
      f[k] = true;
      const Combo c = knapsack(current.kind, table, worth[ti], share, cap, f);
      const double t = evaluate(c, fmt::format("replay check: {} left plain", models::to_string(groups[k].kind)));
      if (t < current_t) {
        dropped[k] = {current_t, t};
        forced = f, current = c, current_t = t;
      }
    }
  }

  // The winner: the fastest replay under the bound; fsdp (listed first) wins ties.
  const Replayed* best = nullptr;
  for (const auto& r : replayed)
    if (r.error <= bound * (1 + 1e-12) &&
        r.step.step_time_s < (best ? best->step.step_time_s : res.fsdp_step.step_time_s))
      best = &r;
  res.best = best ? best->policy : fsdp;
  res.best_step = best ? best->step : res.fsdp_step;
  res.expected_error = best ? best->error : 0;
  res.speedup = res.best_step.step_time_s > 0 ? res.fsdp_step.step_time_s / res.best_step.step_time_s : 1;

  // Decisions, with the concrete reason for every kind left plain.
  const Replayed* ref = best ? best : fastest_replay();  // the compressed candidate the reasons compare with
  for (std::size_t k = 0; k < K; ++k) {
    KindDecision d;
    d.kind = groups[k].kind;
    d.units = int(groups[k].units.size());
    d.params = groups[k].params;
    d.plain_s = tables.empty() ? 0 : tables[0][k][0].seconds;
    if (best && best->combo.choice[k] != 0) {
      const auto& opt = tables[index_of(best->combo.kind)][k][best->combo.choice[k]];
      d.compress = true;
      d.settings = {d.kind, true, opt.ratio, opt.sparsity, opt.index};
      d.unit_error = opt.unit_error;
      d.compressed_s = opt.seconds;
      res.decisions.push_back(d);
      continue;
    }
    // The fastest setting that fits the bound on its own, over all policy kinds; and the least erring one.
    const KindOption* fastest = nullptr;
    const KindOption* exactest = nullptr;
    PolicyKind fastest_kind = PolicyKind::Fsdp;
    // Under a compressed winner only its policy kind counts; under fsdp, every kind searched.
    for (std::size_t ti = 0; ti < tables.size(); ++ti) {
      if (best && o.kinds[ti] != best->combo.kind) continue;
      for (std::size_t i = 1; i < tables[ti][k].size(); ++i) {
        const auto& opt = tables[ti][k][i];
        const double w = opt.unit_error * opt.unit_error * share[k];
        if ((w <= cap || w == 0) && opt.unit_error < o.max_unit_error && (!fastest || opt.seconds < fastest->seconds))
          fastest = &opt, fastest_kind = o.kinds[ti];
        if (!exactest || opt.unit_error < exactest->unit_error) exactest = &opt;
      }
    }
    if (fastest) d.compressed_s = fastest->seconds;
    if (!searchable) {
      d.reason = ranks <= 1 ? "the shard group is one GPU: no reduce-scatter to compress"
                            : fmt::format("no index encoding is usable at {} ranks (see notes)", ranks);
    } else if (!fastest && exactest->unit_error >= o.max_unit_error) {
      d.reason = fmt::format(
          "no setting decodes usefully at {} ranks: the least unit error is {:.3g} (ratio {:g}, sparsity {:g}, {}: "
          "load {:.3g} nonzeros per sketch counter), and an error of {:g} or more is no better than sending zeros",
          ranks, exactest->unit_error, exactest->ratio, exactest->sparsity, kernels::to_string(exactest->index),
          exactest->load, o.max_unit_error);
    } else if (!fastest) {
      d.reason = fmt::format(
          "no setting keeps the error under {:g} (best: unit error {:.3g} at ratio {:g}, sparsity {:g}, {}; with its "
          "{:.1f}% of the parameters that alone is a total of {:.3g})",
          bound, exactest->unit_error, exactest->ratio, exactest->sparsity, kernels::to_string(exactest->index),
          100 * share[k], exactest->unit_error * std::sqrt(share[k]));
    } else if (fastest->seconds >= d.plain_s) {
      d.reason = fmt::format(
          "compressed reduction {} ({} {}: {} kernels, {} latency of {} serialised collectives) "
          "vs plain reduce-scatter {}",
          ms(fastest->seconds), to_string(fastest_kind), fastest->describe(), ms(fastest->kernel_s),
          ms(fastest->latency_s), fastest->collectives, ms(d.plain_s));
    } else if (d.plain_s - fastest->seconds <= tol && fastest->unit_error > 0) {
      d.reason = fmt::format(
          "compressing it saves at most {} of reduction analytically ({} {}), under the {} "
          "({:g}% of the fsdp step per unit kind) for which the tuner spends no error",
          ms(d.plain_s - fastest->seconds), to_string(fastest_kind), fastest->describe(), ms(tol), 100 * kNegligible);
    } else if (dropped.count(k)) {
      const auto [with, without] = dropped[k];
      d.reason = fmt::format(
          "compressing it saves {} of reduction analytically, but the replay (contention, overlap with "
          "backward compute) is {} faster without it: {:.6g} s vs {:.6g} s",
          ms(d.plain_s - fastest->seconds), ms(with - without), with, without);
    } else if (!best && ref && ref->combo.choice[k] != 0) {
      d.reason = fmt::format(
          "compressing it saves {} of reduction analytically, but the best compressed candidate replays at "
          "{:.6g} s vs fsdp {:.6g} s: fsdp exposes only {} of communication (its reductions are hidden under "
          "backward compute), while that candidate runs {} of compression kernels",
          ms(d.plain_s - fastest->seconds), ref->step.step_time_s, res.fsdp_step.step_time_s,
          ms(res.fsdp_step.breakdown.exposed_comm_s), ms(ref->step.breakdown.compression_kernels_s));
    } else {
      d.reason = fmt::format(
          "fits the bound on its own ({} {}: {} vs plain {}, unit error {:.3g}), but not together with "
          "the kinds chosen: the error budget went to kinds that save more time per unit of error",
          to_string(fastest_kind), fastest->describe(), ms(fastest->seconds), ms(d.plain_s), fastest->unit_error);
    }
    res.decisions.push_back(d);
  }
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace tagcsim::sim
