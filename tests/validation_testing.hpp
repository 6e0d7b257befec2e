// Shared by the validation tests: the shipped rows (scenarios/validation.hpp), one by id, and what
// a row's scenario sets up.
#pragma once

#include "scenarios/scenario.hpp"
#include "scenarios/validation.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace tagcsim::test {

inline const std::vector<scenarios::ValidationRow>& rows() {
  static const auto r = scenarios::validation_rows(TAGCSIM_SOURCE_DIR);
  return r;
}

inline const scenarios::ValidationRow& row(const std::string& id) {
  for (const auto& r : rows())
    if (r.id == id) return r;
  FAIL("no row " << id);
  return rows().front();
}

// What a row's scenario sets up (its one point).
inline auto setup_of(const std::string& id) {
  const auto& r = row(id);
  return scenarios::parse_scenario(r.scenario, r.scenario_file).points.front().setup;
}

}  // namespace tagcsim::test
