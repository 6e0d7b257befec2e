#include "scenarios/resolved.hpp"

#include "models/model.hpp"
#include "topologies/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace tagcsim::scenarios {
namespace {

// A string as a YAML scalar: plain when that reads back as the same string, else double-quoted.
std::string scalar(const std::string& s) {
  static const char* kWords[] = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"};
  bool plain = !s.empty() && std::isalnum(static_cast<unsigned char>(s.front()));
  for (char c : s)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/');
  std::string lower = s;
  for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* w : kWords) plain = plain && lower != w;
  plain = plain && !(std::isdigit(static_cast<unsigned char>(s.front())) && s.find_first_not_of("0123456789.e+-") == std::string::npos);
  if (plain) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string flag(bool b) { return b ? "true" : "false"; }
std::string number(double v) { return fmt::format("{}", v); }  // the shortest text that reads back exactly

// A quantity in the first of `units` that writes it exactly in a few digits ("141 GB", not
// "131.318 GiB"); else exactly in the base unit.
std::string quantity(double v, Quantity q, std::initializer_list<std::string_view> units) {
  for (auto u : units) {
    const std::string text = format_quantity(v, q, u);
    const auto space = text.rfind(' ');
    if (text.substr(space + 1) == u && space <= 8) return text;
  }
  return format_quantity(v, q, *units.begin());
}

// Lines of a YAML map, with the unit and meaning of a value in a comment after it.
class Map {
 public:
  Map(std::string& out, int indent) : out_(out), indent_(indent) {}
  void put(std::string_view key, const std::string& value, std::string_view comment = "") {
    std::string line = fmt::format("{:{}}{}: {}", "", indent_, key, value);
    if (!comment.empty()) line = fmt::format("{:<44}# {}", line + "  ", comment);
    out_ += line + "\n";
  }
  Map open(std::string_view key, std::string_view comment = "") {
    out_ += comment.empty() ? fmt::format("{:{}}{}:\n", "", indent_, key)
                            : fmt::format("{:<44}# {}\n", fmt::format("{:{}}{}:  ", "", indent_, key), comment);
    return Map(out_, indent_ + 2);
  }
  int indent() const { return indent_; }

 private:
  std::string& out_;
  int indent_;
};

std::string gbits(double bytes_per_s) { return fmt::format("{:g} Gb/s", bytes_per_s * 8 / 1e9); }

void write_device(Map m, const topologies::DeviceProfile& d) {
  m.put("name", scalar(d.name));
  m.put("peak_flops_bf16", quantity(d.peak_flops_bf16, Quantity::FlopRate, {"TFLOP/s", "GFLOP/s"}),
        "dense, per GPU (fp16 too)");
  m.put("peak_flops_fp32", quantity(d.peak_flops_fp32, Quantity::FlopRate, {"TFLOP/s", "GFLOP/s"}),
        "dense, without tensor cores");
  m.put("peak_flops_tf32", quantity(d.peak_flops_tf32, Quantity::FlopRate, {"TFLOP/s", "GFLOP/s"}),
        "dense, fp32 matmuls with tf32: true");
  m.put("memory_bytes", quantity(d.memory_bytes, Quantity::Bytes, {"GiB", "GB", "MiB", "MB"}), "HBM per GPU");
  m.put("memory_bandwidth", quantity(d.memory_bandwidth, Quantity::Bandwidth, {"TB/s", "GB/s"}), "HBM, datasheet");
  m.put("gemm_efficiency", number(d.gemm_efficiency), "achieved / peak in training GEMMs");
  m.put("memory_efficiency", number(d.memory_efficiency), "achieved / datasheet HBM bandwidth");
  m.put("compute_capability", fmt::format("{}.{}", d.sm / 10, d.sm % 10), "picks NCCL's per-generation latencies");
  m.put("profile", scalar(d.profile), d.profile.empty() ? "none: the datasheet roofline" : "the kernel profile");
  m.put("source", scalar(d.source));
}

std::string index_name(kernels::IndexEncoding e) { return kernels::to_string(e); }

std::string selection_yaml(const sim::Selection& s) {
  switch (s.rule) {
    case sim::Selection::Rule::Tagc: return "tagc";
    case sim::Selection::Rule::All: return "all";
    case sim::Selection::Rule::MinParams: return fmt::format("{{min_params: {}}}", s.min_params);
    case sim::Selection::Rule::Kinds: {
      std::string kinds;
      for (auto k : s.kinds) kinds += (kinds.empty() ? "" : ", ") + std::string(models::to_string(k));
      return fmt::format("{{kinds: [{}]}}", kinds);
    }
  }
  return "tagc";
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Whether a sweep over `key` still means the same thing on the expanded part. A swept preset
// would be overridden by every expanded field; a model key may carry others with it (heads and
// kv_heads); the compression settings are folded into each policy.
bool hidden_by_expansion(const std::string& key, const YAML::Node& doc) {
  if (key == "model" || starts_with(key, "model.") || key == "cluster" || key == "cluster.gpu") return true;
  if (starts_with(key, "cluster.") && key.size() >= 7 && key.substr(key.size() - 7) == ".preset") return true;
  if (starts_with(key, "cluster.nics.")) {
    if (key == "cluster.nics.per_node") return true;
    const YAML::Node cluster = doc["cluster"];
    const YAML::Node nics = cluster && cluster.IsMap() ? cluster["nics"] : YAML::Node();
    if (nics && nics.IsMap() && nics["per_node"]) return true;  // a per-NIC value derived from it
  }
  return starts_with(key, "compression") || starts_with(key, "policies") || starts_with(key, "policy");
}

std::string as_written(const YAML::Node& doc, const std::string& key, const std::string& why) {
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << key << YAML::Value << doc[key] << YAML::EndMap;
  return fmt::format("# {}: as written, {}\n{}\n", key, why, e.c_str());
}

}  // namespace

std::string model_yaml(const models::TransformerConfig& m, const std::string& key) {
  std::string out;
  Map root(out, 0);
  Map k = root.open(key, fmt::format("{:.3f}B parameters", double(models::parameter_count(m)) / 1e9));
  k.put("name", scalar(m.name));
  k.put("layers", number(m.layers));
  k.put("hidden", number(m.hidden), "d_model");
  k.put("heads", number(m.heads));
  k.put("kv_heads", number(m.kv_heads), m.kv_heads == m.heads ? "multi-head attention" : "grouped-query attention");
  k.put("ffn", number(double(m.ffn)), "FFN inner size");
  k.put("gated_mlp", flag(m.gated_mlp), m.gated_mlp ? "SwiGLU: three FFN matrices" : "two FFN matrices");
  k.put("vocab", number(double(m.vocab)));
  k.put("tied_embeddings", flag(m.tied_embeddings));
  k.put("seq_len", number(m.seq_len), "tokens per sequence, unless training.seq_len says otherwise");
  k.put("learned_positions", number(m.learned_positions), m.learned_positions ? "GPT-2 style" : "rotary or ALiBi");
  k.put("norm", m.norm == models::Norm::RMSNorm ? "rmsnorm" : "layernorm");
  k.put("bias", flag(m.bias), "biases on the linear layers");
  k.put("source", scalar(m.source));
  return out;
}

std::string device_yaml(const topologies::DeviceProfile& d, const std::string& key, int indent) {
  std::string out;
  write_device(Map(out, indent).open(key), d);
  return out;
}

std::string cluster_yaml(const topologies::Cluster& c, const std::string& key) {
  std::string out;
  Map root(out, 0);
  Map k = root.open(key, fmt::format("{} nodes x {} GPUs = {} GPUs", c.nodes, c.gpus_per_node, c.gpus()));
  k.put("name", scalar(c.name));
  k.put("nodes", number(c.nodes));
  k.put("gpus_per_node", number(c.gpus_per_node));
  k.put("host_cpu", topologies::to_string(c.host_cpu), "NCCL's per-step network cost and LL ceiling depend on it");
  write_device(k.open("gpu"), c.gpu);
  Map in = k.open("intra_node", "the GPUs of one node");
  in.put("kind", c.intra.kind);
  if (!c.intra.name.empty()) in.put("generation", scalar(c.intra.name), "fitted efficiencies are shared by it");
  if (c.intra.bandwidth > 0)
    in.put("bandwidth", quantity(c.intra.bandwidth, Quantity::Bandwidth, {"GB/s", "Gb/s"}), "per GPU, per direction");
  in.put("latency", quantity(c.intra.latency, Quantity::Time, {"us", "ns", "ms", "s"}), "per hop");
  in.put("efficiency", number(c.intra.efficiency), "NCCL ring bus bandwidth / line rate");
  in.put("nvls_efficiency", number(c.intra.nvls_efficiency), "NVLink SHARP rate / line rate, 0 for none");
  Map n = k.open("nics", c.nodes > 1 ? fmt::format("{} x {} = {} per node", c.nics.count, gbits(c.nics.bandwidth),
                                                    gbits(c.nics.count * c.nics.bandwidth))
                                      : std::string("unused on one node"));
  n.put("count", number(c.nics.count), "per node");
  if (c.nics.bandwidth > 0)
    n.put("bandwidth", quantity(c.nics.bandwidth, Quantity::Bandwidth, {"Gb/s", "Mb/s", "GB/s"}),
          "per NIC, per direction");
  n.put("latency", quantity(c.nics.latency, Quantity::Time, {"us", "ns", "ms", "s"}), "one way, NIC and cable");
  if (!c.nics.transport.name.empty()) {
    const auto& t = c.nics.transport;
    Map tr = n.open("transport", "how NCCL moves bytes between nodes");
    tr.put("name", scalar(t.name));
    tr.put("kind", t.kind);
    tr.put("latency", quantity(t.latency, Quantity::Time, {"us", "ns", "ms", "s"}), "per network step");
    tr.put("overhead", quantity(t.overhead, Quantity::Time, {"us", "ns", "ms", "s"}), "proxy cost per step");
    tr.put("efficiency", number(t.efficiency), "achievable / line rate of one NIC");
    tr.put("source", scalar(t.source));
  }
  n.put("efficiency", number(c.nics.efficiency), "achievable / line rate");
  if (c.nics.rails > 0) n.put("rails", number(c.nics.rails), "NIC groups, each used by its GPUs");
  Map f = k.open("fabric", "between the nodes");
  f.put("kind", topologies::fabric_kind_name(c.fabric.kind));
  if (c.fabric.nodes_per_leaf > 0) f.put("nodes_per_leaf", number(c.fabric.nodes_per_leaf));
  if (c.fabric.leaves_per_pod > 0) f.put("leaves_per_pod", number(c.fabric.leaves_per_pod));
  f.put("oversubscription", number(c.fabric.oversubscription), "downlink : uplink above the leaf");
  f.put("switch_latency", quantity(c.fabric.switch_latency, Quantity::Time, {"us", "ns", "ms", "s"}),
        "per switch crossed");
  f.put("rail_optimized", flag(c.fabric.rail_optimized), "one leaf switch per rail");
  const auto& cp = c.collectives;
  auto time = [](double s) { return quantity(s, Quantity::Time, {"us", "ns", "ms", "s"}); };
  Map cl = k.open("collectives", "NCCL's costs (docs/calibration.md)");
  cl.put("latency_scale", number(cp.latency_scale), "x NCCL's published latency table");
  cl.put("launch_latency", time(cp.launch_latency), "once per collective");
  cl.put("step_latency_intra", time(cp.step_latency_intra), "extra per step inside a node");
  cl.put("step_latency_inter", time(cp.step_latency_inter), "extra per step between nodes");
  cl.put("host_launch", time(cp.host_launch), "CPU time to launch one GPU's kernel");
  cl.put("host_launch_per_channel", time(cp.host_launch_per_channel), "more per channel");
  cl.put("ring_depth", number(cp.ring_depth), "chunk-times of pipeline fill");
  cl.put("tree_depth", number(cp.tree_depth));
  cl.put("nvls_depth", number(cp.nvls_depth));
  cl.put("nvls_chunk_overhead", time(cp.nvls_chunk_overhead), "per NVLS chunk of every channel");
  if (c.nccl.algos || c.nccl.protos || c.nccl.channels || c.nccl.version) {
    Map pins = k.open("nccl", "pinned like NCCL_ALGO / NCCL_PROTO");
    auto list = [](unsigned mask, std::initializer_list<std::pair<unsigned, const char*>> names) {
      std::string out;
      for (const auto& [bit, name] : names)
        if (mask & bit) out += (out.empty() ? "" : ", ") + std::string(name);
      return "[" + out + "]";
    };
    using P = topologies::NcclPins;
    if (c.nccl.algos)
      pins.put("algo", list(c.nccl.algos, {{P::Ring, "ring"}, {P::Tree, "tree"}, {P::Nvls, "nvls"}, {P::NvlsTree, "nvls_tree"}}));
    if (c.nccl.protos) pins.put("proto", list(c.nccl.protos, {{P::LL, "ll"}, {P::LL128, "ll128"}, {P::Simple, "simple"}}));
    if (c.nccl.channels) pins.put("channels", number(c.nccl.channels));
    if (c.nccl.version) pins.put("version", scalar(topologies::format_nccl_version(c.nccl.version)), "NCCL release");
    if (!c.nccl.source.empty()) pins.put("source", scalar(c.nccl.source));
  }
  k.put("source", scalar(c.source));
  return out;
}

std::string training_yaml(const sim::Training& t, int global_batch, const std::string& key) {
  std::string out;
  Map root(out, 0);
  Map k = root.open(key);
  // Every value is written out, so the framework only names whose loop this is.
  k.put("framework", sim::to_string(t.framework));
  k.put("fsdp", t.api == sim::Api::Fsdp1 ? "1" : "2", sim::to_string(t.api));
  const bool fsdp2_sgo = t.api == sim::Api::Fsdp2 && t.sharding == sim::Sharding::ShardGradOp;
  k.put("sharding", sim::to_string(t.sharding));
  if (t.sharding == sim::Sharding::HybridShard && t.hybrid_shard_gpus > 0)
    k.put("hybrid_shard_gpus", number(t.hybrid_shard_gpus), "GPUs per shard group");
  k.put("wrap", t.wrap == models::WrapPolicy::Block  ? "block"
                : t.wrap == models::WrapPolicy::Size ? "size"
                                                     : "torchtitan");
  k.put("micro_batch", number(t.micro_batch), "sequences per GPU per micro-batch");
  if (t.seq_len > 0) k.put("seq_len", number(t.seq_len), "tokens per sequence");
  if (global_batch > 0)
    k.put("global_batch", number(global_batch),
          fmt::format("sequences per step; {} micro-batch(es) at the first point", t.grad_accumulation));
  else
    k.put("grad_accumulation", number(t.grad_accumulation), "micro-batches per step");
  k.put("no_sync", flag(t.no_sync));
  k.put("param_dtype", sim::to_string(t.param_dtype));
  k.put("reduce_dtype", sim::to_string(t.reduce_dtype));
  k.put("activation_checkpointing",
        t.activation_checkpointing && t.impl.checkpoint_fraction < 1 ? number(t.impl.checkpoint_fraction)
                                                                      : flag(t.activation_checkpointing),
        t.activation_checkpointing && t.impl.checkpoint_fraction < 1 ? "the share of the blocks checkpointed" : "");
  k.put("attention", models::to_string(t.impl.attention), "the attention kernel");
  k.put("compile", flag(t.impl.compiled), "torch.compile: element-wise chains fused");
  k.put("cross_entropy", t.impl.fused_cross_entropy ? "fused" : "fp32");
  k.put("tf32", flag(t.tf32));
  if (t.api == sim::Api::Fsdp1) {
    k.put("limit_all_gathers", flag(t.limit_all_gathers));
    if (t.limit_all_gathers && t.max_inflight_all_gathers != 2)
      k.put("max_inflight_all_gathers", number(t.max_inflight_all_gathers), "a what-if: PyTorch fixes it at 2");
    k.put("backward_prefetch", t.backward_prefetch == sim::BackwardPrefetch::Pre    ? "pre"
                               : t.backward_prefetch == sim::BackwardPrefetch::Post ? "post"
                                                                                    : "none");
  } else if (!fsdp2_sgo) {
    k.put("reshard_after_forward", t.reshard_after_forward < 0    ? "true"
                                   : t.reshard_after_forward == 0 ? "false"
                                                                  : number(t.reshard_after_forward));
  }
  k.put("reduce_scatter_group", t.reduce_scatter_group == sim::ReduceScatterGroup::Shared ? "shared" : "separate");
  // Unset host costs come from the GPU's kernel profile, as they would from the original.
  if (t.host.kernel_issue_s >= 0 || t.host.hook_s >= 0) {
    Map h = k.open("host", "the CPU thread that issues the kernels");
    if (t.host.kernel_issue_s >= 0)
      h.put("kernel_issue", quantity(t.host.kernel_issue_s, Quantity::Time, {"us", "ns", "ms", "s"}), "per kernel");
    if (t.host.hook_s >= 0)
      h.put("hook", quantity(t.host.hook_s, Quantity::Time, {"us", "ns", "ms", "s"}), "per FSDP hook");
  }
  k.put("allocator_fragmentation", number(t.allocator_fragmentation), "caching allocator reserve / allocated");
  return out;
}

std::string policies_yaml(const std::vector<sim::Policy>& policies, const std::string& key) {
  std::string out = key + ":\n";
  for (const auto& p : policies) {
    std::string m = fmt::format("name: {}, label: {}", sim::to_string(p.kind), scalar(p.label));
    if (p.kind == sim::PolicyKind::Fsdp) {
      if (p.reduce_dtype) m += fmt::format(", reduce_dtype: {}", sim::to_string(*p.reduce_dtype));
    } else {
      m += fmt::format(", ratio: {}, sparsity: {}, index: {}, sparsify: {}, select: {}, overlap: {}", number(p.ratio),
                       number(p.sparsity), index_name(p.index), p.exact_topk ? "topk" : "bisect",
                       selection_yaml(p.selection), number(p.overlap));
    }
    out += fmt::format("  - {{{}}}\n", m);
  }
  return out;
}

std::string resolved_yaml(const Scenario& s) {
  if (s.points.empty()) return "";
  const YAML::Node doc = YAML::Load(s.text);
  auto swept = [&](auto pred) { return std::any_of(s.sweep_keys.begin(), s.sweep_keys.end(), pred); };
  auto hides = [&](const std::string& part) {
    return swept([&](const std::string& k) {
      return (k == part || starts_with(k, part + ".")) && hidden_by_expansion(k, doc);
    });
  };
  const Point& p = s.points.front();
  std::string out = fmt::format("# {}: resolved by tagcsim run --resolved (presets expanded{})\n", s.file,
                                s.points.size() > 1 ? ", at the first sweep point where the sweep does not say" : "");
  out += fmt::format("name: {}\n", scalar(s.name));
  if (!s.description.empty()) out += fmt::format("description: {}\n", scalar(s.description));
  out += hides("model") ? as_written(doc, "model", "because the sweep changes its keys") : model_yaml(p.setup.model);
  out += hides("cluster") ? as_written(doc, "cluster", "because the sweep changes its preset")
                          : cluster_yaml(p.setup.cluster);
  out += training_yaml(p.setup.training, p.global_batch);
  if (hides("compression") || hides("policies") || hides("policy")) {
    for (const char* k : {"policies", "policy", "compression"})
      if (doc[k]) out += as_written(doc, k, "because the sweep changes the compression settings");
  } else {
    out += policies_yaml(p.policies);
  }
  if (doc["sweep"]) {
    YAML::Emitter e;
    e << YAML::BeginMap << YAML::Key << "sweep" << YAML::Value << doc["sweep"] << YAML::EndMap;
    out += std::string(e.c_str()) + "\n";
  }
  return out;
}

}  // namespace tagcsim::scenarios
