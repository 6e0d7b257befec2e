// `tagcsim validate --root DIR` over a tree of one's own runs: validation/data/measured_*.yaml (or
// published_fsdp_*.yaml) entries in the shipped schema, one scenario each under scenarios/validation,
// predicted with the shipped fit as the published rows are (docs/validation.md, "Checking your own runs").
#include "scenarios/scenario.hpp"
#include "scenarios/validation.hpp"
#include "sim/step.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace tagcsim;
using doctest::Approx;
using doctest::Contains;

namespace {

// A tree of one's own runs under the temporary directory: one data file of entries and one
// scenario, named by its entry id.
std::filesystem::path own_tree(const std::string& name, const std::string& entries, const std::string& id,
                               const std::string& scenario) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "validation" / "data");
  fs::create_directories(root / "scenarios" / "validation");
  std::ofstream(root / "validation" / "data" / "measured_fsdp_ours.yaml") << entries;
  std::ofstream(root / "scenarios" / "validation" / (id + ".yaml")) << scenario;
  return root;
}

}  // namespace

TEST_CASE("validate --root: a tree of one's own runs alone, each predicted as tagcsim run predicts it") {
  namespace fs = std::filesystem;
  const std::string scenario =
      "name: fsdp-ours-llama31-8b-h100-16gpu\nmodel: llama3.1-8b\ncluster: {preset: dgx-h100-ib400, nodes: 2}\n"
      "training: {framework: torchtitan, torchtitan_date: 2025-09-01, seq_len: 8192, micro_batch: 2, compile: true, "
      "activation_checkpointing: selective_op}\npolicies: [fsdp]\n";
  const fs::path root = own_tree("tagcsim-own-runs",
                                 "about: our cluster's runs\n"
                                 "entries:\n"
                                 "- id: fsdp-ours-llama31-8b-h100-16gpu\n"
                                 "  kind: fsdp\n"
                                 "  source: {ref: OURS, url: our logs}\n"
                                 "  hardware: {gpu: NVIDIA H100 SXM, num_gpus: 16, gpus_per_node: 8}\n"
                                 "  setup: {framework: torchtitan, model: Llama 3.1 8B, seq_len: 8192}\n"
                                 "  measured: {tokens_per_s_per_gpu: 6000, peak_memory_GiB: 60}\n",
                                 "fsdp-ours-llama31-8b-h100-16gpu", scenario);

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
  std::filesystem::remove_all(root);
}

TEST_CASE("validate --root: a run that gives only its max allocated memory is held against the predicted allocated") {
  const auto root =
      own_tree("tagcsim-own-alloc",
               "entries:\n"
               "- id: fsdp-ours-llama2-7b-h100-8gpu\n"
               "  kind: fsdp\n"
               "  source: {ref: OURS, url: our logs}\n"
               "  hardware: {gpu: NVIDIA H100 SXM, num_gpus: 8, gpus_per_node: 8}\n"
               "  setup: {framework: pytorch, model: Llama 2 7B, seq_len: 4096}\n"
               "  measured: {tokens_per_s_per_gpu: 9000, peak_allocated_GiB: 40}\n",
               "fsdp-ours-llama2-7b-h100-8gpu",
               "name: fsdp-ours-llama2-7b-h100-8gpu\nmodel: llama2-7b\ncluster: {preset: dgx-h100-ib400, nodes: 1}\n"
               "training: {fsdp: 2, seq_len: 4096, master_dtype: bf16, reduce_dtype: bf16}\npolicies: [fsdp]\n");
  const auto rows = scenarios::validation_rows(root.string());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].published_reserved_gib == 0);
  CHECK(rows[0].published_allocated_gib == 40);
  const auto p = scenarios::predict(rows[0]);
  const auto report = scenarios::format_validation(scenarios::validate(rows, {}));
  // No published reserved memory: its columns say so; the allocated one is compared.
  CHECK_MESSAGE(report.find(fmt::format("| fsdp-ours-llama2-7b-h100-8gpu | - | {:.1f} | - | {:.1f} | 40.0 | {:+.1f}% |",
                                        p.reserved_gib, p.allocated_gib, 100 * (p.allocated_gib / 40 - 1))) !=
                    std::string::npos,
                report);
  std::filesystem::remove_all(root);
}

TEST_CASE("validate --root: a run timed without the optimizer is predicted without it, and a misspelt span is refused") {
  // One node of four A100s: a 6.08B model's fp32 shard and AdamW's moments (foreach) are a quarter
  // each, so the optimizer is a tenth of the step; timed as the loop timed it, the step loses it.
  const std::string scenario =
      "name: fsdp-ours-gpt-4gpu\nmodel: {layers: 32, hidden: 4096, heads: 32, kv_heads: 8, ffn: 11008, gated_mlp: true, "
      "vocab: 50304, tied_embeddings: false, seq_len: 2048, learned_positions: 0, norm: layernorm, bias: false}\n"
      "cluster: {preset: leonardo-booster, nodes: 1}\n"
      "training: {fsdp: 2, micro_batch: 1, seq_len: 2048, reduce_dtype: bf16}\npolicies: [fsdp]\n";
  auto entries = [](const std::string& timed) {
    return "entries:\n"
           "- id: fsdp-ours-gpt-4gpu\n"
           "  kind: fsdp\n"
           "  source: {ref: OURS, url: our logs}\n"
           "  hardware: {gpu: NVIDIA A100 SXM 64GB, num_gpus: 4, gpus_per_node: 4}\n"
           "  setup: {framework: pytorch, model: GPT 6B, seq_len: 2048}\n"
           "  measured: {tokens_per_s_per_gpu: 3700, timed: " +
           timed + "}\n";
  };
  auto root = own_tree("tagcsim-own-timed", entries("without_optimizer"), "fsdp-ours-gpt-4gpu", scenario);
  const auto rows = scenarios::validation_rows(root.string());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].timed == scenarios::ValidationRow::Timed::without_optimizer);
  const auto st = sim::simulate_fsdp(scenarios::parse_scenario(scenario, "direct.yaml").points.at(0).setup);
  const double optimizer = st.breakdown.optimizer_s;
  CHECK(optimizer > 0.05 * st.step_time_s);
  const auto p = scenarios::predict(rows[0]);
  CHECK(p.step_s == Approx(st.step_time_s - optimizer).epsilon(1e-12));
  CHECK(p.tps == Approx(2048 / (st.step_time_s - optimizer)).epsilon(1e-9));  // one sequence a GPU a step
  CHECK(p.tps > st.tokens_per_s_per_gpu);
  std::filesystem::remove_all(root);

  root = own_tree("tagcsim-own-timed", entries("whole"), "fsdp-ours-gpt-4gpu", scenario);
  CHECK_THROWS_WITH_AS(scenarios::validation_rows(root.string()),
                       Contains("measured_fsdp_ours.yaml:7: entries[0].measured.timed: 'whole': expected step (the whole step, the "
                                "default), without_optimizer"),
                       InputError);
  std::filesystem::remove_all(root);
}

TEST_CASE("validate --root: a run timed one no_sync micro-batch at a time is predicted as one such micro-batch") {
  // VectorLM's loop: four micro-batches a step under no_sync(), each timed, the median reported: a
  // micro-batch that all-gathers but reduces nothing and steps no optimizer. Predicted as the step of
  // four micro-batches less the step of three, the same tokens (one micro-batch's) over it.
  auto scenario = [](int accumulation) {
    return "name: fsdp-ours-gpt-4gpu\nmodel: {layers: 32, hidden: 4096, heads: 32, kv_heads: 8, ffn: 11008, "
           "gated_mlp: true, vocab: 50304, tied_embeddings: false, seq_len: 2048, learned_positions: 0, norm: layernorm, "
           "bias: false}\ncluster: {preset: leonardo-booster, nodes: 1}\ntraining: {fsdp: 1, micro_batch: 1, seq_len: 2048, "
           "no_sync: true, grad_accumulation: " +
           std::to_string(accumulation) + "}\npolicies: [fsdp]\n";
  };
  const std::string entries =
      "entries:\n- id: fsdp-ours-gpt-4gpu\n  kind: fsdp\n  source: {ref: OURS, url: our logs}\n"
      "  hardware: {gpu: NVIDIA A100 SXM 64GB, num_gpus: 4, gpus_per_node: 4}\n"
      "  setup: {framework: pytorch, model: GPT 6B, seq_len: 2048}\n"
      "  measured: {tokens_per_s_per_gpu: 3700, timed: no_sync_micro_batch}\n";
  auto root = own_tree("tagcsim-own-micro", entries, "fsdp-ours-gpt-4gpu", scenario(4));
  const auto rows = scenarios::validation_rows(root.string());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].timed == scenarios::ValidationRow::Timed::no_sync_micro_batch);
  auto step = [&](int accumulation) {
    return sim::simulate_fsdp(scenarios::parse_scenario(scenario(accumulation), "direct.yaml").points.at(0).setup);
  };
  const auto four = step(4), three = step(3);
  const double micro_batch = four.step_time_s - three.step_time_s;
  // Without the reduce-scatters and the optimizer (a tenth of a step here), a micro-batch is shorter
  // than an average one.
  CHECK(micro_batch < 0.95 * four.step_time_s / 4);
  const auto p = scenarios::predict(rows[0]);
  CHECK(p.step_s == Approx(micro_batch).epsilon(1e-12));
  CHECK(p.tps == Approx(2048 / micro_batch).epsilon(1e-9));
  std::filesystem::remove_all(root);

  root = own_tree("tagcsim-own-micro", entries, "fsdp-ours-gpt-4gpu", scenario(1));
  CHECK_THROWS_WITH_AS(scenarios::predict(scenarios::validation_rows(root.string()).at(0)),
                       Contains("fsdp-ours-gpt-4gpu.yaml: its entry's measured.timed: no_sync_micro_batch needs "
                                "training.no_sync: true and grad_accumulation of 2 or more (got no_sync: true, "
                                "grad_accumulation: 1)"),
                       InputError);
  std::filesystem::remove_all(root);
}
