// Cluster descriptions: nodes of GPUs, the fabric inside a node, the NICs,
// and the fabric between nodes.
//
// A cluster comes from YAML or a preset name. Every preset number says where it
// comes from (a datasheet or a publication) in `source`.
#pragma once

#include "common/input.hpp"

#include <string>
#include <vector>

namespace tagcsim::topologies {

// One GPU model. Peak rates are dense (no sparsity), per GPU.
struct DeviceProfile {
  std::string name;                  // "H100-SXM"
  double peak_flops_bf16 = 0;        // FLOP/s
  double peak_flops_fp32 = 0;        // FLOP/s (non-tensor-core fp32; TF32 is separate)
  double peak_flops_tf32 = 0;        // FLOP/s
  double memory_bytes = 0;           // HBM capacity
  double memory_bandwidth = 0;       // bytes/s, datasheet
  double gemm_efficiency = 0.7;      // achieved / peak for large GEMMs (from published GEMM rates)
  double memory_efficiency = 0.85;   // achieved / datasheet HBM bandwidth for streaming kernels
  // The kernel profile that times this GPU's kernels: a name in calibrate/profiles
  // ("device-h100-sxm") or a path to one (docs/compute-model.md). Empty: the datasheet roofline
  // above (gemm_efficiency, memory_efficiency).
  std::string profile;
  std::string source;
};

// The fabric inside one node. `bandwidth` is per GPU, per direction.
struct IntraNode {
  std::string kind = "nvswitch";     // nvswitch | nvlink | pcie
  double bandwidth = 0;              // bytes/s per GPU per direction (H100 NVLink4: 450e9)
  double latency = 0;                // s per hop
  double efficiency = 0.8;           // NCCL bus bandwidth / line rate (measured ~0.80-0.82 on NVLink)
};

// The NICs of one node. `bandwidth` is per NIC, per direction.
struct Nics {
  int count = 0;                     // per node (0 only for a single-node cluster)
  double bandwidth = 0;              // bytes/s per NIC per direction (400 Gb/s = 50e9)
  double latency = 0;                // s, NIC + cable, one way
  double efficiency = 0.9;           // achievable / line rate (CX-7: 48-49 of 50 GB/s)
};

// The fabric between nodes.
struct Fabric {
  enum class Kind { SingleSwitch, FatTree2, FatTree3 } kind = Kind::SingleSwitch;
  int nodes_per_leaf = 0;            // fat trees: nodes under one leaf switch
  int leaves_per_pod = 0;            // FatTree3: leaf switches per pod
  double oversubscription = 1;       // downlink : uplink bandwidth at each level above the leaf (>= 1)
  double switch_latency = 0;         // s per switch traversed
};
// "single_switch" | "fat_tree_2" | "fat_tree_3", as written in YAML.
std::string fabric_kind_name(Fabric::Kind kind);

// NCCL's per-step cost: the latency paid for each step of a ring (or level of
// a tree) on top of the links' own latency, e.g. kernel launch and protocol
// handshakes. Calibrated against nccl-tests.
struct CollectiveParams {
  double step_latency_intra = 0;     // s per ring step over NVLink
  double step_latency_inter = 0;     // s per ring step over the network
  double launch_latency = 0;         // s once per collective
};

struct Cluster {
  std::string name;
  int nodes = 1;
  int gpus_per_node = 1;
  DeviceProfile gpu;
  IntraNode intra;
  Nics nics;
  Fabric fabric;
  CollectiveParams collectives;
  std::string source;

  int gpus() const { return nodes * gpus_per_node; }
  // Bytes/s one node can push into the fabric (all NICs, per direction), efficiency applied.
  double node_injection_bandwidth() const { return nics.count * nics.bandwidth * nics.efficiency; }

  // The fat-tree geometry actually built for `nodes`. A cluster smaller than one leaf (or one
  // pod) gets a single, partly filled leaf (pod). nodes_per_leaf and leaves_per_pod keep the
  // values given, so a sweep that changes `nodes` later still sees the real switch geometry.
  // SingleSwitch: one "leaf" holding every node, one pod.
  int nodes_in_leaf() const;   // nodes under each leaf switch: min(nodes, nodes_per_leaf)
  int leaves() const;          // nodes / nodes_in_leaf()
  int leaves_in_pod() const;   // FatTree3: min(leaves(), leaves_per_pod); otherwise leaves()
  int pods() const;            // leaves() / leaves_in_pod()
};

// Device presets: a100-40gb, a100-80gb, h100-sxm, h200-sxm, v100-32gb, l4, ...
std::vector<std::string> device_names();
DeviceProfile device(const std::string& name);  // InputError on unknown name
// `gpu:` in a cluster: a preset name, or { preset: h100-sxm, gemm_efficiency: 0.6 }, or a full map.
DeviceProfile load_device(const Input& in);
// The same, but a map without `preset:` overrides `base` field by field (how a cluster preset's
// GPU is tuned: `gpu: {gemm_efficiency: 0.6}`).
DeviceProfile load_device(const Input& in, const DeviceProfile& base);

// Cluster presets: dgx-a100-ib200, dgx-h100-ib400, aws-p4de, aws-p5, eth-25g, eth-100g,
// tagc-2x1-1g, tagc-2x1-10g, tagc-2x1-25g, tagc-2x1-100g.
// A preset's node count is a default; scenarios usually override `nodes`.
std::vector<std::string> preset_names();
Cluster preset(const std::string& name);
// `cluster:` in a scenario: a preset name, or { preset: dgx-h100-ib400, nodes: 4, ... overrides },
// or a full description. Checks ranges (positive bandwidths, nodes divisible into leaves, ...).
Cluster load_cluster(const Input& in);
// Throws InputError "<what>: <field>: <problem>" for a cluster built in code. load_cluster runs
// the same checks but blames the YAML key (file:line) that caused the problem.
void validate(const Cluster& c, const std::string& what);

}  // namespace tagcsim::topologies
