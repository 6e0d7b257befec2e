#include "calibrate/replicates.hpp"

#include "common/quantiles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace tagcsim::calibrate {
namespace {

// The machine and the call; the pins and the release are compared through the time they give.
std::string call_of(const ReplicateInput& r) {
  const auto& p = r.fit.point;
  return fmt::format("{}|{}|{}x{}|g{}|{}", r.system, p.op_name, p.nodes, p.gpus_per_node, p.gpus_per_process, p.bytes);
}

constexpr double kSameTime = 0.005;  // the shipped model's times of one measurement agree this closely

bool in_band(const ReplicateInput& r, double lo, double hi) { return r.fit.point.bytes >= lo && r.fit.point.bytes < hi; }

}  // namespace

std::string replicate_machine(const topologies::Cluster& c, const std::string& base_cluster) {
  if (c.nodes > 1) return base_cluster;
  return fmt::format("one node: {} x {} on {}, {} host", c.gpus_per_node, c.gpu.name, c.intra.name,
                     topologies::to_string(c.host_cpu));
}

std::vector<ReplicateGroup> find_replicates(const std::vector<ReplicateInput>& points) {
  // Each call's points, then those the shipped model times alike, first come first.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::vector<const ReplicateInput*>>> by_call;
  for (const auto& r : points) {
    if (!r.fit.used || r.fit.point.time_s <= 0 || r.shipped_s <= 0) continue;
    auto [it, fresh] = by_call.try_emplace(call_of(r));
    if (fresh) order.push_back(it->first);
    auto& sets = it->second;
    auto same = std::find_if(sets.begin(), sets.end(), [&](const auto& set) {
      return std::abs(r.shipped_s / set.front()->shipped_s - 1) <= kSameTime;
    });
    if (same == sets.end()) sets.push_back({&r});
    else same->push_back(&r);
  }
  std::vector<ReplicateGroup> out;
  for (const auto& key : order)
    for (const auto& members : by_call.at(key)) {
      std::set<std::string> tables;
      for (const auto* r : members) tables.insert(r->fit.table);
      if (tables.size() < 2) continue;  // one table's point: nothing to compare it with
      ReplicateGroup g;
      for (const auto* r : members) g.points.push_back(*r);
      const auto [lo, hi] = std::minmax_element(g.points.begin(), g.points.end(), [](const auto& a, const auto& b) {
        return a.fit.point.time_s < b.fit.point.time_s;
      });
      g.lo_s = lo->fit.point.time_s;
      g.hi_s = hi->fit.point.time_s;
      out.push_back(std::move(g));
    }
  return out;
}

std::vector<ReplicatePair> replicate_pairs(const std::vector<ReplicateGroup>& groups, double lo, double hi) {
  struct Acc {
    ReplicatePair pair;
    std::vector<double> spreads, model_a, model_b;
  };
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, Acc> acc;
  for (const auto& g : groups)
    for (std::size_t i = 0; i < g.points.size(); ++i)
      for (std::size_t j = i + 1; j < g.points.size(); ++j) {
        const auto &a = g.points[i], &b = g.points[j];
        if (a.fit.table == b.fit.table || !in_band(a, lo, hi)) continue;
        const auto key = std::make_pair(a.fit.table, b.fit.table);
        auto [it, fresh] = acc.try_emplace(key);
        if (fresh) {
          order.push_back(key);
          it->second.pair = {a.fit.table, b.fit.table, a.fit.point.source, b.fit.point.source,
                             a.fit.point.nccl_version, b.fit.point.nccl_version};
        }
        const double ta = a.fit.point.time_s, tb = b.fit.point.time_s;
        it->second.spreads.push_back(std::max(ta, tb) / std::min(ta, tb) - 1);
        it->second.model_a.push_back(std::abs(a.fit.error));
        it->second.model_b.push_back(std::abs(b.fit.error));
      }
  std::vector<ReplicatePair> out;
  for (const auto& key : order) {
    auto& a = acc.at(key);
    a.pair.sizes = int(a.spreads.size());
    a.pair.median_spread = median(a.spreads);
    a.pair.max_spread = *std::max_element(a.spreads.begin(), a.spreads.end());
    a.pair.median_model_a = median(a.model_a);
    a.pair.median_model_b = median(a.model_b);
    out.push_back(a.pair);
  }
  return out;
}

ReplicateSummary summarize_replicates(const std::vector<ReplicateInput>& all, const std::vector<ReplicateGroup>& groups,
                                      double lo, double hi) {
  ReplicateSummary s;
  std::map<std::pair<std::string, std::string>, double> floor_of;  // (table, call) -> its group's floor
  std::vector<double> spreads, model;
  for (const auto& g : groups) {
    if (!in_band(g.points.front(), lo, hi)) continue;
    ++s.groups;
    spreads.push_back(g.spread());
    for (const auto& r : g.points) {
      floor_of[{r.fit.table, call_of(r)}] = g.floor();
      ++s.points;
      model.push_back(std::abs(r.fit.error));
      if (g.floor() > 0.15) ++s.past_15;
    }
  }
  std::vector<double> floors;
  for (const auto& r : all) {
    if (!r.fit.used || !in_band(r, lo, hi)) continue;
    const auto f = floor_of.find({r.fit.table, call_of(r)});
    floors.push_back(f == floor_of.end() ? 0.0 : f->second);
  }
  s.spread_median = median(spreads);
  s.spread_p90 = nearest_rank(spreads, 0.9);
  s.model_median = median(model);
  s.model_p90 = nearest_rank(model, 0.9);
  s.floor_p90 = nearest_rank(floors, 0.9);
  return s;
}

}  // namespace tagcsim::calibrate
