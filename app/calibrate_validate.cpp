// tagcsim calibrate validate: the collective model against every published nccl-tests table, as the
// presets ship (in-sample) and with each source (or table) held out of a fit from the priors; per
// table and size band, and per connection, which `tagcsim run` quotes (--write-held-out).
#include "app/calibrate_cli.hpp"
#include "calibrate/profile.hpp"
#include "calibrate/replicates.hpp"
#include "common/input.hpp"
#include "sim/collective.hpp"
#include "topologies/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <thread>

namespace tagcsim::app {

using namespace tagcsim::calibrate;

namespace {

struct TableResult {
  const PublishedGroup* group = nullptr;
  std::string cluster;
  std::string unit;                 // what leaving it out leaves out
  std::string connection;           // how its GPUs are connected (topologies::connection_key)
  std::string machine;              // what the model runs it on, for finding replicates (replicate_machine)
  std::vector<PointFit> preset;     // the presets as shipped (fitted on every table: in-sample)
  std::vector<PointFit> held_out;   // fitted without its unit, from the priors
};

bool is_all_to_all(const PublishedGroup& g) { return g.collective == sim::to_string(sim::CollectiveOp::AllToAll); }

std::string unit_of(const PublishedGroup& g, const std::string& mode) {
  if (mode == "source") return g.source_key.empty() ? g.source : g.source_key;
  std::string n = g.name;  // the NVLS-off column of a run is the same run
  if (auto at = n.find("-nvls-off"); at != std::string::npos) n.erase(at);
  return n;
}

void print_summary_row(const std::string& name, const std::vector<PointFit>& preset, const std::vector<PointFit>& held) {
  std::string row = fmt::format("{:<46} {:>4}", name, summarize(preset).points);
  for (const auto* pts : {&preset, &held}) {
    if (pts->empty()) {
      row += fmt::format(" {:>27}", "-");
      continue;
    }
    for (const auto& b : {size_bands()[0], size_bands()[1], size_bands()[2]}) {
      const auto s = summarize(*pts, b);
      row += s.points ? fmt::format(" {:>4.1f}/{:<4.1f}", s.median_abs * 100, s.p90_abs * 100) : fmt::format(" {:>9}", "-");
    }
  }
  fmt::print("{}\n", row);
}

// Per connection (a transport kind, or one node's NVLink generation), the held-out points of its
// tables, summarised as `tagcsim run` quotes them: >= 1 MiB (FSDP's collectives) first, then < 1 MiB;
// and, across nodes, the most nodes a table spans: past it `tagcsim run` says its rings' latencies
// are extrapolated.
struct ConnectionHeldOut {
  std::string line;
  int largest_nodes = 0;  // 0 on one node
};

std::map<std::string, ConnectionHeldOut> held_out_by_connection(const std::vector<TableResult>& results,
                                                                const std::string& loo) {
  struct Pool {
    std::vector<PointFit> points;
    std::set<std::string> tables, units;
    int fewest_nodes = 0, most_nodes = 0;
  };
  std::map<std::string, Pool> pools;
  for (const auto& t : results) {
    if (t.connection.empty() || t.held_out.empty() || is_all_to_all(*t.group)) continue;
    auto& pool = pools[t.connection];
    pool.points.insert(pool.points.end(), t.held_out.begin(), t.held_out.end());
    pool.tables.insert(t.group->name);
    pool.units.insert(t.unit);
    const int n = t.group->nodes;
    pool.fewest_nodes = pool.fewest_nodes == 0 ? n : std::min(pool.fewest_nodes, n);
    pool.most_nodes = std::max(pool.most_nodes, n);
  }
  std::map<std::string, ConnectionHeldOut> out;
  for (const auto& [connection, pool] : pools) {
    std::string bands;
    for (const auto& b : {size_bands()[4], size_bands()[0]}) {
      const auto s = summarize(pool.points, b);
      if (s.points == 0) continue;
      bands += fmt::format("{}{} median {:.1f}%, p90 {:.1f}% off ({} points)", bands.empty() ? "" : "; ", b.name,
                           s.median_abs * 100, s.p90_abs * 100, s.points);
    }
    // An NVL72 rack is one node of its cluster: say racks, as its users count them.
    const bool across = topologies::connection_across_nodes(connection);
    const std::string what = topologies::connection_node_word(connection) + "s";
    const std::string span = !across ? ""
                             : pool.fewest_nodes == pool.most_nodes
                                 ? fmt::format(" on {} {}", pool.most_nodes, what)
                                 : fmt::format(" on {} to {} {}", pool.fewest_nodes, pool.most_nodes, what);
    out[connection] = {
        fmt::format("{} nccl-tests table{} of {} {}{}{}, each {} held out of the fit: {}", pool.tables.size(),
                    pool.tables.size() == 1 ? "" : "s", pool.units.size(), loo, pool.units.size() == 1 ? "" : "s",
                    span, loo, bands),
        across ? pool.most_nodes : 0};
  }
  return out;
}

// Where two tables measured the same thing: how far they disagree, what that leaves any model (a
// prediction can be no closer to both than their floor), and what the model misses there. The
// held-out errors where the fits ran, the presets' otherwise.
void print_replicates(const std::vector<TableResult>& results, bool held) {
  std::vector<ReplicateInput> all, fitted;
  for (const auto& t : results) {
    if (t.machine.empty() || is_all_to_all(*t.group)) continue;
    std::map<std::string, double> shipped_s;
    for (const auto& f : t.preset) shipped_s[f.point.where] = f.predicted_s;
    for (const auto& f : held && !t.held_out.empty() ? t.held_out : t.preset) {
      const ReplicateInput r{t.machine, f, shipped_s[f.point.where]};
      all.push_back(r);
      if (t.group->not_fitted.empty()) fitted.push_back(r);
    }
  }
  const auto groups = find_replicates(all);
  const std::string model = held ? "held out" : "preset";
  fmt::print("\n# Where two tables measured the same thing: the same cluster (on one node, the same node: GPU,\n"
             "# NVLink and host), collective, GPUs (and GPUs a process) and size, and the same time from the\n"
             "# shipped presets (within 0.5%: NCCL pins or releases that change nothing the model runs do not\n"
             "# part them). spread = slower / faster time - 1, median and max over the sizes both measured;\n"
             "# then the model's median |error| ({}) on each table there\n",
             model);
  auto release = [](int v) { return v ? fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100) : std::string("-"); };
  for (const auto& p : replicate_pairs(groups, 0, std::numeric_limits<double>::infinity()))
    fmt::print("  {} ({}, NCCL {}) vs {} ({}, NCCL {}): {} size{}, spread {:.1f}% / {:.1f}%; model {:.1f}% / {:.1f}%\n",
               p.table_a, p.source_a, release(p.release_a), p.table_b, p.source_b, release(p.release_b), p.sizes,
               p.sizes == 1 ? "" : "s", p.median_spread * 100, p.max_spread * 100, p.median_model_a * 100,
               p.median_model_b * 100);
  fmt::print("# What the disagreement leaves any model: the least p90 |error| a model exact on every point one table\n"
             "# measured, and at the floor (hi - lo) / (hi + lo) on every point two did, could have\n");
  const auto fitted_groups = find_replicates(fitted);
  for (const auto* set : {&all, &fitted})
    for (const auto& b : {size_bands()[4], size_bands()[0]}) {
      const auto s = summarize_replicates(*set, set == &all ? groups : fitted_groups, b.lo, b.hi);
      if (s.groups == 0) continue;
      fmt::print("  {:<13} {:<7} {} points at {} shared inputs: tables differ by median {:.1f}%, p90 {:.1f}%; {} points "
                 "past 15% by that alone; the model ({}) median {:.1f}%, p90 {:.1f}% there; least p90 over all: {:.1f}%\n",
                 set == &all ? "all tables" : "fitted tables", b.name, s.points, s.groups, s.spread_median * 100,
                 s.spread_p90 * 100, s.past_15, model, s.model_median * 100, s.model_p90 * 100, s.floor_p90 * 100);
    }
}

}  // namespace

int run_validate(const Options& o) {
  if (o.loo != "source" && o.loo != "table" && o.loo != "none")
    throw InputError(fmt::format("--loo: expected source, table or none; got '{}'", o.loo));
  if (!o.held_out_out.empty()) {
    // Said before the folds run, not after.
    if (o.loo == "none") throw InputError("--write-held-out: needs the held-out fits; not with --loo none");
    const auto dir = std::filesystem::path(o.held_out_out).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      throw InputError(fmt::format("--write-held-out: cannot write '{}': no folder '{}'", o.held_out_out, dir.string()));
  }
  const std::string file = data_path(o);
  const auto groups = load_published(file);
  // The shipped tables are named as the repository does, so the output is the same on every machine.
  fmt::print("# Collective model vs published nccl-tests tables ({})\n",
             o.data.empty() ? "validation/data/published_measurements.yaml, shipped" : file);
  fmt::print("# error = model / measured time - 1 (= measured / model busbw - 1).\n"
             "# 'preset': the cluster presets as shipped, whose fitted values came from every table (in-sample).\n");
  if (o.loo != "none")
    fmt::print("# 'held out': fitted on every table of the other {}s, starting from the priors, then this table\n"
               "# predicted; parameters the other {}s do not determine stay at their priors:\n#   {}\n",
               o.loo, o.loo, prior_sources());

  std::vector<TableResult> results;
  std::map<std::string, std::vector<Sample>> by_unit;  // each unit's samples, from the priors
  std::map<std::string, std::vector<Sample>> train;    // the same, less the tables kept out of every fit
  for (const auto& g : groups) {
    TableResult t;
    t.group = &g;
    t.cluster = published_base_cluster(g);
    t.unit = unit_of(g, o.loo == "none" ? "table" : o.loo);
    if (!t.cluster.empty()) {
      auto s = samples_of(g, "", false);
      if (!s.empty()) {
        t.connection = topologies::connection_key(s.front().cluster);
        t.machine = replicate_machine(s.front().cluster, t.cluster);
      }
      t.preset = evaluate(s);
      auto sp = samples_of(g, "", true);
      auto& u = by_unit[t.unit];
      u.insert(u.end(), sp.begin(), sp.end());
      auto& f = train[t.unit];
      if (g.not_fitted.empty()) f.insert(f.end(), sp.begin(), sp.end());
    }
    results.push_back(std::move(t));
  }
  // One fit per unit left out. The folds share nothing, so they run on every hardware thread; each
  // lands in its own slot and is printed in the units' order, so the output does not depend on --jobs.
  std::map<std::string, FitResult> folds;
  if (o.loo != "none") {
    std::vector<const std::string*> units;
    for (const auto& [unit, samples] : by_unit) units.push_back(&unit);
    std::vector<std::optional<FitResult>> fitted(units.size());
    std::vector<std::exception_ptr> failed(units.size());
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      for (std::size_t i; (i = next++) < units.size();) try {
          const std::string& unit = *units[i];
          std::vector<Sample> others;
          for (const auto& [other, s] : train)
            if (other != unit) others.insert(others.end(), s.begin(), s.end());
          if (others.empty()) continue;
          FitOptions fo;
          fo.prior_weight = kPriorWeight;
          auto r = fit(others, fo);
          std::vector<Sample> held = by_unit.at(unit);
          for (auto& s : held) s.cluster = with_fit(s.cluster, r);
          r.points = evaluate(held);
          fitted[i] = std::move(r);
        } catch (...) {
          failed[i] = std::current_exception();
        }
    };
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t n = std::min<std::size_t>(units.size(), o.jobs > 0 ? unsigned(o.jobs) : hw);
    std::vector<std::thread> threads;
    for (std::size_t t = 1; t < n; ++t) threads.emplace_back(worker);
    worker();
    for (auto& t : threads) t.join();
    for (std::size_t i = 0; i < units.size(); ++i) {
      if (failed[i]) std::rethrow_exception(failed[i]);
      if (fitted[i]) folds.emplace(*units[i], std::move(*fitted[i]));
    }
  }
  for (auto& t : results) {
    const auto& g = *t.group;
    fmt::print("\n== {}\n", g.name);
    for (const auto& d : describe(g)) fmt::print("   {}\n", d);
    if (t.cluster.empty()) {
      fmt::print("   no cluster preset describes this hardware; skipped\n");
      continue;
    }
    fmt::print("   cluster: {}\n   preset: {}\n{}", t.cluster, band_line(t.preset), residual_table(t.preset, "     "));
    if (auto f = folds.find(t.unit); f != folds.end()) {
      for (const auto& p : f->second.points)
        if (p.table == g.name) t.held_out.push_back(p);
      fmt::print("   held out ({} {} left out): {}\n{}", o.loo, t.unit, band_line(t.held_out),
                 residual_table(t.held_out, "     "));
    }
  }
  if (o.loo != "none") {
    fmt::print("\n# Parameters fitted with each {} left out (from the priors)\n", o.loo);
    for (const auto& [unit, r] : folds) fmt::print("  without {}:\n{}", unit, param_table(r, "    "));
  }
  fmt::print("\n# Summary: median/p90 |error| of the predicted time (%), per table and size band\n");
  fmt::print("{:<46} {:>4} {:>27} {:>27}\n", "", "", "preset (in-sample)", o.loo == "none" ? "" : "held out");
  fmt::print("{:<46} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "table", "pts", "<1MiB", "1-64MiB", ">=64MiB", "<1MiB",
             "1-64MiB", ">=64MiB");
  // All-to-alls are summed apart: never fitted, and not what FSDP's collectives are quoted from.
  // The fitted tables' points apart too (an all-to-all is never fitted: published.cpp marks it so):
  // what the shipped presets were fitted to, and so what the README and docs/calibration.md quote.
  std::vector<PointFit> all_preset, all_held, a2a_preset, a2a_held, fitted_preset, fitted_held;
  int fitted_tables = 0;
  for (const auto& t : results) {
    if (t.cluster.empty()) continue;
    print_summary_row(t.group->name, t.preset, t.held_out);
    auto& preset = is_all_to_all(*t.group) ? a2a_preset : all_preset;
    auto& held = is_all_to_all(*t.group) ? a2a_held : all_held;
    preset.insert(preset.end(), t.preset.begin(), t.preset.end());
    held.insert(held.end(), t.held_out.begin(), t.held_out.end());
    if (!t.group->not_fitted.empty()) continue;
    ++fitted_tables;
    fitted_preset.insert(fitted_preset.end(), t.preset.begin(), t.preset.end());
    fitted_held.insert(fitted_held.end(), t.held_out.begin(), t.held_out.end());
  }
  print_summary_row("all points", all_preset, all_held);
  print_summary_row("the fitted tables' points", fitted_preset, fitted_held);
  if (!a2a_preset.empty()) print_summary_row("all-to-all points (never fitted)", a2a_preset, a2a_held);
  auto print_bands = [](const std::vector<PointFit>& preset, const std::vector<PointFit>& held) {
    for (const auto& b : size_bands()) {
      std::string line = fmt::format("  {:<14}", b.name);
      for (const auto* pts : {&preset, &held}) {
        if (pts->empty()) continue;
        const auto s = summarize(*pts, b);
        line += fmt::format("  {} n={:<3} {:>5.1f}% / {:>5.1f}% / {:>6.1f}%", pts == &preset ? "preset" : "held out",
                            s.points, s.median_abs * 100, s.p90_abs * 100, s.max_abs * 100);
      }
      fmt::print("{}\n", line);
    }
  };
  fmt::print("\n# All points, per size band: median / p90 / max |error|\n");
  print_bands(all_preset, all_held);
  fmt::print("\n# The {} fitted table{} points (what the shipped presets were fitted to), per size band\n",
             fitted_tables, fitted_tables == 1 ? "'s" : "s'");
  print_bands(fitted_preset, fitted_held);
  print_replicates(results, o.loo != "none");
  if (o.loo != "none") {
    const auto by_connection = held_out_by_connection(results, o.loo);
    fmt::print("\n# Held out, by how the table's GPUs are connected (what `tagcsim run` quotes)\n");
    for (const auto& [connection, held] : by_connection) fmt::print("  {:<17} {}\n", connection, held.line);
    if (!o.held_out_out.empty()) {
      std::string yaml =
          "# What the collective model misses on published nccl-tests tables it was not fitted to, by how the\n"
          "# tables' GPUs are connected (a transport kind, or one_node_ and the NVLink generation). `tagcsim run`\n"
          "# quotes the line of its cluster. Written by the command below; do not edit by hand.\n"
          "# largest_nodes: across nodes, the most nodes (NVL72: racks) one of those tables spans.\n"
          "format: tagcsim-collective-held-out/2\n";
      yaml += fmt::format("command: \"tagcsim calibrate validate --loo {} --write-held-out FILE\"\nheld_out:\n", o.loo);
      for (const auto& [connection, held] : by_connection) yaml += fmt::format("  {}: \"{}\"\n", connection, held.line);
      yaml += "largest_nodes:\n";
      for (const auto& [connection, held] : by_connection)
        if (held.largest_nodes > 0) yaml += fmt::format("  {}: {}\n", connection, held.largest_nodes);
      write_file(o.held_out_out, yaml, "--write-held-out");
    }
  }
  return 0;
}


}  // namespace tagcsim::app
