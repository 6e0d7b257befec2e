// What-if pairs (scenarios/validation.hpp, docs/validation.md): two counted rows of one source that
// differ in one setting, their measured speedup against the predicted one, and the note a sweep over
// such a setting carries.
#include "scenarios/report.hpp"
#include "scenarios/scenario.hpp"
#include "scenarios/validation.hpp"
#include "sim/kernel_profile.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <set>

using namespace tagcsim;
using doctest::Approx;

namespace {

// A counted row of source S99 with the training keys given, measured and predicted at the
// tokens/s/GPU given.
scenarios::ValidationRow pair_row(const std::string& id, const std::string& training, int nodes, double measured,
                                  const std::string& source = "S99") {
  scenarios::ValidationRow r;
  r.id = id;
  r.source = source;
  r.measured_tps = measured;
  r.scenario_file = id + ".yaml";
  r.scenario = fmt::format("model: llama3.1-8b\ncluster: {{preset: dgx-h100-ib400, nodes: {}}}\n"
                           "training: {{framework: torchtitan, compile: true, {}}}\n",
                           nodes, training);
  return r;
}

// Appends a row to `run` with its shipped prediction.
void add_row(scenarios::ValidationRun& run, scenarios::ValidationRow r, double predicted) {
  run.rows.push_back(std::move(r));
  scenarios::RowResult res;
  res.shipped.tps = predicted;
  run.results.push_back(res);
}

}  // namespace

TEST_CASE("what-if pairs: rows of one source that differ in one setting, scored as speedups") {
  scenarios::ValidationRun run;
  auto add = [&](scenarios::ValidationRow r, double predicted) { add_row(run, std::move(r), predicted); };
  add(pair_row("sync", "tensor_parallel: 8, async_tp: false", 1, 100), 110);
  add(pair_row("async", "tensor_parallel: 8, async_tp: true", 1, 120), 150);
  // float8 with its all-gather option is one setting; against the async row it is two.
  add(pair_row("sync-float8", "tensor_parallel: 8, async_tp: false, float8: true, float8_all_gather: true", 1, 130), 121);
  // Three node counts of one otherwise equal run: neighbours only (1 -> 2, 2 -> 4).
  add(pair_row("n1", "micro_batch: 2", 1, 1000), 1000);
  add(pair_row("n2", "micro_batch: 2", 2, 950), 980);
  add(pair_row("n4", "micro_batch: 2", 4, 900), 931);
  // Twice the sequence at half the micro-batch: one question, named for the sequence.
  add(pair_row("s2048", "micro_batch: 3, seq_len: 2048", 1, 800), 820);
  add(pair_row("s1024", "micro_batch: 6, seq_len: 1024", 1, 1000), 1000);
  // Another source's row is never paired with these; a row not counted neither.
  add(pair_row("other", "tensor_parallel: 8, async_tp: true", 1, 10, "S98"), 10);
  auto uncounted = pair_row("uncounted", "tensor_parallel: 8, async_tp: true, micro_batch: 2", 1, 10);
  uncounted.counted = false;
  add(uncounted, 10);

  scenarios::compare_rows(run);
  const auto& pairs = run.pairs;
  REQUIRE(pairs.size() == 5);
  auto find = [&](const std::string& from, const std::string& to) -> const scenarios::WhatIfPair& {
    for (const auto& p : pairs)
      if (p.from_id == from && p.to_id == to) return p;
    FAIL("no pair " << from << " -> " << to);
    return pairs.front();
  };
  const auto& tp = find("sync", "async");
  CHECK(tp.setting == "training.async_tp");
  CHECK(tp.from == "false");
  CHECK(tp.to == "true");
  CHECK(tp.measured == Approx(1.2));
  CHECK(tp.predicted == Approx(150.0 / 110));
  CHECK(tp.error() == Approx(150.0 / 110 / 1.2 - 1));  // +13.6%: the gain over-predicted
  const auto& f8 = find("sync", "sync-float8");
  CHECK(f8.setting == "training.float8");
  CHECK(f8.measured == Approx(1.3));
  CHECK(f8.predicted == Approx(1.1));
  CHECK(find("n1", "n2").setting == "cluster.nodes");
  const auto& seq = find("s1024", "s2048");
  CHECK(seq.setting == scenarios::kSeqLenSameTokens);
  CHECK(seq.from == "1024");
  CHECK(seq.to == "2048");
  CHECK(seq.measured == Approx(0.8));
  CHECK(seq.predicted == Approx(0.82));
  CHECK(find("n2", "n4").measured == Approx(900.0 / 950));
  CHECK(find("n2", "n4").predicted == Approx(931.0 / 980));
  // The report: one line per pair, one per setting, and all of them.
  const auto text = scenarios::format_what_if_pairs(pairs);
  CHECK(text.find("| training.async_tp | S99 | false | true | 1.200 | 1.364 | +13.6% |") != std::string::npos);
  CHECK(text.find("| cluster.nodes | 2 | 1 |") != std::string::npos);
  CHECK(text.find("| all | 5 |") != std::string::npos);
  CHECK(scenarios::format_what_if_pairs({}).empty());
  // What the fit file keeps for `tagcsim run`: one line per setting.
  const auto summaries = scenarios::what_if_summaries(pairs);
  REQUIRE(summaries.size() == 4);
  CHECK(summaries.at("training.async_tp") ==
        "1 published pair of 1 source that changed only it: the predicted speedup 13.6% off in the median, +13.6% "
        "mean signed, 13.6% at worst");
  // cluster.nodes: 980/1000 against 950/1000 (+3.2%), 931/980 against 900/950 (+0.3%).
  CHECK(summaries.at("cluster.nodes") ==
        "2 published pairs of 1 source that changed only it: the predicted speedup 1.7% off in the median, +1.7% "
        "mean signed, 3.2% at worst");
  CHECK(scenarios::fit_file_text({}, "cmd", summaries)
            .find("what_if:\n  cluster.nodes: \"2 published pairs of 1 source") != std::string::npos);
}

TEST_CASE("a swept setting that published pairs changed carries how their speedups came out") {
  // The shipped fit file keeps the pairs' summaries (tagcsim validate --fit --write --loso); the
  // float8 example sweeps training.float8 and cluster.nodes, both of which published pairs changed.
  const auto float8 = sim::what_if_held_out("training.float8");
  REQUIRE(float8.size() == 1);
  CHECK(float8[0].first == "training.float8");
  CHECK(sim::what_if_held_out("training.no_such_setting").empty());
  // A setting's named variants come with it: the sequence at the same tokens a micro-batch.
  const auto seq = sim::what_if_held_out("training.seq_len");
  REQUIRE(!seq.empty());
  CHECK(seq.back().first == scenarios::kSeqLenSameTokens);
  const auto s = scenarios::load_scenario(std::string(TAGCSIM_SOURCE_DIR) + "/scenarios/float8-llama3.1-8b.yaml");
  const auto table = scenarios::format_results(s, scenarios::run(s), scenarios::Format::Table);
  CHECK(table.find("note: training.float8: " + float8[0].second + ", held out (docs/validation.md, what-if pairs)") !=
        std::string::npos);
  CHECK(table.find("note: cluster.nodes: ") != std::string::npos);
}

TEST_CASE("one run published twice: rows of two sources with the same resolved scenario and their floor") {
  scenarios::ValidationRun run;
  auto add = [&](scenarios::ValidationRow r, double predicted) { add_row(run, std::move(r), predicted); };
  add(pair_row("repo", "micro_batch: 2", 1, 800, "S32"), 840);
  add(pair_row("paper", "micro_batch: 2", 1, 1000, "S91"), 840);
  // The same source twice is not a replicate; nor is another setting, nor a row not counted.
  add(pair_row("repo-again", "micro_batch: 2", 1, 900, "S32"), 840);
  add(pair_row("paper-mb4", "micro_batch: 4", 1, 1000, "S91"), 900);
  auto uncounted = pair_row("uncounted", "micro_batch: 2", 1, 10, "S90");
  uncounted.counted = false;
  add(uncounted, 840);
  scenarios::compare_rows(run);
  const auto& reps = run.replicates;
  REQUIRE(reps.size() == 2);  // repo / paper and paper / repo-again
  CHECK(reps[0].id_a == "repo");
  CHECK(reps[0].id_b == "paper");
  CHECK(reps[1].id_a == "paper");
  CHECK(reps[1].id_b == "repo-again");
  CHECK(reps[0].spread() == Approx(0.25));  // 1000 / 800 - 1
  // 840 misses both by (1000 - 800) / (1000 + 800) = 1/9, as 888.9 would: the least any one prediction can.
  CHECK(reps[0].floor() == Approx(1.0 / 9));
  CHECK(reps[0].predicted_b == Approx(840));
  const auto text = scenarios::format_replicate_rows(reps);
  CHECK(text.find("| repo / paper | S32 / S91 | 800 / 1000 | 25.0% | 11.1% | +5.0% / -16.0% |") != std::string::npos);
  CHECK(text.find("2 runs published twice: the two differ by 18.1% in the median, 25.0% at most") != std::string::npos);
  CHECK(scenarios::format_replicate_rows({}).empty());
}
