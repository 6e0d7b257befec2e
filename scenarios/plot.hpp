// Scaling curves: a metric (and the speedup over fsdp) along the first sweep axis, one line per
// policy and value of the other swept keys, drawn by gnuplot into a PNG, SVG or PDF.
#pragma once

#include "scenarios/scenario.hpp"

#include <string>
#include <vector>

namespace tagcsim::scenarios {

enum class PlotMetric { StepTime, TokensPerGpu, ClusterTokens, ScalingEfficiency, Mfu, TimeToTrain, CostPerMillionTokens };
// "step-time", "tokens-per-gpu", "cluster-tokens", "scaling-efficiency", "mfu", "time-to-train" (days, needs
// budget.tokens), "cost-per-million-tokens" (needs budget.gpu_hour_price); InputError otherwise.
PlotMetric parse_plot_metric(const std::string& text);
// InputError unless the file name ends in .png, .svg or .pdf (checked before anything runs).
void check_plot_path(const std::string& out_path);

// The gnuplot script and its inline data; plot() runs it.
std::string gnuplot_script(const Scenario& s, const std::vector<Result>& results, const std::string& out_path,
                           PlotMetric metric = PlotMetric::StepTime);
void plot(const Scenario& s, const std::vector<Result>& results, const std::string& out_path,
          PlotMetric metric = PlotMetric::StepTime);

}  // namespace tagcsim::scenarios
