// Internal to scenarios/: the lines a report prints before its numbers (what is simulated, per
// node and in total), shared by the table and the JSON report (report.cpp).
#pragma once

#include "scenarios/scenario.hpp"
#include "topologies/cluster.hpp"

#include <string>

namespace tagcsim::scenarios::detail {

// A sweep point's coordinates, "cluster.nodes=16, training.micro_batch=2".
std::string coordinates_text(const Point& p);
// How far to trust the collectives: how the collective model did on published tables of clusters
// connected like this one, each predicted by a fit without its source; "" when none was published.
std::string collective_model_description(const topologies::Cluster& c);
// What is simulated, per node and in total, so that a surprising input shows before the numbers.
std::string heading(const Scenario& s, const Point& p);

}  // namespace tagcsim::scenarios::detail
