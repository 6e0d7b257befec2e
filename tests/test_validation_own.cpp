// `tagcsim validate --root DIR` over a tree of one's own runs: validation/data/measured_*.yaml (or
// published_fsdp_*.yaml) entries in the shipped schema, one scenario each under scenarios/validation,
// predicted with the shipped fit as the published rows are (docs/validation.md, "Checking your own runs").
#include "scenarios/scenario.hpp"
#include "scenarios/validation.hpp"
#include "sim/step.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;

TEST_CASE("validate --root: a tree of one's own runs alone, each predicted as tagcsim run predicts it") {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("tagcsim-own-runs-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "validation" / "data");
  fs::create_directories(root / "scenarios" / "validation");
  std::ofstream(root / "validation" / "data" / "measured_fsdp_ours.yaml")
      << "about: our cluster's runs\n"
         "entries:\n"
         "- id: fsdp-ours-llama31-8b-h100-16gpu\n"
         "  kind: fsdp\n"
         "  source: {ref: OURS, url: our logs}\n"
         "  hardware: {gpu: NVIDIA H100 SXM, num_gpus: 16, gpus_per_node: 8}\n"
         "  setup: {framework: torchtitan, model: Llama 3.1 8B, seq_len: 8192}\n"
         "  measured: {tokens_per_s_per_gpu: 6000, peak_memory_GiB: 60}\n";
  const std::string scenario =
      "name: fsdp-ours-llama31-8b-h100-16gpu\nmodel: llama3.1-8b\ncluster: {preset: dgx-h100-ib400, nodes: 2}\n"
      "training: {framework: torchtitan, torchtitan_date: 2025-09-01, seq_len: 8192, micro_batch: 2, compile: true, "
      "activation_checkpointing: selective_op}\npolicies: [fsdp]\n";
  std::ofstream(root / "scenarios" / "validation" / "fsdp-ours-llama31-8b-h100-16gpu.yaml") << scenario;

  const auto rows = scenarios::validation_rows(root.string());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].source == "OURS");
  CHECK(rows[0].measured_tps == 6000);
  CHECK(rows[0].published_reserved_gib == 60);
  const double direct =
      sim::simulate_fsdp(scenarios::parse_scenario(scenario, "direct.yaml").points.at(0).setup).tokens_per_s_per_gpu;
  const auto p = scenarios::predict(rows[0]);
  CHECK(p.tps == Approx(direct).epsilon(1e-12));
  CHECK(p.error(6000) == Approx(direct / 6000 - 1).epsilon(1e-12));
  // The report has the row and the buckets of all rows, and no LLM Foundry section without its rows.
  const auto report = scenarios::format_validation(scenarios::validate(rows, {}));
  CHECK(report.find("| fsdp-ours-llama31-8b-h100-16gpu | OURS | Llama 3.1 8B | 16 | 8192 | 6000 |") != std::string::npos);
  CHECK(report.find("All rows, in-sample, mean signed error by bucket") != std::string::npos);
  CHECK(report.find("LLM Foundry rows") == std::string::npos);

  // An entry without its scenario says which file it expected.
  fs::remove(root / "scenarios" / "validation" / "fsdp-ours-llama31-8b-h100-16gpu.yaml");
  CHECK_THROWS_WITH_AS(scenarios::validation_rows(root.string()),
                       Contains("no scenario for this entry (expected scenarios/validation/"
                                "fsdp-ours-llama31-8b-h100-16gpu.yaml)"),
                       InputError);
  fs::remove_all(root);
}
