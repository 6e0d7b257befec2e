// tagcsim run SCENARIO: predicted step time of every policy at every sweep point.
#include "app/commands.hpp"
#include "scenarios/plot.hpp"
#include "scenarios/report.hpp"
#include "scenarios/scenario.hpp"
#include "sim/trace.hpp"

#include <fmt/format.h>

#include <fstream>
#include <memory>

namespace tagcsim::app {
namespace {

struct RunOptions {
  std::string scenario;
  std::string format = "table";
  std::string trace;
  std::string out;
  std::string plot;
};

void write_file(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path);
  if (!f || !(f << text)) throw InputError(fmt::format("{}: cannot write '{}'", what, path));
}

int run(const RunOptions& o) {
  const auto format = scenarios::parse_format(o.format);
  const auto scenario = scenarios::load_scenario(o.scenario);
  const auto results = scenarios::run(scenario);
  const std::string text = scenarios::format_results(scenario, results, format);
  // Drawn first, so that a scenario that cannot be plotted fails before printing a report.
  if (!o.plot.empty()) scenarios::plot(scenario, results, o.plot);
  if (o.out.empty())
    fmt::print("{}", text);
  else
    write_file(o.out, text, "--out");
  if (!o.trace.empty() && !results.empty()) {
    // One trace per result; the first keeps the name given.
    for (std::size_t i = 0; i < results.size(); ++i) {
      std::string path = o.trace;
      if (i > 0) {
        const auto dot = path.rfind('.');
        const std::string tag = fmt::format(".{}", i);
        path = dot == std::string::npos ? path + tag : path.substr(0, dot) + tag + path.substr(dot);
      }
      const auto& r = results[i];
      std::string title = fmt::format("{} / {}", scenario.name, r.step.policy);
      for (const auto& [k, v] : r.point->coordinates) title += fmt::format(" / {}={}", k, v);
      write_file(path, sim::chrome_trace(r.step, title), "--trace");
      if (results.size() > 1) fmt::print(stderr, "trace of {}: {}\n", title, path);
    }
  }
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Predict the step time of a scenario's policies (and sweep)");
  cmd->add_option("scenario", o->scenario, "Scenario YAML file")->required();
  cmd->add_option("--format", o->format, "table (default), json or csv");
  cmd->add_option("--trace", o->trace, "Write the step's timeline as Chrome trace JSON (open in Perfetto)");
  cmd->add_option("--out", o->out, "Write the report to this file instead of stdout");
  cmd->add_option("--plot", o->plot, "Draw step time and speedup along the first swept key (PNG or SVG, gnuplot)");
  cmd->callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace tagcsim::app
