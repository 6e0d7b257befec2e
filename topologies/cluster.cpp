// Reading and checking cluster descriptions. The preset tables live in presets.cpp.
//
// One set of range checks (check_cluster) serves both entry points. It reports a problem as
// (candidate fields, message); validate() names the first field, load_cluster() blames the
// first candidate the user actually wrote, so the message carries that key's file:line.
#include "topologies/cluster.hpp"

#include <fmt/format.h>

#include <cmath>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>

namespace tagcsim::topologies {
namespace {

using Blame = std::function<void(std::initializer_list<std::string_view> fields, const std::string& what)>;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// `gpu.profile`: a shipped profile's name, or a path. A relative path is taken beside the file
// that names it when the profile is there (a box's cluster file names the profile written next to
// it), else as given.
std::string profile_ref(const Input& v) {
  const std::string ref = v.as_string();
  const bool is_path = ref.find('/') != std::string::npos || (ref.size() > 5 && ref.substr(ref.size() - 5) == ".yaml");
  if (!is_path) return ref;
  const std::filesystem::path there = v.beside(ref);
  return std::filesystem::exists(there) ? there.lexically_normal().string() : ref;
}

bool in_unit_interval(double x) { return x > 0 && x <= 1; }
std::string fraction_msg(double x) { return fmt::format("expected an efficiency in (0, 1], got {:g}", x); }

void check_device(const DeviceProfile& d, const Blame& fail) {
  auto positive = [&](double v, std::string_view field, std::string_view what) {
    if (!(v > 0)) fail({field}, fmt::format("expected a positive {}, got {:g}", what, v));
  };
  positive(d.peak_flops_bf16, "gpu.peak_flops_bf16", "FLOP rate");
  positive(d.peak_flops_fp32, "gpu.peak_flops_fp32", "FLOP rate");
  positive(d.peak_flops_tf32, "gpu.peak_flops_tf32", "FLOP rate");
  positive(d.memory_bytes, "gpu.memory_bytes", "size in bytes");
  positive(d.memory_bandwidth, "gpu.memory_bandwidth", "bandwidth");
  if (!in_unit_interval(d.gemm_efficiency)) fail({"gpu.gemm_efficiency"}, fraction_msg(d.gemm_efficiency));
  if (!in_unit_interval(d.memory_efficiency))
    fail({"gpu.memory_efficiency"}, fraction_msg(d.memory_efficiency));
}

void check_cluster(const Cluster& c, const Blame& fail) {
  if (c.nodes < 1) fail({"nodes"}, fmt::format("expected an integer >= 1, got {}", c.nodes));
  if (c.gpus_per_node < 1)
    fail({"gpus_per_node"}, fmt::format("expected an integer >= 1, got {}", c.gpus_per_node));
  if (c.stragglers.spread > 0 && c.slowest_gpu_speed() < 0.1)
    fail({"stragglers", "nodes"},
         fmt::format("a spread of {:g} puts the expected slowest of {} GPUs at {:.2f} of nominal speed; expected a "
                     "spread that leaves it at 0.1 or more",
                     c.stragglers.spread, c.gpus(), c.slowest_gpu_speed()));
  check_device(c.gpu, fail);

  // The NVLink/PCIe fabric only matters with several GPUs per node.
  if (c.gpus_per_node > 1 && !(c.intra.bandwidth > 0))
    fail({"intra_node.bandwidth", "gpus_per_node"},
         fmt::format("expected a positive bandwidth for {} GPUs per node, got {:g}", c.gpus_per_node,
                     c.intra.bandwidth));
  if (!in_unit_interval(c.intra.efficiency))
    fail({"intra_node.efficiency"}, fraction_msg(c.intra.efficiency));
  if (c.intra.latency < 0) fail({"intra_node.latency"}, "expected a non-negative time");
  if (c.intra.step_latency < 0) fail({"intra_node.step_latency"}, "expected a non-negative time");
  if (!(c.intra.nvls_efficiency >= 0 && c.intra.nvls_efficiency <= 1))
    fail({"intra_node.nvls_efficiency"},
         fmt::format("expected a fraction in [0, 1] (0: no NVLink SHARP), got {:g}", c.intra.nvls_efficiency));
  if (!(c.intra.nvls_tree_efficiency >= 0 && c.intra.nvls_tree_efficiency <= 1))
    fail({"intra_node.nvls_tree_efficiency"},
         fmt::format("expected a fraction in [0, 1] (0: as nvls_efficiency), got {:g}", c.intra.nvls_tree_efficiency));
  if (!(c.intra.ll128_efficiency > 0 && c.intra.ll128_efficiency <= 1))
    fail({"intra_node.ll128_efficiency"},
         fmt::format("expected a fraction in (0, 1] (1: LL128 as NCCL's tuner rates it), got {:g}", c.intra.ll128_efficiency));

  // NICs only matter with several nodes; a single node is valid with any network description.
  if (c.nodes > 1) {
    if (c.nics.count < 1)
      fail({"nics.count", "nodes"},
           fmt::format("expected at least 1 NIC per node for {} nodes, got {}", c.nodes, c.nics.count));
    if (!(c.nics.bandwidth > 0))
      fail({"nics.bandwidth", "nodes"},
           fmt::format("expected a positive bandwidth, got {:g}", c.nics.bandwidth));
  }
  if (c.nics.count < 0) fail({"nics.count"}, fmt::format("expected an integer >= 0, got {}", c.nics.count));
  if (!in_unit_interval(c.nics.efficiency)) fail({"nics.efficiency"}, fraction_msg(c.nics.efficiency));
  if (c.nics.latency < 0) fail({"nics.latency"}, "expected a non-negative time");
  // Rails: every GPU maps to one NIC group, every NIC to one GPU group.
  if (c.nics.rails < 0) fail({"nics.rails"}, fmt::format("expected an integer >= 1, got {}", c.nics.rails));
  if (c.nics.rails > c.gpus_per_node)
    fail({"nics.rails", "gpus_per_node"},
         fmt::format("{} rails need at least {} GPUs per node (each rail is some GPUs' NICs), got {}", c.nics.rails,
                     c.nics.rails, c.gpus_per_node));
  if (c.nics.count > 0 && c.nics.rails > 0) {
    const int r = c.rails();
    if (r > c.nics.count)
      fail({"nics.rails", "nics.count"}, fmt::format("{} rails need at least {} NICs, got {}", r, r, c.nics.count));
    if (c.nics.count % r != 0 || c.gpus_per_node % r != 0)
      fail({"nics.rails", "nics.count", "gpus_per_node"},
           fmt::format("{} NICs and {} GPUs per node do not split evenly into {} rails", c.nics.count,
                       c.gpus_per_node, r));
  }

  const Fabric& f = c.fabric;
  if (!(f.oversubscription >= 1))
    fail({"fabric.oversubscription"},
         fmt::format("expected a downlink:uplink ratio >= 1, got {:g}", f.oversubscription));
  if (f.switch_latency < 0) fail({"fabric.switch_latency"}, "expected a non-negative time");
  const auto& cl = c.collectives;
  if (cl.step_latency_intra < 0 || cl.step_latency_inter < 0 || cl.launch_latency < 0 || cl.latency_scale < 0 ||
      cl.host_launch < 0 || cl.host_launch_per_channel < 0 || cl.ring_depth < 0 || cl.tree_depth < 0 || cl.nvls_depth < 0 || cl.nvls_chunk_overhead < 0 || cl.slice_latency < 0 || cl.net_channel_rate < 0)
    fail({"collectives"}, "expected non-negative latencies, scales and depths");
  if (c.nics.transport.latency < 0) fail({"nics.transport"}, "expected a non-negative transport latency");
  // One node never touches the fabric, so any fabric description is fine for it.
  if (f.kind == Fabric::Kind::SingleSwitch || c.nodes == 1) return;

  const std::string kind = fabric_kind_name(f.kind);
  if (f.nodes_per_leaf < 1)
    fail({"fabric.nodes_per_leaf", "fabric.kind"},
         fmt::format("a {} needs nodes_per_leaf >= 1, got {}", kind, f.nodes_per_leaf));
  // Nodes that do not fill the last leaf (pod) leave it partly filled, as on a real floor: 64 DGX
  // A100 on 20-node leaves are three full leaves and one of four.
  if (f.kind != Fabric::Kind::FatTree3) return;
  if (f.leaves_per_pod < 1)
    fail({"fabric.leaves_per_pod", "fabric.kind"},
         fmt::format("a fat_tree_3 needs leaves_per_pod >= 1, got {}", f.leaves_per_pod));
}

// Reads one cluster (or device) map, remembering where each field was given so that a failed
// range check can point at the key responsible.
class Reader {
 public:
  explicit Reader(const Input& root) : root_(root) {}

  // If `key` is present in `map`, read it with `read` and remember it as `field`.
  template <class F>
  bool opt(const Input& map, std::string_view key, const std::string& field, F&& read) {
    auto v = map.find(key);
    if (!v) return false;
    read(*v);
    given_.insert_or_assign(field, *v);
    overridden_.push_back(field);
    return true;
  }

  [[noreturn]] void blame(std::initializer_list<std::string_view> fields, const std::string& what) const {
    for (auto f : fields)
      if (auto it = given_.find(std::string(f)); it != given_.end()) it->second.fail(what);
    std::string field(*fields.begin());
    std::string path = root_.path().empty() ? field : root_.path() + "." + field;
    throw InputError(fmt::format("{}:{}: {}: {}", root_.file(), root_.line(), path, what));
  }

  DeviceProfile device(const Input& in, const DeviceProfile& base, bool has_base, const std::string& prefix);
  const std::vector<std::string>& overridden() const { return overridden_; }

 private:
  const Input& root_;
  std::map<std::string, Input> given_;
  std::vector<std::string> overridden_;
};

DeviceProfile preset_device(const Input& name_in) {
  auto name = canonical_device_name(name_in.as_string());
  auto names = device_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    name_in.fail(unknown_name("device preset", name, names, device_aliases()));
  return topologies::device(name);
}

// `prefix` is how device fields are named relative to the root ("gpu." in a cluster).
DeviceProfile Reader::device(const Input& in, const DeviceProfile& base, bool has_base,
                             const std::string& prefix) {
  if (in.is_scalar()) {
    given_.insert_or_assign(prefix + "preset", in);
    return preset_device(in);
  }
  in.expect_keys({"preset", "name", "peak_flops_bf16", "peak_flops_fp32", "peak_flops_tf32", "memory_bytes",
                  "memory_bandwidth", "gemm_efficiency", "memory_efficiency", "compute_capability", "profile",
                  "source"});
  DeviceProfile d = base;
  std::vector<std::string> changed;
  if (auto p = in.find("preset")) d = preset_device(*p), has_base = true;
  auto field = [&](std::string_view key, auto read) {
    if (opt(in, key, prefix + std::string(key), read)) changed.emplace_back(key);
  };
  // Without a base every peak rate and the memory must be given; TF32 falls back to FP32
  // (a GPU without TF32 tensor cores runs TF32 matmuls at the FP32 rate).
  auto need = [&](std::string_view key) {
    if (!has_base) (void)in[key];
  };
  for (auto k : {"peak_flops_bf16", "peak_flops_fp32", "memory_bytes", "memory_bandwidth"}) need(k);
  field("name", [&](const Input& v) { d.name = v.as_string(); });
  field("peak_flops_bf16", [&](const Input& v) { d.peak_flops_bf16 = v.as_flop_rate(); });
  field("peak_flops_fp32", [&](const Input& v) { d.peak_flops_fp32 = v.as_flop_rate(); });
  if (!has_base && !in.has("peak_flops_tf32")) d.peak_flops_tf32 = d.peak_flops_fp32;
  field("peak_flops_tf32", [&](const Input& v) { d.peak_flops_tf32 = v.as_flop_rate(); });
  field("memory_bytes", [&](const Input& v) { d.memory_bytes = v.as_bytes(); });
  field("memory_bandwidth", [&](const Input& v) { d.memory_bandwidth = v.as_bandwidth(); });
  field("gemm_efficiency", [&](const Input& v) { d.gemm_efficiency = v.as_double(); });
  field("memory_efficiency", [&](const Input& v) { d.memory_efficiency = v.as_double(); });
  // NCCL's latency tables differ per GPU generation (Volta 7.0, Ampere 8.0, Hopper 9.0).
  field("compute_capability", [&](const Input& v) {
    const double cc = v.as_positive();
    if (cc < 6 || cc >= 13) v.fail(fmt::format("expected a CUDA compute capability such as 8.0 or 9.0, got {:g}", cc));
    d.sm = int(std::lround(cc * 10));
  });
  field("profile", [&](const Input& v) { d.profile = profile_ref(v); });
  bool own_source = in.has("source");
  field("source", [&](const Input& v) { d.source = v.as_string(); });
  if (d.name.empty()) d.name = "custom";
  if (!own_source) {
    if (!has_base)
      d.source = fmt::format("user input ({}:{})", in.file(), in.line());
    else if (!changed.empty())
      d.source += fmt::format(" Overridden at {}:{}: {}.", in.file(), in.line(), join(changed));
  }
  return d;
}

// `file: PATH` in a cluster map: a YAML file holding a cluster map (or one under `cluster:`),
// relative to the file that names it. Files may name files, up to a small depth (no cycles).
Cluster load_cluster_file(const Input& v) {
  static thread_local int depth = 0;
  const std::string name = v.as_string();
  const std::filesystem::path path = v.beside(name);
  if (!std::filesystem::exists(path))
    v.fail(fmt::format("no such cluster file '{}' (looked for {})", name, path.string()));
  if (depth >= 8) v.fail("cluster files name each other more than 8 deep (a cycle?)");
  ++depth;
  try {
    const Input doc = Input::load_file(path.string());
    Cluster c = load_cluster(doc.is_map() && doc.has("cluster") ? doc["cluster"] : doc);
    --depth;
    return c;
  } catch (...) {
    --depth;
    throw;
  }
}

}  // namespace

std::string fabric_kind_name(Fabric::Kind kind) {
  switch (kind) {
    case Fabric::Kind::SingleSwitch:
      return "single_switch";
    case Fabric::Kind::FatTree2:
      return "fat_tree_2";
    case Fabric::Kind::FatTree3:
      return "fat_tree_3";
  }
  return "?";
}

int Cluster::nodes_in_leaf() const {
  if (fabric.kind == Fabric::Kind::SingleSwitch || fabric.nodes_per_leaf < 1) return nodes;
  return std::min(nodes, fabric.nodes_per_leaf);
}
int Cluster::leaves() const {
  const int per_leaf = std::max(1, nodes_in_leaf());
  return (nodes + per_leaf - 1) / per_leaf;
}
int Cluster::nodes_in_last_leaf() const { return nodes - (leaves() - 1) * std::max(1, nodes_in_leaf()); }
int Cluster::leaves_in_pod() const {
  if (fabric.kind != Fabric::Kind::FatTree3 || fabric.leaves_per_pod < 1) return leaves();
  return std::min(leaves(), fabric.leaves_per_pod);
}
int Cluster::pods() const {
  const int per_pod = std::max(1, leaves_in_pod());
  return (leaves() + per_pod - 1) / per_pod;
}

int Cluster::rails() const {
  if (nics.rails > 0) return nics.rails;
  // One rail per GPU with a NIC or more each, one per NIC when GPUs share them; otherwise the
  // largest grouping that splits both evenly.
  return std::max(1, std::gcd(std::max(0, nics.count), std::max(1, gpus_per_node)));
}

int Cluster::rail_of_gpu(int local_gpu) const {
  const int r = rails();
  return std::clamp(int(std::int64_t(local_gpu) * r / std::max(1, gpus_per_node)), 0, r - 1);
}

int Cluster::rails_of_gpus(int first, int count) const {
  if (count <= 0) return 0;
  if (count >= gpus_per_node) return rails();
  return rail_of_gpu(first + count - 1) - rail_of_gpu(first) + 1;
}


DeviceProfile load_device(const Input& in) { return load_device(in, DeviceProfile{}); }

DeviceProfile load_device(const Input& in, const DeviceProfile& base) {
  Reader r(in);
  DeviceProfile d = r.device(in, base, base.peak_flops_bf16 > 0, "");
  check_device(d, [&](auto fields, const std::string& what) {
    // Device fields are named "gpu.x" by check_device; here the root is the device itself.
    std::vector<std::string> local;
    for (auto f : fields) local.emplace_back(f.substr(4));
    r.blame({local.front()}, what);
  });
  return d;
}

const std::vector<std::string>& cluster_keys() {
  static const std::vector<std::string> keys = {
      "preset", "file", "name", "nodes", "gpus_per_node", "host_cpu", "gpu", "intra_node", "nics", "fabric",
      "collectives", "nccl", "stragglers", "source"};
  return keys;
}

Cluster load_cluster(const Input& in) {
  if (in.is_scalar()) {
    auto name = canonical_preset_name(in.as_string());
    auto names = preset_names();
    if (std::find(names.begin(), names.end(), name) == names.end())
      in.fail(unknown_name("cluster preset", name, names, preset_aliases()));
    return preset(name);
  }
  if (!in.is_map())
    in.fail(fmt::format("expected a cluster preset name or a map; presets: {}", join(preset_names())));
  in.expect_keys(cluster_keys());

  Reader r(in);
  Cluster c;
  auto p = in.find("preset");
  auto file = in.find("file");
  if (p && file) file->fail("expected either 'preset' or 'file' as the base of a cluster, not both");
  const bool has_preset = p.has_value() || file.has_value();
  if (file) c = load_cluster_file(*file);  // a cluster file (e.g. `tagcsim calibrate box`'s) as the base
  if (p) {
    auto name = canonical_preset_name(p->as_string());
    auto names = preset_names();
    if (std::find(names.begin(), names.end(), name) == names.end())
      p->fail(unknown_name("cluster preset", name, names, preset_aliases()));
    c = preset(name);
  }
  r.opt(in, "name", "name", [&](const Input& v) { c.name = v.as_string(); });
  r.opt(in, "nodes", "nodes", [&](const Input& v) { c.nodes = v.as_int_between(1, 1 << 17); });
  r.opt(in, "gpus_per_node", "gpus_per_node",
        [&](const Input& v) { c.gpus_per_node = v.as_int_between(1, 1024); });
  r.opt(in, "host_cpu", "host_cpu", [&](const Input& v) {
    const auto k = v.as_choice({"intel", "amd", "arm"});
    c.host_cpu = k == "amd" ? HostCpu::Amd : k == "arm" ? HostCpu::Arm : HostCpu::Intel;
  });
  if (!has_preset) (void)in["gpu"];
  if (auto g = in.find("gpu")) c.gpu = r.device(*g, c.gpu, has_preset, "gpu.");

  // Without a preset, the links a cluster of this shape uses must be described.
  if (!has_preset && c.gpus_per_node > 1) (void)in["intra_node"]["bandwidth"];
  if (auto m = in.find("intra_node")) {
    m->expect_keys({"kind", "generation", "bandwidth", "latency", "step_latency", "efficiency", "nvls_efficiency",
                    "nvls_tree_efficiency", "ll128_efficiency"});
    r.opt(*m, "kind", "intra_node.kind", [&](const Input& v) {
      c.intra.kind = v.as_choice({"nvswitch", "nvlink", "pcie"});
    });
    r.opt(*m, "bandwidth", "intra_node.bandwidth",
          [&](const Input& v) { c.intra.bandwidth = v.as_bandwidth(); });
    r.opt(*m, "latency", "intra_node.latency", [&](const Input& v) { c.intra.latency = v.as_seconds(); });
    r.opt(*m, "step_latency", "intra_node.step_latency",
          [&](const Input& v) { c.intra.step_latency = v.as_seconds(); });
    r.opt(*m, "efficiency", "intra_node.efficiency",
          [&](const Input& v) { c.intra.efficiency = v.as_double(); });
    r.opt(*m, "nvls_efficiency", "intra_node.nvls_efficiency",
          [&](const Input& v) { c.intra.nvls_efficiency = v.as_double(); });
    r.opt(*m, "nvls_tree_efficiency", "intra_node.nvls_tree_efficiency",
          [&](const Input& v) { c.intra.nvls_tree_efficiency = v.as_double(); });
    r.opt(*m, "ll128_efficiency", "intra_node.ll128_efficiency",
          [&](const Input& v) { c.intra.ll128_efficiency = v.as_double(); });
    // Fitted NVLink efficiencies are shared by generation (calibrate/params.cpp).
    r.opt(*m, "generation", "intra_node.generation", [&](const Input& v) { c.intra.name = v.as_string(); });
  }
  if (!has_preset && c.nodes > 1) {
    (void)in["nics"]["count"];
    if (!in["nics"].has("per_node")) (void)in["nics"]["bandwidth"];
  }
  if (auto m = in.find("nics")) {
    m->expect_keys({"count", "bandwidth", "per_node", "latency", "efficiency", "transport", "rails"});
    r.opt(*m, "count", "nics.count",
          [&](const Input& v) { c.nics.count = v.as_int_between(0, 1024); });
    r.opt(*m, "bandwidth", "nics.bandwidth", [&](const Input& v) { c.nics.bandwidth = v.as_bandwidth(); });
    // A node's total over its NICs, as instance tables quote it ("400 Gb/s" for 4 x 100 Gb/s).
    r.opt(*m, "per_node", "nics.per_node", [&](const Input& v) {
      if (m->has("bandwidth")) v.fail("give nics.bandwidth (per NIC) or nics.per_node (all NICs of a node), not both");
      if (c.nics.count < 1) v.fail("a per-node bandwidth needs nics.count >= 1");
      c.nics.bandwidth = v.as_bandwidth() / c.nics.count;
    });
    r.opt(*m, "latency", "nics.latency", [&](const Input& v) { c.nics.latency = v.as_seconds(); });
    // The transport brings its achievable efficiency; an explicit `efficiency` overrides it.
    r.opt(*m, "transport", "nics.transport", [&](const Input& v) {
      c.nics.transport = load_transport(v);
      c.nics.efficiency = c.nics.transport.efficiency;
    });
    r.opt(*m, "efficiency", "nics.efficiency", [&](const Input& v) { c.nics.efficiency = v.as_double(); });
    r.opt(*m, "rails", "nics.rails", [&](const Input& v) { c.nics.rails = v.as_int_between(1, 1024); });
  }
  if (auto m = in.find("fabric")) {
    m->expect_keys({"kind", "nodes_per_leaf", "leaves_per_pod", "oversubscription", "switch_latency", "rail_optimized"});
    r.opt(*m, "kind", "fabric.kind", [&](const Input& v) {
      auto k = v.as_choice({"single_switch", "fat_tree_2", "fat_tree_3"});
      c.fabric.kind = k == "fat_tree_2"   ? Fabric::Kind::FatTree2
                      : k == "fat_tree_3" ? Fabric::Kind::FatTree3
                                          : Fabric::Kind::SingleSwitch;
    });
    r.opt(*m, "nodes_per_leaf", "fabric.nodes_per_leaf",
          [&](const Input& v) { c.fabric.nodes_per_leaf = v.as_int_between(1, 1 << 17); });
    r.opt(*m, "leaves_per_pod", "fabric.leaves_per_pod",
          [&](const Input& v) { c.fabric.leaves_per_pod = v.as_int_between(1, 1 << 17); });
    r.opt(*m, "oversubscription", "fabric.oversubscription",
          [&](const Input& v) { c.fabric.oversubscription = v.as_double(); });
    r.opt(*m, "switch_latency", "fabric.switch_latency",
          [&](const Input& v) { c.fabric.switch_latency = v.as_seconds(); });
    r.opt(*m, "rail_optimized", "fabric.rail_optimized",
          [&](const Input& v) { c.fabric.rail_optimized = v.as_bool(); });
  }
  if (auto m = in.find("collectives")) {
    m->expect_keys({"step_latency_intra", "step_latency_inter", "launch_latency", "latency_scale", "host_launch",
                    "host_launch_per_channel", "ring_depth", "tree_depth", "nvls_depth", "nvls_chunk_overhead",
                    "slice_latency", "net_channel_rate"});
    auto& cl = c.collectives;
    r.opt(*m, "step_latency_intra", "collectives.step_latency_intra",
          [&](const Input& v) { cl.step_latency_intra = v.as_seconds(); });
    r.opt(*m, "step_latency_inter", "collectives.step_latency_inter",
          [&](const Input& v) { cl.step_latency_inter = v.as_seconds(); });
    r.opt(*m, "launch_latency", "collectives.launch_latency",
          [&](const Input& v) { cl.launch_latency = v.as_seconds(); });
    r.opt(*m, "latency_scale", "collectives.latency_scale",
          [&](const Input& v) { cl.latency_scale = v.as_non_negative(); });
    r.opt(*m, "host_launch", "collectives.host_launch", [&](const Input& v) { cl.host_launch = v.as_seconds(); });
    r.opt(*m, "host_launch_per_channel", "collectives.host_launch_per_channel",
          [&](const Input& v) { cl.host_launch_per_channel = v.as_seconds(); });
    for (auto [key, field] : {std::pair{"ring_depth", &CollectiveParams::ring_depth},
                              std::pair{"tree_depth", &CollectiveParams::tree_depth},
                              std::pair{"nvls_depth", &CollectiveParams::nvls_depth}})
      r.opt(*m, key, std::string("collectives.") + key, [&](const Input& v) { cl.*field = v.as_non_negative(); });
    r.opt(*m, "nvls_chunk_overhead", "collectives.nvls_chunk_overhead",
          [&](const Input& v) { cl.nvls_chunk_overhead = v.as_seconds(); });
    r.opt(*m, "slice_latency", "collectives.slice_latency",
          [&](const Input& v) { cl.slice_latency = v.as_seconds(); });
    r.opt(*m, "net_channel_rate", "collectives.net_channel_rate",
          [&](const Input& v) { cl.net_channel_rate = v.is_scalar() && v.as_string() == "0" ? 0.0 : v.as_bandwidth(); });
  }
  r.opt(in, "nccl", "nccl", [&](const Input& v) { c.nccl = load_nccl_pins(v); });
  r.opt(in, "stragglers", "stragglers", [&](const Input& v) { c.stragglers = load_stragglers(v); });
  const bool own_source = r.opt(in, "source", "source", [&](const Input& v) { c.source = v.as_string(); });
  if (c.name.empty()) c.name = "custom";
  if (!own_source) {
    if (!has_preset)
      c.source = fmt::format("user input ({}:{})", in.file(), in.line());
    else if (!r.overridden().empty())
      c.source += fmt::format(" Overridden at {}:{}: {}.", in.file(), in.line(), join(r.overridden()));
  }
  check_cluster(c, [&](auto fields, const std::string& what) { r.blame(fields, what); });
  return c;
}

void validate(const Cluster& c, const std::string& what) {
  check_cluster(c, [&](auto fields, const std::string& msg) {
    throw InputError(fmt::format("{}: {}: {}", what, *fields.begin(), msg));
  });
}

}  // namespace tagcsim::topologies
