// Cluster presets. Every number names its source in `source`: a datasheet, or an entry of
// validation/data/published_measurements.yaml (cited by its id), or says plainly that it is
// assumed. Efficiencies are derived as measured / peak, written out. The GPUs they name are in
// devices.cpp.
#include <fmt/format.h>

#include <tuple>
#include <utility>

#include "topologies/cluster.hpp"
#include "topologies/preset_parts.hpp"

namespace tagcsim::topologies {
namespace detail {

// Intra-node fabrics. `efficiency` is NCCL's ring bus bandwidth / line rate, `nvls_efficiency` the
// NVLS rate / line rate (see kNvlink*Src); both fitted by `tagcsim calibrate` (docs/calibration.md).
IntraNode nvlink3() {
  IntraNode i{"nvswitch", 300 * GB, 0.5 * us, 0.8025};
  i.ll128_efficiency = 0.6741;
  i.step_latency = 0.09055 * us;  // fitted: intra_node.step_latency@nvlink3
  i.name = "nvlink3";
  return i;
}
IntraNode nvlink4() {
  IntraNode i{"nvswitch", 450 * GB, 0.5 * us, 0.8055};
  i.nvls_efficiency = 0.6771;
  i.nvls_tree_efficiency = 0.6197;
  i.name = "nvlink4";
  return i;
}
// H800: NVLink4 and its NVSwitches with 8 links a GPU, not 18: 400 GB/s bidirectional. NCCL's per-link
// rates and NVLS's share of the line are the same links', so NVLink4's fitted efficiencies carry.
IntraNode nvlink4_h800() {
  IntraNode i = nvlink4();
  i.bandwidth = 200 * GB;
  return i;
}
// GH200 quads (HPE Cray EX254n): no NVSwitch; each GPU's 18 NVLink4 links run 6 to each of the other
// three, so each pair has 150 GB/s a direction. The same links as NVLink4's, so its ring efficiency.
IntraNode nvlink4_mesh4() {
  IntraNode i = nvlink4();
  i.kind = "nvlink";
  return i;
}
IntraNode nvlink5() {
  IntraNode i{"nvswitch", 900 * GB, 0.5 * us, 0.8020};
  i.nvls_efficiency = std::round(nvlink4().nvls_efficiency * 0.74 / 0.85 * 1e4) / 1e4;  // to the fits' four digits
  i.nvls_tree_efficiency = std::round(nvlink4().nvls_tree_efficiency * 0.74 / 0.85 * 1e4) / 1e4;
  i.step_latency = 0.5835 * us;  // fitted: intra_node.step_latency@nvlink5
  i.name = "nvlink5";
  return i;
}
// An NVL72 rack's NVLink5: the HGX node's values, but for the NVLS tree that joins racks. Fitted on
// OCI's GB200 racks (S82: two and three racks, NVLS on, 4-8 GiB; each table's own fit 0.449 and 0.419,
// their geometric mean taken); held out, OCI's GB300 racks (S81) come within 4% (docs/calibration.md).
// The HGX value is NVLink4's fitted tree rate x NCCL's Blackwell/Hopper ratio, which no table of an
// 8-GPU NVLink5 node determines, so it stays.
IntraNode nvlink5_rack() {
  IntraNode i = nvlink5();
  i.nvls_tree_efficiency = 0.4337;
  return i;
}
IntraNode pcie4() {
  IntraNode i{"pcie", 31.5 * GB, 1.0 * us, 0.80};
  i.name = "pcie4";
  return i;
}

extern const char* const kNvlink3Src =
    "NVLink3 via NVSwitch: 600 GB/s bidirectional per GPU = 300 GB/s per direction (A100 datasheet). "
    "Ring efficiency 0.8025: prior 0.80, NCCL's own 20 of 25 GB/s per NVLink3 link (src/graph/topo.h "
    "SM80_NVLINK_BW), fitted to the two 8x A100 all_reduce sweeps (nccl-a100-1n-mleng-allreduce, 234.89 GB/s "
    "bus bandwidth at 16 GiB; nccl-a100-1n-azure-ndv4-allreduce, 231.58 at 8 GiB) and the p4de tables. "
    "LL128 efficiency 0.6741 (LL128 rings deliver 0.67 of what NCCL's tuner rates them, at 4-16 MiB in "
    "the A100 sweeps: ml-engineering, Azure ND A100 v4, OCI), prior 1; 0.09 us per step beyond NCCL's per-hop "
    "latency table (calibrate/profiles/nccl-model.yaml).";
extern const char* const kNvlink4Src =
    "NVLink4 via NVSwitch: 900 GB/s bidirectional per GPU = 450 GB/s per direction (H100 datasheet). "
    "Ring efficiency 0.8055: prior 0.824, NCCL's 20.6 of 25 GB/s per NVLink4 link (topo.h "
    "SM90_NVLINK_BW), fitted (the NVLS-off all_reduce of 4-8 H200, 363-366 GB/s, nccl-h200-*-mleng, and one "
    "8x H100 node's all_reduce, all_gather and reduce_scatter rings of 32 MiB-16 GiB, S111). "
    "NVLink SHARP efficiency 0.6771: an NVLS all-reduce moves S (k+1)/k per GPU; prior 0.686 from the "
    "NCCL maintainers' 480 GB/s bus bandwidth on 8 GPUs (algbw 274 GB/s x 9/8 / 450; NVIDIA/nccl-tests#212), "
    "fitted to the one-node H100/H200 NVLS tables (DGX H100, Azure ND H100 v5 / ND H200 v5, AWS p5). "
    "Inside an NVLS tree 0.6197, fitted to the two-node H100 tables (Dell, gj-aion, Nebius, AWS p5 EFA; "
    "prior: the one-node value, as NCCL's tuner rates both): a node with a parent splits each channel's "
    "warps four ways, not three (NCCL's all_reduce.h) (calibrate/profiles/nccl-model.yaml).";
constexpr const char* kNvlink4H800Src =
    "NVLink4 via NVSwitch with 8 links a GPU (H800): 400 GB/s bidirectional = 200 GB/s per direction "
    "(philisun.com, 'NVIDIA H800 vs H100'); NVLink4's fitted ring and NVLS efficiencies (the same links, "
    "fewer of them). Checked, not fitted: an 8x H800 NVLS all-reduce measured at 215 GB/s of bus "
    "bandwidth (NVIDIA/nccl#1374), where the model gives 14/9 x 200 x 0.6771 = 211 GB/s.";
constexpr const char* kNvlink5Src =
    "NVLink5 via NVSwitch: 1.8 TB/s bidirectional per GPU = 900 GB/s per direction (HGX B200 datasheet; 18 "
    "links). Ring efficiency 0.8020: prior 0.802, NCCL's own 40.1 of 50 GB/s per NVLink5 link (topo.h "
    "SM100_NVLINK_BW), fitted (the B200 tables: GCP A4, Lambda). NVLink SHARP efficiency 0.590 (0.540 in an "
    "NVLS tree) = NVLink4's fitted values x 0.74 / 0.85, the ratio NCCL's own tuner gives Blackwell's NVLS to Hopper's "
    "(src/graph/tuning.cc nvlsEfficiency, 2.28); no table determines it (two-node B200 runs are bound by "
    "their NICs). Step latency 0.58 us per step inside the node beyond NCCL's per-hop table (which NCCL "
    "keeps the same for every generation), fitted: both B200 tables with small sizes (Lambda's tree "
    "all-reduce, GKE's ring all-gather) run ~7 us over the H100 clusters' time at 8 B-256 KiB "
    "(calibrate/profiles/nccl-model.yaml).";
constexpr const char* kNvlink5RackSrc =
    "Across racks the NVLS tree runs at 0.4337 of NVLink5's rate, not the HGX node's 0.540: fitted on OCI's GB200 "
    "racks (S82, two and three racks, 4-8 GiB: each table's own fit 0.449 and 0.419, their geometric mean); held out, "
    "OCI's GB300 racks (S81, two racks) come within 2-6% (22-24% fast at 0.540).";
constexpr const char* kPcieSrc =
    "PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction (PCI-SIG); "
    "efficiency 0.80 assumed.";
extern const char* const kLatencySrc =
    "Link latencies (NVLink/PCIe hop, NIC one way, switch) are assumed typical values, not from a "
    "source.";
extern const char* const kCollSrc =
    "NCCL costs: NCCL's published latency table (tuning.cc, the newest release's unless `nccl: {version}` "
    "pins one) at scale 1, no launch latency beyond it, NCCL's per-step network cost for the host CPU "
    "(getNetOverhead); host launch per GPU 5.07 us + 0.300 us per channel on AMD hosts, 3.30 us + 0.033 us "
    "on Intel hosts (fitted to the single-process -g 8 tables: A100 on AMD, H100/H200 on Intel), ring step "
    "delay 0 (at its bound), tree (LL128 and Simple; LL forwards each line as it lands) and NVLS pipeline fill "
    "1.73 and 16 chunks (16 is the bound: NVLS yields to rings in the middle sizes), per Simple slice of a "
    "single-node ring step 5.06 us on NVLink3, 0.40 us on NVLink4, 0 on NVLink5 (the flag a sender waits for; NCCL's "
    "tuner leaves it out), fitted to every fitted nccl-tests table from data-independent priors "
    "(calibrate/profiles/nccl-model.yaml).";

// NCCL's costs as fitted to the shipped nccl-tests tables (calibrate/profiles/nccl-model.yaml). The host's
// launch costs are CPU time, fitted per host CPU; an Arm host (no table) takes Intel's, as NCCL treats it.
CollectiveParams nccl_costs(HostCpu cpu) {
  CollectiveParams p;
  p.latency_scale = 1.0;
  p.launch_latency = 0.0 * us;
  p.host_launch = (cpu == HostCpu::Amd ? 5.074 : 3.295) * us;
  p.host_launch_per_channel = (cpu == HostCpu::Amd ? 0.3004 : 0.0327) * us;
  p.ring_depth = 0;
  p.tree_depth = 1.725;
  p.nvls_depth = 16.000;
  p.nvls_chunk_overhead = 0 * us;
  p.slice_latency = 0;  // per NVLink generation: slice_latency_of
  return p;
}

// A single-node Simple ring's flag per slice, fitted per NVLink generation: the A100 rings of both
// `-g 8` tables pay 5.1 us, one H100 node's all-gather and reduce-scatter rings 0.4 us (S111; the
// NVLink4 all-reduce tables run NVLS, which has none), and no table has one NVLink5 node (0;
// CoreWeave's GB200 rack, not fitted, agrees: docs/calibration.md).
double slice_latency_of(const IntraNode& intra) {
  return intra.name == "nvlink3" ? 5.058 * us : intra.name == "nvlink4" ? 0.401 * us : 0.0;
}

// What one channel carries across the network, fitted per NVLink generation (a GPU generation's
// thread blocks and proxies): full H100 nodes run 2 channels a 400 Gb/s NIC at 20.06 GB/s each (the
// 4- and 8-node InfiniBand tables), B200 nodes' 16-channel rings at most 22.99; no A100 table
// reaches NCCL's own rating of a channel, 24 GB/s, which stays (docs/calibration.md).
double net_channel_rate_of(const IntraNode& intra) {
  return (intra.name == "nvlink4" ? 20.06 : intra.name == "nvlink5" ? 22.99 : 24.0) * 1e9;
}

Nics nics(int count, double gbps, double latency, const std::string& transport) {
  Nics n;
  n.count = count;
  n.bandwidth = gbps * Gbps;
  n.latency = latency;
  n.transport = load_transport(transport);
  n.efficiency = n.transport.efficiency;
  return n;
}

Cluster make(std::string name, int nodes, int gpn, const std::string& gpu, IntraNode intra, Nics nics,
             Fabric fabric, std::string source, HostCpu cpu) {
  Cluster c;
  c.name = std::move(name);
  c.nodes = nodes;
  c.gpus_per_node = gpn;
  c.host_cpu = cpu;
  c.gpu = device(gpu);
  c.intra = std::move(intra);
  c.nics = std::move(nics);
  c.fabric = fabric;
  c.collectives = nccl_costs(cpu);
  c.collectives.slice_latency = slice_latency_of(c.intra);
  c.collectives.net_channel_rate = net_channel_rate_of(c.intra);
  c.source = std::move(source);
  return c;
}

Fabric single_switch(double latency) { return {Fabric::Kind::SingleSwitch, 0, 0, 1, latency}; }
Fabric rail_fat_tree(int nodes_per_leaf, double latency) {
  Fabric f{Fabric::Kind::FatTree2, nodes_per_leaf, nodes_per_leaf, 1, latency};
  f.rail_optimized = true;
  return f;
}

std::string transport_src(const Nics& n) { return "Transport: " + n.transport.source; }

}  // namespace detail

namespace {

using namespace detail;

// Commodity Ethernet node: an HGX A100 8-GPU board (NVSwitch) with one Ethernet NIC and NCCL over
// TCP sockets. The same GPUs as dgx-a100-ib200, so comparing the presets isolates the network.
Cluster eth_node(const std::string& name, double gbps) {
  auto n = nics(1, gbps, 10 * us, "socket");
  return make(name, 2, 8, "a100-80gb", nvlink3(), n, single_switch(1 * us),
              fmt::format("Commodity Ethernet cluster, chosen for this preset: 8x A100-SXM4-80GB (HGX "
                          "board) per node and one {:g} GbE NIC per node, nodes on one non-blocking "
                          "Ethernet switch. {} {} {} {}",
                          gbps, kNvlink3Src, transport_src(n), kLatencySrc, kCollSrc));
}

// The TAGC paper's reference run: 2 nodes x 1 GPU (torchrun --nnodes 2 --nproc-per-node=1 in
// ipolyakov/TAGC README), over plain IP. The paper's GPU is not in our sources.
Cluster tagc_node(const std::string& name, double gbps) {
  auto n = nics(1, gbps, 10 * us, "socket");
  return make(name, 2, 1, "a100-80gb", pcie4(), n, single_switch(1 * us),
              fmt::format("TAGC reference setup (arXiv 2504.05638; ipolyakov/TAGC README: torchrun "
                          "--nnodes 2 --nproc-per-node=1): 2 nodes x 1 GPU on {:g} Gb/s Ethernet. GPU "
                          "assumed: A100-SXM4-80GB (the paper's GPU is not in our sources). Network "
                          "path unknown; modelled as one switch. {} {} {} {}",
                          gbps, kPcieSrc, transport_src(n), kLatencySrc, kCollSrc));
}

std::vector<Cluster> build_presets() {
  std::vector<Cluster> out;
  // Host CPUs decide NCCL's per-step network cost and LL's ceiling across nodes (cluster.hpp HostCpu).
  constexpr auto AMD = HostCpu::Amd;
  constexpr auto Intel = HostCpu::Intel;
  {
    auto n = nics(8, 200, 1.5 * us, "ib");
    out.push_back(make(
        "dgx-a100-ib200", 2, 8, "a100-80gb", nvlink3(), n, rail_fat_tree(20, 0.13 * us),
        fmt::format("NVIDIA DGX A100 datasheet: 8x A100-SXM4-80GB, 8x ConnectX-6 200 Gb/s HDR InfiniBand "
                    "(compute fabric), one per GPU, 2x AMD EPYC 7742. {} {} Fabric: DGX SuperPOD (A100) reference "
                    "architecture, rail-optimized 1:1 fat tree of 40-port HDR switches (Quantum QM8700, 130 ns port to "
                    "port per datasheet) in 20-node scalable units (one leaf per rail per unit). {} {}",
                    kNvlink3Src, transport_src(n), kLatencySrc, kCollSrc),
        AMD));
  }
  // DGX SuperPODs: one ConnectX-7 NDR NIC per GPU, rail-optimized in 32-node scalable units.
  for (const auto& [name, gpu, link, link_src, title] :
       {std::tuple{"dgx-h100-ib400", "h100-sxm", nvlink4(), kNvlink4Src,
                   "DGX H100 datasheet: 8x H100-SXM5-80GB, 2x Intel Xeon Platinum 8480C"},
        std::tuple{"dgx-h200-ib400", "h200-sxm", nvlink4(), kNvlink4Src,
                   "DGX H200 datasheet: 8x H200-SXM-141GB, 2x Intel Xeon Platinum 8480C"},
        std::tuple{"dgx-b200-ib400", "b200", nvlink5(), kNvlink5Src,
                   "DGX B200 datasheet: 8x B200 (180 GB), 2x Intel Xeon Platinum 8570"},
        std::tuple{"hgx-h800-ib400", "h800", nvlink4_h800(), kNvlink4H800Src,
                   "HGX H800 (8x H800-SXM5-80GB; hosts as DGX H100's, assumed), the network a DGX H100 "
                   "SuperPOD's, as DeepSeek-V3's report describes its H800 nodes (an InfiniBand NIC per GPU, "
                   "50 GB/s; arXiv 2412.19437)"}}) {
    auto n = nics(8, 400, 1.5 * us, "ib");
    out.push_back(make(
        name, 2, 8, gpu, link, n, rail_fat_tree(32, 0.3 * us),
        fmt::format("NVIDIA {}; 8x ConnectX-7 400 Gb/s NDR InfiniBand (compute fabric), one per GPU. {} {} Fabric: "
                    "DGX SuperPOD reference architecture, rail-optimized 1:1 fat tree in 32-node scalable units "
                    "(one leaf per rail per unit); with 64-port NDR switches a 2-level fat tree holds up to 2048 "
                    "nodes, so fat_tree_2 covers the 128- and 2048-node benches. Switch latency 0.3 us assumed. {} {}",
                    title, link_src, transport_src(n), kLatencySrc, kCollSrc),
        Intel));
  }
  {
    // Blackwell Ultra's nodes double each GPU's NIC: one ConnectX-8 at 800 Gb/s (XDR InfiniBand). The
    // InfiniBand transport's efficiency was fitted on 400 Gb/s NICs; no 800 Gb/s table is shipped.
    auto n = nics(8, 800, 1.5 * us, "ib");
    out.push_back(make(
        "dgx-b300-ib800", 2, 8, "b300", nvlink5(), n, rail_fat_tree(32, 0.3 * us),
        fmt::format("NVIDIA DGX B300 datasheet (as tabulated in aiwiki.ai 'NVIDIA DGX B300' and the DGX B300 User "
                    "Guide's photographs read by vengineer.hatenablog.com, Dec 2025): 8x B300 on NVLink5, 2x Intel "
                    "Xeon 6776P, 8x ConnectX-8 800 Gb/s (XDR InfiniBand or 800 GbE), one per GPU, on the GPU "
                    "board. {} {} Fabric: rail-optimized 1:1 fat tree in 32-node scalable units as DGX SuperPOD's "
                    "(B300's SuperPOD reference architecture not read). Not validated: no nccl-tests table of a "
                    "B300 node or of 800 Gb/s NICs is shipped, and the InfiniBand transport's efficiency (0.84 of "
                    "the line rate) was fitted on 400 Gb/s NICs. {} {}",
                    kNvlink5Src, transport_src(n), kLatencySrc, kCollSrc),
        Intel));
  }
  {
    auto n = nics(72, 800, 1.5 * us, "ib");
    out.push_back(make(
        "gb300-nvl72", 2, 72, "gb300", nvlink5_rack(), n, rail_fat_tree(32, 0.3 * us),
        fmt::format("NVIDIA GB300 NVL72: 72 Blackwell Ultra GPUs and 36 Grace CPUs in one NVLink5 domain (1.8 TB/s "
                    "bidirectional per GPU, 130 TB/s per rack; NVIDIA GB300 NVL72 product page as tabulated in "
                    "glennklockwood.com/garden/processors/B300: '72 ConnectX-8 NICs'); a node here is a rack, as "
                    "gb200-nvl72's. Compute fabric: one ConnectX-8 per GPU at 800 Gb/s, taken as InfiniBand; "
                    "rail-optimized 1:1 fat tree, 32 racks per leaf group assumed. Host CPU Grace (Arm), as "
                    "gb200-nvl72's. Validated, not fitted: OCI's GB300 all-reduces (S81: a tray, 8 and 64 GPUs of a rack, "
                    "two racks over RoCE; 4-16 GiB) come out -5%, +3%, -9% and -2% at 16 GiB (docs/calibration.md). "
                    "{} {} {} {} {}",
                    kNvlink5Src, kNvlink5RackSrc, transport_src(n), kLatencySrc, kCollSrc),
        HostCpu::Arm));
  }
  {
    // One NVLink domain of 72 GPUs is one node here: NCCL sees the rack's GPUs as peers on NVLink
    // (MNNVL), so a collective inside a rack never touches a NIC.
    auto n = nics(72, 400, 1.5 * us, "ib");
    out.push_back(make(
        "gb200-nvl72", 2, 72, "gb200", nvlink5_rack(), n, rail_fat_tree(32, 0.3 * us),
        fmt::format("NVIDIA GB200 NVL72: 72 GPUs and 36 Grace CPUs in one NVLink5 domain (NVLink Switch trays, "
                    "1.8 TB/s bidirectional per GPU, 130 TB/s per rack; NVIDIA GB200 NVL72 product page); a node "
                    "here is a rack. Compute fabric: 4 ConnectX-7 per 4-GPU compute tray, one per GPU, 186 GB per "
                    "GPU (mlcommons/inference_results_v6.1 closed/Crusoe/systems/GB200-NVL72_GB200-186GB_aarch64x16_"
                    "Dynamo.json), taken as 400 Gb/s InfiniBand (ConnectX-7's NDR rate); rail-optimized 1:1 fat "
                    "tree, 32 racks per leaf group assumed as DGX SuperPOD's. Host CPU Grace (Arm): NCCL's getNetOverhead charges Arm hosts 1 us "
                    "as Intel's (tuning.cc), and the host launch takes the Intel hosts' fitted values, assumed. "
                    "Validated, not fitted: CoreWeave's racks (S64: one, two and twenty, NVLS off) and OCI's (S82: a "
                    "tray, 8 GPUs, two and three racks, NVLS on), and one published figure, 811 GB/s of all-reduce bus "
                    "bandwidth on 8 GPUs of two compute trays over MNNVL (lixueduan.com, 'GB200 MNNVL nccl-test'), "
                    "each checked in docs/calibration.md. {} {} {} {} {}",
                    kNvlink5Src, kNvlink5RackSrc, transport_src(n), kLatencySrc, kCollSrc),
        HostCpu::Arm));
  }
  for (auto& c : hpc_presets()) out.push_back(std::move(c));
  {
    auto n = nics(8, 200, 1.5 * us, "ib");
    out.push_back(make(
        "azure-nd-a100-v4", 2, 8, "a100-80gb", nvlink3(), n, single_switch(0.13 * us),
        fmt::format("Azure ND A100 v4 (Microsoft Learn, NDm A100 v4 series, ND96amsr_A100_v4): 8x A100-SXM4-80GB on "
                    "NVLink3, 8x 200 Gb/s HDR InfiniBand, one per GPU; host CPU AMD EPYC 7V12 (Azure/AI-benchmarking-"
                    "guide Azure_Results/ND_A100_v4_results.md). {} {} Fabric: Azure describes a non-blocking fat tree "
                    "without its geometry: one non-blocking switch. {} {}",
                    kNvlink3Src, transport_src(n), kLatencySrc, kCollSrc),
        AMD));
  }
  for (const auto& [name, gpu, title] :
       {std::tuple{"azure-nd-h100-v5", "h100-sxm", "ND H100 v5 (Microsoft Learn, ND-H100-v5 series): 8x H100-SXM5-80GB"},
        std::tuple{"azure-nd-h200-v5", "h200-sxm", "ND H200 v5 (Microsoft Learn, ND-H200-v5 series): 8x H200-SXM-141GB"}}) {
    auto n = nics(8, 400, 1.5 * us, "ib");
    out.push_back(make(
        name, 2, 8, gpu, nvlink4(), n, single_switch(0.3 * us),
        fmt::format("Azure {} on NVLink4, 8x 400 Gb/s NVIDIA Quantum-2 ConnectX-7 InfiniBand, one per GPU, 3.2 Tb/s "
                    "per VM; host CPU Intel Xeon Platinum 8480C (Azure/AI-benchmarking-guide Azure_Results). {} {} "
                    "Fabric: Azure describes a non-blocking fat tree without its geometry: one non-blocking switch. {} {}",
                    title, kNvlink4Src, transport_src(n), kLatencySrc, kCollSrc),
        Intel));
  }
  {
    auto n = nics(4, 100, 5 * us, "efa");
    auto c = make(
        "aws-p4de", 2, 8, "a100-80gb", nvlink3(), n, single_switch(1 * us),
        fmt::format("AWS p4de.24xlarge: 8x A100-SXM4-80GB on NVSwitch, EFA v1 4x 100 Gb/s = 400 Gb/s per "
                    "instance (AWS instance table, as quoted in nccl-a100-2n-aws-p4de-efa-*), 2 GPUs per NIC, Intel "
                    "Xeon Platinum 8275CL (AWS P4 instance page). {} {} NCCL protocol pinned to Simple: aws-ofi-nccl "
                    "sets NCCL_PROTO=simple on p4d/p4de (src/platform-aws.c, force_proto_simple; LL/LL128 need "
                    "in-order delivery that EFA v1 does not give). Fabric: AWS publishes no topology; EC2 "
                    "UltraClusters are described as non-blocking, so one non-blocking switch. {} {}",
                    kNvlink3Src, transport_src(n), kLatencySrc, kCollSrc),
        Intel);
    c.nccl.protos = NcclPins::Simple;
    c.nccl.source = "aws-ofi-nccl sets NCCL_PROTO=simple on p4d/p4de";
    out.push_back(c);
  }
  for (const auto& [name, gpu, title] :
       {std::tuple{"aws-p5", "h100-sxm", "p5.48xlarge: 8x H100-SXM5-80GB"},
        std::tuple{"aws-p5e", "h200-sxm", "p5e.48xlarge: 8x H200-SXM-141GB"}}) {
    auto n = nics(32, 100, 3 * us, "efa");
    out.push_back(make(
        name, 2, 8, gpu, nvlink4(), n, single_switch(1 * us),
        fmt::format("AWS {} on NVSwitch, EFA v2 32x 100 Gb/s = 3200 Gb/s per instance (AWS instance table, as "
                    "quoted in nccl-h100-2n-aws-p5-efa-*), 4 NICs per GPU, 3rd-generation AMD EPYC (7R13) hosts "
                    "(AWS P5 instance page). {} {} Fabric: one non-blocking switch (no published topology). {} {}",
                    title, kNvlink4Src, transport_src(n), kLatencySrc, kCollSrc),
        AMD));
  }
  {
    auto n = nics(4, 200, 5 * us, "tcpx");
    auto c = make(
        "gcp-a3-high", 2, 8, "h100-sxm", nvlink4(), n, single_switch(1 * us),
        fmt::format("GCP a3-highgpu-8g (Google Cloud 'Networking and GPU machines'): 8x H100 80GB on "
                    "NVLink4, 4 GPU NICs of 200 Gb/s (4+1 NIC arrangement; 800 Gb/s for GPU traffic, 2 GPUs "
                    "per NIC) with GPUDirect-TCPX; Intel Sapphire Rapids hosts (A3 machine series). {} {} NCCL "
                    "pinned to ring / Simple, the settings Google documents for TCPX (GKE 'GPUDirect-TCPX' NCCL "
                    "environment: NCCL_ALGO=Ring, NCCL_PROTO=Simple; NCCL receives TCPX's unpacked buffers in its "
                    "Simple primitives only, src/device/prims_simple.h). Fabric: one non-blocking switch (no "
                    "published topology). {} {}",
                    kNvlink4Src, transport_src(n), kLatencySrc, kCollSrc),
        Intel);
    c.nccl.algos = NcclPins::Ring;
    c.nccl.protos = NcclPins::Simple;
    c.nccl.source = "Google's TCPX NCCL settings: NCCL_ALGO=Ring, NCCL_PROTO=Simple";
    out.push_back(c);
  }
  {
    auto n = nics(8, 200, 5 * us, "tcpxo");
    auto c = make(
        "gcp-a3-mega", 2, 8, "h100-sxm", nvlink4(), n, single_switch(1 * us),
        fmt::format("GCP a3-megagpu-8g (Google Cloud 'Networking and GPU machines'): 8x H100 80GB on "
                    "NVLink4, 8 GPU NICs of 200 Gb/s (8+1 NIC arrangement; 1,600 Gb/s for GPU traffic, one "
                    "per GPU) with GPUDirect-TCPXO; Intel Sapphire Rapids hosts (A3 machine series). {} {} NCCL "
                    "pinned as Google's TCPXO profile sets it (nccl-env-profile.sh: NCCL_ALGO=Ring,Tree, "
                    "NCCL_PROTO=Simple, NCCL_NVLS_ENABLE=0; Google's NeMo and GKE recipes for A3 Mega). Fabric: one "
                    "non-blocking switch (no published topology). {} {}",
                    kNvlink4Src, transport_src(n), kLatencySrc, kCollSrc),
        Intel);
    c.nccl.algos = NcclPins::Ring | NcclPins::Tree;
    c.nccl.protos = NcclPins::Simple;
    c.nccl.source = "Google's TCPXO NCCL profile: NCCL_ALGO=Ring,Tree, NCCL_PROTO=Simple, NCCL_NVLS_ENABLE=0";
    out.push_back(c);
  }
  // Google's RDMA machines: one ConnectX-7 per GPU over RoCE, rail-aligned.
  for (const auto& [name, gpu, link, link_src, title] :
       {std::tuple{"gcp-a3-ultra", "h200-sxm", nvlink4(), kNvlink4Src,
                   "GCP a3-ultragpu-8g (Google Cloud 'Networking and GPU machines'): 8x H200 141GB on NVLink4, 8x "
                   "ConnectX-7 NICs, one aligned with each GPU, 3,200 Gb/s of RDMA over Converged Ethernet; Intel "
                   "Emerald Rapids hosts (A3 Ultra)."},
        std::tuple{"gcp-a4-high", "b200", nvlink5(), kNvlink5Src,
                   "GCP a4-highgpu-8g (Google Cloud 'Networking and GPU machines'): 8x B200 on NVLink5, 8x "
                   "ConnectX-7 400 Gb/s NICs, one aligned with each GPU, 3,200 Gb/s of RDMA over Converged "
                   "Ethernet (Google's gIB NCCL plugin); Intel Emerald Rapids hosts (A4)."}}) {
    auto n = nics(8, 400, 1.5 * us, "roce");
    out.push_back(make(name, 2, 8, gpu, link, n, rail_fat_tree(32, 0.5 * us),
                       fmt::format("{} {} {} Fabric: rail-aligned as Google describes it; leaf size 32 and switch "
                                   "latency 0.5 us assumed. {} {}",
                                   title, link_src, transport_src(n), kLatencySrc, kCollSrc),
                       Intel));
  }
  {
    auto n = nics(16, 200, 1.5 * us, "roce");
    out.push_back(make(
        "oci-h100-roce", 2, 8, "h100-sxm", nvlink4(), n, single_switch(0.5 * us),
        fmt::format("OCI BM.GPU.H100.8 (Oracle Cloud GPU shapes): 8x H100 80GB on NVLink4, 16x 200 Gb/s "
                    "RDMA over Converged Ethernet (ConnectX-7), 3,200 Gb/s per node, 2 NICs per GPU, 2x Intel Xeon "
                    "Platinum 8480+. {} {} Fabric: OCI's RDMA cluster network is described as non-blocking: one "
                    "switch, 0.5 us assumed. {} {}",
                    kNvlink4Src, transport_src(n), kLatencySrc, kCollSrc),
        Intel));
  }
  for (const auto& [name, gpu, title] :
       {std::tuple{"nebius-h100-ib", "h100-sxm", "8x H100-SXM5-80GB"},
        std::tuple{"nebius-h200-ib", "h200-sxm", "8x H200-SXM-141GB"}}) {
    auto n = nics(8, 400, 1.5 * us, "ib");
    out.push_back(make(
        name, 2, 8, gpu, nvlink4(), n, single_switch(0.3 * us),
        fmt::format("Nebius AI Cloud 8-GPU InfiniBand node: {} on NVLink4, 8x ConnectX-7 400 Gb/s NDR InfiniBand, "
                    "one per GPU, 3.2 Tb/s per node (Nebius GPU cluster documentation; the same NICs are listed in "
                    "Nebius' MLCommons system descriptions, e.g. mlcommons/inference_results_v6.0 "
                    "closed/Nebius/systems/nebius_b200_n1.json). Host CPU assumed Intel Xeon (not checked). {} {} "
                    "Fabric: no published geometry: one non-blocking switch. {} {}",
                    title, kNvlink4Src, transport_src(n), kLatencySrc, kCollSrc),
        Intel));
  }
  out.push_back(eth_node("eth-25g", 25));
  out.push_back(eth_node("eth-100g", 100));
  for (int g : {1, 10, 25, 100}) out.push_back(tagc_node(fmt::format("tagc-2x1-{}g", g), g));
  return out;
}

const std::vector<Cluster>& preset_table() {
  static const std::vector<Cluster> table = build_presets();
  return table;
}

}  // namespace


std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto& c : preset_table()) out.push_back(c.name);
  return out;
}

const Aliases& preset_aliases() {
  static const Aliases aliases = {
      {"p4de", "aws-p4de"},        {"p4de.24xlarge", "aws-p4de"}, {"aws-p4de.24xlarge", "aws-p4de"},
      {"p5", "aws-p5"},            {"p5.48xlarge", "aws-p5"},     {"aws-p5.48xlarge", "aws-p5"},
      {"dgx-h100", "dgx-h100-ib400"}, {"dgx-a100", "dgx-a100-ib200"}, {"dgx-h200", "dgx-h200-ib400"},
      {"dgx-b200", "dgx-b200-ib400"}, {"dgx-b300", "dgx-b300-ib800"}, {"dgx-gb300", "gb300-nvl72"}, {"hgx-h800", "hgx-h800-ib400"}, {"a4-highgpu-8g", "gcp-a4-high"},
      {"nvl72", "gb200-nvl72"},      {"alps", "alps-gh200"},   {"cscs-alps", "alps-gh200"},
      {"perlmutter", "perlmutter-a100"}, {"nersc-perlmutter", "perlmutter-a100"}, {"juwels", "juwels-booster"}, {"leonardo", "leonardo-booster"},
      {"jupiter", "jupiter-booster"},
      {"dgx-gb200", "gb200-nvl72"},
      {"p5e", "aws-p5e"},          {"p5e.48xlarge", "aws-p5e"},   {"a3-highgpu-8g", "gcp-a3-high"},
      {"a3-megagpu-8g", "gcp-a3-mega"}, {"a3-ultragpu-8g", "gcp-a3-ultra"}, {"nd-h100-v5", "azure-nd-h100-v5"},
      {"nd-h200-v5", "azure-nd-h200-v5"}, {"nd-a100-v4", "azure-nd-a100-v4"},
  };
  return aliases;
}

std::string canonical_preset_name(const std::string& name) { return resolve_alias(name, preset_aliases()); }

Cluster preset(const std::string& name) {
  for (const auto& c : preset_table())
    if (c.name == canonical_preset_name(name)) return c;
  throw InputError(unknown_name("cluster preset", name, preset_names(), preset_aliases()));
}

}  // namespace tagcsim::topologies
