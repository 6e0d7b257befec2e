// Leave-one-source-out folds of `tagcsim validate --loso`, run side by side.
#pragma once

#include "scenarios/validation.hpp"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tagcsim::scenarios {

struct Fold {
  FamilyFits fits;                                       // fitted without the source
  std::vector<std::pair<std::size_t, Prediction>> held_out;  // its rows (indices into rows), predicted
};

// One fold per source, each fitted from `start` on the rows of every other source. `jobs` folds
// run at once (0: one per hardware thread; 1: in this process). Leaves `start` in force.
std::map<std::string, Fold> run_folds(const std::vector<ValidationRow>& rows, const std::set<std::string>& sources,
                                      const FamilyFits& start, int jobs);

}  // namespace tagcsim::scenarios
