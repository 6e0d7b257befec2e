// tagcsim calibrate box | check: profile the local GPUs, and run a scenario's step on them.
//   calibrate box [--gpus 0,1,..] [--scenario FILE] [--out DIR] [--quick] [--dry-run] [--from FILE]
//   calibrate check SCENARIO [--policies a,b] [--cluster C] [--gpus ..] [--out DIR] [--dry-run] [--measured DIR]
// docs/calibration.md ("Calibrate a box") describes both.
#include "app/commands.hpp"
#include "calibrate/box/runtime.hpp"
#include "calibrate/box_fit.hpp"
#include "calibrate/check_compare.hpp"
#include "calibrate/profile.hpp"
#include "common/input.hpp"
#include "scenarios/scenario.hpp"
#include "sim/compute.hpp"
#include "sim/trace.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>

namespace tagcsim::app {
namespace {

using namespace tagcsim::calibrate;

struct BoxOptions {
  std::vector<int> gpus;
  std::string scenario, out = "calibration", from;
  bool quick = false, dry_run = false;
};

struct CheckOptions {
  std::string scenario, cluster, out = "calibration/check", measured;
  std::vector<std::string> policies;
  std::vector<int> gpus;
  int steps = 3;
  bool dry_run = false, no_host_emulation = false;
};

void progress(const std::string& line) { fmt::print(stderr, "[calibrate] {}\n", line); }

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? "," : "", v[i]);
  return s;
}

const scenarios::Point& single_point(const scenarios::Scenario& s) {
  if (s.points.size() != 1)
    throw InputError(fmt::format("{}: the scenario sweeps {} points; calibrate runs one setup (remove the sweep)",
                                 s.file, s.points.size()));
  return s.points.front();
}

ScenarioShapes shapes_of(const std::string& file) {
  const auto sc = scenarios::load_scenario(file);
  const auto& p = single_point(sc);
  return {file, p.setup.model, p.setup.units, p.setup.training};
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f || !(f << text)) throw InputError(fmt::format("--out: cannot write '{}'", path));
}

int run_box(const BoxOptions& o) {
  std::optional<ScenarioShapes> scenario;
  if (!o.scenario.empty()) scenario = shapes_of(o.scenario);
  std::string command = "tagcsim calibrate box";
  if (!o.gpus.empty()) command += " --gpus " + join_ints(o.gpus);
  if (scenario) command += " --scenario " + o.scenario;
  if (o.quick) command += " --quick";
  command += " --out " + o.out;

  if (!o.from.empty()) {  // refit recorded measurements: no GPU needed
    auto m = load_measurements(o.from);
    auto fit = fit_box(m, scenario);
    BoxPlanOptions po{.visible = int(m.box.gpus.size()), .scenario = scenario, .quick = m.quick, .out_dir = o.out,
                      .gpu_name = m.box.gpus.front().name};
    for (const auto& g : fit.gpus) po.gpus.push_back(g);
    const auto plan = make_box_plan(po);
    write_box_files(fit, plan, o.out);
    fmt::print("tagcsim calibrate box: refitted {} into {}/\n", o.from, o.out);
    for (const auto& f : plan.files)
      if (std::filesystem::exists(std::filesystem::path(o.out) / f.name)) fmt::print("  {}\n", f.name);
    return 0;
  }

  std::string why;
  const int visible = calibrate::box::visible_gpus(why);
  BoxPlanOptions po{.gpus = o.gpus, .visible = visible, .scenario = scenario, .quick = o.quick, .out_dir = o.out,
                    .gpu_name = visible > 0 ? calibrate::box::gpu_name(o.gpus.empty() ? 0 : o.gpus.front()) : ""};
  const auto plan = make_box_plan(po);
  if (o.dry_run) {
    fmt::print("{}", plan_text(plan));
    if (visible == 0) fmt::print("\n(no GPU here: {})\n", why);
    return 0;
  }
  check_writable_dir(o.out, "--out");
  if (visible == 0) throw InputError("calibrate box: no GPU to measure: " + why);
  progress(fmt::format("plan: {} NCCL sweeps, {} GEMMs, {} attention shapes; about {:.0f} s", plan.nccl.size(),
                       plan.gemms.size(), plan.attention.size(), plan.estimated_seconds));
  auto m = calibrate::box::measure(plan, o.out, progress);
  m.command = command;
  const auto fit = fit_box(m, scenario);
  write_box_files(fit, plan, o.out);
  fmt::print("tagcsim calibrate box: wrote into {}/:\n", o.out);
  for (const auto& f : plan.files) fmt::print("  {:<28} {}\n", f.name, f.what);
  fmt::print("GPU: gemm_efficiency {:.4f}, memory_efficiency {:.4f}; NCCL: {}\n", fit.device.gemm_efficiency,
             fit.device.memory_efficiency,
             fit.nccl ? fmt::format("mean |error| {:.1f}% over {} points", fit.nccl->error.mean_abs * 100,
                                    fit.nccl->error.points)
                      : "skipped (" + fit.nccl_skipped + ")");
  return 0;
}

int run_check(const CheckOptions& o) {
  const auto sc = scenarios::load_scenario(o.scenario);
  const auto& point = single_point(sc);
  sim::StepSetup setup = point.setup;
  if (!o.cluster.empty())
    setup = sim::make_setup(setup.model, load_cluster_arg(o.cluster), setup.training);
  // The executor runs a unit's kernels and FSDP's collectives; the model-parallel collectives the
  // simulator folds into a unit's compute (sim/model_parallel.hpp) it has no NCCL calls for.
  if (setup.tensor_parallel_group || setup.context_parallel_group || setup.expert_parallel_group)
    throw InputError(fmt::format("{}: calibrate check runs FSDP's own collectives only; tensor, context and expert "
                                 "parallelism's are not run (remove them from the scenario)",
                                 o.scenario));
  std::vector<sim::Policy> policies;
  for (const auto& want : o.policies) {
    auto it = std::find_if(point.policies.begin(), point.policies.end(), [&](const auto& p) { return p.label == want; });
    if (it == point.policies.end()) {
      std::string have;
      for (const auto& p : point.policies) have += (have.empty() ? "" : ", ") + p.label;
      throw InputError(fmt::format("--policies: '{}' is not a policy of {} (it has: {})", want, o.scenario, have));
    }
    policies.push_back(*it);
  }
  if (policies.empty()) policies = point.policies;
  std::vector<sim::StepResult> predicted;
  for (const auto& p : policies) predicted.push_back(sim::simulate(setup, p));

  std::string why;
  const int visible = calibrate::box::visible_gpus(why);
  if (o.dry_run) {
    fmt::print("{}", check_plan_text(setup, predicted, o.scenario, o.out, visible));
    if (visible == 0) fmt::print("\n(no GPU here: {})\n", why);
    return 0;
  }
  check_writable_dir(o.out, "--out");
  auto path = [&](const std::string& name) { return (std::filesystem::path(o.out) / name).string(); };
  std::vector<MeasuredRun> runs;
  if (!o.measured.empty()) {  // compare recorded runs: no GPU needed
    for (const auto& p : predicted)
      runs.push_back(load_measured_run((std::filesystem::path(o.measured) / ("measured-" + p.policy + ".json")).string(),
                                       p.schedule));
  } else {
    if (visible == 0) throw InputError("calibrate check: no GPU to run the step on: " + why);
    std::vector<int> gpus = o.gpus;
    if (gpus.empty())
      for (int i = 0; i < std::min(visible, setup.cluster.gpus()); ++i) gpus.push_back(i);
    for (int g : gpus)
      if (g < 0 || g >= visible)
        throw InputError(fmt::format("--gpus: GPU {} is out of range: this box has {} GPU(s), indices 0..{}", g,
                                     visible, visible - 1));
    check_fits_box(setup, int(gpus.size()), o.scenario);
    check_runnable(setup);
    gpus.resize(std::size_t(setup.cluster.gpus()));
    calibrate::box::CheckOptions co{.gpus = gpus, .steps = o.steps, .emulate_host = !o.no_host_emulation};
    for (std::size_t k = 0; k < policies.size(); ++k) {
      runs.push_back(calibrate::box::execute(setup, policies[k], predicted[k], co, progress));
      write_text(path("measured-" + policies[k].label + ".json"), measured_run_json(runs.back(), predicted[k].schedule));
    }
  }
  std::vector<CheckComparison> cmp;
  for (std::size_t k = 0; k < predicted.size(); ++k) {
    cmp.push_back(compare(predicted[k], runs[k]));
    const auto& label = predicted[k].policy;
    write_text(path("trace-predicted-" + label + ".json"), sim::chrome_trace(predicted[k], o.scenario + " " + label + " (predicted)"));
    write_text(path("trace-measured-" + label + ".json"),
               measured_trace(predicted[k], runs[k], o.scenario + " " + label + " (measured: " + runs[k].box + ")"));
  }
  const std::string report = "Predicted with: " + sim::compute_model_description(setup.cluster.gpu) + "\n\n" +
                             comparison_report(cmp, predicted);
  write_text(path("check-report.txt"), report);
  fmt::print("{}\nWritten under {}/: check-report.txt, trace-measured-*.json beside trace-predicted-*.json\n", report,
             o.out);
  return 0;
}

}  // namespace

void add_calibrate_box_commands(CLI::App* cal, int& exit_code) {
  auto b = std::make_shared<BoxOptions>();
  auto* box = cal->add_subcommand("box", "Profile this machine's GPUs: NCCL, GEMMs, attention, memory, TAGC kernels");
  box->add_option("--gpus", b->gpus, "GPU indices to use, e.g. 0,1,2,3 (default: all)")->delimiter(',');
  box->add_option("--scenario", b->scenario, "Also measure the GEMM and attention shapes of this scenario's model");
  box->add_option("--out", b->out, "Output folder (default: calibration)");
  box->add_flag("--quick", b->quick, "Fewer sizes and shapes: under 2 minutes");
  box->add_flag("--dry-run", b->dry_run, "Print the plan (sizes, shapes, files) and exit");
  box->add_option("--from", b->from, "Refit a recorded measurements.yaml instead of measuring (no GPU needed)");
  box->callback([b, &exit_code] { exit_code = run_box(*b); });

  auto c = std::make_shared<CheckOptions>();
  auto* check = cal->add_subcommand("check", "Run a scenario's FSDP step on this machine's GPUs; compare with the prediction");
  check->add_option("scenario", c->scenario, "Scenario YAML (one point, one node)")->required();
  check->add_option("--policies", c->policies, "Policies to run, by label (default: the scenario's)")->delimiter(',');
  check->add_option("--cluster", c->cluster, "Replace the scenario's cluster (the box's cluster file from calibrate box)");
  check->add_option("--gpus", c->gpus, "GPU indices to run on (default: the first N)")->delimiter(',');
  check->add_option("--out", c->out, "Output folder (default: calibration/check)");
  check->add_option("--steps", c->steps, "Measured steps after one warm-up (default 3)")->check(CLI::Range(1, 100));
  check->add_flag("--no-host-emulation", c->no_host_emulation, "Do not spin for the modelled host time");
  check->add_flag("--dry-run", c->dry_run, "Print the plan (tasks, collectives, shapes, files) and exit");
  check->add_option("--measured", c->measured, "Compare recorded measured-<policy>.json files from this folder");
  check->callback([c, &exit_code] { exit_code = run_check(*c); });
}

}  // namespace tagcsim::app
