// The base scenario the scenario tests add keys to, parsed as the file t.yaml so that errors name
// t.yaml:line (shared by test_scenarios.cpp and test_scenario_report.cpp).
#pragma once

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

}  // namespace tagcsim::test
