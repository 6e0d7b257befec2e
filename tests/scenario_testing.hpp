// The base scenario the scenario tests add keys to, parsed as the file t.yaml so that errors name
// t.yaml:line, and the table report of a scenario (shared by test_scenarios.cpp,
// test_scenario_report.cpp and test_report_notes.cpp).
#pragma once

#include "scenarios/report.hpp"
#include "scenarios/scenario.hpp"

#include <string>

namespace tagcsim::test {

inline constexpr const char* kBase = R"(name: t
model: llama2-7b
cluster: {preset: dgx-h100-ib400, nodes: 4}
training:
  micro_batch: 2
  seq_len: 4096
)";

inline scenarios::Scenario parse(const std::string& extra) {
  return scenarios::parse_scenario(std::string(kBase) + extra, "t.yaml");
}

// The table report of a scenario given as YAML text: what a user reads, notes included.
inline std::string report_table(const std::string& yaml) {
  const auto s = scenarios::parse_scenario(yaml, "t.yaml");
  return scenarios::format_results(s, scenarios::run(s), scenarios::Format::Table);
}

}  // namespace tagcsim::test
