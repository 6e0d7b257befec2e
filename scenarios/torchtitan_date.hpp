// training.torchtitan_date: the settings torchtitan's defaults gave a run made from a checkout of
// that date (docs/scenarios.md, "Matching a run's PyTorch and torchtitan").
#pragma once

#include "common/input.hpp"
#include "models/model.hpp"
#include "sim/kernel_profile.hpp"
#include "sim/training.hpp"

#include <string>
#include <vector>

namespace tagcsim::scenarios {

// Sets every date-dependent setting the training block does not set itself (and rms_norm fused
// after PyTorch 2.9's release, which torchtitan's nightly install then has), for the model and the
// GPU's kernel profile (null: none), and returns what it set, each with the pull request that
// changed it ("optimizer foreach (fused from torchtitan#881, 2025-02-24)"); nothing without the key.
// A malformed date, another framework, or a date that needs a key the block lacks fails at the key.
std::vector<std::string> apply_torchtitan_date(const Input& training, sim::Training& t,
                                               const models::TransformerConfig& m, const sim::KernelProfile* gpu);

}  // namespace tagcsim::scenarios
