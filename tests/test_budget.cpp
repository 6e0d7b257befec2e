// A scenario's `budget:`: what the whole training run takes at a row's predicted throughput, in
// days and in money, computed by hand here from the row's own tokens/s/GPU.
#include "scenario_testing.hpp"
#include "scenarios/budget.hpp"
#include "scenarios/plot.hpp"
#include "scenarios/report.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/scenario.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

using namespace tagcsim;
using namespace tagcsim::scenarios;
using namespace tagcsim::test;  // parse

namespace {
Budget budget_of(const std::string& yaml) { return load_budget(Input::load_string(yaml, "b.yaml")); }

std::string error_of(const std::string& extra) {
  try {
    parse(extra);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("a run of 10^12 tokens at 1000 tokens/s on each of 100 GPUs takes 10^7 s and 277,778 GPU-hours") {
  const Budget b{1e12, 2.0, "USD"};
  const auto c = run_cost(b, 1000, 100);
  REQUIRE(c.time_s);
  CHECK(*c.time_s == doctest::Approx(1e7));                   // 10^12 / (1000 x 100)
  CHECK(*c.gpu_hours == doctest::Approx(1e7 * 100 / 3600.0));  // 277,777.8
  CHECK(*c.cost == doctest::Approx(2 * 1e9 / 3600.0));        // 555,555.6 USD
  // 100 GPU-hours buy 3600 x 10^5 tokens: 200 USD / 360 M tokens.
  CHECK(*c.cost_per_million_tokens == doctest::Approx(200 / 360.0));
  CHECK(duration_text(*c.time_s) == "115.7 d");
  CHECK(money_text(*c.cost, "USD") == "555.6k USD");
  CHECK(money_text(*c.cost_per_million_tokens, "$") == "$0.556");
}

TEST_CASE("a budget without a price has no cost, and one without tokens only a cost per million tokens") {
  const auto time_only = run_cost({1e9, 0, ""}, 500, 8);
  CHECK(*time_only.time_s == doctest::Approx(1e9 / 4000));
  CHECK_FALSE(time_only.cost);
  CHECK_FALSE(time_only.cost_per_million_tokens);
  const auto price_only = run_cost({0, 3.0, "EUR"}, 500, 8);
  CHECK_FALSE(price_only.time_s);
  CHECK_FALSE(price_only.cost);
  CHECK(*price_only.cost_per_million_tokens == doctest::Approx(3.0 * 8 / 3600 / 4000 * 1e6));
}

TEST_CASE("the run's tokens read with K, M, B and T, and a price with its currency code or sign") {
  CHECK(budget_of("{tokens: 2T}").tokens == 2e12);
  CHECK(budget_of("{tokens: 300B tokens}").tokens == 3e11);
  CHECK(budget_of("{tokens: 1.5e12}").tokens == 1.5e12);
  CHECK(budget_of("{tokens: 40M}").tokens == 4e7);
  const auto eur = budget_of("{gpu_hour_price: 2.10 EUR}");
  CHECK(eur.gpu_hour_price == 2.1);
  CHECK(eur.currency == "EUR");
  const auto dollars = budget_of("{gpu_hour_price: $2.49}");
  CHECK(dollars.gpu_hour_price == 2.49);
  CHECK(dollars.currency == "$");
  CHECK(tokens_text(2e12) == "2T");
  CHECK(tokens_text(3e11) == "300B");
  CHECK(tokens_text(123456789) == "123456789");
}

TEST_CASE("a bad budget is one line naming the file, the line and the key") {
  CHECK(error_of("budget: {tokens: 2X}\n") ==
        "t.yaml:7: budget.tokens: expected the run's tokens as a count, or with K, M, B (10^9) or T (10^12), e.g. "
        "'2T' or '300B'; got '2X'");
  CHECK(error_of("budget: {gpu_hour_price: 2.49}\n") ==
        "t.yaml:7: budget.gpu_hour_price: a price needs its currency: e.g. '2.49 USD' (one GPU for one hour)");
  CHECK(error_of("budget: {gpu_hour_price: -1 USD}\n") ==
        "t.yaml:7: budget.gpu_hour_price: expected a positive price; got '-1 USD'");
  CHECK(error_of("budget: {tokns: 2T}\n").find("t.yaml:7: budget.tokns: unknown key (did you mean 'tokens'?)") == 0);
  CHECK(error_of("budget: {}\n") ==
        "t.yaml:7: budget: expected tokens (the run's), gpu_hour_price (one GPU for one hour), or both");
  CHECK(error_of("tokens: 2T\n").find("t.yaml:7: tokens: unknown key at the top level; it is a key of budget:") ==
        0);
}

TEST_CASE("each row's time to train and cost come from its own throughput and GPU count") {
  const auto s = parse("budget: {tokens: 1T, gpu_hour_price: 2.50 USD}\nsweep: {cluster.nodes: [1, 2]}\n");
  const auto results = run(s);
  REQUIRE(results.size() == 2);
  const auto json = YAML::Load(format_results(s, results, Format::Json));
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& st = results[i].step;
    const double rate = st.tokens_per_s_per_gpu * st.gpus;  // 8 and 16 GPUs
    const auto run = json["results"][i]["training_run"];
    CHECK(run["tokens"].as<double>() == 1e12);
    CHECK(run["currency"].as<std::string>() == "USD");
    CHECK(run["time_s"].as<double>() == doctest::Approx(1e12 / rate));
    CHECK(run["gpu_hours"].as<double>() == doctest::Approx(1e12 / rate * st.gpus / 3600));
    CHECK(run["cost"].as<double>() == doctest::Approx(2.5 * 1e12 / rate * st.gpus / 3600));
    CHECK(run["cost_per_million_tokens"].as<double>() == doctest::Approx(2.5 * st.gpus / 3600 / rate * 1e6));
  }
  const auto table = format_results(s, results, Format::Table);
  CHECK(table.find("time to train  cost/M tokens") != std::string::npos);
  CHECK(table.find("run cost") != std::string::npos);
  CHECK(table.find("budget: a run of 1T tokens at 2.50 USD a GPU-hour; time to train = ") != std::string::npos);
  const auto csv = format_results(s, results, Format::Csv);
  CHECK(csv.substr(0, csv.find('\n')).find(",train_time_s,gpu_hours,cost_per_million_tokens,run_cost") !=
        std::string::npos);
}

TEST_CASE("without a budget the table has no budget columns and the JSON's training_run is all null") {
  const auto s = parse("policies: [fsdp]\n");
  const auto results = run(s);
  CHECK(format_results(s, results, Format::Table).find("time to train") == std::string::npos);
  const auto run = YAML::Load(format_results(s, results, Format::Json))["results"][0]["training_run"];
  for (const char* k : {"tokens", "gpu_hour_price", "currency", "time_s", "gpu_hours", "cost_per_million_tokens",
                        "cost"})
    CHECK_MESSAGE(run[k].IsNull(), k);
  const auto csv = format_results(s, results, Format::Csv);
  const auto row = csv.substr(csv.find('\n') + 1);
  CHECK(row.substr(row.size() - 5) == ",,,,\n");  // the four budget cells empty
}

TEST_CASE("a price swept with the cluster preset prices each row at its own, and --resolved keeps the budget") {
  const auto s = parse(
      "budget: {tokens: 2T}\nsweep:\n  zip:\n    cluster.preset: [dgx-h100-ib400, dgx-a100-ib200]\n"
      "    budget.gpu_hour_price: [2.5 USD, 1.5 USD]\n");
  REQUIRE(s.points.size() == 2);
  CHECK(s.points[0].budget.gpu_hour_price == 2.5);
  CHECK(s.points[1].budget.gpu_hour_price == 1.5);
  CHECK(s.points[1].budget.tokens == 2e12);
  const auto yaml = resolved_yaml(s);
  CHECK(yaml.find("budget:") != std::string::npos);
  CHECK(yaml.find("  tokens: 2T") != std::string::npos);
  CHECK(parse_scenario(yaml, "r.yaml").points[1].budget.gpu_hour_price == 1.5);
  // The table's line names the shared tokens but not the prices, which differ.
  const auto table = format_results(s, run(s), Format::Table);
  CHECK(table.find("budget: a run of 2T tokens; time to train") != std::string::npos);
}

TEST_CASE("--plot-metric time-to-train draws days, and needs the run's tokens") {
  const auto s = parse("budget: {tokens: 1T}\nsweep: {cluster.nodes: [1, 2]}\n");
  const auto results = run(s);
  const auto script = gnuplot_script(s, results, "x.svg", parse_plot_metric("time-to-train"));
  const double days = 1e12 / (results[0].step.tokens_per_s_per_gpu * results[0].step.gpus) / 86400;
  CHECK(script.find(fmt::format("0 \"1\" {:.9g}\n", days)) != std::string::npos);
  CHECK_THROWS_WITH_AS(gnuplot_script(s, results, "x.svg", parse_plot_metric("cost-per-million-tokens")),
                       "t.yaml: --plot-metric cost-per-million-tokens needs a price: budget: {gpu_hour_price: 2.49 "
                       "USD}",
                       InputError);
}
