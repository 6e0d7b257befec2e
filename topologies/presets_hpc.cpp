// Cluster presets of HPC centres' GPU systems: nodes of four GPUs on an NVLink mesh (no NVSwitch, so
// no NVLS), one NIC per GPU, and a dragonfly between the nodes that is not modelled (one non-blocking
// switch). Every number names its source, as in presets.cpp, whose pieces these reuse.
#include <fmt/format.h>

#include <utility>

#include "topologies/preset_parts.hpp"

namespace tagcsim::topologies::detail {
namespace {

// Four A100s all-to-all: each A100's 12 NVLink3 links (300 GB/s a direction, A100 datasheet) split over
// its three peers, 4 a pair (100 GB/s a direction), as NVIDIA's 4-GPU A100 boards connect them. The same
// links as NVLink3's, so its fitted ring, LL128 and slice values.
IntraNode nvlink3_mesh4() {
  IntraNode i = nvlink3();
  i.kind = "nvlink";
  return i;
}

constexpr const char* kNvlink3MeshSrc =
    "NVLink3, four A100s all-to-all without an NVSwitch (so no NVLS): each A100's 12 links, 300 GB/s a "
    "direction (A100 datasheet), 4 to each of the other three, 100 GB/s a pair, as NVIDIA's 4-GPU A100 "
    "boards connect them (assumed: the centre's page says only that the GPUs are connected via NVLink3 "
    "to each other). NVLink3's fitted ring and LL128 efficiencies and slice latency (the same links).";

}  // namespace

std::vector<Cluster> hpc_presets() {
  std::vector<Cluster> out;
  {
    // Slingshot-11 through aws-ofi-nccl over libfabric's CXI provider: its transport at the priors, CSCS's
    // one table checking them from outside every fit (docs/calibration.md).
    auto n = nics(4, 200, 2 * us, "slingshot");
    auto c = make(
        "alps-gh200", 2, 4, "gh200", nvlink4_mesh4(), n, single_switch(0.35 * us),
        fmt::format("CSCS Alps GH200 node (HPE Cray EX254n; eth-cscs/cscs-docs docs/alps/hardware.md and "
                    "docs/images/alps/gh200-schematic.svg @80abed1): four GH200 superchips (96 GB HBM3 GPUs, Grace "
                    "hosts), their GPUs all-to-all on NVLink4 with 6 links a pair (450 GB/s a direction per GPU, 150 "
                    "a pair; no NVSwitch, so no NVLS), and four HPE Slingshot-11 NICs of 200 Gb/s (25 GB/s), one per "
                    "GH200. {} NCCL reaches Slingshot through the aws-ofi-nccl plugin on libfabric's CXI provider: "
                    "the slingshot transport profile, at its data-independent priors (no Slingshot table is fitted), "
                    "and a 2 us NIC latency (HPE's Slingshot-11 latency class, assumed, not fitted). NCCL "
                    "pinned to NCCL_PROTO=^LL128, the environment CSCS documents for Slingshot "
                    "(docs/software/communication/nccl_env_vars: 'LL128 ... typically performs worse on "
                    "Slingshot'). Host CPU Grace (Arm): NCCL's getNetOverhead charges it 1 us, and the host launch "
                    "takes the Intel hosts' fitted values, assumed. Fabric: Slingshot's dragonfly is not modelled: "
                    "one non-blocking switch, 0.35 us assumed (at 512 nodes a published all-reduce runs at half the "
                    "bandwidth of 4-256, S110). Checked, not fitted: CSCS's all-reduce table of 2 nodes x 4 GH200 "
                    "and its series on 2 to 512 nodes (docs/calibration.md). {} {} {}",
                    kNvlink4Src, transport_src(n), kLatencySrc, kCollSrc),
        HostCpu::Arm);
    c.nccl.protos = NcclPins::LL | NcclPins::Simple;
    c.nccl.source = "CSCS's NCCL environment for Slingshot: NCCL_PROTO=^LL128";
    out.push_back(c);
  }
  {
    // NERSC Perlmutter: A100 quads on Slingshot-11, NCCL through aws-ofi-nccl as on Alps.
    auto n = nics(4, 200, 2 * us, "slingshot");
    out.push_back(make(
        "perlmutter-a100", 2, 4, "a100-40gb", nvlink3_mesh4(), n, single_switch(0.35 * us),
        fmt::format("NERSC Perlmutter GPU node (docs.nersc.gov/systems/perlmutter/architecture, 'System "
                    "Specifications' and 'Interconnect'): 1,536 nodes of 1x AMD EPYC 7763, 4x NVIDIA A100 (40GB) and "
                    "4x HPE Slingshot 11 (Cassini NICs), and 256 more with A100 (80GB) (`gpu: a100-80gb`). {} Four "
                    "Slingshot-11 NICs of 200 Gb/s (25 GB/s), one per GPU. {} NCCL reaches Slingshot through the "
                    "aws-ofi-nccl plugin on libfabric's CXI provider, as on CSCS Alps: the slingshot transport "
                    "profile at its data-independent priors (no Slingshot table is fitted), and a 2 us NIC latency "
                    "(HPE's Slingshot-11 latency class, assumed). NCCL's protocols are not pinned: NERSC's nccl-plugin "
                    "module sets NCCL_NET_GDR_LEVEL=PHB and NCCL_CROSS_NIC=1 and no protocol (S109's log; CSCS pins "
                    "NCCL_PROTO=^LL128 on the same fabric; `nccl: {{proto: \"^ll128\"}}` does the same here). Host "
                    "CPU AMD EPYC 7763. Fabric: the 3-hop dragonfly is not modelled: one non-blocking switch, 0.35 us "
                    "assumed. Validated blind on one 2-node all-reduce table (S109, NCCL 2.21.5 through aws-ofi-nccl "
                    "1.6.0), not fitted: the model is 49% fast at 1 MiB and up there, the run reaching 0.74 of the "
                    "NICs' line rate (docs/calibration.md). {} {}",
                    kNvlink3MeshSrc, transport_src(n), kLatencySrc, kCollSrc),
        HostCpu::Amd));
  }
  {
    // JSC JUWELS Booster: A100 quads on four HDR200 InfiniBand rails.
    auto n = nics(4, 200, 1.5 * us, "ib");
    out.push_back(make(
        "juwels-booster", 2, 4, "a100-40gb", nvlink3_mesh4(), n, single_switch(0.3 * us),
        fmt::format("JSC JUWELS Booster compute node (apps.fz-juelich.de/jsc/hps/juwels/booster-overview.html, "
                    "'Node Configuration'): 936 nodes of 2x AMD EPYC 7402, 4x NVIDIA A100 Tensor Core GPU with 40 "
                    "GB 'connected via NVLink3 to each other', and 4x Mellanox HDR200 InfiniBand ConnectX-6 (200 "
                    "Gbit/s each), one per GPU. {} {} Host CPU AMD EPYC 7402. Fabric: DragonFly+ of cells of 48 "
                    "nodes, each cell a full two-level fat tree (10 leaf and 10 spine switches, 40 Tbit/s of "
                    "bisection); the links between cells are not modelled: one non-blocking switch, 0.3 us assumed, "
                    "which fits jobs of up to 48 nodes (192 GPUs) best. Not validated: no JUWELS nccl-tests table "
                    "is shipped. {} {}",
                    kNvlink3MeshSrc, transport_src(n), kLatencySrc, kCollSrc),
        HostCpu::Amd));
  }
  {
    // CINECA Leonardo Booster: quads of the custom 64 GB A100 on four HDR100 InfiniBand ports.
    auto n = nics(4, 100, 1.5 * us, "ib");
    out.push_back(make(
        "leonardo-booster", 2, 4, "a100-64gb", nvlink3_mesh4(), n, single_switch(0.3 * us),
        fmt::format("CINECA Leonardo Booster node (leonardo-supercomputer.cineca.eu/hpc-system; the LEONARDO User "
                    "Guide, 'Booster'): 3,456 nodes of 1x Intel Xeon Platinum 8358 (32 cores), 4x NVIDIA custom A100 "
                    "SXM4 64 GB ('64GB HBM2e NVLink 3.0 (200GB/s)': the a100-64gb preset) and '2 x dual port HDR100 per "
                    "node' ('400 Gbps aggregated'): four InfiniBand ports of 100 Gb/s, read as one per GPU. {} {} Host "
                    "CPU Intel. Fabric: Dragonfly+ of cells, each a non-blocking two-level fat tree, 18 links between "
                    "any two cells, adaptive routing (the User Guide, 'Network'); the links between cells are not "
                    "modelled: one non-blocking switch, 0.3 us assumed. Not validated: no Leonardo nccl-tests table is "
                    "shipped; Modalities' FSDP2 sweep of Sept 2025 on 4-128 of these GPUs (S89) checks it from outside "
                    "every fit. {} {}",
                    kNvlink3MeshSrc, transport_src(n), kLatencySrc, kCollSrc),
        HostCpu::Intel));
  }
  {
    // JSC JUPITER Booster: GH200 quads, as Alps's, on four NDR200 InfiniBand rails.
    auto n = nics(4, 200, 1.5 * us, "ib");
    out.push_back(make(
        "jupiter-booster", 2, 4, "gh200", nvlink4_mesh4(), n, single_switch(0.3 * us),
        fmt::format("JSC JUPITER Booster node (apps.fz-juelich.de/jsc/hps/jupiter/configuration.html, 'JUPITER "
                    "Booster Node Design'): about 6,000 nodes of 4x NVIDIA GH200 (Hopper GPU with 96 GB HBM3 at 4 "
                    "TB/s, the gh200 preset; Grace host), 'NVLink 4 GPU-to-GPU links, 300 GB/s between pairs of GPUs "
                    "(150 GB/s per direction)', and 4x InfiniBand NDR200 (ConnectX-7), 200 Gb/s each, one per GPU. "
                    "{} {} The page gives the superchip a TDP of 680 W, where CSCS's Alps can configure up to 1,000 "
                    "W: a power limit is not modelled (docs/validation.md), so both run at the GH200 preset's rate. "
                    "Host CPU Grace (Arm): NCCL's getNetOverhead charges it 1 us, and the host launch takes the "
                    "Intel hosts' fitted values, assumed. Fabric: Dragonfly+ of groups of 240 nodes (15 L1 and 16 L2 "
                    "switches a group), not modelled: one non-blocking switch, 0.3 us assumed. Not validated: no "
                    "JUPITER nccl-tests table is shipped. {} {}",
                    kNvlink4Src, transport_src(n), kLatencySrc, kCollSrc),
        HostCpu::Arm));
  }
  return out;
}

}  // namespace tagcsim::topologies::detail
