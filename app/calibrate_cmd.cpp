// tagcsim calibrate: fit the collective model to nccl-tests timings, and check it against the
// published ones.
//   calibrate nccl-tests FILE... --cluster C [--out profile.yaml] [--held-out]              your logs
//   calibrate published --group NAME | --all [--cluster C] [--out ...]                   published tables
//   calibrate validate [--data FILE] [--loo source|table|none]                            model vs every table
#include "app/commands.hpp"
#include "calibrate/fit.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <thread>

namespace tagcsim::app {
namespace {

using namespace tagcsim::calibrate;

struct Options {
  std::vector<std::string> files;
  std::string cluster;
  std::string out;
  std::string transport_out;
  std::string transport_dir;
  std::string op;
  int jobs = 0;  // validate: folds fitted at once (0: one per hardware thread)
  int nodes = 0;
  int gpus_per_node = 0;
  std::vector<std::string> hold;
  std::string group;
  bool all = false;
  bool priors = false;
  std::string data;
  std::string loo = "source";
  std::string held_out_out;  // validate: where to write the held-out errors per connection
  bool held_out = false;     // nccl-tests: also predict each log from a fit to the others
};

// Arguments as a shell would need them to reproduce the command.
std::string quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" {}:,'\"*?$") == std::string::npos) return s;
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

std::string data_path(const Options& o) { return o.data.empty() ? default_published_path() : o.data; }

FitOptions fit_options(const Options& o) {
  FitOptions f;
  for (const auto& h : o.hold) f.hold.push_back(parse_param(h, "--hold"));
  if (o.priors) f.prior_weight = kPriorWeight;
  return f;
}

std::string summary(const FitResult& r, const std::string& prefix = "  ") {
  return param_table(r, prefix) +
         prefix + fmt::format("residuals: median |error| {:.1f}%, p90 {:.1f}%, max {:.1f}% ({}), {} points\n",
                              r.error.median_abs * 100, r.error.p90_abs * 100, r.error.max_abs * 100, r.error.worst,
                              r.error.points) +
         prefix + "by size: " + band_line(r.points) + "\n";
}

void write_file(const std::string& path, const std::string& text, const char* flag) {
  std::ofstream f(path);
  if (!f) throw InputError(fmt::format("{}: cannot write '{}'", flag, path));
  f << text;
}

// Writes the profile to --out (and the transport to --transport-out, or every fitted transport to
// --transport-dir as transport-<name>.yaml), or prints it.
void emit(const FitResult& r, const Provenance& how, const Options& o,
          const std::vector<topologies::Transport>& transports) {
  const std::string text = profile_yaml(r, how);
  if (!o.transport_out.empty()) {
    if (transports.empty()) throw InputError("--transport-out: the fitted points cross no transport (single-node data)");
    write_file(o.transport_out, transport_yaml(r, how, transports.front()), "--transport-out");
  }
  if (!o.transport_dir.empty()) {
    if (transports.empty()) throw InputError("--transport-dir: the fitted points cross no transport (single-node data)");
    for (const auto& t : transports)
      write_file(o.transport_dir + "/transport-" + t.name + ".yaml", transport_yaml(r, how, t), "--transport-dir");
  }
  if (o.out.empty()) {
    fmt::print("{}", text);
    return;
  }
  write_file(o.out, text, "--out");
  fmt::print("tagcsim calibrate: wrote {}{}{}\n{}", o.out, o.transport_out.empty() ? "" : " and " + o.transport_out,
             o.transport_dir.empty() ? "" : fmt::format(" and {} transport profile(s) in {}", transports.size(), o.transport_dir),
             summary(r));
}

std::string common_flags(const Options& o) {
  std::string s;
  if (!o.op.empty()) s += " --op " + quote(o.op);
  if (o.nodes > 0) s += fmt::format(" --nodes {}", o.nodes);
  if (o.gpus_per_node > 0) s += fmt::format(" --gpus-per-node {}", o.gpus_per_node);
  for (const auto& h : o.hold) s += " --hold " + quote(h);
  if (o.priors) s += " --priors";
  if (!o.out.empty()) s += " --out " + quote(o.out);
  if (!o.transport_out.empty()) s += " --transport-out " + quote(o.transport_out);
  if (!o.transport_dir.empty()) s += " --transport-dir " + quote(o.transport_dir);
  return s;
}

int run_nccl_tests(const Options& o) {
  auto base = load_cluster_arg(o.cluster);
  if (o.priors) base = with_priors(base);
  ParseOptions po{o.op, o.nodes, o.gpus_per_node};
  std::vector<Sample> samples;
  Provenance how;
  how.command = "tagcsim calibrate nccl-tests";
  for (const auto& f : o.files) {
    auto p = load_nccl_tests_file(f, po);
    how.data.push_back(fmt::format("{}: {} rows ({}, {} ranks on {} node(s), {} GPU(s) per process)", f, p.size(),
                                   p.front().op_name, p.front().ranks(), p.front().nodes, p.front().gpus_per_process));
    for (auto& pt : p) samples.push_back({pt, base, f});
    how.command += " " + quote(f);
  }
  how.command += " --cluster " + quote(o.cluster) + common_flags(o);
  how.data.push_back("time = the faster of the out-of-place and in-place columns");
  how.base_cluster = o.cluster;
  std::vector<topologies::Transport> transports;
  if (!base.nics.transport.name.empty() && std::any_of(samples.begin(), samples.end(), [](const Sample& s) {
        return s.point.nodes > 1;
      }))
    transports.push_back(base.nics.transport);
  if (o.held_out && o.files.size() < 2)
    throw InputError("--held-out: needs two or more logs, each predicted by a fit to the others");
  emit(fit(samples, fit_options(o)), how, o, transports);
  if (o.held_out) {
    // After the profile, as comments, so that printed YAML stays YAML.
    const auto held = held_out_by_table(samples, fit_options(o));
    fmt::print("# Each log predicted by a fit to the other logs (median / p90 |error| of the time):\n{}",
               held_out_table_lines(held, "#   "));
    fmt::print("#   all logs: {}\n", band_line(held));
  }
  return 0;
}

const PublishedGroup& find_group(const std::vector<PublishedGroup>& groups, const std::string& name,
                                 const std::string& file) {
  std::string names;
  for (const auto& g : groups) {
    if (g.name == name) return g;
    names += (names.empty() ? "" : ", ") + g.name;
  }
  throw InputError(fmt::format("--group: no nccl table '{}' in {}; the tables are: {}", name, file, names));
}

std::vector<std::string> describe(const PublishedGroup& g) {
  std::vector<std::string> d = {
      fmt::format("{}: {} points, {} on {} ({} node(s)), intra: {}{}", g.name, g.points.size(), g.collective, g.gpu,
                  g.nodes, g.intra_node, g.inter_node.empty() ? "" : ", inter: " + g.inter_node),
      "source: " + g.source_key + " " + g.source + " (via validation/data/published_measurements.yaml)",
      "time column: " + g.measurement};
  if (!g.algorithm_note.empty()) d.push_back("published note: " + g.algorithm_note);
  if (!g.not_fitted.empty()) d.push_back("not fitted (its preset line is a prediction too): " + g.not_fitted);
  return d;
}

// A published table with its base cluster, as samples (empty when no preset describes it).
std::vector<Sample> samples_of(const PublishedGroup& g, const std::string& cluster_arg, bool priors) {
  const std::string cluster = cluster_arg.empty() ? published_base_cluster(g) : cluster_arg;
  if (cluster.empty()) return {};
  auto c = load_cluster_arg(cluster, g.name);
  if (priors) c = with_priors(c);
  std::vector<Sample> out;
  for (const auto& p : g.points) out.push_back({p, c, g.name});
  return out;
}

int run_published(const Options& o) {
  const std::string file = data_path(o);
  const auto groups = load_published(file);
  if (o.all == !o.group.empty()) throw InputError("calibrate published: expected --group NAME or --all");
  Provenance how;
  how.command = "tagcsim calibrate published " + (o.all ? std::string("--all") : "--group " + quote(o.group)) +
                (o.cluster.empty() ? "" : " --cluster " + quote(o.cluster)) +
                (o.data.empty() ? "" : " --data " + quote(o.data)) + common_flags(o);
  std::vector<Sample> samples;
  std::vector<topologies::Transport> transports;  // each fitted transport, in table order
  for (const auto& g : groups) {
    if (!o.all && g.name != o.group) continue;
    if (o.all && !g.not_fitted.empty()) {
      how.data.push_back(g.name + ": validated, not fitted: " + g.not_fitted);
      continue;
    }
    auto s = samples_of(g, o.cluster, o.priors);
    if (s.empty()) {
      if (!o.all)
        throw InputError(fmt::format("--cluster: no preset matches the hardware of '{}' ({}); pass one", g.name, g.gpu));
      how.data.push_back(g.name + ": no preset describes this hardware; left out");
      continue;
    }
    for (const auto& d : describe(g)) how.data.push_back(d);
    const auto& t = s.front().cluster.nics.transport;
    if (g.nodes > 1 && !t.name.empty() &&
        std::none_of(transports.begin(), transports.end(), [&](const auto& u) { return u.name == t.name; }))
      transports.push_back(t);
    samples.insert(samples.end(), s.begin(), s.end());
  }
  if (!o.all) {
    find_group(groups, o.group, file);
    how.base_cluster = o.cluster.empty() ? published_base_cluster(find_group(groups, o.group, file)) : o.cluster;
  }
  if (o.priors) how.data.push_back("started from the " + prior_sources());
  emit(fit(samples, fit_options(o)), how, o, transports);
  return 0;
}

// ---- validate ----

struct TableResult {
  const PublishedGroup* group = nullptr;
  std::string cluster;
  std::string unit;                 // what leaving it out leaves out
  std::string connection;           // how its GPUs are connected (topologies::connection_key)
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
    const bool across = connection.rfind("one_node_", 0) != 0;
    const std::string what = connection.find("_nvl") != std::string::npos ? "racks" : "nodes";
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
      if (!s.empty()) t.connection = topologies::connection_key(s.front().cluster);
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
  std::vector<PointFit> all_preset, all_held, a2a_preset, a2a_held;
  for (const auto& t : results) {
    if (t.cluster.empty()) continue;
    print_summary_row(t.group->name, t.preset, t.held_out);
    auto& preset = is_all_to_all(*t.group) ? a2a_preset : all_preset;
    auto& held = is_all_to_all(*t.group) ? a2a_held : all_held;
    preset.insert(preset.end(), t.preset.begin(), t.preset.end());
    held.insert(held.end(), t.held_out.begin(), t.held_out.end());
  }
  print_summary_row("all points", all_preset, all_held);
  if (!a2a_preset.empty()) print_summary_row("all-to-all points (never fitted)", a2a_preset, a2a_held);
  fmt::print("\n# All points, per size band: median / p90 / max |error|\n");
  for (const auto& b : size_bands()) {
    std::string line = fmt::format("  {:<14}", b.name);
    for (const auto* pts : {&all_preset, &all_held}) {
      if (pts->empty()) continue;
      const auto s = summarize(*pts, b);
      line += fmt::format("  {} n={:<3} {:>5.1f}% / {:>5.1f}% / {:>6.1f}%", pts == &all_preset ? "preset" : "held out",
                          s.points, s.median_abs * 100, s.p90_abs * 100, s.max_abs * 100);
    }
    fmt::print("{}\n", line);
  }
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

void add_fit_flags(CLI::App* cmd, Options& o) {
  cmd->add_option("--out", o.out, "Write the profile YAML here (default: print it)");
  cmd->add_option("--transport-out", o.transport_out, "Also write the fitted transport profile here");
  cmd->add_option("--transport-dir", o.transport_dir,
                  "Also write every fitted transport profile into this folder, as transport-<name>.yaml");
  cmd->add_option("--hold", o.hold,
                  "Keep a parameter at its starting value, e.g. intra_node.efficiency (repeatable)");
  cmd->add_flag("--priors", o.priors,
                "Start from the data-independent priors instead of the cluster's values, and pull the "
                "efficiencies toward them");
}

}  // namespace

void add_calibrate_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  auto* cal = app.add_subcommand("calibrate", "Fit the collective model to nccl-tests timings; validate it");
  cal->require_subcommand(1);

  auto* nt = cal->add_subcommand("nccl-tests", "Fit to nccl-tests logs (all_reduce_perf, all_gather_perf, ...)");
  nt->add_option("files", o->files, "nccl-tests stdout files")->required();
  nt->add_option("--cluster", o->cluster, "Base cluster: preset name, inline YAML map, or YAML file")->required();
  nt->add_option("--op", o->op, "Collective, for logs that do not name it (all_reduce, all_gather, ...)");
  nt->add_option("--nodes", o->nodes, "Nodes, for logs without '#  Rank ... on HOST' lines");
  nt->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node, likewise");
  add_fit_flags(nt, *o);
  nt->add_flag("--held-out", o->held_out,
               "Also predict each log from a fit to the others: what the fit does on a run it has not seen");
  nt->callback([o, &exit_code] { exit_code = run_nccl_tests(*o); });

  auto* pub = cal->add_subcommand("published", "Fit to one published nccl-tests table, or to all of them");
  pub->add_option("--group", o->group, "Table name, as `tagcsim calibrate validate` lists them");
  pub->add_flag("--all", o->all, "Fit every table at once (the presets' values)");
  pub->add_option("--cluster", o->cluster, "Base cluster (default: the preset matching the table's hardware)");
  pub->add_option("--data", o->data, "Published measurements YAML (default: the shipped validation/data/published_measurements.yaml)");
  add_fit_flags(pub, *o);
  pub->callback([o, &exit_code] { exit_code = run_published(*o); });

  auto* val = cal->add_subcommand("validate", "Model vs every published nccl-tests table: presets, and held out");
  val->add_option("--data", o->data, "Published measurements YAML (default: the shipped validation/data/published_measurements.yaml)");
  val->add_option("--loo", o->loo, "Leave one out: source (default: fit on the other sources), table, or none");
  val->add_option("--jobs,-j", o->jobs, "Held-out fits run at once (default: one per hardware thread; the output is the same)")
      ->check(CLI::NonNegativeNumber);
  val->add_option("--write-held-out", o->held_out_out,
                  "Write the held-out errors per connection (transport kind, or one node's NVLink) to this file, e.g. "
                  "calibrate/profiles/collective-held-out.yaml, which `tagcsim run` quotes");
  val->callback([o, &exit_code] { exit_code = run_validate(*o); });

  add_calibrate_box_commands(cal, exit_code);  // box, check (app/calibrate_box_cmd.cpp)
}

}  // namespace tagcsim::app
