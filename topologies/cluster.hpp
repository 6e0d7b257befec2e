// Cluster descriptions: nodes of GPUs, the fabric inside a node, the NICs,
// and the fabric between nodes.
//
// A cluster comes from YAML or a preset name. Every preset number says where it
// comes from (a datasheet or a publication) in `source`.
#pragma once

#include "common/input.hpp"
#include "topologies/stragglers.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tagcsim::topologies {

// One GPU model. Peak rates are dense (no sparsity), per GPU.
struct DeviceProfile {
  std::string name;                  // "H100-SXM"
  double peak_flops_bf16 = 0;        // FLOP/s
  double peak_flops_fp32 = 0;        // FLOP/s (non-tensor-core fp32; TF32 is separate)
  double peak_flops_tf32 = 0;        // FLOP/s
  double memory_bytes = 0;           // HBM capacity as the driver gives it to a process (torch total_memory)
  double memory_bandwidth = 0;       // bytes/s, datasheet
  double gemm_efficiency = 0.7;      // achieved / peak for large GEMMs (from published GEMM rates)
  double memory_efficiency = 0.85;   // achieved / datasheet HBM bandwidth for streaming kernels
  // The kernel profile that times this GPU's kernels: a name in calibrate/profiles
  // ("device-h100-sxm") or a path to one (docs/compute-model.md). Empty: the datasheet roofline
  // above (gemm_efficiency, memory_efficiency).
  std::string profile;
  std::string source;
  int sm = 80;                       // compute capability x 10 (A100 80, H100 90): picks NCCL's per-generation tables
  // A PCIe card (A100 PCIe, H100 PCIe and NVL, L4): its NVLink, if any, is a bridge to one other card,
  // so a node of more than two sits on PCIe, not on an NVSwitch (the scenario warns otherwise).
  bool pcie_card = false;
};

// The fabric inside one node. `bandwidth` is per GPU, per direction.
struct IntraNode {
  // nvswitch: every GPU's links go to switches, so any group of a node's GPUs has all of them.
  // nvlink: point-to-point links, a full mesh (HGX 4-GPU boards, GH200 quads, NVLink bridges):
  // each pair has bandwidth / (GPUs - 1), and a group of k of the node's GPUs only the k - 1 pairs
  // among them; no switch, so no NVLS. pcie: through the host's PCIe switches.
  std::string kind = "nvswitch";     // nvswitch | nvlink | pcie
  double bandwidth = 0;              // bytes/s per GPU per direction, all its links (H100 NVLink4: 450e9)
  bool mesh() const { return kind == "nvlink"; }  // point-to-point links, no switch (so no NVLS)
  // What a group of k GPUs of a node with gpus_per_node GPUs can use per GPU per direction.
  double group_bandwidth(int k, int gpus_per_node) const {
    if (!mesh() || gpus_per_node <= 2 || k >= gpus_per_node) return bandwidth;
    return bandwidth * double(std::max(k, 2) - 1) / double(gpus_per_node - 1);
  }
  double latency = 0;                // s per hop
  double efficiency = 0.8;           // NCCL ring bus bandwidth / line rate (NCCL counts 20.6 of 25 GB/s per NVLink4)
  // NVLink SHARP (NVSwitch multicast and in-switch reduction, H100/H200): the per-GPU rate of an NVLS
  // all-reduce's NVLink traffic / line rate; 0 = no NVLS. An NVLS all-reduce moves S (k+1)/k per GPU.
  double nvls_efficiency = 0;
  // The same rate inside an NVLS tree (NVLS in each node, a tree of nodes): a node with a parent
  // splits each channel's warps four ways (scatter, gather, reduce-and-send, receive-and-multicast)
  // where one node splits them three ways (NCCL's all_reduce.h), and NCCL's tuner caps the NVLS
  // tree per channel on its own (perChMaxNVLSTreeBws). 0 = as nvls_efficiency.
  double nvls_tree_efficiency = 0;
  double nvls_tree_rate_fraction() const { return nvls_tree_efficiency > 0 ? nvls_tree_efficiency : nvls_efficiency; }
  // LL128 rings' delivered NVLink rate / what NCCL's tuner expects of them (its per-channel LL128
  // rate); 1 = as the tuner says.
  double ll128_efficiency = 1;
  // s per step inside the node beyond NCCL's per-hop latency table (which NCCL keeps the same for
  // every NVLink generation); fitted per generation (calibrate/params.cpp). Presets only: a cluster
  // without NCCL's table (latency_scale 0) takes `latency` per hop instead.
  double step_latency = 0;
  std::string name;                  // generation ("nvlink4"): fitted efficiencies are shared by name
};

// How NCCL moves bytes between nodes: one profile per fabric kind (calibrate/profiles/transport-*.yaml).
struct Transport {
  std::string name;                  // profile name, "" for none (a hand-built cluster)
  std::string kind;                  // ib | roce | efa | tcpx | tcpxo | slingshot | socket
  double latency = 0;                // s added to every network step (NCCL's net `latency` property); Simple
                                     // pays it twice (its flush), as in NCCL's tuning model
  double efficiency = 0.9;           // achievable / line rate of one NIC
  double overhead = 0;               // s the proxy spends posting each network step (NCCL_NET_OVERHEAD; x3
                                     // for Simple): every step of a ring that crosses nodes pays at least this
  std::string source;
};
// The transport profile `name` from the shipped profiles (calibrate/profiles/transport-<name>.yaml), or
// from a file path (ending in .yaml). InputError, naming file:line and the field, when one is missing.
Transport load_transport(const std::string& name_or_path);
Transport load_transport(const Input& in);   // `transport:` in a cluster: a name, a path, or a map
std::vector<std::string> transport_names();  // the shipped profiles
// Why the published tables say the model misses on a transport kind ("tcpx", "tcpxo"), for the
// reports to print beside a prediction across nodes (how much: collective_held_out); "" otherwise.
std::string transport_caveat(const std::string& kind);
// How the collective model did on published nccl-tests tables it was not fitted to, for clusters
// connected like `connection` (connection_key), as `tagcsim calibrate validate --write-held-out`
// wrote it into calibrate/profiles/collective-held-out.yaml; "" when it has no line.
std::string collective_held_out(const std::string& connection);
// The most nodes (an NVL72 cluster: racks) one of those tables spans, across nodes; 0 when none. A
// cluster past it runs rings longer than any published table checks.
int collective_held_out_largest_nodes(const std::string& connection);
// Such a file: its lines and largest node counts by connection. InputError at file:line for an
// unknown connection or format, or a node count below 2.
struct CollectiveHeldOut {
  std::map<std::string, std::string> lines;
  std::map<std::string, int> largest_nodes;
};
CollectiveHeldOut load_collective_held_out(const std::string& path);

// The NICs of one node. `bandwidth` is per NIC, per direction.
//
// NICs are rails: NCCL sends a GPU's inter-node traffic through the NIC nearest to it, so GPU i of
// a node uses rail i * rails / gpus_per_node. With fewer NICs than GPUs, GPUs share a NIC
// (aws-p4de: 2 GPUs per NIC); with more, each GPU owns count / gpus_per_node NICs (aws-p5: 4).
struct Nics {
  int count = 0;                     // per node (0 only for a single-node cluster)
  double bandwidth = 0;              // bytes/s per NIC per direction (400 Gb/s = 50e9)
  double latency = 0;                // s, NIC + cable, one way
  double efficiency = 0.9;           // achievable / line rate (CX-7: 48-49 of 50 GB/s); the transport's by default
  Transport transport;               // per-message cost and default efficiency
  int rails = 0;                     // NIC groups; 0 = gcd(count, gpus_per_node): one per GPU or per NIC
};

// The fabric between nodes.
struct Fabric {
  enum class Kind { SingleSwitch, FatTree2, FatTree3 } kind = Kind::SingleSwitch;
  int nodes_per_leaf = 0;            // fat trees: nodes under one leaf switch
  int leaves_per_pod = 0;            // FatTree3: leaf switches per pod
  double oversubscription = 1;       // downlink : uplink bandwidth at each level above the leaf (>= 1)
  double switch_latency = 0;         // s per switch traversed
  // Rail-optimized (DGX SuperPOD, most GPU clouds): NIC r of every node of a leaf group plugs into
  // that group's leaf switch r, so a leaf group is `rails` switches, one per rail, each with its own
  // uplink. Otherwise all NICs of a node share one leaf switch and its uplink.
  bool rail_optimized = false;
};
// "single_switch" | "fat_tree_2" | "fat_tree_3", as written in YAML.
std::string fabric_kind_name(Fabric::Kind kind);

// NCCL's costs beyond the links' own bandwidth and latency (sim/collective.hpp has the model).
// A default-constructed set is latency-free (every hand-computed test starts from it); the presets
// carry NCCL's published latency table (latency_scale 1) and the values fitted by `tagcsim calibrate`.
struct CollectiveParams {
  double step_latency_intra = 0;     // s per step inside a node, on top of NCCL's per-hop latency
  double step_latency_inter = 0;     // s per step between nodes, on top of NCCL's and the transport's
  double launch_latency = 0;         // s once per collective
  double latency_scale = 0;          // x NCCL's base and per-hop latencies (src/graph/tuning.cc); 0 = none
  double host_launch = 0;            // s of CPU time to launch one GPU's kernel: a process driving k GPUs
                                     // (nccl-tests -g k) cannot run collectives faster than k of them
  double host_launch_per_channel = 0;  // s more per channel (NCCL prepares a work descriptor for each)
  // Pipeline fill: a chunked pipeline ends some chunk-times after its bandwidth term (NCCL's chunk
  // sizes per algorithm and protocol; one chunk-time = chunk / per-channel rate of the slowest link).
  double ring_depth = 0;             // chunk-times each ring step after the first starts late (a slice)
  double tree_depth = 0;             // chunk-times a tree's pipeline ends late (up the chain and back)
  double nvls_depth = 0;             // chunk-times an NVLS pipeline ends late
  double nvls_chunk_overhead = 0;    // s per NVLS chunk of every channel: small chunks lose bandwidth
  // s per Simple slice on every ring step: the receiver's flag that its buffer is free, polled by
  // the sender before each slice (two slices per chunk, a chunk per step of each loop).
  double slice_latency = 0;
  // bytes/s one channel carries across the network: a channel is one thread block feeding one
  // proxy, so a node's traffic leaves no faster than its channels carry it, whatever its NICs
  // could take (two channels a NIC on a full H100 node: docs/calibration.md). 0: no ceiling.
  double net_channel_rate = 0;
};

// One rule of a tuner plugin's file in the format of NCCL's example tuner plugin
// (plugins/tuner/example, NCCL_TUNER_CONFIG_FILE): a collective of type `op` whose buffer (NCCL's
// nBytes: an all-gather's output, a reduce-scatter's input) is within [min_bytes, max_bytes], on a
// communicator of `nodes` nodes and `ranks` ranks (-1: any), runs `algo` x `proto` on `channels`
// channels (-1: as NCCL picks). The first rule that matches and may run decides.
struct NcclTunerRule {
  std::string op;                    // allreduce, allgather, reducescatter, broadcast or reduce
  double min_bytes = 0, max_bytes = 0;
  unsigned algo = 0, proto = 0;      // one NcclPins::Algo bit, one NcclPins::Proto bit
  int channels = -1, nodes = -1, ranks = -1;
  bool never = false;                // matches no collective tagcsim runs (numPipeOps > 1, registered buffers)
  int line = 0;                      // in the file
};
// The rules of such a file, in order; InputError "FILE:LINE: ..." for a line it cannot take.
std::vector<NcclTunerRule> read_nccl_tuner_config(const std::string& path);

// NCCL_ALGO / NCCL_PROTO / channel pins (`nccl:` in a cluster). Masks of allowed choices, 0 = any.
struct NcclPins {
  enum Algo : unsigned { Ring = 1, Tree = 2, Nvls = 4, NvlsTree = 8, Pat = 16 };
  static constexpr unsigned kAllAlgos = Ring | Tree | Nvls | NvlsTree | Pat;
  enum Proto : unsigned { LL = 1, LL128 = 2, Simple = 4 };
  unsigned algos = 0;
  unsigned protos = 0;
  int channels = 0;                  // 0: as NCCL picks from the topology
  // The NCCL release (2.18.5 -> 21805; 0 = the newest the model knows): NCCL's defaults changed between
  // releases (LL's bandwidth ceiling on Hopper, NVLS's latency), and a table that states its release is
  // modelled with that release's constants (sim/collective.cpp).
  int version = 0;
  std::string source;                // why (e.g. "aws-ofi-nccl sets NCCL_PROTO=simple on p4d")
  // A tuner plugin's rules (`tuner_config:`, NCCL_TUNER_CONFIG_FILE), applied before NCCL's own choice.
  std::string tuner_config;          // the file, as resolved
  std::vector<NcclTunerRule> tuner_rules;
};
// "2.18.5" -> 21805, "2.27" -> 22700; InputError naming the key otherwise.
int parse_nccl_version_key(const Input& in);
std::string format_nccl_version(int code);           // 21805 -> "2.18.5"

// The host CPU, as NCCL sees it: its default per-step network cost (src/graph/tuning.cc getNetOverhead:
// 1 us on Intel, 2 us on AMD, 1 us otherwise) and, across nodes, LL's bandwidth ceiling (llMaxBws: the
// Intel row, or the AMD row) depend on it.
enum class HostCpu { Intel, Amd, Arm };
const char* to_string(HostCpu cpu);

struct Cluster {
  std::string name;
  int nodes = 1;
  int gpus_per_node = 1;
  HostCpu host_cpu = HostCpu::Intel;  // NCCL treats any CPU it does not know as it treats Intel
  DeviceProfile gpu;
  IntraNode intra;
  Nics nics;
  Fabric fabric;
  CollectiveParams collectives;
  NcclPins nccl;
  Stragglers stragglers;  // GPUs slower than the rest (none unless a scenario asks)
  std::string source;

  int gpus() const { return nodes * gpus_per_node; }
  // The pace of the job's GPU work: its slowest GPU's speed as a fraction of nominal (1: none slower).
  double slowest_gpu_speed() const { return topologies::slowest_gpu_speed(stragglers, gpus()); }
  // Bytes/s one node can push into the fabric (all NICs, per direction), efficiency applied.
  double node_injection_bandwidth() const { return nics.count * nics.bandwidth * nics.efficiency; }

  // Rails: NIC groups, one per GPU when there are at least as many NICs as GPUs.
  int rails() const;                       // nics.rails, else gcd(nics.count, gpus_per_node), >= 1
  int rail_of_gpu(int local_gpu) const;    // local GPU index -> its rail
  // Bytes/s of one rail (its NICs, per direction, efficiency applied).
  double rail_bandwidth() const { return node_injection_bandwidth() / rails(); }
  // Rails touched by local GPUs [first, first + count).
  int rails_of_gpus(int first, int count) const;

  // The fat-tree geometry actually built for `nodes`. A cluster smaller than one leaf (or one
  // pod) gets a single, partly filled leaf (pod); nodes that do not fill the last leaf (pod) leave
  // it partly filled, with the full switch's uplinks. nodes_per_leaf and leaves_per_pod keep the
  // values given, so a sweep that changes `nodes` later still sees the real switch geometry.
  // SingleSwitch: one "leaf" holding every node, one pod.
  int nodes_in_leaf() const;       // nodes under each full leaf switch: min(nodes, nodes_per_leaf)
  int leaves() const;              // ceil(nodes / nodes_in_leaf())
  int nodes_in_last_leaf() const;  // nodes_in_leaf(), or fewer when the last leaf is partly filled
  int leaves_in_pod() const;       // FatTree3: min(leaves(), leaves_per_pod); otherwise leaves()
  int pods() const;                // ceil(leaves() / leaves_in_pod())
};

// What the collective model's held-out errors are kept by (collective_held_out): across nodes the
// transport's kind ("ib"); inside one node "one_node_" and the NVLink generation ("one_node_nvlink4").
std::string connection_key(const Cluster& c);
// Of a connection key: whether its tables cross nodes (not one_node_*), and what a node is called in
// it, "node", or "rack" where the node is an NVL72 rack (as connection_key names it).
bool connection_across_nodes(const std::string& connection);
std::string connection_node_word(const std::string& connection);
// The same in words: "over ib", "on one node, nvlink4".
std::string connection_text(const Cluster& c);

// Device presets: a100-40gb, a100-80gb, h100-sxm, h200-sxm, v100-32gb, l4, ...
std::vector<std::string> device_names();
const Aliases& device_aliases();  // "h100" for h100-sxm, ...; device() takes them too
DeviceProfile device(const std::string& name);  // InputError on unknown name
// `gpu:` in a cluster: a preset name, or { preset: h100-sxm, gemm_efficiency: 0.6 }, or a full map.
DeviceProfile load_device(const Input& in);
// The same, but a map without `preset:` overrides `base` field by field (how a cluster preset's
// GPU is tuned: `gpu: {gemm_efficiency: 0.6}`).
DeviceProfile load_device(const Input& in, const DeviceProfile& base);

// Cluster presets: dgx-a100-ib200, dgx-h100-ib400, dgx-h200-ib400, azure-nd-a100-v4, azure-nd-h100-v5,
// azure-nd-h200-v5, aws-p4de, aws-p5, aws-p5e, gcp-a3-high (TCPX), gcp-a3-mega (TCPXO), gcp-a3-ultra (RoCE),
// oci-h100-roce, nebius-h100-ib, nebius-h200-ib, dgx-b200-ib400, gcp-a4-high (B200, RoCE), gb200-nvl72 (a rack per
// node), eth-25g, eth-100g,
// tagc-2x1-1g, -10g, -25g, -100g.
// A preset's node count is a default; scenarios usually override `nodes`.
std::vector<std::string> preset_names();
const Aliases& preset_aliases();  // "p4de" for aws-p4de, "dgx-h100" for dgx-h100-ib400, ...; preset() takes them too
Cluster preset(const std::string& name);
// A preset's own name for `name` (itself, or what the alias stands for).
std::string canonical_device_name(const std::string& name);
std::string canonical_preset_name(const std::string& name);

// The word NCCL_ALGO / NCCL_PROTO take for each pin bit, as tagcsim writes them.
struct NcclWord {
  unsigned bit;
  const char* word;
};
inline constexpr NcclWord kNcclAlgoWords[] = {{NcclPins::Ring, "ring"},          {NcclPins::Tree, "tree"},
                                              {NcclPins::Nvls, "nvls"},          {NcclPins::NvlsTree, "nvls_tree"},
                                              {NcclPins::Pat, "pat"}};
inline constexpr NcclWord kNcclProtoWords[] = {
    {NcclPins::LL, "ll"}, {NcclPins::LL128, "ll128"}, {NcclPins::Simple, "simple"}};
// The words of a mask's bits (all the table's with mask ~0u), in the table's order.
template <std::size_t N>
std::vector<std::string> nccl_words(unsigned mask, const NcclWord (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& [bit, word] : table)
    if (mask & bit) out.emplace_back(word);
  return out;
}
// A word of kNcclAlgoWords (and NCCL's spelling "NVLSTree"), any case; 0 when unknown.
unsigned parse_nccl_algo(std::string_view word);
unsigned parse_nccl_proto(std::string_view word);   // a word of kNcclProtoWords, any case
// `nccl:` in a cluster: {algo: ring | [ring, tree] | "^nvls", proto: ..., channels: N}.
NcclPins load_nccl_pins(const Input& in);
std::string describe(const NcclPins& pins);          // "algo ring,tree; proto simple", "" when free
// `cluster:` in a scenario: a preset name, or { preset: dgx-h100-ib400, nodes: 4, ... overrides },
// or { file: box.yaml, ... overrides } (a cluster file, e.g. `tagcsim calibrate box`'s, relative to the
// file naming it), or a full description. Checks ranges (positive bandwidths, nodes divisible into leaves, ...).
Cluster load_cluster(const Input& in);
const std::vector<std::string>& cluster_keys();  // the keys load_cluster takes (docs/scenarios.md lists them)
// Throws InputError "<what>: <field>: <problem>" for a cluster built in code. load_cluster runs
// the same checks but blames the YAML key (file:line) that caused the problem.
void validate(const Cluster& c, const std::string& what);

}  // namespace tagcsim::topologies
