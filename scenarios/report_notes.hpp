// Internal to scenarios/: the notes a report prints after its numbers, shared by the table and the
// JSON report (report.cpp); docs/output.md explains each.
#pragma once

#include "scenarios/scenario.hpp"

#include <string>
#include <vector>

namespace tagcsim::scenarios::detail {

// Each note once: those that hold at every point plainly, the others with the points they belong to.
std::vector<std::string> notes_of(const Scenario& s, const std::vector<Result>& results);

}  // namespace tagcsim::scenarios::detail
