// What a whole training run takes at a row's predicted throughput: the scenario's `budget:` block.
//
//   budget:
//     tokens: 2T                  # the run's tokens: a count, or K / M / B (10^9) / T (10^12) of them
//     gpu_hour_price: 2.49 USD    # one GPU for one hour, in the currency written
//
// The question a scenario answers per step, asked of the run the user is pricing: how many days on
// this cluster, and what it costs. Either key alone is allowed.
#pragma once

#include "common/input.hpp"

#include <optional>
#include <string>

namespace tagcsim::scenarios {

struct Budget {
  double tokens = 0;          // tokens in the whole run; 0 when not given
  double gpu_hour_price = 0;  // price of one GPU-hour; 0 when not given
  std::string currency;       // as written after (or before) the price: "USD", "EUR", "$"
  bool any() const { return tokens > 0 || gpu_hour_price > 0; }
};

Budget load_budget(const Input& in);
std::string budget_yaml(const Budget& b);  // the block as `--resolved` writes it ("" when none)

// One row's run: time = tokens / (tokens/s/GPU x GPUs); GPU-hours = time x GPUs; cost = GPU-hours x
// price; cost per million tokens = price x GPUs / (3600 x tokens/s over all GPUs) x 10^6.
struct RunCost {
  std::optional<double> time_s, gpu_hours, cost, cost_per_million_tokens;
};
RunCost run_cost(const Budget& b, double tokens_per_s_per_gpu, int gpus);

// "2T", "300B", "1.5M" where that is exact, else the plain count (load_budget reads either back).
std::string tokens_text(double tokens);
// "7.9 d", "15.2 h", "41 min"; "15.1k USD", "2.31M USD", "0.37 USD".
std::string duration_text(double seconds);
std::string money_text(double amount, const std::string& currency);

}  // namespace tagcsim::scenarios
