#include "scenarios/validation.hpp"
#include "scenarios/validation_folds.hpp"

#include "models/model.hpp"
#include "scenarios/scenario.hpp"
#include "sim/compute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#ifndef TAGCSIM_SOURCE_DIR
#define TAGCSIM_SOURCE_DIR "."
#endif

namespace tagcsim::scenarios {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

std::string framework_of(const std::string& text) {
  const auto t = lower(text);
  if (t.find("torchtitan") != std::string::npos) return "torchtitan";
  if (t.find("fms") != std::string::npos) return "fms-fsdp";
  if (t.find("olmo-core") != std::string::npos) return "olmo-core";
  if (t.find("composer") != std::string::npos || t.find("llm-foundry") != std::string::npos) return "llm-foundry";
  return t;
}

// Fills what comes from parsing the scenario: the model's size and the GPU's family.
void resolve(ValidationRow& r) {
  const auto s = parse_scenario(r.scenario, r.scenario_file);
  if (s.points.size() != 1 || s.points[0].policies.size() != 1)
    throw InputError(fmt::format("{}: a validation scenario has one point and one policy (fsdp)", r.scenario_file));
  const auto& setup = s.points[0].setup;
  r.params = double(models::parameter_count(setup.model));
  const auto* prof = sim::device_kernel_profile(setup.cluster.gpu);
  r.family = prof ? prof->family : "roofline";
  r.device = prof ? prof->fit_device() : "";
}

// The number a data field starts with: some carry a remark ("8192 (from the train config)").
int leading_int(const Input& in) {
  const auto s = in.as_string();
  std::size_t n = 0;
  while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
  if (n == 0 || n > 9) in.fail(fmt::format("expected a count, got '{}'", s));
  return std::stoi(s.substr(0, n));
}


}  // namespace

std::string default_validation_root() { return TAGCSIM_SOURCE_DIR; }

std::string ValidationRow::seq_bucket() const {
  if (seq >= 1024) return fmt::format("{}k", seq / 1024);
  return std::to_string(seq);
}

std::string ValidationRow::size_bucket() const {
  const double b = params / 1e9;
  if (b < 0.5) return "<0.5B";
  if (b < 2) return "0.5-2B";
  if (b < 5) return "2-5B";
  if (b < 10) return "5-10B";
  if (b < 20) return "10-20B";
  if (b < 50) return "20-50B";
  return ">50B";
}

std::string ValidationRow::gpus_bucket() const {
  if (gpus <= 8) return "8";
  if (gpus <= 32) return "16-32";
  if (gpus <= 128) return "64-128";
  if (gpus <= 512) return "256-512";
  return ">512";
}

// LLM Foundry's benchmark runs (scripts/train/benchmarking/README.md: the A100 40GB table of May
// 2023, the A100 80GB table of Oct 2023, the H100 large-scale table of Jan 2024):
// MosaicGPT/MPT with learned positions and biases (the published parameter counts include both),
// Composer FSDP1 as the row says: FULL_SHARD or SHARD_GRAD_OP; PURE mixed precision (params and
// reduce in bf16) or DEFAULT (params bf16, reduce fp32); limit_all_gathers; backward prefetch
// BACKWARD_POST (Composer's default) unless the entry names another; a reduce-scatter every
// micro-batch (Composer does not use no_sync under FSDP); activation checkpointing as the row says.
// Kernels: the attention the benchmark scripts of the time ran (attn_impl triton: Tri Dao's Triton
// FlashAttention; flash: FlashAttention-2's varlen kernel behind flash-attn's unpad / pad helpers,
// llmfoundry/models/layers/attention.py @5e85bd6), flash-attn's fused cross-entropy (loss_fn:
// fused_crossentropy), low-precision LayerNorm, and the two training metrics (cross-entropy and
// perplexity) Composer evaluates on the logits every micro-batch. Cluster: 8 GPUs per node; A100
// nodes with 1600 Gb/s RoCE (8 x 200 Gb/s, the DGX A100 preset's NICs, as the tables say); H100
// nodes as DGX H100 (8 x 400 Gb/s; the table does not say).
// The PyTorch release a table's runs used, from the benchmark scripts of its commit (an entry's own
// setup.torch wins): the May 2023 A100 40GB table, and the bf16/PURE 70b rows the A100 80GB table
// carries over from it, ran submit_benchmarks.py's default image (@300cc5c:
// mosaicml/pytorch:1.13.1_cu117); the Oct 2023 amp_bf16 rows sweep.sh's (@b2a43a1:
// mosaicml/pytorch:2.1.0_cu121); the Jan 2024 H100 table torch 2.1 (@5e85bd6 setup.py:
// torch>=2.1,<2.1.1). Both eras' yamls checkpoint non-reentrant (activation_checkpointing_reentrant:
// false), so the release decides checkpoint early stop (PyTorch >= 2.1).
static bool llm_foundry_early_stop(const Input& e) {
  std::string torch;
  const auto ref = e["source"]["ref"].as_string();
  const bool pure = e["setup"]["fsdp_mixed_precision_mode"].as_string() == "PURE";
  if (auto t = e["setup"].find("torch")) torch = t->as_string();
  else if (ref == "S31" || (ref == "S39" && pure)) torch = "1.13.1";
  else if (ref == "S39" || ref == "S47") torch = "2.1.0";
  else e["setup"].fail(fmt::format("no PyTorch release known for source {}: give setup.torch (e.g. \"2.1.0\")", ref));
  int major = 0, minor = 0;
  if (std::sscanf(torch.c_str(), "%d.%d", &major, &minor) != 2)
    e["setup"]["torch"].fail(fmt::format("expected a PyTorch release such as 2.1.0, got '{}'", torch));
  return major > 2 || (major == 2 && minor >= 1);
}

std::string llm_foundry_scenario(const Input& e) {
  const Input setup = e["setup"], hw = e["hardware"], dims = e["setup"]["model_dims"];
  const auto model = lower(setup["model"].as_string());  // "mpt-7b"
  const int seq = setup["seq_len"].as_int_between(1, 1 << 24);
  const int gpus = hw["num_gpus"].as_int_between(1, 1 << 20), gpn = hw["gpus_per_node"].as_int_between(1, 64);
  if (gpus % gpn != 0) hw["num_gpus"].fail(fmt::format("{} GPUs are not whole nodes of {}", gpus, gpn));
  const auto gpu_name = hw["gpu"].as_string();
  std::string gpu, cluster, gpu_label;
  if (gpu_name == "NVIDIA A100 40GB") gpu = "a100-40gb", gpu_label = "A100 40GB";
  else if (gpu_name == "NVIDIA A100 80GB") gpu = "a100-80gb", gpu_label = "A100 80GB";
  else if (gpu_name == "NVIDIA H100 80GB") gpu = "h100-sxm", gpu_label = "H100 80GB";
  else hw["gpu"].fail("the LLM Foundry mapping knows NVIDIA A100 40GB, A100 80GB and H100 80GB");
  cluster = gpu == "h100-sxm" ? "{preset: dgx-h100-ib400" : "{preset: dgx-a100-ib200";
  const std::string nics = gpu == "h100-sxm" ? "" : ", nics: {transport: roce}";
  const auto sharding = setup["sharding_strategy"].as_choice({"FULL_SHARD", "SHARD_GRAD_OP"});
  const auto mp = setup["fsdp_mixed_precision_mode"].as_choice({"PURE", "DEFAULT"});
  // The attention kernel of the benchmark script of the time: attn_impl triton (also the default
  // of the May 2023 script, which the A100 40GB entries do not restate) or flash (FlashAttention-2).
  const auto attn_text = setup["attention"].as_string();
  std::string attention;
  if (attn_text.rfind("triton", 0) == 0 || attn_text.find("not restated") != std::string::npos)
    attention = "flash-triton";
  else if (attn_text.rfind("flash:", 0) == 0)
    attention = "flash2";
  else
    setup["attention"].fail("expected 'triton...' or 'flash: ...' (the benchmark's attn_impl)");
  const bool early_stop = llm_foundry_early_stop(e);
  std::string prefetch = "post";
  if (auto p = setup.find("fsdp_backward_prefetch"))
    prefetch = p->as_choice({"BACKWARD_PRE", "BACKWARD_POST"}) == "BACKWARD_PRE" ? "pre" : "post";
  std::string text = fmt::format(
      "name: {}\n"
      "description: \"{} on {}x {}, LLM Foundry (Composer FSDP), seq {}, micro-batch {} x {}, AC {}\"\n"
      "model: {{preset: {}, bias: true, learned_positions: {}, seq_len: {}, layers: {}, hidden: {}, heads: {}, "
      "ffn: {}, vocab: {}}}\n"
      "cluster: {}, nodes: {}, gpus_per_node: {}, gpu: {}{}}}\n"
      "training:\n"
      "  framework: composer\n  fsdp: 1\n"
      "  sharding: {}\n  micro_batch: {}\n  seq_len: {}\n  grad_accumulation: {}\n  no_sync: false\n"
      "  param_dtype: bf16\n  reduce_dtype: {}\n  activation_checkpointing: {}\n  checkpoint_early_stop: {}\n"
      "  limit_all_gathers: true\n"
      "  backward_prefetch: {}\n  attention: {}\n  unpadded_attention: {}\n  cross_entropy: fused\n"
      "  logit_metrics: 2\n"
      "policies: [fsdp]\n",
      e["id"].as_string(), setup["model"].as_string(), gpus, gpu_label, seq, setup["micro_batch_size"].as_int(),
      setup["grad_accum"].as_int(), setup["activation_checkpointing"].as_bool() ? "on" : "off", model, seq, seq,
      dims["n_layers"].as_int(), dims["d_model"].as_int(), dims["n_heads"].as_int(),
      dims["d_model"].as_int() * dims["expansion_ratio"].as_int(), dims["vocab_size"].as_int(), cluster, gpus / gpn,
      gpn, gpu, nics, sharding == "FULL_SHARD" ? "full_shard" : "shard_grad_op", setup["micro_batch_size"].as_int(),
      seq, setup["grad_accum"].as_int(), mp == "PURE" ? "bf16" : "fp32",
      setup["activation_checkpointing"].as_bool() ? "true" : "false", early_stop ? "true" : "false", prefetch,
      attention, attention == "flash2" ? "true" : "false");
  return text;
}

namespace {

// One LLM Foundry entry as a row: its measurement, and its scenario from the mapping above.
// Ours, not the source's: why a published row cannot stand for the configuration it states, or
// what the model cannot time in it (`not_counted`: listed, kept out of the fit and the statistics).
void not_counted(const Input& e, ValidationRow& r) {
  if (auto nc = e.find("not_counted")) {
    r.counted = false;
    r.note = nc->as_string();
  }
  // Counted, but no fit moves a device's scale with it (`not_fitted`).
  if (auto nf = e.find("not_fitted")) {
    r.fitted = false;
    r.not_fitted_note = nf->as_string();
  }
}

ValidationRow foundry_row(const Input& e, const std::string& file) {
  ValidationRow r;
  r.id = e["id"].as_string();
  r.source = e["source"]["ref"].as_string();
  r.framework = "llm-foundry";
  r.gpu = e["hardware"]["gpu"].as_string();
  r.model = e["setup"]["model"].as_string();
  r.seq = leading_int(e["setup"]["seq_len"]);
  r.gpus = leading_int(e["hardware"]["num_gpus"]);
  r.measured_tps = e["measured"]["throughput_tokens_per_s_per_gpu"].as_positive();
  r.published_mfu = e["measured"]["mfu_pct"].as_double() / 100;
  r.scenario_file =
      fmt::format("validation/data/{}:{} (entry {}, mapped by scenarios/validation.cpp)", file, e.line(), r.id);
  r.scenario = llm_foundry_scenario(e);
  not_counted(e, r);
  resolve(r);
  // The mapping must rebuild the published model exactly.
  const double published = double(e["setup"]["num_params"].as_int());
  if (r.params != published)
    e["setup"]["num_params"].fail(
        fmt::format("the mapped scenario's model has {:.0f} parameters, the entry {:.0f}", r.params, published));
  return r;
}

}  // namespace

std::vector<ValidationRow> validation_rows(const std::string& root) {
  namespace fs = std::filesystem;
  const fs::path data = fs::path(root) / "validation" / "data";
  const fs::path dir = fs::path(root) / "scenarios" / "validation";
  std::vector<ValidationRow> rows;
  std::set<std::string> ids;

  // The published rows (published_measurements.yaml, then one file per further source,
  // published_fsdp_*.yaml but LLM Foundry's tables, which have their own schema), then our own
  // measurements (measured_*.yaml): the same schema, a scenario file each, each group in name order.
  // A root of one's own runs (docs/validation.md, "Checking your own runs") may hold only them.
  std::vector<std::string> files;
  if (fs::exists(data / "published_measurements.yaml")) files.push_back("published_measurements.yaml");
  std::vector<std::string> published, own;
  for (const auto& f : fs::directory_iterator(data)) {
    const auto name = f.path().filename().string();
    if (f.path().extension() != ".yaml") continue;
    if (name.rfind("measured_", 0) == 0) own.push_back(name);
    if (name.rfind("published_fsdp_", 0) == 0 && name.rfind("published_fsdp_llm_foundry_", 0) != 0)
      published.push_back(name);
  }
  std::sort(published.begin(), published.end());
  std::sort(own.begin(), own.end());
  files.insert(files.end(), published.begin(), published.end());
  files.insert(files.end(), own.begin(), own.end());
  for (const auto& file : files) {
    const Input entries = Input::load_file((data / file).string())["entries"];
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const Input e = entries.at(i);
      if (e["kind"].as_string() != "fsdp") continue;
      ValidationRow r;
      r.id = e["id"].as_string();
      r.source = e["source"]["ref"].as_string();
      r.framework = framework_of(e["setup"]["framework"].as_string());
      r.gpu = e["hardware"]["gpu"].as_string();
      r.model = e["setup"]["model"].as_string();
      r.seq = leading_int(e["setup"]["seq_len"]);
      r.gpus = leading_int(e["hardware"]["num_gpus"]);
      const Input m = e["measured"];
      // A source that published only MFU: its tokens/s derived by the source's own count (ours, under
      // derived, with the count and the peak it used).
      const auto derived = e.find("derived");
      if (!m.has("tokens_per_s_per_gpu") && derived && derived->has("tokens_per_s_per_gpu"))
        r.measured_tps = (*derived)["tokens_per_s_per_gpu"].as_positive();
      else
        r.measured_tps = m["tokens_per_s_per_gpu"].as_positive();
      if (auto v = m.find("mfu")) r.published_mfu = v->as_double();
      if (auto v = m.find("mfu_pct")) r.published_mfu = v->as_double() / 100;
      if (auto v = m.find("peak_memory_GiB")) r.published_reserved_gib = v->as_positive();
      if (auto v = m.find("peak_allocated_GiB")) r.published_allocated_gib = v->as_positive();
      if (auto v = m.find("timed")) {
        const auto timed = v->as_string();
        if (timed == "without_optimizer")
          r.timed = ValidationRow::Timed::without_optimizer;
        else if (timed == "no_sync_micro_batch")
          r.timed = ValidationRow::Timed::no_sync_micro_batch;
        else if (timed != "step")
          v->fail(fmt::format("'{}': expected step (the whole step, the default), without_optimizer (the "
                              "source's timer stops before the optimizer's GPU work) or no_sync_micro_batch (it "
                              "times one micro-batch of a no_sync() gradient accumulation)",
                              timed));
      }
      not_counted(e, r);
      r.scenario_file = "scenarios/validation/" + r.id + ".yaml";  // as the repository names it
      const auto path = dir / (r.id + ".yaml");
      if (!fs::exists(path)) e["id"].fail(fmt::format("no scenario for this entry (expected {})", r.scenario_file));
      r.scenario = read_text_file(path.string(), "cannot read");
      if (!ids.insert(r.id).second) e["id"].fail("a second entry with this id");
      rows.push_back(std::move(r));
    }
  }

  // Every LLM Foundry table: published_fsdp_llm_foundry_<gpu>.yaml, in name order.
  std::vector<std::string> foundry_files;
  for (const auto& f : fs::directory_iterator(data)) {
    const auto name = f.path().filename().string();
    if (name.rfind("published_fsdp_llm_foundry_", 0) == 0 && f.path().extension() == ".yaml")
      foundry_files.push_back(name);
  }
  std::sort(foundry_files.begin(), foundry_files.end());
  for (const auto& file : foundry_files) {
    const Input lf = Input::load_file((data / file).string())["entries"];
    for (std::size_t i = 0; i < lf.size(); ++i) {
      const Input e = lf.at(i);
      if (e["kind"].as_string() != "fsdp") continue;
      auto r = foundry_row(e, file);
      if (!ids.insert(r.id).second) e["id"].fail("a second entry with this id");
      rows.push_back(std::move(r));
    }
  }
  for (auto& r : rows)
    if (r.family.empty()) resolve(r);

  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().extension() == ".yaml" && !ids.count(f.path().stem().string()))
      throw InputError(fmt::format("{}: names no kind: fsdp entry of validation/data (the file name is the entry id)",
                                   f.path().string()));
  return rows;
}

Prediction predict(const ValidationRow& row) {
  const auto s = parse_scenario(row.scenario, row.scenario_file);
  const auto results = run(s);
  const auto& st = results.front().step;
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  // A source that timed the step without the optimizer's GPU work (measured.timed): the same tokens
  // over the step less the optimizer, which runs last on the compute stream. One that timed a
  // micro-batch reducing no gradients: the step as given less the step with one micro-batch fewer
  // (both end with the micro-batch that reduces), one micro-batch's tokens over that difference.
  double timed_s = st.step_time_s, timed_share = 1;
  if (row.timed == ValidationRow::Timed::without_optimizer) timed_s = st.step_time_s - st.breakdown.optimizer_s;
  if (row.timed == ValidationRow::Timed::no_sync_micro_batch) {
    auto fewer = s;
    auto& t = fewer.points.front().setup.training;
    if (!t.no_sync || t.grad_accumulation < 2)
      throw InputError(fmt::format("{}: its entry's measured.timed: no_sync_micro_batch needs training.no_sync: true "
                                   "and grad_accumulation of 2 or more (got no_sync: {}, grad_accumulation: {})",
                                   row.scenario_file, t.no_sync, t.grad_accumulation));
    timed_share = 1.0 / t.grad_accumulation;
    --t.grad_accumulation;
    timed_s = st.step_time_s - run(fewer).front().step.step_time_s;
  }
  const double rate = st.step_time_s * timed_share / timed_s;
  return {st.tokens_per_s_per_gpu * rate, st.mfu * rate, st.mfu_megatron * rate, timed_s, st.breakdown.exposed_comm_s,
          st.memory.peak_bytes() / kGiB, st.memory.capacity_bytes / kGiB, st.memory.reserved_bytes() / kGiB,
          st.memory.allocated_bytes() / kGiB, st.memory.fits(), st.memory.under_pressure()};
}

std::string Prediction::memory_mark() const { return !fits ? " !" : under_pressure ? " ~" : ""; }

ValidationRun validate(std::vector<ValidationRow> rows, const ValidationOptions& o) {
  ValidationRun run;
  if (!o.only.empty()) {
    std::regex re;
    try {
      re.assign(o.only);
    } catch (const std::regex_error& e) {
      throw InputError(fmt::format("--only: '{}' is not a regular expression ({})", o.only, e.what()));
    }
    std::vector<ValidationRow> kept;
    for (auto& r : rows)
      if (std::regex_search(r.id, re)) kept.push_back(std::move(r));
    rows = std::move(kept);
  }
  run.rows = std::move(rows);
  const auto& R = run.rows;
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < R.size(); ++i) all.push_back(i);
  if (o.refit) run.fitted = fit(R, all);
  // The parameters in force now (shipped, or just fitted) give the main predictions.
  FamilyFits in_force;
  for (const auto& r : R) {
    in_force[r.family] = sim::fitted_parameters(r.family);
    if (!r.device.empty()) {
      const auto key = sim::device_fit_key(r.device);
      if (sim::has_device_fit(r.device)) in_force[key] = sim::fitted_parameters(r.device, r.family);
    }
  }
  run.results.resize(R.size());
  for (std::size_t i = 0; i < R.size(); ++i) run.results[i].shipped = predict(R[i]);

  if (o.leave_one_source_out) {
    std::set<std::string> sources;
    for (const auto& r : R)
      if (r.counted) sources.insert(r.source);
    for (auto& [source, fold] : run_folds(R, sources, in_force, o.jobs)) {
      run.fold_fits[source] = std::move(fold.fits);
      for (const auto& [i, p] : fold.held_out) {
        run.results[i].held_out = p;
        run.results[i].has_held_out = true;
      }
    }
  }
  compare_rows(run);
  return run;
}

}  // namespace tagcsim::scenarios
