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

std::string extension(const std::string& path) {
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  for (auto& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

struct MetricInfo {
  const char* name;
  const char* title;
  const char* ylabel;
};
MetricInfo info(PlotMetric m) {
  switch (m) {
    case PlotMetric::StepTime: return {"step-time", "step time", "step time (s)"};
    case PlotMetric::TokensPerGpu: return {"tokens-per-gpu", "throughput per GPU", "tokens/s per GPU"};
    case PlotMetric::ClusterTokens: return {"cluster-tokens", "cluster throughput", "tokens/s, all GPUs"};
    case PlotMetric::ScalingEfficiency:
      return {"scaling-efficiency", "scaling efficiency", "tokens/s per GPU / the same at the first point"};
    case PlotMetric::Mfu: return {"mfu", "model FLOPs utilization", "MFU (%)"};
    case PlotMetric::TimeToTrain: return {"time-to-train", "time to train the budget's tokens", "days"};
    case PlotMetric::CostPerMillionTokens:
      return {"cost-per-million-tokens", "cost of a million tokens", "cost per 10^6 tokens"};
  }
  return {"step-time", "step time", "step time (s)"};
}
constexpr PlotMetric kMetrics[] = {PlotMetric::StepTime,          PlotMetric::TokensPerGpu, PlotMetric::ClusterTokens,
                                   PlotMetric::ScalingEfficiency, PlotMetric::Mfu,          PlotMetric::TimeToTrain,
                                   PlotMetric::CostPerMillionTokens};

// Colour-blind-safe (Okabe-Ito), one per series, the same in both panels.
// (Its black is replaced by purple: black circles mark the points that do not fit.)
constexpr const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#F0E442", "#7F3C8D"};

struct Pt {
  std::size_t x = 0;
  double y = 0;
  bool flagged = false;  // does not fit in memory, or its gradient is noise
};

}  // namespace

PlotMetric parse_plot_metric(const std::string& text) {
  std::vector<std::string> names;
  for (auto m : kMetrics) {
    if (text == info(m).name) return m;
    names.emplace_back(info(m).name);
  }
  throw InputError("--plot-metric: " + unknown_name("metric", text, names));
}

void check_plot_path(const std::string& out_path) {
  const auto ext = extension(out_path);
  if (ext != ".png" && ext != ".svg" && ext != ".pdf")
    throw InputError(fmt::format("--plot: cannot draw '{}': expected a file name ending in .png, .svg or .pdf{}",
                                 out_path, ext.empty() ? "" : fmt::format(" (not {})", ext)));
}

std::string gnuplot_script(const Scenario& s, const std::vector<Result>& results, const std::string& out_path,
                           PlotMetric metric) {
  check_plot_path(out_path);
  if (s.sweep_axes.empty())
    throw InputError(fmt::format("{}: --plot needs a 'sweep:' to draw a curve along", s.file));
  // A budget metric needs what it is computed from at every point.
  for (const auto& p : s.points) {
    if (metric == PlotMetric::TimeToTrain && p.budget.tokens <= 0)
      throw InputError(fmt::format("{}: --plot-metric time-to-train needs the run's tokens: budget: {{tokens: 2T}}",
                                   s.file));
    if (metric == PlotMetric::CostPerMillionTokens && p.budget.gpu_hour_price <= 0)
      throw InputError(fmt::format("{}: --plot-metric cost-per-million-tokens needs a price: budget: "
                                   "{{gpu_hour_price: 2.49 USD}}",
                                   s.file));
  }
  const auto& x_keys = s.sweep_axes.front();  // a zip's keys share the x axis
  auto coordinate = [](const Point& p, const std::string& key) {
    for (const auto& [k, v] : p.coordinates)
      if (k == key) return v;
    return std::string();
  };
  // The x categories, and one series per policy and value of the other swept keys, first seen first.
  std::vector<std::string> xs, series;
  std::map<std::string, std::vector<Pt>> values, speedups;
  for (const auto& r : results) {
    std::string x;
    for (const auto& k : x_keys) x += (x.empty() ? "" : " / ") + coordinate(*r.point, k);
    auto xi = std::find(xs.begin(), xs.end(), x);
    if (xi == xs.end()) xi = xs.insert(xs.end(), x);
    std::string name = r.step.policy;
    for (const auto& [k, v] : r.point->coordinates)
      if (std::find(x_keys.begin(), x_keys.end(), k) == x_keys.end()) name += fmt::format(", {}={}", k, v);
    if (!values.count(name)) series.push_back(name);
    const auto& st = r.step;
    const bool flagged = !st.memory.fits() || st.expected_grad_error >= 1;
    double y = st.step_time_s;
    if (metric == PlotMetric::TokensPerGpu) y = st.tokens_per_s_per_gpu;
    if (metric == PlotMetric::ClusterTokens) y = st.tokens_per_s_per_gpu * st.gpus;
    if (metric == PlotMetric::Mfu) y = 100 * st.mfu;
    if (metric == PlotMetric::ScalingEfficiency) y = st.tokens_per_s_per_gpu;  // divided by the first, below
    const auto run = run_cost(r.point->budget, st.tokens_per_s_per_gpu, st.gpus);
    if (metric == PlotMetric::TimeToTrain) y = run.time_s.value_or(0) / 86400;
    if (metric == PlotMetric::CostPerMillionTokens) y = run.cost_per_million_tokens.value_or(0);
    const std::size_t xn = std::size_t(xi - xs.begin());
    values[name].push_back({xn, y, flagged});
    // fsdp itself too (1, the reference line), so that both panels have the same legend.
    for (const auto& b : results)
      if (b.point == r.point && b.policy && b.policy->kind == sim::PolicyKind::Fsdp && st.step_time_s > 0) {
        speedups[name].push_back({xn, b.step.step_time_s / st.step_time_s, flagged});
        break;
      }
  }
  if (metric == PlotMetric::ScalingEfficiency)
    for (auto& [name, pts] : values) {
      const double base = pts.front().y;
      for (auto& p : pts) p.y = base > 0 ? p.y / base : 0;
    }

  const auto ext = extension(out_path);
  std::string g;
  // noenhanced: a key such as nics.per_node is text, not a subscript.
  if (ext == ".svg") g += "set terminal svg size 1100,560 dynamic noenhanced font 'sans,11'\n";
  if (ext == ".png") g += "set terminal pngcairo size 1100,560 noenhanced font 'sans,10'\n";
  if (ext == ".pdf") g += "set terminal pdfcairo size 11in,5.6in noenhanced font 'sans,10'\n";
  g += fmt::format("set output {}\n", quoted(out_path));
  const bool compressed = std::any_of(results.begin(), results.end(), [](const Result& r) {
    return r.policy && r.policy->kind != sim::PolicyKind::Fsdp;
  });
  if (!compressed) speedups.clear();
  g += fmt::format("set multiplot layout 1,{} title {}\n", speedups.empty() ? 1 : 2,
                   quoted(fmt::format("{}: predicted FSDP step", s.name)));
  // The legend below the panels, never over the curves; y from 0, so that gaps look their size.
  g += "set grid\nset key below Left reverse\nset style data linespoints\nset yrange [0:*]\nset offsets 0, 0, graph 0.05, 0\n";
  std::string xlabel;
  for (const auto& k : x_keys) xlabel += (xlabel.empty() ? "" : " / ") + k;
  g += fmt::format("set xlabel {}\nset xrange [-0.5:{}]\n", quoted(xlabel), double(xs.size()) - 0.5);
  bool any_flagged = false;
  for (const auto& r : results) any_flagged |= !r.step.memory.fits() || r.step.expected_grad_error >= 1;
  auto block = [&](const std::map<std::string, std::vector<Pt>>& data, const std::string& ylabel,
                   const std::string& title) {
    std::string out = fmt::format("set ylabel {}\nset title {}\n", quoted(ylabel), quoted(title));
    std::string plots, inline_data, marked;
    for (std::size_t i = 0; i < series.size(); ++i) {
      auto it = data.find(series[i]);
      if (it == data.end()) continue;
      plots += fmt::format("{}'-' using 1:3:xtic(2) title {} linecolor rgb '{}' dashtype {} pointtype 7",
                           plots.empty() ? "plot " : ", ", quoted(series[i]), kColours[i % 8], 1 + i / 8);
      for (const auto& p : it->second) {
        inline_data += fmt::format("{} {} {:.9g}\n", p.x, quoted(xs[p.x]), p.y);
        if (p.flagged) marked += fmt::format("{} {:.9g}\n", p.x, p.y);
      }
      inline_data += "e\n";
    }
    if (any_flagged) {  // a fixed entry, so that every panel's legend reads the same
      plots += ", '-' using 1:2 with points pointtype 6 pointsize 2.5 linecolor rgb 'black' title "
               "'! does not fit in memory, or gradient is noise'";
      inline_data += (marked.empty() ? std::string("NaN NaN\n") : marked) + "e\n";
    }
    return out + plots + "\n" + inline_data;
  };
  const auto mi = info(metric);
  g += block(values,
             metric == PlotMetric::CostPerMillionTokens
                 ? fmt::format("{} per 10^6 tokens", s.points.front().budget.currency)
                 : std::string(mi.ylabel),
             mi.title);
  if (!speedups.empty()) g += block(speedups, "speedup over fsdp", "speedup over plain FSDP");
  g += "unset multiplot\n";
  return g;
}

void plot(const Scenario& s, const std::vector<Result>& results, const std::string& out_path, PlotMetric metric) {
  const std::string script = gnuplot_script(s, results, out_path, metric);
  FILE* p = popen("gnuplot 1>&2", "w");  // its messages go to stderr, never into a report on stdout
  if (!p) throw InputError("--plot: cannot run gnuplot (install gnuplot-nox)");
  std::fwrite(script.data(), 1, script.size(), p);
  if (pclose(p) != 0)
    throw InputError(fmt::format("--plot: gnuplot failed to draw '{}' (is gnuplot installed, with the cairo "
                                 "terminals of gnuplot-nox?)",
                                 out_path));
}

}  // namespace tagcsim::scenarios
