// The timeline of one replayed step in Chrome's trace-event JSON: one track
// per stream, one slice per task. Open it in Perfetto or chrome://tracing.
#pragma once

#include "sim/step.hpp"

#include <string>

namespace tagcsim::sim {

std::string chrome_trace(const StepResult& step, const std::string& title);

}  // namespace tagcsim::sim
