// tagcsim tune SCENARIO --max-grad-error E: the fastest per-unit-kind
// compression settings whose expected gradient error stays under E.
#include "app/commands.hpp"
#include "scenarios/scenario.hpp"
#include "sim/tune.hpp"

#include "common/json.hpp"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <optional>

namespace tagcsim::app {
namespace {

struct TuneCmdOptions {
  std::string scenario;
  std::optional<double> max_grad_error;
  bool allow_lossy_index = false;
  double overlap = 0;
  double max_sparsity = 0.9;
  std::string format = "table";
};

constexpr const char* kAnalyticNote =
    "analytic reduction times are per unit kind, per step, without contention or overlap; the replayed step "
    "times add contention between concurrent collectives and overlap with compute, and decide the winner";

std::string params_text(double p) {
  if (p >= 1e9) return fmt::format("{:.2f}B", p / 1e9);
  if (p >= 1e6) return fmt::format("{:.1f}M", p / 1e6);
  return fmt::format("{:.0f}", p);
}

// Seconds as the table shows them: ms below a second, s above.
std::string duration_text(double s) { return s < 1 ? fmt::format("{:.4g} ms", 1e3 * s) : fmt::format("{:.4g} s", s); }

std::string settings_text(const sim::KindDecision& d) {
  if (!d.compress) return "plain";
  return fmt::format("r={:g} s={:g} {}", d.settings.ratio, d.settings.sparsity, kernels::to_string(d.settings.index));
}

std::string num(double v) { return json_number(v); }

std::string header(const scenarios::Scenario& sc, const scenarios::Point& pt) {
  std::string out =
      fmt::format("{}: {} on {} GPUs ({} x {} of {})", sc.name, pt.setup.model.name, pt.setup.cluster.gpus(),
                  pt.setup.cluster.nodes, pt.setup.cluster.gpus_per_node, pt.setup.cluster.name);
  if (!pt.coordinates.empty()) {
    out += ", at";
    for (const auto& [k, v] : pt.coordinates) out += fmt::format(" {}={}", k, v);
  }
  return out;
}

std::string format_table(const scenarios::Scenario& sc, const scenarios::Point& pt, const sim::TuneResult& r,
                         const sim::TuneOptions& opts, const std::vector<std::string>& notes) {
  const double bound = opts.max_grad_error;
  std::string out = fmt::format("tune {}\nmax gradient error {:g}, nonzero overlap across ranks {:g}\n\n",
                                header(sc, pt), bound, opts.overlap);
  const bool compressed = r.best.kind != sim::PolicyKind::Fsdp;
  out += fmt::format("chosen policy: {}\n", compressed ? sim::to_string(r.best.kind) : "fsdp (nothing compressed)");
  // The reduction columns are analytic (see the note): they rank settings, the replay decides.
  out += fmt::format("  {:<20} {:>5} {:>9}  {:<24} {:>12} {:>12} {:>9}\n", "unit kind", "units", "params", "settings",
                     "plain red.", "compr. red.", "unit err");
  for (const auto& d : r.decisions)
    out += fmt::format("  {:<20} {:>5} {:>9}  {:<24} {:>12} {:>12} {:>9}\n", models::to_string(d.kind), d.units,
                       params_text(double(d.params)), settings_text(d), duration_text(d.plain_s),
                       d.compressed_s > 0 ? duration_text(d.compressed_s) : "-",
                       d.compress ? fmt::format("{:.3g}", d.unit_error) : "0");
  bool any_reason = false;
  for (const auto& d : r.decisions)
    if (!d.compress) {
      if (!any_reason) out += "why left uncompressed:\n";
      any_reason = true;
      out += fmt::format("  {}: {}\n", models::to_string(d.kind), d.reason);
    }
  out += fmt::format("\nstep time {:.4f} s vs fsdp {:.4f} s: speedup {:.3f}x\n", r.best_step.step_time_s,
                     r.fsdp_step.step_time_s, r.speedup);
  out += fmt::format("expected gradient error {:.3g} (bound {:g})\n", r.expected_error, bound);
  out += fmt::format(
      "search: {} settings costed analytically ({} one-unit schedules built, {:.3g} whole-model combinations), "
      "{} replays\n",
      r.candidates_considered, r.cost_evaluations, r.combinations, r.replays);
  out += "replayed:\n";
  for (const auto& f : r.finalists)
    out += fmt::format("  {:>9.4f} s  err {:<9.3g} {}  [{}]\n", f.step_time_s, f.expected_error, f.label, f.why);
  for (const auto& n : notes) out += "note: " + n + "\n";
  return out;
}

std::string format_json(const scenarios::Scenario& sc, const scenarios::Point& pt, const sim::TuneResult& r,
                        const sim::TuneOptions& opts, const std::vector<std::string>& notes) {
  const double bound = opts.max_grad_error;
  std::string point;
  for (const auto& [k, v] : pt.coordinates)
    point += fmt::format("{}{}: {}", point.empty() ? "" : ", ", json_string(k), json_string(v));
  std::string kinds;
  for (const auto& d : r.decisions) {
    std::string settings = "null";
    if (d.compress)
      settings = fmt::format("{{\"ratio\": {}, \"sparsity\": {}, \"index\": {}}}", num(d.settings.ratio),
                             num(d.settings.sparsity), json_string(kernels::to_string(d.settings.index)));
    kinds += fmt::format(
        "{}\n    {{\"kind\": {}, \"units\": {}, \"params\": {}, \"compress\": {}, \"settings\": {}, "
        "\"unit_error\": {}, \"analytic_plain_s\": {}, \"analytic_compressed_s\": {}, \"reason\": {}}}",
        kinds.empty() ? "" : ",", json_string(models::to_string(d.kind)), d.units, d.params,
        d.compress ? "true" : "false", settings, num(d.unit_error), num(d.plain_s),
        d.compressed_s > 0 ? num(d.compressed_s) : "null", d.compress ? "null" : json_string(d.reason));
  }
  std::string fin;
  for (const auto& f : r.finalists)
    fin += fmt::format(
        "{}\n    {{\"candidate\": {}, \"policy\": {}, \"step_time_s\": {}, \"expected_error\": {}, "
        "\"analytic_reduction_s\": {}, \"why\": {}}}",
        fin.empty() ? "" : ",", json_string(f.label), json_string(sim::to_string(f.kind)), num(f.step_time_s),
        num(f.expected_error), num(f.analytic_s), json_string(f.why));
  std::string ns;
  for (const auto& n : notes) ns += fmt::format("{}{}", ns.empty() ? "" : ", ", json_string(n));
  return fmt::format(
      "{{\n  \"scenario\": {},\n  \"file\": {},\n  \"point\": {{{}}},\n  \"gpus\": {},\n  \"max_grad_error\": {},\n  "
      "\"overlap\": {},\n"
      "  \"policy\": {},\n  \"step_time_s\": {},\n  \"fsdp_step_time_s\": {},\n  \"speedup_vs_fsdp\": {},\n"
      "  \"expected_grad_error\": {},\n  \"kinds\": [{}\n  ],\n  \"replayed\": [{}\n  ],\n"
      "  \"search\": {{\"settings_costed\": {}, \"one_unit_schedules\": {}, \"combinations\": {}, \"replays\": {}"
      "}},\n  \"notes\": [{}]\n}}\n",
      json_string(sc.name), json_string(sc.file), point, pt.setup.cluster.gpus(), num(bound), num(opts.overlap),
      json_string(sim::to_string(r.best.kind)), num(r.best_step.step_time_s), num(r.fsdp_step.step_time_s),
      num(r.speedup), num(r.expected_error), kinds, fin, r.candidates_considered, r.cost_evaluations,
      num(r.combinations), r.replays, ns);
}

int run(const TuneCmdOptions& o) {
  if (!o.max_grad_error)
    throw InputError(
        "tune: --max-grad-error is required (the relative L2 error of the reduced gradient "
        "allowed, e.g. 0.01)");
  if (o.format != "table" && o.format != "json")
    throw InputError(fmt::format("--format: expected table or json; got '{}'", o.format));
  const double bound = *o.max_grad_error;
  if (!(bound >= 0) || !std::isfinite(bound))
    throw InputError(fmt::format("--max-grad-error: expected a finite error bound >= 0, got {}", bound));
  const auto sc = scenarios::load_scenario(o.scenario);
  if (sc.points.empty()) throw InputError(fmt::format("{}: the scenario has no point to tune", o.scenario));
  const auto& pt = sc.points.front();
  if (pt.setup.expert_parallel_group)
    throw InputError(fmt::format("{}: tune searches gradient compression, which is not modelled with expert "
                                 "parallelism (training.expert_parallel)",
                                 o.scenario));
  std::vector<std::string> notes;
  if (sc.points.size() > 1)
    notes.push_back(fmt::format("the scenario sweeps {} points; tuned the first only", sc.points.size()));
  notes.push_back("the scenario's own policies are ignored; fsdp is the baseline");

  sim::TuneOptions opts;
  opts.max_grad_error = bound;
  opts.allow_lossy_index = o.allow_lossy_index;
  if (!(o.overlap >= 0 && o.overlap <= 1))
    throw InputError(fmt::format("--overlap: expected a fraction in [0, 1], got {}", o.overlap));
  opts.overlap = o.overlap;
  // Sparsification error is deferred by error feedback, not lost, so it is
  // not in the error bound; but the deferral grows with sparsity, so the
  // user caps it (TAGC's reference runs at 0.8).
  if (!(o.max_sparsity >= 0 && o.max_sparsity < 1))
    throw InputError(fmt::format("--max-sparsity: expected a fraction in [0, 1), got {}", o.max_sparsity));
  std::erase_if(opts.sparsities, [&](double s) { return s > o.max_sparsity + 1e-12; });
  notes.push_back(fmt::format("sparsity searched up to {:g} (--max-sparsity): what sparsification drops is deferred "
                              "by error feedback and is not counted in the gradient error",
                              o.max_sparsity));
  const auto r = sim::tune(pt.setup, opts);
  for (const auto& n : r.notes) notes.push_back(n);
  notes.push_back(kAnalyticNote);
  for (const auto& w : pt.warnings)  // those about the scenario's own (ignored) policies are beside the point
    if (w.rfind("policy ", 0) != 0) notes.push_back("warning: " + w);
  fmt::print("{}", o.format == "json" ? format_json(sc, pt, r, opts, notes) : format_table(sc, pt, r, opts, notes));
  // Wall time varies from run to run: keep it off stdout, whose bytes depend only on the inputs.
  fmt::print(stderr, "tune: {:.2f} s wall\n", r.wall_s);
  return 0;
}

}  // namespace

void add_tune_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TuneCmdOptions>();
  auto* cmd = app.add_subcommand("tune",
                                 "Search per-unit-kind compression settings for the fastest step under an "
                                 "error bound");
  cmd->add_option("scenario", o->scenario, "Scenario YAML file (its first sweep point is tuned)")->required();
  cmd->add_option("--max-grad-error", o->max_grad_error,
                  "Bound on the expected relative L2 error of the reduced gradient (e.g. 0.01)");
  cmd->add_flag("--allow-lossy-index", o->allow_lossy_index, "Also search the lossy 1bit-sum index encoding");
  cmd->add_option("--overlap", o->overlap,
                  "Fraction of nonzero positions shared by all ranks, for the quality model (default 0: independent)");
  cmd->add_option("--max-sparsity", o->max_sparsity,
                  "Highest sparsification fraction to search (default 0.9; error feedback defers what it drops)");
  cmd->add_option("--format", o->format, "table (default) or json");
  cmd->callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace tagcsim::app
