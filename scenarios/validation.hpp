// Validation against published FSDP throughput: every `kind: fsdp` row shipped in
// validation/data/, its scenario, its prediction, the fit of the device families' physical
// parameters, and leave-one-source-out (docs/validation.md; `tagcsim validate`).
//
// A row's measured values come from validation/data by entry id, never from the scenario. The
// rows of published_measurements.yaml (fms-fsdp, torchtitan) have a scenario each in
// scenarios/validation/<id>.yaml; the LLM Foundry rows are turned into scenarios from their
// entries (every validation/data/published_fsdp_llm_foundry_*.yaml) by a fixed mapping
// (llm_foundry_scenario, documented in docs/validation.md).
#pragma once

#include "sim/kernel_profile.hpp"

#include <map>
#include <string>
#include <vector>

namespace tagcsim::scenarios {

struct ValidationRow {
  std::string id;
  std::string source;       // the data's source key: S31 (LLM Foundry), S32..S38
  std::string framework;    // "llm-foundry", "torchtitan", "fms-fsdp"
  std::string gpu;          // as published
  std::string model;        // as published ("MPT-7b", "Llama 2 13B")
  double measured_tps = 0;  // tokens/s/GPU
  double published_mfu = 0; // as a fraction, 0 when not published
  double published_reserved_gib = 0;  // torchtitan's logged peak memory (max_reserved_gib), 0 when not published
  double published_allocated_gib = 0;  // torch.cuda.max_memory_allocated where a source gives it (ours), else 0
  int seq = 0, gpus = 0;
  double params = 0;        // the scenario model's parameter count
  bool counted = true;      // false: listed, kept out of the fit and the statistics (`note` says why)
  std::string note;         // why not counted
  // false: counted in the statistics, kept out of every fit (`not_fitted_note` says why): a row whose
  // error would otherwise move a device's scale to absorb a mechanism it tests (a mixture of experts).
  bool fitted = true;
  std::string not_fitted_note;
  // What the source's timer spans (the entry's `measured.timed`), and the prediction is timed the same
  // way: the whole step (`step`); the step but for the optimizer's GPU work (a loop that stops its host
  // timer once optimizer.step() is queued and waits for the GPU after it: `without_optimizer`); or one
  // micro-batch that reduces no gradients (a loop that times each micro-batch of a no_sync() gradient
  // accumulation and reports the median, which is such a micro-batch: `no_sync_micro_batch`).
  enum class Timed { step, without_optimizer, no_sync_micro_batch };
  Timed timed = Timed::step;
  std::string scenario_file;  // where the scenario comes from (a file, or the data entry)
  std::string scenario;       // its YAML text
  std::string family;         // the device family of its GPU's kernel profile
  std::string device;         // the GPU its kernel profile measured ("H200-SXM-141GB")

  std::string seq_bucket() const;   // "512", "1k", ..., "32k"
  std::string size_bucket() const;  // "<0.5B", "0.5-2B", "2-5B", "5-10B", "10-20B", "20-50B", ">50B"
  std::string gpus_bucket() const;  // "8", "16-32", "64-128", "256-512", ">512": the trend with scale
};

// The rows, in data-file order: published_measurements.yaml's fsdp entries, then LLM Foundry's.
// `root` is the source tree (validation/data, scenarios/validation). InputError when an entry
// has no scenario or a scenario names no entry.
std::vector<ValidationRow> validation_rows(const std::string& root);
std::string default_validation_root();

// The scenario of one LLM Foundry entry (MPT on A100 40/80GB or H100, Composer FSDP): see docs/validation.md.
std::string llm_foundry_scenario(const Input& entry);

struct Prediction {
  double tps = 0, mfu = 0, mfu_megatron = 0, step_s = 0, exposed_comm_s = 0;
  // The memory estimate (sim::Memory): the peak per GPU, the GPU's capacity, whether the live
  // tensors fit (a published row ran, so they should) and whether the allocator's cache does.
  double peak_gib = 0, capacity_gib = 0, reserved_gib = 0, allocated_gib = 0;
  bool fits = true, under_pressure = false;
  double error(double measured) const { return tps / measured - 1; }
  // The mark the run report gives its peak memory: " !" does not fit, " ~" fits by the
  // allocator giving cached blocks back during the step, "" fits.
  std::string memory_mark() const;
};
// Runs one row with the fitted parameters in force (sim::override_fitted_parameters).
Prediction predict(const ValidationRow& row);

// By family ("hopper") and by device (sim::device_fit_key).
using FamilyFits = std::map<std::string, sim::FittedParameters>;

// Least squares on log(predicted / measured) over the counted rows `train` (indices into
// rows): per family tensor_scale and one memory_scale, then per device its own tensor_scale
// (Gauss-Newton with finite differences). Leaves the result in force (override_fitted_parameters).
FamilyFits fit(const std::vector<ValidationRow>& rows, const std::vector<std::size_t>& train);

struct RowResult {
  Prediction shipped;  // with the parameters in force when validate() ran
  Prediction held_out; // leave-one-source-out: fitted without the row's source (when asked)
  bool has_held_out = false;
};

struct ValidationOptions {
  bool leave_one_source_out = false;
  bool refit = false;  // fit on every counted row first (what `--fit` writes)
  std::string only;    // a regex on row ids
  int jobs = 0;        // leave-one-source-out folds run at once (0: one per hardware thread)
};

// Two counted rows of one source whose resolved scenarios differ in one setting: the speedup in
// tokens/s/GPU from `from` to `to` as the source measured it and as tagcsim predicts it (held
// out when both rows have held-out predictions). See validation_pairs.cpp.
struct WhatIfPair {
  std::string source, setting, from, to, from_id, to_id;
  double measured = 1, predicted = 1;
  double error() const { return predicted / measured - 1; }
};
// One run published twice: two counted rows of two sources whose resolved scenarios are the same
// (torchtitan's benchmark file and its paper give one run's throughput twice). They bound what any
// prediction can do: none is closer to both than (hi - lo) / (hi + lo).
struct ReplicateRows {
  std::string id_a, id_b, source_a, source_b;
  double measured_a = 0, measured_b = 0;    // tokens/s/GPU
  double predicted_a = 0, predicted_b = 0;  // held out where both rows were
  double spread() const { return std::max(measured_a, measured_b) / std::min(measured_a, measured_b) - 1; }
  double floor() const { return std::abs(measured_a - measured_b) / (measured_a + measured_b); }
};
struct ValidationRun {
  std::vector<ValidationRow> rows;
  std::vector<RowResult> results;
  FamilyFits fitted;                            // when refit
  std::map<std::string, FamilyFits> fold_fits;  // by held-out source
  std::vector<WhatIfPair> pairs;                // compare_rows' pairs, once the rows are predicted
  std::vector<ReplicateRows> replicates;        // compare_rows' replicates, likewise
};
ValidationRun validate(std::vector<ValidationRow> rows, const ValidationOptions& o);

// The table and summary `tagcsim validate` prints (markdown, so docs/validation.md can hold it).
std::string format_validation(const ValidationRun& run);

// Sets run.pairs (rows of one source that differ in one setting) and run.replicates (counted rows of
// different sources with the same resolved scenario, in row order), resolving each row's scenario once.
void compare_rows(ValidationRun& run);
// The replicates and what they leave any model (markdown; empty without any).
std::string format_replicate_rows(const std::vector<ReplicateRows>& replicates);
// The setting of pairs that lengthen the sequence and shrink the micro-batch to keep its tokens.
inline constexpr const char* kSeqLenSameTokens = "training.seq_len at the same tokens a micro-batch";
// The pairs and a summary per setting (markdown; empty without pairs).
std::string format_what_if_pairs(const std::vector<WhatIfPair>& pairs);
// One line per setting, as the fit file keeps it for `tagcsim run` to quote beside a sweep of that
// setting ("13 published pairs of 5 sources that changed only it: ...").
std::map<std::string, std::string> what_if_summaries(const std::vector<WhatIfPair>& pairs);
// calibrate/profiles/fit-training.yaml for these fits.
std::string fit_file_text(const FamilyFits& fits, const std::string& command,
                          const std::map<std::string, std::string>& what_if = {});
// With leave-one-source-out predictions: each fitted device's and family's counted rows, each
// predicted by the fold without its source, summarised into the fit's `held_out` ("35 rows of 5
// sources, each source held out of the fit: median 3.7%, p90 6.4% off"), which the fit file keeps
// and `tagcsim run` prints.
void attach_held_out(ValidationRun& run);

}  // namespace tagcsim::scenarios
