// What a scenario run prints: a table for people, JSON and CSV for programs.
#pragma once

#include "scenarios/scenario.hpp"

#include <string>
#include <vector>

namespace tagcsim::scenarios {

enum class Format { Table, Json, Csv };
Format parse_format(const std::string& text);  // InputError on unknown

std::string format_results(const Scenario& s, const std::vector<Result>& results, Format f);

// The table's columns after the swept keys, in order (docs/output.md explains each).
const std::vector<std::string>& table_columns();

// `tagcsim run --kernels`: every kernel of one micro-batch, per unit kind, with its shape and the
// time the GPU's kernel profile gives it; then the step's kernel time by category.
std::string kernel_table(const sim::StepSetup& setup);

}  // namespace tagcsim::scenarios
