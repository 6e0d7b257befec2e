// tagcsim calibrate log SCENARIO LOG: a run's own training log against tagcsim's prediction of it.
// The log gives tokens/s per GPU (and torchtitan its peak reserved memory) step by step; the
// scenario says what ran. --entry DIR keeps the pair as a row of one's own, which `tagcsim validate
// --root DIR` predicts beside the others and `--fit` can refit on (docs/validation.md).
#include "app/commands.hpp"
#include "calibrate/training_log.hpp"
#include "common/input.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/scenario.hpp"
#include "sim/compute.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>

namespace tagcsim::app {
namespace {

struct LogOptions {
  std::string scenario;
  std::string log;
  double measured = 0;  // tokens/s/GPU given instead of a log
  long warmup = -1;
  std::string entry;    // a folder to keep the run in, for validate --root
  std::string id;
  std::string source = "OURS";
};

constexpr double kGiB = 1024.0 * 1024 * 1024;

// The one prediction a log can be compared with: a scenario of one point, run under plain FSDP.
const scenarios::Result& fsdp_result(const scenarios::Scenario& s, const std::vector<scenarios::Result>& results) {
  if (s.points.size() != 1)
    throw InputError(fmt::format("{}: a log is one run, and this scenario sweeps {} points: give the point that ran",
                                 s.file, s.points.size()));
  for (const auto& r : results)
    if (r.policy->kind == sim::PolicyKind::Fsdp) return r;
  throw InputError(fmt::format("{}: no fsdp policy among the scenario's policies: a training log is of plain FSDP", s.file));
}

std::string signed_percent(double x) { return fmt::format("{:+.1f}%", 100 * x); }

// A YAML double-quoted scalar: a log's path or a model's name may hold quotes or backslashes.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

// The scenario as a validation row runs it: resolved (presets and cluster files expanded, so that
// it runs from any folder and says every value the prediction used), under plain FSDP alone
// (scenarios/validation.cpp wants one policy).
std::string fsdp_only(const scenarios::Scenario& s) {
  YAML::Node root = YAML::Load(scenarios::resolved_yaml(s));
  root["policies"] = YAML::Load("[fsdp]");
  YAML::Emitter out;
  out << root;
  return fmt::format("# {}, resolved by `tagcsim calibrate log` and kept under plain FSDP alone\n{}\n", s.file,
                     out.c_str());
}

// DIR/validation/data/measured_fsdp_<id>.yaml and DIR/scenarios/validation/<id>.yaml: an entry in the
// shipped schema and the scenario it names (scenarios/validation.cpp reads them).
void write_entry(const LogOptions& o, const scenarios::Scenario& s, const calibrate::LogSummary* summary,
                 double measured) {
  namespace fs = std::filesystem;
  static const std::regex id_chars("[A-Za-z0-9._-]+");
  if (!std::regex_match(o.id, id_chars))
    throw InputError(fmt::format("--id '{}': expected letters, digits, '.', '_' or '-' (it names two files)", o.id));
  const fs::path data = fs::path(o.entry) / "validation" / "data" / ("measured_fsdp_" + o.id + ".yaml");
  const fs::path scenario = fs::path(o.entry) / "scenarios" / "validation" / (o.id + ".yaml");
  for (const auto& p : {data, scenario})
    if (fs::exists(p)) throw InputError(fmt::format("--entry: {} exists already: choose another --id", p.string()));
  for (const auto& dir : {data.parent_path(), scenario.parent_path()}) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw InputError(fmt::format("--entry: cannot create {}: {}", dir.string(), ec.message()));
  }
  const auto& setup = s.points.front().setup;
  std::string measured_yaml = fmt::format("tokens_per_s_per_gpu: {:.6g}", measured);
  if (summary && summary->memory_gib > 0) measured_yaml += fmt::format(", peak_memory_GiB: {:.6g}", summary->memory_gib);
  const std::string where = o.log.empty() ? "given with --measured" : o.log;
  std::string text = fmt::format(
      "# Written by tagcsim calibrate log: a run of one's own, for `tagcsim validate --root {}`.\n"
      "entries:\n"
      "- id: {}\n"
      "  kind: fsdp\n"
      "  source: {{ref: {}, url: {}}}\n"
      "  hardware: {{gpu: {}, num_gpus: {}, gpus_per_node: {}}}\n"
      "  setup: {{framework: {}, model: {}, seq_len: {}}}\n"
      "  measured: {{{}}}\n",
      o.entry, o.id, quoted(o.source), quoted(where), quoted(setup.cluster.gpu.name), setup.cluster.gpus(),
      setup.cluster.gpus_per_node, sim::to_string(setup.training.framework), quoted(setup.model.name), setup.seq_len(),
      measured_yaml);
  if (summary)
    text += fmt::format("  # the median of {} records of steps {} to {} ({} dropped as warm-up)\n", summary->kept,
                        summary->first_step, summary->last_step, summary->dropped);
  for (const auto& [path, contents] : {std::pair{data, text}, std::pair{scenario, fsdp_only(s)}}) {
    std::ofstream f(path);
    if (!f || !(f << contents)) throw InputError(fmt::format("--entry: cannot write {}", path.string()));
  }
  fmt::print("kept: {} and {} (tagcsim validate --root {})\n", data.string(), scenario.string(), o.entry);
}

int run_log(const LogOptions& o) {
  if (o.log.empty() == (o.measured <= 0))
    throw InputError("calibrate log: expected a training log, or the measured tokens/s per GPU with --measured");
  if (!o.entry.empty() && o.id.empty()) throw InputError("--entry: give the row's id as well (--id)");
  const auto s = scenarios::load_scenario(o.scenario);
  const auto results = scenarios::run(s);
  const auto& r = fsdp_result(s, results);

  double measured = o.measured;
  std::unique_ptr<calibrate::LogSummary> summary;
  std::string measured_how = "as given (--measured)";
  if (!o.log.empty()) {
    const auto log = calibrate::load_training_log(o.log);
    summary = std::make_unique<calibrate::LogSummary>(calibrate::summarize(log, o.warmup));
    measured = summary->tokens_per_s_per_gpu;
    measured_how = fmt::format("the median of {} {} records, steps {} to {} (p10 {:.0f}, p90 {:.0f}); {} dropped as warm-up",
                               summary->kept, log.format, summary->first_step, summary->last_step, summary->p10,
                               summary->p90, summary->dropped);
  }
  const auto& st = r.step;
  const auto& setup = r.point->setup;
  fmt::print("{} ({}): {} on {} x {}, policy {}\n", s.name, s.file, setup.model.name, setup.cluster.gpus(),
             setup.cluster.gpu.name, r.policy->label);
  fmt::print("  compute: {}\n", sim::compute_model_description(setup.cluster.gpu));
  fmt::print("measured: {}\n\n", measured_how);
  fmt::print("{:<16}{:>12}{:>12}{:>9}\n", "", "measured", "predicted", "error");
  fmt::print("{:<16}{:>12.0f}{:>12.0f}{:>9}\n", "tokens/s/GPU", measured, st.tokens_per_s_per_gpu,
             signed_percent(st.tokens_per_s_per_gpu / measured - 1));
  if (summary && summary->memory_gib > 0) {
    const double reserved = st.memory.reserved_bytes() / kGiB;
    fmt::print("{:<16}{:>12}{:>12}{:>9}   (the log's max reserved; tagcsim's reserved)\n", "peak memory",
               fmt::format("{:.1f} GiB", summary->memory_gib), fmt::format("{:.1f} GiB", reserved),
               signed_percent(reserved / summary->memory_gib - 1));
  }
  if (summary && summary->mfu > 0)
    fmt::print("{:<16}{:>12}{:>12}            (predicted: Megatron's count, 6N + 12 L h s a token; as the kernels "
               "run, {:.1f}%; the log counts as its framework does: docs/output.md)\n",
               "MFU", fmt::format("{:.1f}%", 100 * summary->mfu), fmt::format("{:.1f}%", 100 * st.mfu_megatron),
               100 * st.mfu);
  if (summary && summary->p90 > 1.1 * summary->p10)
    fmt::print("\nnote: the log's throughput varies by {:.0f}% between its p10 and p90 steps: a prediction can match "
               "only their median\n",
               100 * (summary->p90 / summary->p10 - 1));
  if (!o.entry.empty()) write_entry(o, s, summary.get(), measured);
  return 0;
}

}  // namespace

void add_calibrate_log_command(CLI::App* calibrate, int& exit_code) {
  auto o = std::make_shared<LogOptions>();
  auto* cmd = calibrate->add_subcommand(
      "log", "Compare a scenario's prediction with its run's training log (torchtitan, Composer): tokens/s/GPU, memory");
  cmd->add_option("scenario", o->scenario, "The scenario of the run (one point; its fsdp policy is compared)")->required();
  cmd->add_option("log", o->log, "The run's log: torchtitan's 'step: N ... tps: X' or Composer's throughput lines");
  cmd->add_option("--measured", o->measured, "Tokens/s per GPU as measured, instead of a log")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", o->warmup, "Steps up to this one are warm-up and dropped (default: the first step logged)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--entry", o->entry,
                  "Keep the run as a row under this folder, for `tagcsim validate --root DIR` (with --id)");
  cmd->add_option("--id", o->id, "The row's id (it names the entry and its scenario file)");
  cmd->add_option("--source", o->source, "The row's source key (default OURS): `validate --loso` holds out by it");
  cmd->callback([o, &exit_code] { exit_code = run_log(*o); });
}

}  // namespace tagcsim::app
