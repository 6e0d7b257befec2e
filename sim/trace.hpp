// The timeline of replayed steps in Chrome's trace-event JSON: one process per step (a policy),
// one track per stream, one slice per task. Open it in Perfetto or chrome://tracing.
#pragma once

#include "sim/step.hpp"

#include <string>
#include <vector>

namespace tagcsim::sim {

// Steps shown side by side, one process each, named `name` ("tagc-batched").
struct TraceProcess {
  std::string name;
  const StepResult* step = nullptr;
};
std::string chrome_trace(const std::vector<TraceProcess>& processes);
std::string chrome_trace(const StepResult& step, const std::string& title);

}  // namespace tagcsim::sim
