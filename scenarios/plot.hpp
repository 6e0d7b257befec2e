// Scaling curves: step time (and speedup over fsdp) against the first swept
// key, one line per policy, drawn by gnuplot into a PNG or SVG.
#pragma once

#include "scenarios/scenario.hpp"

#include <string>
#include <vector>

namespace tagcsim::scenarios {

// The gnuplot script and its inline data; plot() runs it.
std::string gnuplot_script(const Scenario& s, const std::vector<Result>& results, const std::string& out_path);
void plot(const Scenario& s, const std::vector<Result>& results, const std::string& out_path);

}  // namespace tagcsim::scenarios
