// Loads a cluster from YAML text as the file t.yaml, so that errors name t.yaml:line (shared by
// test_topologies.cpp and test_cluster_yaml.cpp).
#pragma once

#include "common/input.hpp"
#include "topologies/cluster.hpp"

#include <string>

namespace tagcsim::test {

inline Input cluster_input(const std::string& text) { return Input::load_string(text, "t.yaml")["cluster"]; }
inline topologies::Cluster load(const std::string& text) { return topologies::load_cluster(cluster_input(text)); }

}  // namespace tagcsim::test
