// tagcsim calibrate: fit the collective model to nccl-tests timings, and check it against the
// published ones (validate: app/calibrate_validate.cpp).
//   calibrate nccl-tests FILE... --cluster C [--out profile.yaml] [--held-out]              your logs
//   calibrate published --group NAME | --all [--cluster C] [--out ...]                   published tables
//   calibrate validate [--data FILE] [--loo source|table|none]                            model vs every table
#include "app/calibrate_cli.hpp"
#include "app/commands.hpp"
#include "calibrate/fit.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "common/input.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <memory>

namespace tagcsim::app {

using namespace tagcsim::calibrate;

std::string data_path(const Options& o) { return o.data.empty() ? default_published_path() : o.data; }

void write_file(const std::string& path, const std::string& text, const char* flag) {
  std::ofstream f(path);
  if (!f) throw InputError(fmt::format("{}: cannot write '{}'", flag, path));
  f << text;
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

namespace {

// Arguments as a shell would need them to reproduce the command.
std::string quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" {}:,'\"*?$") == std::string::npos) return s;
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

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
    // A log may hold several collectives' runs (nccl-tests binaries run one after another): name each.
    std::vector<std::string> ops;
    for (const auto& pt : p)
      if (std::find(ops.begin(), ops.end(), pt.op_name) == ops.end()) ops.push_back(pt.op_name);
    how.data.push_back(fmt::format("{}: {} rows ({}, {} ranks on {} node(s), {} GPU(s) per process)", f, p.size(),
                                   fmt::join(ops, " "), p.front().ranks(), p.front().nodes, p.front().gpus_per_process));
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
  auto* cal = app.add_subcommand("calibrate", "Fit the collective model to nccl-tests timings; validate it; check a run against its log");
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
  add_calibrate_log_command(cal, exit_code);   // log (app/calibrate_log.cpp)
}

}  // namespace tagcsim::app
