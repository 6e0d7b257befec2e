// tagcsim calibrate: fit the collective model to nccl-tests timings, and check it against the
// published ones.
//   calibrate nccl-tests FILE... --cluster C [--out profile.yaml]   your own box's logs
//   calibrate published --group NAME [--cluster C] [--out ...]      one published table
//   calibrate validate [--data FILE]                                model vs every published table
#include "app/commands.hpp"
#include "calibrate/fit.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "common/input.hpp"

#include <fmt/format.h>

#include <fstream>
#include <memory>

namespace tagcsim::app {
namespace {

using namespace tagcsim::calibrate;

struct Options {
  std::vector<std::string> files;
  std::string cluster;
  std::string out;
  std::string op;
  int nodes = 0;
  int gpus_per_node = 0;
  std::vector<std::string> hold;
  std::string group;
  std::string data;
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
  return f;
}

std::string summary(const FitResult& r, const std::string& prefix = "  ") {
  std::string s;
  for (const auto& p : r.params)
    s += prefix + fmt::format("{:<32} {:>12}  {}{}\n", param_key(p.param), format_param(p.param, p.value), to_string(p.status),
                     p.status == ParamFit::Status::Fitted ? fmt::format(" (base {})", format_param(p.param, p.base))
                                                          : ": " + p.why);
  s += prefix + fmt::format("residuals: mean |error| {:.1f}%, max {:.1f}% ({}), {} points\n", r.error.mean_abs * 100,
                   r.error.max_abs * 100, r.error.worst, r.error.points);
  return s;
}

// Writes the profile to --out (and says so), or prints it.
void emit(const FitResult& r, const Provenance& how, const std::string& out) {
  const std::string text = profile_yaml(r, how);
  if (out.empty()) {
    fmt::print("{}", text);
    return;
  }
  std::ofstream f(out);
  if (!f) throw InputError(fmt::format("--out: cannot write '{}'", out));
  f << text;
  fmt::print("tagcsim calibrate: wrote {}\n{}", out, summary(r));
}

std::string layout_flags(const Options& o) {
  std::string s;
  if (!o.op.empty()) s += " --op " + quote(o.op);
  if (o.nodes > 0) s += fmt::format(" --nodes {}", o.nodes);
  if (o.gpus_per_node > 0) s += fmt::format(" --gpus-per-node {}", o.gpus_per_node);
  for (const auto& h : o.hold) s += " --hold " + quote(h);
  return s;
}

int run_nccl_tests(const Options& o) {
  const auto base = load_cluster_arg(o.cluster);
  ParseOptions po{o.op, o.nodes, o.gpus_per_node};
  std::vector<Point> points;
  Provenance how;
  how.command = "tagcsim calibrate nccl-tests";
  for (const auto& f : o.files) {
    auto p = load_nccl_tests_file(f, po);
    how.data.push_back(fmt::format("{}: {} rows ({}, {} ranks on {} node(s))", f, p.size(), p.front().op_name,
                                   p.front().ranks(), p.front().nodes));
    points.insert(points.end(), p.begin(), p.end());
    how.command += " " + quote(f);
  }
  how.command += " --cluster " + quote(o.cluster) + layout_flags(o) + (o.out.empty() ? "" : " --out " + quote(o.out));
  how.data.push_back("time = the faster of the out-of-place and in-place columns");
  how.base_cluster = o.cluster;
  emit(fit(points, base, fit_options(o)), how, o.out);
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
      "source: " + g.source + " (via validation/data/published_measurements.yaml)",
      "time column: " + g.measurement};
  if (!g.algorithm_note.empty()) d.push_back("published note: " + g.algorithm_note);
  return d;
}

int run_published(const Options& o) {
  const std::string file = data_path(o);
  const auto groups = load_published(file);
  const auto& g = find_group(groups, o.group, file);
  const std::string cluster = o.cluster.empty() ? published_base_cluster(g) : o.cluster;
  if (cluster.empty())
    throw InputError(fmt::format("--cluster: no preset matches the hardware of '{}' ({}); pass one", g.name, g.gpu));
  Provenance how;
  how.command = "tagcsim calibrate published --group " + quote(g.name) +
                (o.cluster.empty() ? "" : " --cluster " + quote(o.cluster)) +
                (o.data.empty() ? "" : " --data " + quote(o.data)) + layout_flags(o) +
                (o.out.empty() ? "" : " --out " + quote(o.out));
  how.data = describe(g);
  how.base_cluster = cluster;
  emit(fit(g.points, load_cluster_arg(cluster), fit_options(o)), how, o.out);
  return 0;
}

int run_validate(const Options& o) {
  const std::string file = data_path(o);
  const auto groups = load_published(file);
  struct Row {
    std::string name, cluster;
    ErrorSummary preset, fitted;
  };
  std::vector<Row> rows;
  // The shipped tables are named as the repository does, so the output is the same on every machine.
  fmt::print("# Collective model vs published nccl-tests tables ({})\n",
             o.data.empty() ? "validation/data/published_measurements.yaml, shipped" : file);
  fmt::print("# error = model / measured time - 1 (= measured / model busbw - 1). 'preset': the cluster preset\n"
             "# as it stands; 'fitted': after `tagcsim calibrate published --group NAME` (in-sample).\n");
  for (const auto& g : groups) {
    fmt::print("\n== {}\n", g.name);
    for (const auto& d : describe(g)) fmt::print("   {}\n", d);
    const std::string cluster = published_base_cluster(g);
    if (cluster.empty()) {
      fmt::print("   no cluster preset describes this hardware; skipped\n");
      continue;
    }
    const auto base = load_cluster_arg(cluster, g.name);
    const auto before = evaluate(g.points, base);
    const auto after = fit(g.points, base);
    fmt::print("   cluster: {}\n   preset:\n{}", cluster, residual_table(before, "     "));
    fmt::print("   fitted:\n{}{}", summary(after, "     "), residual_table(after.points, "     "));
    rows.push_back({g.name, cluster, summarize(before), after.error});
  }
  fmt::print("\n# Summary: |error| of the predicted time per table\n");
  fmt::print("{:<46} {:>6} {:>11} {:>11} {:>11} {:>11}\n", "table", "points", "preset mean", "preset max",
             "fitted mean", "fitted max");
  double all_pre = 0, all_fit = 0, max_pre = 0, max_fit = 0;
  int n = 0;
  for (const auto& r : rows) {
    fmt::print("{:<46} {:>6} {:>10.1f}% {:>10.1f}% {:>10.1f}% {:>10.1f}%\n", r.name, r.preset.points,
               r.preset.mean_abs * 100, r.preset.max_abs * 100, r.fitted.mean_abs * 100, r.fitted.max_abs * 100);
    all_pre += r.preset.mean_abs * r.preset.points, all_fit += r.fitted.mean_abs * r.fitted.points;
    max_pre = std::max(max_pre, r.preset.max_abs), max_fit = std::max(max_fit, r.fitted.max_abs);
    n += r.preset.points;
  }
  if (n > 0)
    fmt::print("{:<46} {:>6} {:>10.1f}% {:>10.1f}% {:>10.1f}% {:>10.1f}%\n", "all points", n, all_pre / n * 100,
               max_pre * 100, all_fit / n * 100, max_fit * 100);
  return 0;
}

void add_fit_flags(CLI::App* cmd, Options& o) {
  cmd->add_option("--out", o.out, "Write the profile YAML here (default: print it)");
  cmd->add_option("--hold", o.hold,
                  "Keep a parameter at the base cluster's value, e.g. intra_node.efficiency (repeatable)");
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
  nt->callback([o, &exit_code] { exit_code = run_nccl_tests(*o); });

  auto* pub = cal->add_subcommand("published", "Fit to one published nccl-tests table");
  pub->add_option("--group", o->group, "Table name, as `tagcsim calibrate validate` lists them")->required();
  pub->add_option("--cluster", o->cluster, "Base cluster (default: the preset matching the table's hardware)");
  pub->add_option("--data", o->data, "Published measurements YAML (default: the shipped validation/data/published_measurements.yaml)");
  add_fit_flags(pub, *o);
  pub->callback([o, &exit_code] { exit_code = run_published(*o); });

  auto* val = cal->add_subcommand("validate", "Model vs every published nccl-tests table, before and after fitting");
  val->add_option("--data", o->data, "Published measurements YAML (default: the shipped validation/data/published_measurements.yaml)");
  val->callback([o, &exit_code] { exit_code = run_validate(*o); });

  add_calibrate_box_commands(cal, exit_code);  // box, check (app/calibrate_box_cmd.cpp)
}

}  // namespace tagcsim::app
