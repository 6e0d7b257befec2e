// What-if scenarios: a YAML file naming a model, a cluster, the FSDP setup
// and the policies to compare, optionally swept over any of its keys.
//
//   name: quickstart
//   model: llama2-7b
//   cluster: {preset: dgx-h100-ib400, nodes: 4}
//   training: {micro_batch: 2, seq_len: 4096}
//   policies: [fsdp, tagc]
//   sweep: {cluster.nodes: [4, 16, 64]}
//
// A sweep is the cartesian product of its keys; the keys under `zip:` advance together
// (strong scaling: nodes up, gradient accumulation down). `training.global_batch` derives the
// gradient accumulation at each point instead.
//
// docs/scenarios.md lists every key.
#pragma once

#include "scenarios/budget.hpp"
#include "sim/policy.hpp"
#include "sim/step.hpp"

#include <string>
#include <utility>
#include <vector>

namespace tagcsim::scenarios {

// One point of a sweep: the setup, and the swept keys with their values.
struct Point {
  std::vector<std::pair<std::string, std::string>> coordinates;  // ("cluster.nodes", "16")
  sim::StepSetup setup;
  std::vector<sim::Policy> policies;
  std::vector<std::string> warnings;
  int global_batch = 0;  // training.global_batch as given (sequences per step), 0 when not given
  Budget budget;         // the scenario's `budget:` (a whole run's tokens and a GPU-hour's price), if any
  // training.pytorch, and what it set (scenarios/pytorch_version.hpp), for the report's heading.
  std::string pytorch_version;
  std::vector<std::string> pytorch_settings;
  // training.torchtitan_date, and what it set (scenarios/torchtitan_date.hpp), for the report's heading.
  std::string torchtitan_date;
  std::vector<std::string> torchtitan_settings;
  // SDPA's flash kernel, where the PyTorch build would decide it (no training.pytorch, no torchtitan
  // date that chose a kernel): the report asks for the build.
  bool sdpa_kernel_assumed = false;
};

struct Scenario {
  std::string name;
  std::string description;
  std::string file;
  std::string text;                     // the file as read
  std::vector<std::string> sweep_keys;  // every swept key, in file order (a zip's keys where it stands)
  std::vector<std::vector<std::string>> sweep_axes;  // keys that advance together: one per key, one per zip
  std::vector<Point> points;  // the cartesian product of the sweep axes, first axis outermost
};

Scenario load_scenario(const std::string& path);
Scenario parse_scenario(const std::string& text, const std::string& source_name);

// Parsing of the parts, shared with the tuner.
sim::Training load_training(const Input& in);
const std::vector<std::string>& training_keys();  // the keys load_training takes
std::vector<sim::Policy> load_policies(const Input& scenario);

struct Result {
  const Point* point = nullptr;
  const sim::Policy* policy = nullptr;
  sim::StepResult step;
};
// Runs every point under every policy.
std::vector<Result> run(const Scenario& s);

}  // namespace tagcsim::scenarios
