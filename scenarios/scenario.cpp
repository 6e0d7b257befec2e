#include "scenarios/scenario.hpp"

#include "models/model.hpp"
#include "sim/compute.hpp"
#include "topologies/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tagcsim::scenarios {
namespace {

sim::Dtype load_dtype(const Input& in) {
  const auto s = in.as_choice({"bf16", "fp16", "fp32"});
  return s == "bf16" ? sim::Dtype::BF16 : s == "fp16" ? sim::Dtype::FP16 : sim::Dtype::FP32;
}

// Sets `path` ("cluster.nics.bandwidth") in `root` to `value`. A preset name
// standing where a map is needed becomes {preset: name}.
void set_path(YAML::Node root, const std::string& path, const YAML::Node& value, const Input& where) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  if (parts.empty()) where.fail("expected a key path such as cluster.nodes");
  YAML::Node node;
  node.reset(root);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = node[parts[i]];
    if (!child || child.IsNull()) {
      child = YAML::Node(YAML::NodeType::Map);
    } else if (child.IsScalar()) {
      YAML::Node m(YAML::NodeType::Map);
      m["preset"] = child.Scalar();
      child = m;
    } else if (!child.IsMap()) {
      where.fail(fmt::format("cannot sweep '{}': '{}' is not a map", path, parts[i]));
    }
    node[parts[i]] = child;
    node.reset(child);  // rebind: yaml-cpp's operator= would overwrite the parent instead
  }
  node[parts.back()] = value;
}

std::string scalar_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

Point load_point(const Input& doc) {
  Point p;
  p.setup.model = models::load_model(doc["model"]);
  p.setup.cluster = topologies::load_cluster(doc["cluster"]);
  sim::Training t;
  if (auto tr = doc.find("training")) t = load_training(*tr);
  const auto& c = p.setup.cluster;
  if (auto tr = doc.find("training")) {
    if (auto g = tr->find("hybrid_shard_gpus")) {
      const int G = t.hybrid_shard_gpus;
      const bool ok = G <= c.gpus_per_node ? c.gpus_per_node % G == 0
                                           : G % c.gpus_per_node == 0 && c.nodes % (G / c.gpus_per_node) == 0;
      if (!ok)
        g->fail(fmt::format("{} GPUs per shard group do not divide the cluster evenly ({} nodes x {} GPUs): "
                            "use a divisor of {} or a multiple of it that divides the nodes",
                            G, c.nodes, c.gpus_per_node, c.gpus_per_node));
    }
    if (auto s = tr->find("seq_len"); s && p.setup.model.learned_positions > 0 &&
                                      t.seq_len > p.setup.model.learned_positions)
      s->fail(fmt::format("sequence length {} exceeds the model's {} learned positions", t.seq_len,
                          p.setup.model.learned_positions));
  }
  p.setup = sim::make_setup(p.setup.model, c, t);
  try {
    sim::check_compute(p.setup);  // the GPU's kernel profile can time this run
  } catch (const InputError& e) {
    std::optional<Input> at;
    if (auto tr = doc.find("training")) at = tr->find("attention");
    (at ? *at : doc["cluster"]).fail(e.what());
  }
  p.policies = load_policies(doc);
  for (const auto& pol : p.policies) {
    // The damage of a lossy index is judged on the smallest piece the policy decodes.
    double smallest = 0;
    for (const auto& u : p.setup.units) {
      if (!sim::unit_policy(pol, u)) continue;
      const double piece = sim::decoded_elements(pol, p.setup, u);
      smallest = smallest == 0 ? piece : std::min(smallest, piece);
    }
    auto w = sim::check_policy(pol, p.setup.shard_group.ranks(), doc.file(), smallest);
    p.warnings.insert(p.warnings.end(), w.begin(), w.end());
  }
  return p;
}

}  // namespace

sim::Training load_training(const Input& in) {
  in.expect_keys({"sharding", "hybrid_shard_gpus", "wrap", "micro_batch", "seq_len", "grad_accumulation", "no_sync",
                  "param_dtype", "reduce_dtype", "activation_checkpointing", "tf32", "limit_all_gathers",
                  "backward_prefetch", "attention", "compile", "cross_entropy"});
  sim::Training t;
  if (auto v = in.find("sharding")) {
    const auto s = v->as_choice({"full_shard", "shard_grad_op", "hybrid_shard"});
    t.sharding = s == "full_shard"      ? sim::Sharding::FullShard
                 : s == "shard_grad_op" ? sim::Sharding::ShardGradOp
                                        : sim::Sharding::HybridShard;
  }
  if (auto v = in.find("hybrid_shard_gpus")) {
    if (t.sharding != sim::Sharding::HybridShard) v->fail("only meaningful with sharding: hybrid_shard");
    t.hybrid_shard_gpus = v->as_int_between(1, 1 << 24);
  }
  if (auto v = in.find("wrap"))
    t.wrap = v->as_choice({"block", "size"}) == "block" ? models::WrapPolicy::Block : models::WrapPolicy::Size;
  if (auto v = in.find("micro_batch")) t.micro_batch = v->as_int_between(1, 1 << 20);
  if (auto v = in.find("seq_len")) t.seq_len = v->as_int_between(1, 1 << 24);
  if (auto v = in.find("grad_accumulation")) t.grad_accumulation = v->as_int_between(1, 1 << 16);
  if (auto v = in.find("no_sync")) t.no_sync = v->as_bool();
  if (auto v = in.find("param_dtype")) t.param_dtype = load_dtype(*v);
  if (auto v = in.find("reduce_dtype")) t.reduce_dtype = load_dtype(*v);
  if (auto v = in.find("activation_checkpointing")) {
    // true / false, or the fraction of the blocks checkpointed (selective checkpointing by block).
    const auto text = v->is_scalar() ? v->as_string() : "";
    char* end = nullptr;
    const double number = std::strtod(text.c_str(), &end);
    const bool is_number = !text.empty() && end == text.c_str() + text.size();
    if (text != "true" && text != "false" && (!is_number || number < 0 || number > 1))
      v->fail(fmt::format("expected true, false or the share of the blocks checkpointed, in [0, 1]; got '{}'", text));
    const double p = text == "true" ? 1 : text == "false" ? 0 : number;
    t.activation_checkpointing = p > 0;
    t.impl.checkpoint_fraction = p > 0 ? p : 1;
  }
  if (auto v = in.find("attention")) {
    const auto names = models::attention_kernel_names();
    const auto s = v->as_string();
    const auto it = std::find(names.begin(), names.end(), s);
    if (it == names.end()) v->fail(unknown_name("attention kernel", s, names));
    t.impl.attention = models::AttentionKernel(it - names.begin());
  }
  if (auto v = in.find("compile")) t.impl.compiled = v->as_bool();
  if (auto v = in.find("cross_entropy"))
    t.impl.fused_cross_entropy = v->as_choice({"fp32", "fused"}) == "fused";
  if (auto v = in.find("tf32")) t.tf32 = v->as_bool();
  if (auto v = in.find("limit_all_gathers")) t.max_inflight_all_gathers = v->as_int_between(1, 1 << 16);
  if (auto v = in.find("backward_prefetch")) {
    const auto s = v->as_choice({"pre", "post", "none"});
    t.backward_prefetch = s == "pre"    ? sim::BackwardPrefetch::Pre
                          : s == "post" ? sim::BackwardPrefetch::Post
                                        : sim::BackwardPrefetch::None;
  }
  return t;
}

Scenario parse_scenario(const std::string& text, const std::string& source_name) {
  const Input doc = Input::load_string(text, source_name);
  if (!doc.is_map()) doc.fail("expected a scenario: a map with model, cluster, training, policies");
  doc.expect_keys({"name", "description", "model", "cluster", "training", "policies", "policy", "compression",
                   "sweep"});
  Scenario s;
  s.file = source_name;
  s.name = doc.has("name") ? doc["name"].as_string() : source_name;
  if (auto d = doc.find("description")) s.description = d->as_string();
  if (doc.has("policies") && doc.has("policy")) doc["policy"].fail("give either 'policy' or 'policies', not both");

  auto sweep = doc.find("sweep");
  if (!sweep) {
    s.points.push_back(load_point(doc));
    return s;
  }
  // The sweep's cartesian product, first key outermost; each point is the
  // document with the swept keys replaced, parsed like any other.
  std::vector<std::pair<std::string, Input>> axes;
  for (const auto& key : sweep->keys()) {
    Input values = (*sweep)[key];
    if (!values.is_sequence() || values.size() == 0) values.fail("expected a non-empty list of values to sweep");
    axes.emplace_back(key, values);
    s.sweep_keys.push_back(key);
  }
  std::vector<std::size_t> index(axes.size(), 0);
  for (;;) {
    YAML::Node copy = YAML::Clone(doc.raw());
    copy.remove("sweep");
    std::vector<std::pair<std::string, std::string>> coordinates;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const Input v = axes[a].second.at(index[a]);
      set_path(copy, axes[a].first, v.raw(), axes[a].second);
      coordinates.emplace_back(axes[a].first, scalar_text(v.raw()));
    }
    Point parsed;
    try {
      parsed = load_point(Input::wrap(copy, source_name));
    } catch (const InputError& e) {
      // Point at the swept key that the complaint is about, if any: its line is in the file.
      std::string point;
      for (const auto& [k, v] : coordinates) point += fmt::format("{}{}={}", point.empty() ? "" : ", ", k, v);
      for (const auto& [key, values] : axes)
        if (std::string(e.what()).find(key) != std::string::npos)
          throw InputError(fmt::format("{}: at sweep point {}: {}", values.where(), point, e.what()));
      throw;
    }
    parsed.coordinates = std::move(coordinates);
    s.points.push_back(std::move(parsed));
    std::size_t a = axes.size();
    while (a > 0 && ++index[a - 1] == axes[a - 1].second.size()) index[--a] = 0;
    if (a == 0) break;
  }
  return s;
}

Scenario load_scenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open scenario file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_scenario(ss.str(), path);
}

std::vector<Result> run(const Scenario& s) {
  std::vector<Result> out;
  for (const auto& p : s.points)
    for (const auto& pol : p.policies) out.push_back(Result{&p, sim::simulate(p.setup, pol)});
  return out;
}

}  // namespace tagcsim::scenarios
