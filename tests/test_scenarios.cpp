// Scenario files: what they parse into, sweeps, and one test per kind of bad input.
#include "scenarios/plot.hpp"
#include "scenarios/report.hpp"
#include "scenarios/scenario.hpp"

#include <doctest/doctest.h>

using namespace tagcsim;
using namespace tagcsim::scenarios;

namespace {
const char* kBase = R"(name: t
model: llama2-7b
cluster: {preset: dgx-h100-ib400, nodes: 4}
training:
  micro_batch: 2
  seq_len: 4096
)";

Scenario parse(const std::string& extra) { return parse_scenario(std::string(kBase) + extra, "t.yaml"); }
}  // namespace

TEST_CASE("a scenario names a model, a cluster and the FSDP settings") {
  const auto s = parse("");
  REQUIRE(s.points.size() == 1);
  const auto& p = s.points[0];
  CHECK(p.setup.cluster.gpus() == 32);
  CHECK(p.setup.shard_size() == 32);
  CHECK(p.setup.units.size() == 33);  // 32 blocks and the root
  REQUIRE(p.policies.size() == 1);
  CHECK(p.policies[0].label == "fsdp");
}

TEST_CASE("a sweep is the cartesian product of its keys, first key outermost") {
  const auto s = parse("sweep:\n  cluster.nodes: [1, 2, 4]\n  training.micro_batch: [1, 2]\n");
  REQUIRE(s.points.size() == 6);
  CHECK(s.points[0].coordinates[0].second == "1");
  CHECK(s.points[1].coordinates[1].second == "2");
  CHECK(s.points[5].setup.cluster.nodes == 4);
  CHECK(s.points[5].setup.training.micro_batch == 2);
}

TEST_CASE("a sweep reaches into a preset's fields") {
  const auto s = parse_scenario(
      "model: gpt2-124m\ncluster: tagc-2x1-1g\nsweep:\n  cluster.nics.bandwidth: [1 Gb/s, 100 Gb/s]\n", "t.yaml");
  REQUIRE(s.points.size() == 2);
  CHECK(s.points[1].setup.cluster.nics.bandwidth == doctest::Approx(12.5e9));
}

TEST_CASE("policies take shared compression settings and their own overrides") {
  const auto s = parse("policies: [fsdp, tagc, {name: tagc-batched, ratio: 4}]\ncompression: {ratio: 3, sparsity: 0.9}\n");
  const auto& pol = s.points[0].policies;
  REQUIRE(pol.size() == 3);
  CHECK(pol[1].ratio == 3);
  CHECK(pol[1].sparsity == doctest::Approx(0.9));
  CHECK(pol[2].ratio == 4);
  CHECK(pol[2].sparsity == doctest::Approx(0.9));
}

TEST_CASE("bad input: an unknown key names file, line and key, with a hint") {
  CHECK_THROWS_WITH_AS(parse("trainig: {}\n"), doctest::Contains("t.yaml:7: trainig: unknown key (did you mean 'training'?)"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_scenario(std::string(kBase) + "  micro_bach: 2\n", "t.yaml"),
                       doctest::Contains("t.yaml:7: training.micro_bach: unknown key (did you mean 'micro_batch'?)"),
                       InputError);
}

TEST_CASE("bad input: a wrong type") {
  CHECK_THROWS_WITH_AS(parse_scenario("model: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodes: four}\n", "t.yaml"),
                       doctest::Contains("t.yaml:2: cluster.nodes: expected an integer"), InputError);
}

TEST_CASE("bad input: a negative bandwidth") {
  CHECK_THROWS_WITH_AS(
      parse_scenario("model: llama2-7b\ncluster:\n  preset: dgx-h100-ib400\n  nics: {bandwidth: -100 Gb/s}\n", "t.yaml"),
      doctest::Contains("t.yaml:4: cluster.nics.bandwidth: expected a positive bandwidth"), InputError);
}

TEST_CASE("bad input: heads that do not divide the hidden size") {
  CHECK_THROWS_WITH_AS(parse_scenario("model: {preset: llama2-7b, heads: 48}\ncluster: dgx-h100-ib400\n", "t.yaml"),
                       doctest::Contains("t.yaml:1: model.heads"), InputError);
}

TEST_CASE("bad input: GPUs that do not divide evenly") {
  CHECK_THROWS_WITH_AS(parse("  sharding: hybrid_shard\n  hybrid_shard_gpus: 3\n"),
                       doctest::Contains("t.yaml:8: training.hybrid_shard_gpus: 3 GPUs per shard group do not divide"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_scenario("model: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodes: 100}\n", "t.yaml"),
                       doctest::Contains("t.yaml:2: cluster.nodes: 100 nodes do not divide into leaves of 32"),
                       InputError);
}

TEST_CASE("bad input: an unknown policy, a ratio <= 1, a sparsity of 1 or more") {
  CHECK_THROWS_WITH_AS(parse("policies: [fsdp, tagk]\n"),
                       doctest::Contains("t.yaml:7: policies[1]: expected one of: fsdp, lhc, tagc, tagc-batched; got 'tagk'"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse("policies: [{name: tagc, ratio: 1}]\n"),
                       doctest::Contains("t.yaml:7: policies[0].ratio: expected a ratio > 1"), InputError);
  CHECK_THROWS_WITH_AS(parse("policies: [tagc]\ncompression: {sparsity: 1.0}\n"),
                       doctest::Contains("t.yaml:8: compression.sparsity: expected a sparsity in [0, 1)"), InputError);
}

TEST_CASE("bad input: a 4-bit SUM index over more than 15 ranks is refused") {
  CHECK_THROWS_WITH_AS(parse("policies: [{name: tagc, index: 4bit-sum}]\n"),
                       doctest::Contains("a 4-bit SUM index overflows above 15 ranks; this shard group has 32"),
                       InputError);
}

TEST_CASE("a 1-bit SUM index over several ranks is run, with a warning naming the damage") {
  const auto s = parse("policies: [{name: tagc, index: 1bit-sum}]\n");
  REQUIRE(s.points[0].warnings.size() == 1);
  CHECK(s.points[0].warnings[0].find("lossy over 32 ranks") != std::string::npos);
  CHECK(s.points[0].warnings[0].find("expected recovered fraction") != std::string::npos);
}

TEST_CASE("the same scenario gives byte-identical reports") {
  const auto s = parse("policies: [fsdp]\n");
  const auto a = format_results(s, run(s), Format::Json);
  const auto b = format_results(s, run(s), Format::Json);
  CHECK(a == b);
  CHECK(a.find("\"step_time_s\"") != std::string::npos);
}

TEST_CASE("a scenario that does not fit in GPU memory says so, with the numbers") {
  // Llama-2 70B on 8 GPUs: 69e9 params x 16 bytes / 8 = 128.5 GiB of sharded state alone.
  const auto s = parse_scenario("model: llama2-70b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\n", "t.yaml");
  const auto results = run(s);
  REQUIRE(results.size() == 1);
  const auto& m = results[0].step.memory;
  CHECK_FALSE(m.fits());
  CHECK(m.sharded_state_bytes / (1024.0 * 1024 * 1024) == doctest::Approx(128.5).epsilon(0.001));
  const auto table = format_results(s, results, Format::Table);
  CHECK(table.find("! does not fit in GPU memory: needs up to") != std::string::npos);
  CHECK(format_results(s, results, Format::Json).find("\"fits_in_memory\": false") != std::string::npos);
}

TEST_CASE("a sweep plots as one curve per policy along the first swept key") {
  const auto s = parse("policies: [fsdp, tagc-batched]\nsweep:\n  cluster.nodes: [1, 2]\n");
  const auto results = run(s);
  const auto g = gnuplot_script(s, results, "out.png");
  CHECK(g.find("set output \"out.png\"") != std::string::npos);
  CHECK(g.find("set xlabel \"cluster.nodes\"") != std::string::npos);
  CHECK(g.find("title \"fsdp\"") != std::string::npos);
  CHECK(g.find("title \"tagc-batched\"") != std::string::npos);
  CHECK(g.find("speedup over plain FSDP") != std::string::npos);
  CHECK_THROWS_WITH_AS(gnuplot_script(parse(""), run(parse("")), "x.png"), doctest::Contains("--plot needs a 'sweep:'"),
                       InputError);
}

TEST_CASE("bad input in a sweep names the swept key's line and the point") {
  // A misspelt swept key: one location, the sweep's line (it used to add a second one, at line 1).
  CHECK_THROWS_WITH_AS(parse("sweep:\n  cluster.nodez: [2, 4]\n"),
                       "t.yaml:8: sweep.cluster.nodez: unknown key (did you mean 'nodes'?); expected one of: preset, "
                       "name, nodes, gpus_per_node, gpu, intra_node, nics, fabric, collectives, source",
                       InputError);
  CHECK_THROWS_WITH_AS(parse("sweep:\n  cluster.nodes: [2, -4]\n"),
                       "t.yaml:8: cluster.nodes: at sweep point cluster.nodes=-4: expected an integer >= 1, got -4",
                       InputError);
}
