// Scenario files: what they parse into, sweeps, and one test per kind of bad input. What a run of
// one reports is test_scenario_report.cpp.
#include "scenario_testing.hpp"
#include "scenarios/scenario.hpp"
#include "sim/step.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace tagcsim;
using namespace tagcsim::scenarios;
using namespace tagcsim::test;  // kBase, parse

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
}

TEST_CASE("sharding: no_shard keeps the whole model on every GPU: hybrid sharding over groups of one") {
  // FSDP1's NO_SHARD is DDP's memory and traffic; the simulator runs it as HYBRID_SHARD whose shard
  // groups are single GPUs, so the two spellings are the same step.
  const auto none = parse("  sharding: no_shard\n");
  const auto& t = none.points[0].setup.training;
  CHECK(t.sharding == sim::Sharding::HybridShard);
  CHECK(t.hybrid_shard_gpus == 1);
  CHECK(none.points[0].setup.shard_size() == 1);
  const auto as_hybrid = parse("  sharding: hybrid_shard\n  hybrid_shard_gpus: 1\n");
  const auto a = sim::simulate_fsdp(none.points[0].setup), b = sim::simulate_fsdp(as_hybrid.points[0].setup);
  CHECK(a.step_time_s == b.step_time_s);
  // Llama 2 7B's 6.74B parameters: fp32 master weights and both AdamW moments, 12 bytes each, whole
  // on every GPU, where 32 GPUs of full sharding hold a 32nd.
  const auto full = sim::simulate_fsdp(parse("").points[0].setup);
  CHECK(a.memory.sharded_state_bytes > 12 * 6.7e9);
  CHECK(full.memory.sharded_state_bytes < 12 * 6.8e9 / 32 * 1.5);
  CHECK_THROWS_WITH_AS(parse("  sharding: no_shard\n  hybrid_shard_gpus: 8\n"),
                       doctest::Contains("t.yaml:8: training.hybrid_shard_gpus: no_shard keeps every parameter on "
                                         "every GPU (a shard group of one): give hybrid_shard for groups"),
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

TEST_CASE("bad input in a sweep names the swept key's line and the point") {
  // A misspelt swept key: one location, the sweep's line (it used to add a second one, at line 1).
  CHECK_THROWS_WITH_AS(parse("sweep:\n  cluster.nodez: [2, 4]\n"),
                       "t.yaml:8: sweep.cluster.nodez: unknown key (did you mean 'nodes'?); expected one of: preset, "
                       "file, name, nodes, gpus_per_node, host_cpu, gpu, intra_node, nics, fabric, collectives, nccl, stragglers, source",
                       InputError);
  CHECK_THROWS_WITH_AS(parse("sweep:\n  cluster.nodes: [2, -4]\n"),
                       "t.yaml:8: cluster.nodes: at sweep point cluster.nodes=-4: expected an integer >= 1, got -4",
                       InputError);
}

// ---------------------------------------------------------------------------------------------
// Sweeps that advance together, a global batch, labels, line numbers.

TEST_CASE("a zip sweep advances its keys together: strong scaling at a fixed global batch") {
  const auto s = parse(
      "sweep:\n  zip:\n    cluster.nodes: [1, 2, 4]\n    training.grad_accumulation: [8, 4, 2]\n"
      "  training.wrap: [block, size]\n");
  REQUIRE(s.points.size() == 6);  // 3 zipped values x 2 wraps, not 3 x 3 x 2
  REQUIRE(s.sweep_axes.size() == 2);
  CHECK(s.sweep_axes[0] == std::vector<std::string>{"cluster.nodes", "training.grad_accumulation"});
  CHECK(s.sweep_keys == std::vector<std::string>{"cluster.nodes", "training.grad_accumulation", "training.wrap"});
  // Every point trains 8 nodes' worth of micro-batches: nodes x accumulation = 8.
  for (const auto& p : s.points)
    CHECK(p.setup.cluster.nodes * p.setup.training.grad_accumulation == 8);
  CHECK(s.points[2].setup.cluster.nodes == 2);
  CHECK(s.points[2].setup.training.wrap == models::WrapPolicy::Block);
  CHECK(s.points[3].setup.training.wrap == models::WrapPolicy::Size);
  CHECK_THROWS_WITH_AS(parse("sweep:\n  zip:\n    cluster.nodes: [1, 2]\n    training.micro_batch: [1, 2, 4]\n"),
                       "t.yaml:10: sweep.zip.training.micro_batch: has 3 values but cluster.nodes has 2: zipped lists "
                       "advance together and must be as long",
                       InputError);
}

TEST_CASE("training.global_batch derives the gradient accumulation at every point") {
  // 64 sequences per step; micro_batch 2 on 8, 16 and 32 GPUs: 4, 2 and 1 micro-batches.
  const auto s = parse("  global_batch: 64\nsweep:\n  cluster.nodes: [1, 2, 4]\n");
  REQUIRE(s.points.size() == 3);
  CHECK(s.points[0].setup.training.grad_accumulation == 4);
  CHECK(s.points[1].setup.training.grad_accumulation == 2);
  CHECK(s.points[2].setup.training.grad_accumulation == 1);
  CHECK(s.points[0].global_batch == 64);
  CHECK_THROWS_WITH_AS(parse("  global_batch: 96\nsweep:\n  cluster.nodes: [1, 2, 4]\n"),
                       "t.yaml:7: training.global_batch: at sweep point cluster.nodes=4: a global batch of 96 sequences "
                       "is not a whole number of micro-batch steps of micro_batch 2 x 32 data-parallel ranks = 64 sequences",
                       InputError);
  CHECK_THROWS_WITH_AS(parse("  global_batch: 64\n  grad_accumulation: 2\n"),
                       "t.yaml:7: training.global_batch: give global_batch or grad_accumulation, not both", InputError);
}

TEST_CASE("rows of one policy with different settings get distinct labels") {
  const auto s = parse_scenario(
      "model: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\n"
      "policies: [fsdp, tagc-batched, {name: tagc-batched, index: 4bit-sum, ratio: 4}, {name: tagc, ratio: 3}]\n",
      "t.yaml");
  const auto& pol = s.points[0].policies;
  REQUIRE(pol.size() == 4);
  CHECK(pol[0].label == "fsdp");
  CHECK(pol[1].label == "tagc-batched");
  CHECK(pol[2].label == "tagc-batched[index=4bit-sum,ratio=4]");
  CHECK(pol[3].label == "tagc");  // alone of its kind: the plain name
  CHECK_THROWS_WITH_AS(parse("policies: [tagc, tagc]\n"),
                       "t.yaml:7: policies[1]: the same policy as policies[0] ('tagc'); remove it, or tell them apart "
                       "with a label",
                       InputError);
  CHECK_THROWS_WITH_AS(parse("policies: [{name: tagc, label: x}, {name: fsdp, label: x}]\n"),
                       "t.yaml:7: policies[1]: the label 'x' is already taken by policies[0]", InputError);
}

TEST_CASE("line numbers: a compression key in a swept scenario, a misspelt sweep key") {
  // Both used to say line 1: the swept copies of the document had lost their lines.
  CHECK_THROWS_WITH_AS(parse("policies: [tagc]\ncompression:\n  ratio: 2\n  ratioo: 3\nsweep:\n  cluster.nodes: [1, 2]\n"),
                       doctest::Contains("t.yaml:10: compression.ratioo: "), InputError);
  CHECK_THROWS_WITH_AS(parse("policies: [tagc]\ncompression:\n  ratio: 0.5\nsweep:\n  cluster.nodes: [1, 2]\n"),
                       "t.yaml:9: compression.ratio: at sweep point cluster.nodes=1: expected a ratio > 1 "
                       "(uncompressed / sketch size), got 0.5",
                       InputError);
}

TEST_CASE("bad input: a key that slipped out of its block, a sweep with nothing to change") {
  CHECK_THROWS_WITH_AS(parse_scenario("model: llama2-7b\ncluster:\n  preset: dgx-h100-ib400\nnodes: 4\n", "t.yaml"),
                       "t.yaml:4: nodes: unknown key at the top level; it is a key of cluster: (did you mean "
                       "'cluster.nodes'? indent it under 'cluster:')",
                       InputError);
  // seq_len belongs to model and training: the block just above decides.
  CHECK_THROWS_WITH_AS(parse_scenario("model: llama2-7b\ncluster: dgx-h100-ib400\ntraining:\n  micro_batch: 1\nseq_len: 9\n",
                                      "t.yaml"),
                       doctest::Contains("did you mean 'training.seq_len'?"), InputError);
  CHECK_THROWS_WITH_AS(parse_scenario("model: llama2-7b\nsweep:\n  cluster.nodes: [2, 4]\n", "t.yaml"),
                       "t.yaml:3: sweep.cluster.nodes: the scenario has no 'cluster:' for this key to change; add one "
                       "(e.g. 'cluster: dgx-h100-ib400')",
                       InputError);
  CHECK_THROWS_WITH_AS(parse("sweep:\n  nodes: [2, 4]\n"),
                       "t.yaml:8: sweep.nodes: a sweep key starts with model, cluster, training, compression, "
                       "policies or budget (did you mean 'cluster.nodes'?)",
                       InputError);
}

TEST_CASE("nics.per_node is a node's total, and overriding only the per-NIC bandwidth of a multi-NIC preset warns") {
  // dgx-h100-ib400 has 8 NICs: 800 Gb/s per node is 100 Gb/s = 12.5 GB/s per NIC.
  const auto s = parse_scenario(
      "model: llama2-7b\ncluster:\n  preset: dgx-h100-ib400\n  nics: {per_node: 800 Gb/s}\n", "t.yaml");
  CHECK(s.points[0].setup.cluster.nics.bandwidth == 12.5e9);
  CHECK(s.points[0].warnings.empty());
  const auto w = parse_scenario(
      "model: llama2-7b\ncluster:\n  preset: dgx-h100-ib400\n  nics: {bandwidth: 400 Gb/s}\n", "t.yaml");
  REQUIRE(w.points[0].warnings.size() == 1);
  CHECK(w.points[0].warnings[0] ==
        "cluster.nics.bandwidth is per NIC: dgx-h100-ib400 has 8 NICs per node, so each node gets 8 x 400 Gb/s = "
        "3200 Gb/s (write nics.per_node for a node's total)");
  CHECK_THROWS_WITH_AS(
      parse_scenario("model: llama2-7b\ncluster:\n  preset: aws-p4de\n  nics: {bandwidth: 100 Gb/s, per_node: 400 Gb/s}\n",
                     "t.yaml"),
      doctest::Contains("t.yaml:4: cluster.nics.per_node: give nics.bandwidth (per NIC) or nics.per_node"), InputError);
}

TEST_CASE("aliases that users type resolve to the presets") {
  const auto s = parse_scenario("model: llama3-8b\ncluster: {preset: p4de, gpu: a100}\n", "t.yaml");
  CHECK(s.points[0].setup.model.name == "llama3.1-8b");
  CHECK(s.points[0].setup.cluster.name == "aws-p4de");
  CHECK(s.points[0].setup.cluster.gpu.name == "A100-SXM4-80GB");
  CHECK_THROWS_WITH_AS(parse_scenario("model: llama-3-8B\ncluster: p4de\n", "t.yaml"),
                       doctest::Contains("unknown model preset 'llama-3-8B' (did you mean 'llama3.1-8b'?)"), InputError);
}
