#include "scenarios/plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace tagcsim::scenarios {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += (c == '"') ? '\'' : c;
  return out + "\"";
}

}  // namespace

std::string gnuplot_script(const Scenario& s, const std::vector<Result>& results, const std::string& out_path) {
  if (s.sweep_keys.empty())
    throw InputError(fmt::format("{}: --plot needs a 'sweep:' to draw a curve along", s.file));
  const bool svg = out_path.size() > 4 && out_path.substr(out_path.size() - 4) == ".svg";
  // One series per policy (and per value of any second swept key), in first-seen order.
  std::vector<std::string> series;
  std::map<std::string, std::vector<std::pair<std::string, double>>> points;
  std::map<std::string, std::vector<std::pair<std::string, double>>> speedups;
  for (const auto& r : results) {
    std::string name = r.step.policy;
    for (std::size_t k = 1; k < r.point->coordinates.size(); ++k)
      name += fmt::format(", {}={}", r.point->coordinates[k].first, r.point->coordinates[k].second);
    if (!points.count(name)) series.push_back(name);
    const std::string x = r.point->coordinates.front().second;
    points[name].emplace_back(x, r.step.step_time_s);
    for (const auto& b : results)
      if (r.step.policy != "fsdp" && b.point == r.point && b.step.policy == "fsdp" && r.step.step_time_s > 0)
        speedups[name].emplace_back(x, b.step.step_time_s / r.step.step_time_s);
  }
  std::string g;
  g += svg ? "set terminal svg size 1000,420 font 'sans,11'\n" : "set terminal pngcairo size 1000,420 font 'sans,10'\n";
  g += fmt::format("set output {}\n", quoted(out_path));
  g += fmt::format("set multiplot layout 1,{} title {}\n", speedups.empty() ? 1 : 2,
                   quoted(fmt::format("{}: predicted FSDP step", s.name)));
  g += "set grid\nset key top left\nset style data linespoints\n";
  g += fmt::format("set xlabel {}\n", quoted(s.sweep_keys.front()));
  auto block = [&](const std::map<std::string, std::vector<std::pair<std::string, double>>>& data, const char* ylabel,
                   const char* title, bool log) {
    std::string out = fmt::format("set ylabel {}\nset title {}\n{}", quoted(ylabel), quoted(title),
                                  log ? "set logscale y\n" : "unset logscale y\n");
    std::string plots, inline_data;
    for (const auto& name : series) {
      auto it = data.find(name);
      if (it == data.end()) continue;
      plots += fmt::format("{}'-' using 0:2:xtic(1) title {} pointtype 7", plots.empty() ? "plot " : ", ", quoted(name));
      for (const auto& [x, y] : it->second) inline_data += fmt::format("{} {:.9g}\n", quoted(x), y);
      inline_data += "e\n";
    }
    return out + plots + "\n" + inline_data;
  };
  // Log scale only where the curve spans more than a decade; else it flattens the differences.
  double lo = 0, hi = 0;
  for (const auto& [name, pts] : points)
    for (const auto& pt : pts) {
      lo = lo == 0 ? pt.second : std::min(lo, pt.second);
      hi = std::max(hi, pt.second);
    }
  g += block(points, "step time (s)", "step time", lo > 0 && hi / lo > 10);
  if (!speedups.empty()) g += block(speedups, "speedup over fsdp", "speedup over plain FSDP", false);
  g += "unset multiplot\n";
  return g;
}

void plot(const Scenario& s, const std::vector<Result>& results, const std::string& out_path) {
  const std::string script = gnuplot_script(s, results, out_path);
  FILE* p = popen("gnuplot 1>&2", "w");  // its messages go to stderr, never into a report on stdout
  if (!p) throw InputError("--plot: cannot run gnuplot (install gnuplot-nox)");
  std::fwrite(script.data(), 1, script.size(), p);
  if (pclose(p) != 0) throw InputError(fmt::format("--plot: gnuplot failed to draw '{}'", out_path));
}

}  // namespace tagcsim::scenarios
