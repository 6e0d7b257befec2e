// tagcsim run SCENARIO: predicted step time of every policy at every sweep point.
#include "app/commands.hpp"
#include "scenarios/plot.hpp"
#include "scenarios/report.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/scenario.hpp"
#include "sim/trace.hpp"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <memory>
#include <set>

namespace tagcsim::app {
namespace {

struct RunOptions {
  std::string scenario;
  std::string format = "table";
  std::string trace;
  std::string out;
  std::string plot;
  std::string plot_metric = "step-time";
  bool resolved = false;
  bool kernels = false;
};

void write_file(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path);
  if (!f || !(f << text)) throw InputError(fmt::format("{}: cannot write '{}'", what, path));
}

// A coordinate as part of a file name: "100 Gb/s" -> "100Gbps".
std::string file_word(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == 's') out += 'p';
    else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') out += c;
    else if (c != ' ') out += '-';
  }
  return out;
}

// One trace per sweep point, named by the point: step.json -> step.nodes=16.json. A key is named
// by its last part unless two swept keys share it.
std::vector<std::string> trace_paths(const std::string& base, const scenarios::Scenario& s) {
  if (s.points.size() == 1) return {base};
  const auto slash = base.rfind('/');
  auto dot = base.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) dot = base.size();
  const std::string stem = base.substr(0, dot), ext = base.substr(dot);
  auto short_key = [&](const std::string& key) {
    const std::string last = key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
    int same = 0;
    for (const auto& k : s.sweep_keys) same += k.substr(k.rfind('.') == std::string::npos ? 0 : k.rfind('.') + 1) == last;
    return same > 1 ? key : last;
  };
  std::vector<std::string> paths;
  std::set<std::string> taken;
  for (const auto& p : s.points) {
    std::string path = stem;
    for (const auto& [k, v] : p.coordinates) path += fmt::format(".{}={}", short_key(k), file_word(v));
    if (!taken.insert(path + ext).second) path += fmt::format(".point{}", paths.size() + 1);
    taken.insert(path + ext);
    paths.push_back(path + ext);
  }
  return paths;
}

void write_traces(const std::string& base, const scenarios::Scenario& s, const std::vector<scenarios::Result>& results) {
  const auto paths = trace_paths(base, s);
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    std::vector<sim::TraceProcess> processes;
    for (const auto& r : results)
      if (r.point == &p) processes.push_back({r.step.policy, &r.step});
    write_file(paths[i], sim::chrome_trace(processes), "--trace");
    if (s.points.size() > 1) {
      std::string point;
      for (const auto& [k, v] : p.coordinates) point += fmt::format("{}{}={}", point.empty() ? "" : ", ", k, v);
      fmt::print(stderr, "trace of {} at {}: {}\n", s.name, point, paths[i]);
    }
  }
}

int run(const RunOptions& o) {
  // Every option is checked before the (possibly long) run.
  const auto format = scenarios::parse_format(o.format);
  const auto metric = scenarios::parse_plot_metric(o.plot_metric);
  if (!o.plot.empty()) scenarios::check_plot_path(o.plot);
  const auto scenario = scenarios::load_scenario(o.scenario);
  if (o.resolved) {
    const std::string yaml = scenarios::resolved_yaml(scenario);
    if (o.out.empty()) fmt::print("{}", yaml);
    else write_file(o.out, yaml, "--out");
    return 0;
  }
  if (o.kernels) {  // the first point's kernels; a sweep's other points differ only where they sweep it
    const std::string text = scenarios::kernel_table(scenario.points.front().setup);
    if (o.out.empty()) fmt::print("{}", text);
    else write_file(o.out, text, "--out");
    return 0;
  }
  const auto results = scenarios::run(scenario);
  const std::string text = scenarios::format_results(scenario, results, format);
  // Drawn first, so that a scenario that cannot be plotted fails before printing a report.
  if (!o.plot.empty()) scenarios::plot(scenario, results, o.plot, metric);
  if (o.out.empty())
    fmt::print("{}", text);
  else
    write_file(o.out, text, "--out");
  if (!o.trace.empty() && !results.empty()) write_traces(o.trace, scenario, results);
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Predict the step time of a scenario's policies (and sweep)");
  cmd->add_option("scenario", o->scenario, "Scenario YAML file")->required();
  cmd->add_option("--format", o->format, "table (default), json or csv (docs/output.md explains every column)");
  cmd->add_option("--trace", o->trace,
                  "Write the step's timeline as Chrome trace JSON, one process per policy (open in Perfetto); "
                  "a sweep writes one file per point, named by it (step.nodes=16.json)");
  cmd->add_option("--out", o->out, "Write the report (or the --resolved scenario) to this file instead of stdout");
  cmd->add_option("--plot", o->plot,
                  "Draw a metric and the speedup along the first sweep axis into FILE.png, .svg or .pdf (gnuplot)");
  cmd->add_option("--plot-metric", o->plot_metric,
                  "What --plot draws: step-time (default), tokens-per-gpu, cluster-tokens, scaling-efficiency, mfu, "
                  "time-to-train (days; budget.tokens), cost-per-million-tokens (budget.gpu_hour_price)");
  cmd->add_flag("--kernels", o->kernels,
                "Print every kernel of one micro-batch per unit kind, with its shape and profiled time, instead of "
                "running (a sweep: its first point)");
  cmd->add_flag("--resolved", o->resolved,
                "Print the scenario with presets expanded and overrides applied, as YAML that runs as is, "
                "instead of running it");
  cmd->callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace tagcsim::app
