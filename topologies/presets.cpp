// Device and cluster presets. Every number names its source in `source`: a datasheet, or an
// entry of validation/data/published_measurements.yaml (cited by its id), or says
// plainly that it is assumed. Efficiencies are derived as measured / peak, written out.
#include <fmt/format.h>

#include <utility>

#include "topologies/cluster.hpp"

namespace tagcsim::topologies {
namespace {

constexpr double GB = 1e9;
constexpr double TB = 1e12;
constexpr double TFLOPS = 1e12;
constexpr double GiB = 1073741824.0;
constexpr double Gbps = 1e9 / 8;  // bytes/s
constexpr double us = 1e-6;

// The published measurements behind the efficiencies (ids in published_measurements.yaml).
constexpr const char* kMamf =
    "stas00/ml-engineering compute/accelerator/README.md, Maximum Achievable Matmul FLOPS table";
constexpr const char* kStream =
    "Azure/AI-benchmarking-guide ND A100 v4 / ND H100 v5, HBM Bandwidth "
    "(STREAM triad; link-azure-hbm-stream)";

using DeviceTable = std::vector<std::pair<std::string, DeviceProfile>>;

const DeviceTable& device_table() {
  static const DeviceTable table = {
      {"a100-40gb",
       {"A100-SXM4-40GB", 312 * TFLOPS, 19.5 * TFLOPS, 156 * TFLOPS, 40 * GiB, 1.555 * TB, 0.675, 0.834, "device-a100-40gb",
        fmt::format("NVIDIA A100 datasheet (SXM4 40GB): bf16 312 TFLOP/s dense, TF32 156, FP32 19.5, "
                    "40 GB HBM2 (taken as 40 GiB, nvidia-smi 40960 MiB) at 1,555 GB/s. "
                    "Kernels are timed from the kernel profile device-a100-*gb (calibrate/profiles; docs/compute-model.md). "
                    "gemm_efficiency and memory_efficiency serve only the datasheet roofline, when the profile is "
                    "cleared: gemm_efficiency 0.675 is the former fit of a single training GEMM efficiency to "
                    "fms-fsdp / torchtitan throughput (the best bf16 matmul reaches 0.869 = 271.2 / 312, {}; "
                    "gemm-a100-sxm-mamf-bf16). memory_efficiency 0.834 = 1.70 / 2.039 TB/s, measured on "
                    "the 80GB part ({}); the same ratio is assumed for the 40GB part.",
                    kMamf, kStream)}},
      {"a100-80gb",
       {"A100-SXM4-80GB", 312 * TFLOPS, 19.5 * TFLOPS, 156 * TFLOPS, 80 * GiB, 2.039 * TB, 0.675, 0.834, "device-a100-80gb",
        fmt::format("NVIDIA A100 datasheet (SXM4 80GB): bf16 312 TFLOP/s dense, TF32 156, FP32 19.5, "
                    "80 GB HBM2e (taken as 80 GiB, nvidia-smi 81920 MiB) at 2,039 GB/s. "
                    "Kernels are timed from the kernel profile device-a100-*gb (calibrate/profiles; docs/compute-model.md). "
                    "gemm_efficiency and memory_efficiency serve only the datasheet roofline, when the profile is "
                    "cleared: gemm_efficiency 0.675 is the former fit of a single training GEMM efficiency to "
                    "fms-fsdp / torchtitan throughput (the best bf16 matmul reaches 0.869 = 271.2 / 312, {}; "
                    "gemm-a100-sxm-mamf-bf16). memory_efficiency 0.834 = 1.70 / 2.039 TB/s ({}).",
                    kMamf, kStream)}},
      {"h100-sxm",
       {"H100-SXM5-80GB", 989.4 * TFLOPS, 66.9 * TFLOPS, 494.7 * TFLOPS, 80 * GiB, 3.35 * TB, 0.455, 0.887, "device-h100-sxm",
        fmt::format("NVIDIA H100 datasheet (SXM5): bf16 989.4 TFLOP/s dense, TF32 494.7, FP32 66.9, "
                    "80 GB HBM3 (taken as 80 GiB) at 3.35 TB/s. Kernels are timed from the kernel profile "
                    "device-h100-sxm (calibrate/profiles; docs/compute-model.md); gemm_efficiency and "
                    "memory_efficiency serve only the datasheet roofline, when the profile is cleared: "
                    "gemm_efficiency 0.455 is the former fit of a single training GEMM efficiency to fms-fsdp "
                    "throughput (the best bf16 matmul reaches 0.803 = 794.5 / 989, {}; gemm-h100-sxm-mamf-bf16). "
                    "memory_efficiency 0.887 = 2.97 / 3.35 TB/s ({}).",
                    kMamf, kStream)}},
      {"h200-sxm",
       {"H200-SXM-141GB", 989.4 * TFLOPS, 66.9 * TFLOPS, 494.7 * TFLOPS, 141 * GB, 4.8 * TB, 0.455, 0.887, "device-h200-sxm",
        fmt::format("NVIDIA H200 datasheet (SXM): same compute as H100 SXM (bf16 989.4 TFLOP/s dense, "
                    "TF32 494.7, FP32 66.9), 141 GB HBM3e (decimal; nvidia-smi shows slightly more) at "
                    "4.8 TB/s. Kernels are timed from the kernel profile device-h200-sxm (H100's GEMM and "
                    "attention measurements, H200's own memory curve; docs/compute-model.md), not validated "
                    "against H200 FSDP throughput (none in our sources). For the roofline only: "
                    "gemm_efficiency 0.455 as for H100 SXM (best matmul 0.803, {}, 'H200 is the same'). memory_efficiency 0.887: the H100 STREAM ratio 2.97 / 3.35 "
                    "({}), assumed to carry over; no H200 STREAM measurement in our sources.",
                    kMamf, kStream)}},
      {"v100-32gb",
       {"V100-SXM2-32GB", 125 * TFLOPS, 15.7 * TFLOPS, 15.7 * TFLOPS, 32 * GiB, 900 * GB, 0.80, 0.834, "",
        "NVIDIA V100 datasheet (SXM2 32GB): 125 TFLOP/s tensor (fp16; V100 has no bf16, so the "
        "'bf16' rate is the fp16 tensor-core rate for fp16 mixed precision), FP32 15.7 TFLOP/s, no "
        "TF32 (TF32 rate set to FP32), 32 GB HBM2 (taken as 32 GiB) at 900 GB/s. gemm_efficiency "
        "0.80 and memory_efficiency 0.834 (the A100 STREAM ratio) are assumed: no V100 measurement "
        "in our sources."}},
      {"l4",
       {"L4-24GB", 121 * TFLOPS, 30.3 * TFLOPS, 60 * TFLOPS, 24 * GB, 300 * GB, 0.70, 0.85, "",
        "NVIDIA L4 datasheet: bf16 242 TFLOP/s with sparsity = 121 dense, TF32 120 sparse = 60 "
        "dense, FP32 30.3, 24 GB GDDR6 at 300 GB/s. gemm_efficiency 0.70 is assumed (lower than "
        "A100/H100 because the 72 W card throttles under sustained tensor load); "
        "memory_efficiency 0.85 assumed. No L4 measurement in our sources."}},
  };
  return table;
}

// Intra-node fabrics. NVLink efficiency is NCCL bus bandwidth / line rate, measured.
IntraNode nvlink3() { return {"nvswitch", 300 * GB, 0.5 * us, 0.78}; }
IntraNode nvlink4() { return {"nvswitch", 450 * GB, 0.5 * us, 0.805}; }
IntraNode pcie4() { return {"pcie", 31.5 * GB, 1.0 * us, 0.80}; }

constexpr const char* kNvlink3Src =
    "NVLink3 via NVSwitch: 600 GB/s bidirectional per GPU = 300 GB/s per direction (A100 datasheet); "
    "efficiency 0.78 = 234.89 / 300 GB/s all_reduce bus bandwidth, 8x A100, 16 GiB "
    "(link-nvlink3-a100-allreduce-16GiB, stas00/ml-engineering network/README.md).";
constexpr const char* kNvlink4Src =
    "NVLink4 via NVSwitch: 900 GB/s bidirectional per GPU = 450 GB/s per direction (H100 datasheet); "
    "efficiency 0.805 = mean of all_gather 361.4 and reduce_scatter 362.9 of 450 GB/s, the two "
    "FSDP collectives, 8x H200 (link-nvlink4-h200-ring-16GiB; all_reduce reaches 0.816, and the "
    "NCCL maintainers quote ~370 GB/s, link-nvlink4-nccl-effective).";
constexpr const char* kPcieSrc =
    "PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction (PCI-SIG); "
    "efficiency 0.80 assumed.";
constexpr const char* kLatencySrc =
    "Link latencies (NVLink/PCIe hop, NIC one way, switch) are assumed typical values, not from a "
    "source.";
constexpr const char* kCollSrc =
    "Collective step and launch latencies: provisional, to be fitted "
    "against nccl-tests";
// TCP payload per Ethernet frame at MTU 1500 with TCP timestamps: 1448 of 1538 bytes on the wire.
constexpr const char* kTcpSrc =
    "TCP (NCCL socket transport): efficiency 0.94 = 1448 / 1538 bytes, TCP payload per "
    "MTU-1500 Ethernet frame on the wire, a ceiling (a single NCCL socket may fall short of it at "
    "100 Gb/s, CPU-bound); to be fitted.";

Cluster make(std::string name, int nodes, int gpn, const std::string& gpu, IntraNode intra, Nics nics,
             Fabric fabric, CollectiveParams coll, std::string source) {
  Cluster c;
  c.name = std::move(name);
  c.nodes = nodes;
  c.gpus_per_node = gpn;
  c.gpu = device(gpu);
  c.intra = std::move(intra);
  c.nics = nics;
  c.fabric = fabric;
  c.collectives = coll;
  c.source = std::move(source);
  return c;
}

Fabric single_switch(double latency) { return {Fabric::Kind::SingleSwitch, 0, 0, 1, latency}; }

// Commodity Ethernet node: an HGX A100 8-GPU board (NVSwitch) with one Ethernet NIC and NCCL over
// TCP sockets. The same GPUs as dgx-a100-ib200, so comparing the presets isolates the network.
Cluster eth_node(const std::string& name, double gbps) {
  return make(name, 2, 8, "a100-80gb", nvlink3(), {1, gbps * Gbps, 10 * us, 0.94}, single_switch(1 * us),
              {0.6 * us, 20 * us, 10 * us},
              fmt::format("Commodity Ethernet cluster, chosen for this preset: 8x A100-SXM4-80GB (HGX "
                          "board) per node and one {:g} GbE NIC per node, nodes on one non-blocking "
                          "Ethernet switch. {} {} {} {}: inter-node step 20 us, launch 10 us (TCP "
                          "stack, tens of us).",
                          gbps, kNvlink3Src, kTcpSrc, kLatencySrc, kCollSrc));
}

// The TAGC paper's reference run: 2 nodes x 1 GPU (torchrun --nnodes 2 --nproc-per-node=1 in
// ipolyakov/TAGC README), over plain IP. The paper's GPU is not in our sources.
Cluster tagc_node(const std::string& name, double gbps) {
  return make(name, 2, 1, "a100-80gb", pcie4(), {1, gbps * Gbps, 10 * us, 0.94}, single_switch(1 * us),
              {2 * us, 20 * us, 10 * us},
              fmt::format("TAGC reference setup (arXiv 2504.05638; ipolyakov/TAGC README: torchrun "
                          "--nnodes 2 --nproc-per-node=1): 2 nodes x 1 GPU on {:g} Gb/s Ethernet. GPU "
                          "assumed: A100-SXM4-80GB (the paper's GPU is not in our sources). Network "
                          "path unknown; modelled as one switch. {} {} {} {}: inter-node step 20 us, "
                          "launch 10 us (TCP stack, tens of us).",
                          gbps, kPcieSrc, kTcpSrc, kLatencySrc, kCollSrc));
}

std::vector<Cluster> build_presets() {
  std::vector<Cluster> out;
  out.push_back(
      make("dgx-a100-ib200", 2, 8, "a100-80gb", nvlink3(), {8, 200 * Gbps, 1.5 * us, 0.96},
           {Fabric::Kind::FatTree2, 20, 20, 1, 0.13 * us}, {3.163 * us, 2 * us, 5 * us},
           fmt::format("NVIDIA DGX A100 datasheet: 8x A100-SXM4-80GB, 8x ConnectX-6 200 Gb/s HDR "
                       "InfiniBand (compute fabric). {} NIC efficiency 0.96 assumed by analogy with "
                       "ConnectX-7 (48 of 50 GB/s, link-cx7-ndr-per-nic). Fabric: DGX SuperPOD (A100) "
                       "reference architecture, rail-optimized 1:1 fat tree of 40-port HDR switches "
                       "(Quantum QM8700, 130 ns port to port per datasheet) in 20-node scalable units "
                       "(leaves of 20; leaves_per_pod 20 = k/2 if switched to fat_tree_3). {} Intra-node step latency "
                       "3.163 us fitted to nccl-a100-1n-mleng-allreduce (calibrate/profiles/nccl-a100-nvlink3.yaml; "
                       "one process driving 8 GPUs); inter-node step 2 us and launch 5 us provisional (no "
                       "published multi-node HDR table to fit).",
                       kNvlink3Src, kLatencySrc)));
  out.push_back(
      make("dgx-h100-ib400", 2, 8, "h100-sxm", nvlink4(), {8, 400 * Gbps, 1.5 * us, 0.97},
           {Fabric::Kind::FatTree2, 32, 32, 1, 0.3 * us}, {0.299 * us, 2 * us, 5 * us},
           fmt::format("NVIDIA DGX H100 datasheet: 8x H100-SXM5-80GB, 8x ConnectX-7 400 Gb/s NDR "
                       "InfiniBand (compute fabric). {} NIC efficiency 0.97 = 48.5 of 50 GB/s per NIC "
                       "(NCCL maintainer, NVIDIA/nccl-tests#267; link-cx7-ndr-per-nic). Fabric: DGX "
                       "SuperPOD (H100) reference architecture, rail-optimized 1:1 fat tree in 32-node "
                       "scalable units (leaves of 32). With 64-port NDR switches a 2-level fat tree holds "
                       "up to 64 leaves x 32 = 2048 nodes (one spine port per leaf), so fat_tree_2 covers "
                       "the 128- and 2048-node benches; leaves_per_pod 32 = k/2 of a k=64 fat tree, for "
                       "fat_tree_3 beyond that. Switch latency 0.3 us assumed. {} Intra-node step latency "
                       "0.299 us fitted to nccl-h100-1n-dgxc-allreduce (calibrate/profiles/nccl-h100-nvlink4.yaml); "
                       "inter-node step 2 us and launch 5 us provisional (no published multi-node NDR "
                       "table to fit).",
                       kNvlink4Src, kLatencySrc)));
  out.push_back(
      make("aws-p4de", 2, 8, "a100-80gb", nvlink3(), {4, 100 * Gbps, 5 * us, 0.6905}, single_switch(1 * us),
           {3.163 * us, 76.08 * us, 5 * us},
           fmt::format("AWS p4de.24xlarge: 8x A100-SXM4-80GB on NVSwitch, EFA v1 4x 100 Gb/s = 400 Gb/s "
                       "per instance (AWS instance table, as quoted in nccl-a100-2n-aws-p4de-efa-*). {} EFA "
                       "efficiency 0.6905 and inter-node step latency 76.08 us fitted to "
                       "nccl-a100-2n-aws-p4de-efa-allreduce (calibrate/profiles/nccl-a100-p4de-efa.yaml); "
                       "intra-node step 3.163 us as fitted for 8x A100; NIC latency 5 us assumed. "
                       "Fabric: AWS publishes no topology; EC2 UltraClusters are described as "
                       "non-blocking, so one non-blocking switch. {}",
                       kNvlink3Src, kLatencySrc)));
  out.push_back(
      make("aws-p5", 2, 8, "h100-sxm", nvlink4(), {32, 100 * Gbps, 3 * us, 0.90}, single_switch(1 * us),
           {0.299 * us, 25.45 * us, 5 * us},
           fmt::format("AWS p5.48xlarge: 8x H100-SXM5-80GB on NVSwitch, EFA v2 32x 100 Gb/s = 3200 Gb/s "
                       "per instance (AWS instance table, as quoted in nccl-h100-2n-aws-p5-efa-*). {} EFA "
                       "efficiency 0.90 and NIC latency 3 us assumed (the fit asks for more than line rate, "
                       "a sign of NVLS the model lacks; clamped, not used). Inter-node step latency "
                       "25.45 us fitted to nccl-h100-2n-aws-p5-efa-allreduce "
                       "(calibrate/profiles/nccl-h100-p5-efa.yaml); intra-node step 0.299 us as fitted "
                       "for 8x H100. Fabric: one non-blocking switch (no published topology). {}",
                       kNvlink4Src, kLatencySrc)));
  out.push_back(eth_node("eth-25g", 25));
  out.push_back(eth_node("eth-100g", 100));
  for (int g : {1, 10, 25, 100}) out.push_back(tagc_node(fmt::format("tagc-2x1-{}g", g), g));
  return out;
}

const std::vector<Cluster>& preset_table() {
  static const std::vector<Cluster> table = build_presets();
  return table;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::vector<std::string> device_names() {
  std::vector<std::string> out;
  for (const auto& [name, d] : device_table()) out.push_back(name);
  return out;
}

DeviceProfile device(const std::string& name) {
  for (const auto& [n, d] : device_table())
    if (n == name) return d;
  throw InputError(
      fmt::format("unknown device preset '{}'; expected one of: {}", name, join_names(device_names())));
}

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto& c : preset_table()) out.push_back(c.name);
  return out;
}

Cluster preset(const std::string& name) {
  for (const auto& c : preset_table())
    if (c.name == name) return c;
  throw InputError(
      fmt::format("unknown cluster preset '{}'; expected one of: {}", name, join_names(preset_names())));
}

}  // namespace tagcsim::topologies
