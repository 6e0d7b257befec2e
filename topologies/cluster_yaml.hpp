// A cluster written back as the YAML `load_cluster` reads: every key the loader knows (the GPU
// with its compute capability and kernel profile, NVLink with its generation and NVLS, the NICs
// with their transport and rails, the fabric, NCCL's costs and pins), each value with its unit.
// One writer for every cluster tagcsim writes: `tagcsim run --resolved`, `tagcsim show` and the
// box's cluster file from `tagcsim calibrate box`. Loading what it writes gives the same cluster
// (tests/test_topologies.cpp, tests/test_scenarios.cpp).
#pragma once

#include "topologies/cluster.hpp"

#include <string>

namespace tagcsim::topologies {

// The lines of a YAML map under `key:` (two spaces per level).
std::string cluster_yaml(const Cluster& c, const std::string& key = "cluster");
std::string device_yaml(const DeviceProfile& d, const std::string& key = "gpu", int indent = 0);

}  // namespace tagcsim::topologies
