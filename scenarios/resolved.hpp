// The scenario as tagcsim sees it: presets expanded, overrides applied, every value with its unit,
// written back as YAML that runs as is and gives byte-identical results (`tagcsim run --resolved`).
// `tagcsim show` prints presets with the same writers.
//
// One writer per part (the cluster's in topologies/cluster_yaml.hpp). A key added to a part's
// loader gets its line in that part's writer; tests/test_scenarios.cpp checks that the resolved
// YAML of every shipped scenario reproduces it.
#pragma once

#include "scenarios/scenario.hpp"

#include <string>
#include <vector>

namespace tagcsim::scenarios {

// The whole scenario. A part that a sweep changes in a way an expanded copy would hide (a swept
// preset, any model key, the compression settings) is written as given, and says so.
std::string resolved_yaml(const Scenario& s);

// The parts, as the lines of a YAML map under `key:` (indented by two spaces per level). The
// cluster and its GPU are written by topologies/cluster_yaml.hpp.
std::string model_yaml(const models::TransformerConfig& m, const std::string& key = "model");
std::string training_yaml(const sim::Training& t, const models::TransformerConfig& m, int global_batch,
                          const std::string& key = "training");
std::string policies_yaml(const std::vector<sim::Policy>& policies, const std::string& key = "policies");

}  // namespace tagcsim::scenarios
