#include "topologies/cluster_yaml.hpp"

#include "common/yaml_writer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <initializer_list>

namespace tagcsim::topologies {
namespace {

std::string gbits(double bytes_per_s) { return fmt::format("{:g} Gb/s", bytes_per_s * 8 / 1e9); }

void write_device(YamlMap m, const DeviceProfile& d) {
  m.put("name", yaml_scalar(d.name));
  m.put("peak_flops_bf16", yaml_quantity(d.peak_flops_bf16, Quantity::FlopRate, {"TFLOP/s", "GFLOP/s"}),
        "dense, per GPU (fp16 too)");
  m.put("peak_flops_fp32", yaml_quantity(d.peak_flops_fp32, Quantity::FlopRate, {"TFLOP/s", "GFLOP/s"}),
        "dense, without tensor cores");
  m.put("peak_flops_tf32", yaml_quantity(d.peak_flops_tf32, Quantity::FlopRate, {"TFLOP/s", "GFLOP/s"}),
        "dense, fp32 matmuls with tf32: true");
  m.put("memory_bytes", yaml_quantity(d.memory_bytes, Quantity::Bytes, {"GiB", "GB", "MiB", "MB"}), "HBM per GPU, as the driver gives it to a process");
  m.put("memory_bandwidth", yaml_quantity(d.memory_bandwidth, Quantity::Bandwidth, {"TB/s", "GB/s"}), "HBM, datasheet");
  m.put("gemm_efficiency", yaml_number(d.gemm_efficiency), "achieved / peak in training GEMMs");
  m.put("memory_efficiency", yaml_number(d.memory_efficiency), "achieved / datasheet HBM bandwidth");
  m.put("compute_capability", fmt::format("{}.{}", d.sm / 10, d.sm % 10), "picks NCCL's per-generation latencies");
  m.put("profile", yaml_scalar(d.profile), d.profile.empty() ? "none: the datasheet roofline" : "the kernel profile");
  m.put("source", yaml_scalar(d.source));
}

}  // namespace

std::string device_yaml(const DeviceProfile& d, const std::string& key, int indent) {
  std::string out;
  write_device(YamlMap(out, indent).open(key), d);
  return out;
}

std::string cluster_yaml(const Cluster& c, const std::string& key) {
  std::string out;
  YamlMap root(out, 0);
  YamlMap k = root.open(key, fmt::format("{} nodes x {} GPUs = {} GPUs", c.nodes, c.gpus_per_node, c.gpus()));
  k.put("name", yaml_scalar(c.name));
  k.put("nodes", yaml_number(c.nodes));
  k.put("gpus_per_node", yaml_number(c.gpus_per_node));
  k.put("host_cpu", to_string(c.host_cpu), "NCCL's per-step network cost and LL ceiling depend on it");
  write_device(k.open("gpu"), c.gpu);
  YamlMap in = k.open("intra_node", "the GPUs of one node");
  in.put("kind", c.intra.kind);
  if (!c.intra.name.empty()) in.put("generation", yaml_scalar(c.intra.name), "fitted efficiencies are shared by it");
  if (c.intra.bandwidth > 0)
    in.put("bandwidth", yaml_quantity(c.intra.bandwidth, Quantity::Bandwidth, {"GB/s", "Gb/s"}), "per GPU, per direction");
  in.put("latency", yaml_seconds(c.intra.latency), "per hop");
  if (c.intra.step_latency > 0)
    in.put("step_latency", yaml_seconds(c.intra.step_latency), "per step, beyond NCCL's table (fitted per generation)");
  in.put("efficiency", yaml_number(c.intra.efficiency), "NCCL ring bus bandwidth / line rate");
  in.put("nvls_efficiency", yaml_number(c.intra.nvls_efficiency), "NVLink SHARP rate / line rate, 0 for none");
  if (c.intra.nvls_efficiency > 0)
    in.put("nvls_tree_efficiency", yaml_number(c.intra.nvls_tree_rate_fraction()), "the same inside an NVLS tree");
  in.put("ll128_efficiency", yaml_number(c.intra.ll128_efficiency), "LL128 rate / NCCL's tuner's");
  YamlMap n = k.open("nics", c.nodes > 1 ? fmt::format("{} x {} = {} per node", c.nics.count, gbits(c.nics.bandwidth),
                                                        gbits(c.nics.count * c.nics.bandwidth))
                                          : std::string("unused on one node"));
  n.put("count", yaml_number(c.nics.count), "per node");
  if (c.nics.bandwidth > 0)
    n.put("bandwidth", yaml_quantity(c.nics.bandwidth, Quantity::Bandwidth, {"Gb/s", "Mb/s", "GB/s"}),
          "per NIC, per direction");
  n.put("latency", yaml_seconds(c.nics.latency), "one way, NIC and cable");
  if (!c.nics.transport.name.empty()) {
    const auto& t = c.nics.transport;
    YamlMap tr = n.open("transport", "how NCCL moves bytes between nodes");
    tr.put("name", yaml_scalar(t.name));
    tr.put("kind", t.kind);
    tr.put("latency", yaml_seconds(t.latency), "per network step");
    tr.put("overhead", yaml_seconds(t.overhead), "proxy cost per step");
    tr.put("efficiency", yaml_number(t.efficiency), "achievable / line rate of one NIC");
    tr.put("source", yaml_scalar(t.source));
  }
  n.put("efficiency", yaml_number(c.nics.efficiency), "achievable / line rate");
  if (c.nics.rails > 0) n.put("rails", yaml_number(c.nics.rails), "NIC groups, each used by its GPUs");
  YamlMap f = k.open("fabric", "between the nodes");
  f.put("kind", fabric_kind_name(c.fabric.kind));
  if (c.fabric.nodes_per_leaf > 0) f.put("nodes_per_leaf", yaml_number(c.fabric.nodes_per_leaf));
  if (c.fabric.leaves_per_pod > 0) f.put("leaves_per_pod", yaml_number(c.fabric.leaves_per_pod));
  f.put("oversubscription", yaml_number(c.fabric.oversubscription), "downlink : uplink above the leaf");
  f.put("switch_latency", yaml_seconds(c.fabric.switch_latency), "per switch crossed");
  f.put("rail_optimized", yaml_flag(c.fabric.rail_optimized), "one leaf switch per rail");
  const auto& cp = c.collectives;
  YamlMap cl = k.open("collectives", "NCCL's costs (docs/calibration.md)");
  cl.put("latency_scale", yaml_number(cp.latency_scale), "x NCCL's published latency table");
  cl.put("launch_latency", yaml_seconds(cp.launch_latency), "once per collective");
  cl.put("step_latency_intra", yaml_seconds(cp.step_latency_intra), "extra per step inside a node");
  cl.put("step_latency_inter", yaml_seconds(cp.step_latency_inter), "extra per step between nodes");
  cl.put("host_launch", yaml_seconds(cp.host_launch), "CPU time to launch one GPU's kernel");
  cl.put("host_launch_per_channel", yaml_seconds(cp.host_launch_per_channel), "more per channel");
  cl.put("ring_depth", yaml_number(cp.ring_depth), "chunk-times of pipeline fill");
  cl.put("tree_depth", yaml_number(cp.tree_depth));
  cl.put("nvls_depth", yaml_number(cp.nvls_depth));
  cl.put("nvls_chunk_overhead", yaml_seconds(cp.nvls_chunk_overhead), "per NVLS chunk of every channel");
  cl.put("slice_latency", yaml_seconds(cp.slice_latency), "per Simple slice of every ring step");
  cl.put("net_channel_rate",
         cp.net_channel_rate > 0 ? yaml_quantity(cp.net_channel_rate, Quantity::Bandwidth, {"GB/s", "Gb/s"}) : "0",
         "one channel across the network (0: no ceiling)");
  if (c.nccl.algos || c.nccl.protos || c.nccl.channels || c.nccl.version || !c.nccl.tuner_config.empty()) {
    YamlMap pins = k.open("nccl", "pinned like NCCL_ALGO / NCCL_PROTO");
    auto list = [](const std::vector<std::string>& words) { return fmt::format("[{}]", fmt::join(words, ", ")); };
    if (c.nccl.algos) pins.put("algo", list(nccl_words(c.nccl.algos, kNcclAlgoWords)));
    if (c.nccl.protos) pins.put("proto", list(nccl_words(c.nccl.protos, kNcclProtoWords)));
    if (c.nccl.channels) pins.put("channels", yaml_number(c.nccl.channels));
    if (c.nccl.version) pins.put("version", yaml_scalar(format_nccl_version(c.nccl.version)), "NCCL release");
    if (!c.nccl.source.empty()) pins.put("source", yaml_scalar(c.nccl.source));
    if (!c.nccl.tuner_config.empty()) pins.put("tuner_config", yaml_scalar(c.nccl.tuner_config), "NCCL_TUNER_CONFIG_FILE");
  }
  if (c.stragglers.any()) {
    YamlMap st = k.open("stragglers", fmt::format("the slowest of {} GPUs at {:.4g} of nominal speed", c.gpus(),
                                                  c.slowest_gpu_speed()));
    if (c.stragglers.spread > 0) st.put("spread", yaml_number(c.stragglers.spread), "GPU-to-GPU speed, one standard deviation");
    if (c.stragglers.slowest > 0) st.put("slowest", yaml_number(c.stragglers.slowest), "the slowest GPU's speed / the others'");
  }
  k.put("source", yaml_scalar(c.source));
  return out;
}

}  // namespace tagcsim::topologies
