#include "scenarios/scenario.hpp"
#include "scenarios/pytorch_version.hpp"
#include "scenarios/torchtitan_date.hpp"

#include "models/model.hpp"
#include "sim/compute.hpp"
#include "topologies/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

namespace tagcsim::scenarios {
namespace {

const std::vector<std::string> kTopKeys = {"name",     "description", "model",       "cluster", "training",
                                           "policies", "policy",      "compression", "budget",  "sweep"};

// The keys of each block, to tell a user whose key slipped out of its block where it belongs.
// (The blocks' loaders own the real lists; a key missing here only loses that hint.)
const std::vector<std::pair<std::string, std::vector<std::string>>>& block_keys() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> blocks = {
      {"model",
       {"preset", "layers", "hidden", "heads", "kv_heads", "head_dim", "qk_norm", "ffn", "gated_mlp", "vocab",
        "tied_embeddings", "seq_len", "learned_positions", "norm", "bias"}},
      {"cluster",
       {"preset", "nodes", "gpus_per_node", "host_cpu", "gpu", "intra_node", "nics", "fabric", "collectives", "nccl",
        "stragglers"}},
      {"training", training_keys()},
      {"compression", {"ratio", "sparsity", "index", "sparsify", "select", "overlap", "process_group"}},
      {"budget", {"tokens", "gpu_hour_price"}},
  };
  return blocks;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  if (!path.empty() && path.back() == '.') parts.push_back("");
  return parts;
}

// A top-level key that belongs to a block (`nodes:` under `cluster:`, de-indented by mistake):
// say so, preferring the block just above it.
void check_top_level_keys(const Input& doc) {
  std::string above;
  for (const auto& key : doc.keys()) {
    if (std::find(kTopKeys.begin(), kTopKeys.end(), key) != kTopKeys.end()) {
      above = key;
      continue;
    }
    std::string block;
    for (const auto& [b, keys] : block_keys())
      if (std::find(keys.begin(), keys.end(), key) != keys.end() && (block.empty() || b == above)) block = b;
    if (!block.empty())
      doc[key].fail(fmt::format("unknown key at the top level; it is a key of {}: (did you mean '{}.{}'? indent it "
                                "under '{}:')",
                                block, block, key, block));
  }
  doc.expect_keys(kTopKeys);
}

// Sets `path` ("cluster.nics.bandwidth") in `root` to `value`. A preset name
// standing where a map is needed becomes {preset: name}.
void set_path(YAML::Node root, const std::string& path, const YAML::Node& value) {
  const auto parts = split_path(path);
  YAML::Node node;
  node.reset(root);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = node[parts[i]];
    if (!child || child.IsNull()) {
      child = YAML::Node(YAML::NodeType::Map);
    } else if (child.IsScalar()) {
      YAML::Node m(YAML::NodeType::Map);
      m["preset"] = child;  // keeps the name's place in the file
      child = m;
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

// A sweep key must name a key of a part the scenario has: checked once, where the sweep gives it.
void check_sweep_key(const Input& doc, const std::string& key, const Input& at) {
  const auto parts = split_path(key);
  if (parts.empty() || std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); }))
    at.fail("expected a key path such as cluster.nodes");
  static const std::vector<std::string> parts_swept = {"model",    "cluster", "training", "compression",
                                                       "policies", "policy",  "budget"};
  if (std::find(parts_swept.begin(), parts_swept.end(), parts[0]) == parts_swept.end()) {
    std::string hint;
    for (const auto& [block, keys] : block_keys())
      if (hint.empty() && std::find(keys.begin(), keys.end(), parts[0]) != keys.end())
        hint = fmt::format(" (did you mean '{}.{}'?)", block, key);
    if (hint.empty()) hint = did_you_mean(parts[0], parts_swept);
    at.fail(fmt::format("a sweep key starts with model, cluster, training, compression, policies or budget{}", hint));
  }
  if (parts.size() > 1 && (parts[0] == "model" || parts[0] == "cluster") && !doc.has(parts[0]))
    at.fail(fmt::format("the scenario has no '{}:' for this key to change; add one (e.g. '{}')", parts[0],
                        parts[0] == "model" ? "model: llama2-7b" : "cluster: dgx-h100-ib400"));
}

std::string bits_per_s(double bytes_per_s) { return fmt::format("{:g} Gb/s", bytes_per_s * 8 / 1e9); }

Point load_point(const Input& doc) {
  Point p;
  p.setup.model = models::load_model(doc["model"]);
  p.setup.cluster = topologies::load_cluster(doc["cluster"]);
  sim::Training t;
  if (auto tr = doc.find("training")) t = load_training(*tr);
  // Chunked attention is timed as the causal mask it is up to one chunk (models::TransformerConfig::
  // attention_chunk); past it each chunk would be its own causal block, which is not modelled. The
  // sequence is training.seq_len's, else the model's: the error goes to whichever key set it.
  if (const auto& m = p.setup.model; m.attention_chunk > 0) {
    const auto tr = doc.find("training");
    const bool trained = tr && tr->has("seq_len");
    const int seq = trained ? t.seq_len : m.seq_len;
    if (seq > m.attention_chunk) {
      const auto model = doc["model"];
      const Input at = trained ? (*tr)["seq_len"] : model.is_map() && model.has("seq_len") ? model["seq_len"] : model;
      at.fail(fmt::format("sequence length {} exceeds the model's attention chunk of {} tokens: chunked attention "
                          "past one chunk is not modelled (train at most {} tokens a sequence, or take the model's "
                          "preset without chunks, as torchtitan's llama4 flavors run, causal over the whole sequence)",
                          seq, m.attention_chunk, m.attention_chunk));
    }
  }
  if (auto tr = doc.find("training"); tr && !models::moe_block_count(p.setup.model)) {
    if (auto v = tr->find("compile_moe"))
      v->fail(fmt::format("model '{}' has no mixture of experts' blocks for it to say how they are compiled",
                          p.setup.model.name));
    if (auto v = tr->find("router_fp32"))
      v->fail(fmt::format("model '{}' has no mixture of experts, so no router", p.setup.model.name));
  }
  // torchtitan's Llama and DeepSeek-V3 models turn q and k as complex numbers (ComplexRoPE); its
  // Qwen3 (q/k norms) and gpt-oss (attention sinks) models as real cos/sin (CosSinRoPE).
  if (const auto tr = doc.find("training"); t.framework == sim::Framework::Torchtitan && !(tr && tr->has("rotary")))
    t.impl.rotary = p.setup.model.qk_norm || p.setup.model.attention_sinks ? models::Implementation::Rotary::CosSin
                                                                          : models::Implementation::Rotary::Complex;
  const auto& c = p.setup.cluster;
  if (auto tr = doc.find("training"); tr && tr->has("pytorch")) {
    p.pytorch_settings = apply_pytorch_version(*tr, t, p.setup.model, sim::device_kernel_profile(c.gpu));
    p.pytorch_version = (*tr)["pytorch"].as_string();
  }
  const auto attention_before_date = t.impl.attention;
  if (auto tr = doc.find("training"); tr && tr->has("torchtitan_date")) {
    p.torchtitan_settings = apply_torchtitan_date(*tr, t, p.setup.model, sim::device_kernel_profile(c.gpu));
    p.torchtitan_date = (*tr)["torchtitan_date"].as_string();
  }
  // Not whether training.attention names flash2: --resolved writes every kernel out, and its run
  // must say what the scenario's said. A torchtitan date that chose a kernel has decided it too.
  if (const auto tr = doc.find("training"); !(tr && tr->has("pytorch")))
    p.sdpa_kernel_assumed = t.impl.attention == models::AttentionKernel::Flash2 &&
                            attention_before_date == models::AttentionKernel::Flash2 &&
                            (t.framework == sim::Framework::PyTorch || t.framework == sim::Framework::Torchtitan);
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
    // Sequences per step over all GPUs (every GPU is a data-parallel rank, HSDP included; under
    // tensor or context parallelism, every group of GPUs that shares a micro-batch).
    if (auto gb = tr->find("global_batch")) {
      if (tr->has("grad_accumulation")) gb->fail("give global_batch or grad_accumulation, not both");
      p.global_batch = gb->as_int_between(1, 1 << 30);
      const int ranks = c.gpus() / std::max(1, t.model_parallel());
      const std::int64_t per_micro_step = std::int64_t(t.micro_batch) * ranks;
      if (p.global_batch % per_micro_step != 0)
        gb->fail(fmt::format("a global batch of {} sequences is not a whole number of micro-batch steps of "
                             "micro_batch {} x {} data-parallel ranks = {} sequences",
                             p.global_batch, t.micro_batch, ranks, per_micro_step));
      const std::int64_t accumulation = p.global_batch / per_micro_step;
      if (accumulation > (1 << 16))
        gb->fail(fmt::format("{} micro-batch steps per step is more than {}", accumulation, 1 << 16));
      t.grad_accumulation = int(accumulation);
    }
  }
  if (auto tr = doc.find("training")) {
    auto w = tr->find("wrap");
    if (!w) w = tr->find("framework");
    if (w && t.wrap == models::WrapPolicy::Torchtitan && p.setup.model.tied_embeddings)
      w->fail(fmt::format("model '{}' ties its embedding and output projection, which torchtitan's layout puts in "
                          "units of their own (use wrap: block)",
                          p.setup.model.name));
    // PyTorch's SDPA takes no window: a windowed model reaches cuDNN's kernel only through a mask,
    // which SDPA sends to another kernel, and MPT's Triton kernel has none.
    const auto a = t.impl.attention;
    if (auto at = tr->find("attention");
        at && p.setup.model.sliding_window > 0 &&
        (a == models::AttentionKernel::Cudnn || a == models::AttentionKernel::FlashTriton))
      at->fail(fmt::format("model '{}' attends within a sliding window, which {} does not take: flash2 or flash3 "
                           "(flash-attn's window_size) skip what is outside it, math computes and masks everything",
                           p.setup.model.name, models::to_string(a)));
  }
  // A "training.<key>: ..." error from the setup or the compute check points at the key's line.
  auto fail_at_training_key = [&](const std::string& msg) {
    const std::string prefix = "training.";
    const auto colon = msg.find(": ");
    if (auto tr = doc.find("training"); tr && msg.rfind(prefix, 0) == 0 && colon != std::string::npos)
      if (auto key = tr->find(msg.substr(prefix.size(), colon - prefix.size()))) key->fail(msg.substr(colon + 2));
  };
  try {
    p.setup = sim::make_setup(p.setup.model, c, t);
  } catch (const InputError& e) {
    fail_at_training_key(e.what());
    throw;
  }
  try {
    sim::check_compute(p.setup);  // the GPU's kernel profile can time this run
  } catch (const InputError& e) {
    fail_at_training_key(e.what());
    // The profile cannot serve the attention kernel asked for (or the GPU at all).
    std::optional<Input> at;
    if (auto tr = doc.find("training")) at = tr->find("attention");
    (at ? *at : doc["cluster"]).fail(e.what());
  }
  p.policies = load_policies(doc);
  if (auto b = doc.find("budget")) p.budget = load_budget(*b);
  // A compression policy reduces each unit over one group; under expert parallelism a block's
  // routed experts reduce over another, which no policy describes yet.
  if (p.setup.expert_parallel_group)
    for (const auto& pol : p.policies)
      if (pol.kind != sim::PolicyKind::Fsdp)
        doc["training"]["expert_parallel"].fail(fmt::format(
            "policy '{}': gradient compression with expert parallelism is not modelled (only fsdp)", pol.label));
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
  // A PCIe card put in an NVSwitch node (a DGX preset with its GPU swapped) would all-gather at NVLink
  // rates no PCIe server has.
  if (c.gpu.pcie_card && c.intra.kind == "nvswitch" && c.gpus_per_node > 2)
    p.warnings.push_back(fmt::format(
        "{} is a PCIe card (NVLink, if any, only through a bridge to one other card), but {}'s {} GPUs a node sit on "
        "an NVSwitch at {:g} GB/s each: for a PCIe server set cluster.intra_node: {{kind: pcie, bandwidth: ...}} "
        "(PCIe 4.0 x16: 31.5 GB/s a direction, PCIe 5.0 x16: 63 GB/s)",
        c.gpu.name, c.name, c.gpus_per_node, c.intra.bandwidth / 1e9));
  // Volta's tensor cores take fp16, not bf16; and PyTorch's torch._grouped_mm, fused or not, wants
  // compute capability 8.0 (GroupedMMUtils.h's fallback was enabled for SM80 and newer only).
  if (c.gpu.sm > 0 && c.gpu.sm < 80) {
    if (t.compute_dtype() == sim::Dtype::BF16)
      p.warnings.push_back(fmt::format(
          "{} has no bf16 tensor cores (compute capability {}.{}: fp16 only), so PyTorch runs bf16 matmuls far below "
          "the {:g} TFLOP/s timed here: train in fp16 (training.param_dtype: fp16)",
          c.gpu.name, c.gpu.sm / 10, c.gpu.sm % 10, c.gpu.peak_flops_bf16 / 1e12));
    if (p.setup.model.experts > 0)
      p.warnings.push_back(fmt::format(
          "torch._grouped_mm, which the experts' GEMMs are timed as, needs compute capability 8.0 or newer: "
          "torchtitan's mixture of experts does not run on the {} (compute capability {}.{})",
          c.gpu.name, c.gpu.sm / 10, c.gpu.sm % 10));
  }
  // `nics.bandwidth` is per NIC: overriding it alone on a multi-NIC preset multiplies it.
  if (auto cl = doc.find("cluster"); cl && cl->is_map() && cl->has("preset") && cl->has("nics")) {
    const Input nics = (*cl)["nics"];
    if (nics.is_map() && nics.has("bandwidth") && !nics.has("count") && c.nics.count > 1)
      p.warnings.push_back(fmt::format(
          "cluster.nics.bandwidth is per NIC: {} has {} NICs per node, so each node gets {} x {} = {} (write "
          "nics.per_node for a node's total)",
          c.name, c.nics.count, c.nics.count, bits_per_s(c.nics.bandwidth),
          bits_per_s(c.nics.count * c.nics.bandwidth)));
  }
  return p;
}

// One axis of a sweep: a key and its values, or the keys of a zip, whose values advance together.
struct Axis {
  std::vector<std::pair<std::string, Input>> keys;
  std::size_t size = 0;
};

std::vector<Axis> load_axes(const Input& doc, const Input& sweep) {
  if (!sweep.is_map()) sweep.fail("expected a map of keys to lists of values, e.g. {cluster.nodes: [4, 16]}");
  std::vector<Axis> axes;
  auto values_of = [&](const std::string& key, const Input& values) {
    check_sweep_key(doc, key, values);
    if (!values.is_sequence() || values.size() == 0) values.fail("expected a non-empty list of values to sweep");
    return values;
  };
  for (const auto& key : sweep.keys()) {
    Axis axis;
    if (key == "zip") {
      const Input zip = sweep["zip"];
      if (!zip.is_map() || zip.keys().empty())
        zip.fail("expected a map of keys to lists of the same length, whose values advance together");
      for (const auto& k : zip.keys()) {
        const Input values = values_of(k, zip[k]);
        if (!axis.keys.empty() && values.size() != axis.size)
          values.fail(fmt::format("has {} values but {} has {}: zipped lists advance together and must be as long",
                                  values.size(), axis.keys.front().first, axis.size));
        axis.size = values.size();
        axis.keys.emplace_back(k, values);
      }
    } else {
      const Input values = values_of(key, sweep[key]);
      axis.size = values.size();
      axis.keys.emplace_back(key, values);
    }
    axes.push_back(std::move(axis));
  }
  for (std::size_t a = 0; a < axes.size(); ++a)
    for (const auto& [key, values] : axes[a].keys)
      for (std::size_t b = 0; b <= a; ++b)
        for (const auto& [other, ov] : axes[b].keys)
          if (&ov != &values && other == key) values.fail(fmt::format("'{}' is swept twice", key));
  return axes;
}

// Says an error at one sweep point again, where the user can fix it: a swept key that does not
// exist is the sweep's own line; anything else keeps its place and names the point.
[[noreturn]] void rethrow_at_point(const InputError& e, const std::vector<Axis>& axes,
                                   const std::vector<std::pair<std::string, std::string>>& coordinates,
                                   const Input& sweep) {
  std::string point;
  for (const auto& [k, v] : coordinates) point += fmt::format("{}{}={}", point.empty() ? "" : ", ", k, v);
  if (e.file().empty()) throw InputError(fmt::format("{}: at sweep point {}: {}", sweep.where(), point, e.what()));
  for (const auto& axis : axes)
    for (const auto& [key, values] : axis.keys)
      if (e.key() == key && e.problem().rfind("unknown key", 0) == 0)
        throw InputError(values.file(), values.line(), values.path(), e.problem());
  throw InputError(e.file(), e.line(), e.key(), fmt::format("at sweep point {}: {}", point, e.problem()));
}

}  // namespace

Scenario parse_scenario(const std::string& text, const std::string& source_name) {
  const Input doc = Input::load_string(text, source_name);
  if (!doc.is_map()) doc.fail("expected a scenario: a map with model, cluster, training, policies");
  check_top_level_keys(doc);
  Scenario s;
  s.file = source_name;
  s.text = text;
  s.name = doc.has("name") ? doc["name"].as_string() : source_name;
  if (auto d = doc.find("description")) s.description = d->as_string();
  if (doc.has("policies") && doc.has("policy")) doc["policy"].fail("give either 'policy' or 'policies', not both");

  auto sweep = doc.find("sweep");
  if (!sweep) {
    s.points.push_back(load_point(doc));
    return s;
  }
  const auto axes = load_axes(doc, *sweep);
  for (const auto& axis : axes) {
    s.sweep_axes.emplace_back();
    for (const auto& [key, values] : axis.keys) {
      s.sweep_keys.push_back(key);
      s.sweep_axes.back().push_back(key);
    }
  }
  // Each point is the document, read afresh (so that every key keeps its line) with the swept
  // keys replaced, and loaded like any other.
  std::vector<std::size_t> index(axes.size(), 0);
  for (;;) {
    YAML::Node copy = YAML::Load(text);
    copy.remove("sweep");
    std::vector<std::pair<std::string, std::string>> coordinates;
    for (std::size_t a = 0; a < axes.size(); ++a)
      for (const auto& [key, values] : axes[a].keys) {
        const Input v = values.at(index[a]);
        set_path(copy, key, v.raw());
        coordinates.emplace_back(key, scalar_text(v.raw()));
      }
    Point parsed;
    try {
      parsed = load_point(Input::wrap(copy, source_name));
    } catch (const InputError& e) {
      rethrow_at_point(e, axes, coordinates, *sweep);
    }
    parsed.coordinates = std::move(coordinates);
    s.points.push_back(std::move(parsed));
    std::size_t a = axes.size();
    while (a > 0 && ++index[a - 1] == axes[a - 1].size) index[--a] = 0;
    if (a == 0) break;
  }
  return s;
}

Scenario load_scenario(const std::string& path) {
  return parse_scenario(read_text_file(path, "cannot open scenario file"), path);
}

std::vector<Result> run(const Scenario& s) {
  std::vector<Result> out;
  for (const auto& p : s.points)
    for (const auto& pol : p.policies) out.push_back(Result{&p, &pol, sim::simulate(p.setup, pol)});
  return out;
}

}  // namespace tagcsim::scenarios
