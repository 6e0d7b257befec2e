// Replicates: two published tables that measured what the model cannot tell apart, and what their
// disagreement leaves any model (calibrate/replicates.hpp). Times in microseconds, chosen by hand.
#include "calibrate/replicates.hpp"

#include "topologies/cluster.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace tagcsim::calibrate;

namespace {

// One used point of `table` (by `source`): an all-reduce of `bytes` on 2 x 8 GPUs, measured
// `measured_us`, the model's error `error`, the shipped presets' time `shipped_us`.
ReplicateInput point(const std::string& table, const std::string& source, double bytes, double measured_us,
                     double error, double shipped_us, const std::string& system = "{preset: aws-p5, nodes: 2}") {
  ReplicateInput r;
  r.system = system;
  r.fit.table = table;
  r.fit.used = true;
  r.fit.error = error;
  r.fit.point.op_name = "all_reduce";
  r.fit.point.nodes = 2;
  r.fit.point.gpus_per_node = 8;
  r.fit.point.bytes = bytes;
  r.fit.point.time_s = measured_us * 1e-6;
  r.fit.point.source = source;
  r.shipped_s = shipped_us * 1e-6;
  return r;
}

constexpr double MiB = 1 << 20;

}  // namespace

TEST_CASE("two tables at one call and one shipped time are a group: spread and floor by hand") {
  const std::vector<ReplicateInput> in = {point("a", "S1", 64 * MiB, 100, +0.10, 110),
                                          point("b", "S2", 64 * MiB, 150, -0.20, 110.3)};
  const auto groups = find_replicates(in);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].points.size() == 2);
  CHECK(groups[0].lo_s == doctest::Approx(100e-6));
  CHECK(groups[0].hi_s == doctest::Approx(150e-6));
  CHECK(groups[0].spread() == doctest::Approx(0.5));
  // One prediction p is no closer than (150 - 100) / (150 + 100) = 0.2 to both: p = 120 us.
  CHECK(groups[0].floor() == doctest::Approx(0.2));
  CHECK(120.0 / 100 - 1 == doctest::Approx(groups[0].floor()));
  CHECK(1 - 120.0 / 150 == doctest::Approx(groups[0].floor()));
}

TEST_CASE("points the model tells apart are no group: another size or system or a shipped time 1% off") {
  CHECK(find_replicates({point("a", "S1", 64 * MiB, 100, 0, 110), point("b", "S2", 128 * MiB, 150, 0, 110)}).empty());
  CHECK(find_replicates({point("a", "S1", 64 * MiB, 100, 0, 110),
                         point("b", "S2", 64 * MiB, 150, 0, 110, "{preset: dgx-h100-ib400, nodes: 2}")})
            .empty());
  // A release or a pin the model reads (here: 1.1 us more in the shipped time) parts them.
  CHECK(find_replicates({point("a", "S1", 64 * MiB, 100, 0, 110), point("b", "S2", 64 * MiB, 150, 0, 111.1)}).empty());
  // One table's two runs of a size are not two tables.
  CHECK(find_replicates({point("a", "S1", 64 * MiB, 100, 0, 110), point("a", "S1", 64 * MiB, 150, 0, 110)}).empty());
  // A point the model does not cover is not compared.
  auto skipped = point("b", "S2", 64 * MiB, 150, 0, 110);
  skipped.fit.used = false;
  CHECK(find_replicates({point("a", "S1", 64 * MiB, 100, 0, 110), skipped}).empty());
}

TEST_CASE("on one node the machine is the node: a DGX A100 and an ND A100 v4 are one, a DGX H100 another") {
  auto one_node = [](const std::string& name) {
    auto c = tagcsim::topologies::preset(name);
    c.nodes = 1;
    return replicate_machine(c, "{preset: " + name + ", nodes: 1}");
  };
  CHECK(one_node("dgx-a100-ib200") == "one node: 8 x A100-SXM4-80GB on nvlink3, amd host");
  CHECK(one_node("azure-nd-a100-v4") == one_node("dgx-a100-ib200"));
  CHECK(one_node("dgx-h100-ib400") != one_node("dgx-a100-ib200"));
  // Across nodes the fabric is part of the machine: its base cluster, as given.
  auto two = tagcsim::topologies::preset("azure-nd-a100-v4");
  two.nodes = 2;
  CHECK(replicate_machine(two, "{preset: azure-nd-a100-v4, nodes: 2}") == "{preset: azure-nd-a100-v4, nodes: 2}");
}

TEST_CASE("a table pair sums its shared sizes in a band: median and max spread and the model's median error") {
  const std::vector<ReplicateInput> in = {
      point("a", "S1", 1 * MiB, 100, +0.01, 90), point("b", "S2", 1 * MiB, 110, -0.30, 90),    // spread 0.10
      point("a", "S1", 2 * MiB, 100, +0.03, 95), point("b", "S2", 2 * MiB, 130, -0.10, 95),    // 0.30
      point("a", "S1", 4 * MiB, 200, +0.02, 190), point("b", "S2", 4 * MiB, 240, -0.20, 190),  // 0.20
      point("a", "S1", 512 * 1024.0, 50, 0.5, 40), point("b", "S2", 512 * 1024.0, 100, 0.5, 40)};
  const auto pairs = replicate_pairs(find_replicates(in), MiB, 1e30);
  REQUIRE(pairs.size() == 1);
  CHECK(pairs[0].table_a == "a");
  CHECK(pairs[0].source_b == "S2");
  CHECK(pairs[0].sizes == 3);  // 512 KiB is below the band
  CHECK(pairs[0].median_spread == doctest::Approx(0.20));
  CHECK(pairs[0].max_spread == doctest::Approx(0.30));
  CHECK(pairs[0].median_model_a == doctest::Approx(0.02));
  CHECK(pairs[0].median_model_b == doctest::Approx(0.20));
}

TEST_CASE("the least p90 the replicates allow: exact on single points and each group at its floor") {
  // Eight points one table measured, and one call two tables measured 100 and 150 us (floor 0.2).
  std::vector<ReplicateInput> all;
  for (int i = 0; i < 8; ++i) all.push_back(point("a", "S1", (i + 1) * 2 * MiB, 100, 0.05 * i, 100));
  all.push_back(point("a", "S1", 64 * MiB, 100, +0.25, 120));
  all.push_back(point("b", "S2", 64 * MiB, 150, -0.15, 120));
  const auto s = summarize_replicates(all, find_replicates(all), MiB, 1e30);
  CHECK(s.groups == 1);
  CHECK(s.points == 2);
  CHECK(s.spread_median == doctest::Approx(0.5));
  CHECK(s.past_15 == 2);
  CHECK(s.model_median == doctest::Approx(0.20));  // of 0.25 and 0.15
  CHECK(s.model_p90 == doctest::Approx(0.25));
  // Floors 0 x 8, 0.2 x 2: the nearest-rank p90 of ten is the ninth, 0.2.
  CHECK(s.floor_p90 == doctest::Approx(0.2));
  // With ten more single points the ninetieth percentile is a single point's 0.
  for (int i = 0; i < 10; ++i) all.push_back(point("c", "S3", (i + 1) * 3 * MiB, 100, 0, 100));
  CHECK(summarize_replicates(all, find_replicates(all), MiB, 1e30).floor_p90 == 0);
}
