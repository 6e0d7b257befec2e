// GPU presets. Every number names its source in `source`: a datasheet, or an entry of
// validation/data/published_measurements.yaml (cited by its id), or says plainly that it is
// assumed. Efficiencies are derived as measured / peak, written out. Cluster presets, which name
// these, are in presets.cpp.
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "topologies/cluster.hpp"

namespace tagcsim::topologies {
namespace {

constexpr double GB = 1e9;
constexpr double TB = 1e12;
constexpr double TFLOPS = 1e12;
constexpr double GiB = 1073741824.0;

// The published measurements behind the efficiencies (ids in published_measurements.yaml).
constexpr const char* kMamf =
    "stas00/ml-engineering compute/accelerator/README.md, Maximum Achievable Matmul FLOPS table";
// Capacity is what the driver gives a process (cudaMemGetInfo's total, torch.cuda's total_memory):
// what PyTorch's caching allocator and the CUDA context share, a little below nvidia-smi's total.
constexpr const char* kCapacity =
    "capacity as the CUDA driver reports it to a process (torch.cuda.get_device_properties().total_memory, "
    "the 'total capacity' of PyTorch's out-of-memory message), not the datasheet's";

constexpr const char* kStream =
    "Azure/AI-benchmarking-guide ND A100 v4 / ND H100 v5, HBM Bandwidth "
    "(STREAM triad; link-azure-hbm-stream)";

using DeviceTable = std::vector<std::pair<std::string, DeviceProfile>>;

// Compute capability and form factor, from the preset's name.
DeviceTable with_sm(DeviceTable table) {
  // Compute capability (NVIDIA CUDA GPUs list): A100 8.0, H100 (SXM5, PCIe, NVL)/H200/H800/GH200 9.0, B200/GB200 10.0,
  // B300/GB300 10.3, V100 7.0, L4 8.9.
  for (auto& [name, d] : table) {
    auto starts = [&name = name](const char* prefix) { return name.rfind(prefix, 0) == 0; };
    d.sm = starts("h1") || starts("h2") || starts("h8") || starts("gh2") ? 90
           : starts("b2") || starts("gb2")                               ? 100
           : starts("b3") || starts("gb3")                               ? 103
           : starts("v100")                                              ? 70
           : name == "l4"                                                ? 89
                                                                         : 80;
    d.pcie_card = name.find("pcie") != std::string::npos || name == "h100-nvl" || name == "l4";
  }
  return table;
}

const DeviceTable& device_table() {
  static const DeviceTable table = with_sm({
      {"a100-40gb",
       {"A100-SXM4-40GB", 312 * TFLOPS, 19.5 * TFLOPS, 156 * TFLOPS, 39.5 * GiB, 1.555 * TB, 0.675, 0.834, "device-a100-40gb",
        fmt::format("NVIDIA A100 datasheet (SXM4 40GB): bf16 312 TFLOP/s dense, TF32 156, FP32 19.5, "
                    "40 GB HBM2 at 1,555 GB/s; 39.5 GiB: {} (published out-of-memory messages on A100 40GB: "
                    "39.50 GiB, TianheWu/CoSeR#10, 2025; 39.59 GiB with older drivers, raoyongming/DenseCLIP#52; "
                    "nvidia-smi shows 40960 MiB, modal-labs/modal-client#2797). "
                    "Kernels are timed from the kernel profile device-a100-*gb (calibrate/profiles; docs/compute-model.md). "
                    "gemm_efficiency and memory_efficiency serve only the datasheet roofline, when the profile is "
                    "cleared: gemm_efficiency 0.675 is the former fit of a single training GEMM efficiency to "
                    "fms-fsdp / torchtitan throughput (the best bf16 matmul reaches 0.869 = 271.2 / 312, {}; "
                    "gemm-a100-sxm-mamf-bf16). memory_efficiency 0.834 = 1.70 / 2.039 TB/s, measured on "
                    "the 80GB part ({}); the same ratio is assumed for the 40GB part.",
                    kCapacity, kMamf, kStream)}},
      {"a100-80gb",
       {"A100-SXM4-80GB", 312 * TFLOPS, 19.5 * TFLOPS, 156 * TFLOPS, 79.25 * GiB, 2.039 * TB, 0.675, 0.834, "device-a100-80gb",
        fmt::format("NVIDIA A100 datasheet (SXM4 80GB): bf16 312 TFLOP/s dense, TF32 156, FP32 19.5, "
                    "80 GB HBM2e at 2,039 GB/s; 79.25 GiB: {} (a published out-of-memory message on A100 80GB, "
                    "levihsu/OOTDiffusion#235; nvidia-smi shows 81920 MiB, modal-labs/modal-client#2797). "
                    "Kernels are timed from the kernel profile device-a100-*gb (calibrate/profiles; docs/compute-model.md). "
                    "gemm_efficiency and memory_efficiency serve only the datasheet roofline, when the profile is "
                    "cleared: gemm_efficiency 0.675 is the former fit of a single training GEMM efficiency to "
                    "fms-fsdp / torchtitan throughput (the best bf16 matmul reaches 0.869 = 271.2 / 312, {}; "
                    "gemm-a100-sxm-mamf-bf16). memory_efficiency 0.834 = 1.70 / 2.039 TB/s ({}).",
                    kCapacity, kMamf, kStream)}},
      {"a100-64gb",
       {"A100-SXM-64GB", 312 * TFLOPS, 19.5 * TFLOPS, 156 * TFLOPS, 68099571712.0, 1.631 * TB, 0.675, 0.834,
        "device-a100-80gb",
        fmt::format("CINECA Leonardo Booster's custom A100 (leonardo-supercomputer.cineca.eu/hpc-system: 'four NVIDIA "
                    "A100 SXM4 64GB GPUs' a node, 'NVIDIA custom Ampere A100 GPU 64 GB'; the LEONARDO User Guide: '64GB "
                    "HBM2e'): the A100's GA100 and rates, bf16 312 TFLOP/s dense, TF32 156, FP32 19.5 (A100 datasheet). "
                    "68,099,571,712 bytes (63.42 GiB): {} (a PyTorch out-of-memory message published from a Leonardo "
                    "Booster job, 'total: 68099571712'). Memory bandwidth 1,631 GB/s, assumed: no published figure; 64 "
                    "GB is four 16 GB HBM2e stacks where the 80GB part has five on a 5,120-bit bus at 2,039 GB/s, so a "
                    "4,096-bit bus at the same pin rate (4/5 x 2,039). Kernels are timed from the A100 80GB profile "
                    "(device-a100-80gb, the same HBM2e), its memory-bound kernels at 1,631 / 2,039 of its rate, at the "
                    "A100-SXM4-80GB's fitted scale (the A100 rows on this part, S89, are predicted with it). CINECA's "
                    "FP64 peak, 18.75 TFLOP/s a GPU against the datasheet's 19.5, hints at lower sustained clocks, "
                    "which are not modelled. For the roofline only: gemm_efficiency and memory_efficiency as A100 "
                    "SXM4's.",
                    kCapacity)}},
      {"a100-pcie-40gb",
       {"A100-PCIe-40GB", 312 * TFLOPS, 19.5 * TFLOPS, 156 * TFLOPS, 39.5 * GiB, 1.555 * TB, 0.675, 0.834, "device-a100-40gb",
        fmt::format("NVIDIA A100 datasheet (PCIe 40GB): the SXM4 part's GA100 (108 SMs) and rates, bf16 312 TFLOP/s "
                    "dense, TF32 156, FP32 19.5, 40 GB HBM2 at 1,555 GB/s, at 250 W; NVLink only through a bridge "
                    "to one other card, PCIe 4.0 x16 to the rest. 39.5 GiB as the SXM4 40GB part (the same memory; "
                    "nvidia-smi shows 40960 MiB on both). Kernels are timed from the A100 40GB profile "
                    "(device-a100-40gb also serves it: no PCIe A100 kernel profile is published), at the "
                    "A100-SXM4-40GB's fitted scale (no PCIe A100 FSDP row has been fitted). Checked, not applied: "
                    "mamf-finder's best bf16 matmul on A100 PCIe, 252.9 TFLOP/s, is 0.933x the SXM4's 271.2 ({}; "
                    "gemm-a100-pcie-mamf-bf16): the card sustains lower clocks under tensor-core load than the "
                    "400 W SXM4, which the SXM4's scale does not give it, so read its matmul time as up to 7% short. "
                    "For the roofline only: gemm_efficiency and memory_efficiency as A100 SXM4's.",
                    kMamf)}},
      {"a100-pcie-80gb",
       {"A100-PCIe-80GB", 312 * TFLOPS, 19.5 * TFLOPS, 156 * TFLOPS, 79.25 * GiB, 1.935 * TB, 0.675, 0.834, "device-a100-80gb",
        fmt::format("NVIDIA A100 datasheet (PCIe 80GB): the SXM4 part's GA100 (108 SMs) and rates, bf16 312 TFLOP/s "
                    "dense, TF32 156, FP32 19.5, 80 GB HBM2e at 1,935 GB/s, at 300 W; NVLink only through a bridge "
                    "to one other card, PCIe 4.0 x16 to the rest. 79.25 GiB as the SXM4 80GB part (the same memory; "
                    "nvidia-smi shows 81920 MiB on both). Kernels are timed from the A100 80GB profile "
                    "(device-a100-80gb also serves it), its memory-bound kernels at 1,935 / 2,039 of the SXM4's "
                    "rate, at the A100-SXM4-80GB's fitted scale (no PCIe A100 FSDP row has been fitted). Checked, not "
                    "applied: mamf-finder's best bf16 matmul on A100 PCIe, 252.9 TFLOP/s, is 0.933x the SXM4's 271.2 "
                    "({}; gemm-a100-pcie-mamf-bf16): read its matmul time as up to 7% short. For the roofline only: "
                    "gemm_efficiency and memory_efficiency as A100 SXM4's.",
                    kMamf)}},
      {"h100-sxm",
       {"H100-SXM5-80GB", 989.4 * TFLOPS, 66.9 * TFLOPS, 494.7 * TFLOPS, 79.11 * GiB, 3.35 * TB, 0.455, 0.887, "device-h100-sxm",
        fmt::format("NVIDIA H100 datasheet (SXM5): bf16 989.4 TFLOP/s dense, TF32 494.7, FP32 66.9, "
                    "80 GB HBM3 at 3.35 TB/s; 79.11 GiB: {} (a published out-of-memory message on H100 80GB, "
                    "vllm-project/vllm#27508; nvidia-smi shows 81559 MiB, huggingface/text-embeddings-inference#350). "
                    "Kernels are timed from the kernel profile "
                    "device-h100-sxm (calibrate/profiles; docs/compute-model.md); gemm_efficiency and "
                    "memory_efficiency serve only the datasheet roofline, when the profile is cleared: "
                    "gemm_efficiency 0.455 is the former fit of a single training GEMM efficiency to fms-fsdp "
                    "throughput (the best bf16 matmul reaches 0.803 = 794.5 / 989, {}; gemm-h100-sxm-mamf-bf16). "
                    "memory_efficiency 0.887 = 2.97 / 3.35 TB/s ({}).",
                    kCapacity, kMamf, kStream)}},
      {"h800",
       {"H800-SXM5-80GB", 989.4 * TFLOPS, 66.9 * TFLOPS, 494.7 * TFLOPS, 79.11 * GiB, 3.35 * TB, 0.455, 0.887, "device-h100-sxm",
        fmt::format("NVIDIA H800 SXM5: the H100 SXM5's GH100 die, clocks, 80 GB HBM3 at 3.35 TB/s and 700 W (bf16 989.4 "
                    "TFLOP/s dense, TF32 494.7, FP32 66.9: the H100 datasheet's), with NVLink cut to 400 GB/s "
                    "bidirectional (8 links, 200 GB/s a direction; the node's, set by the cluster preset) and FP64 to 1 "
                    "TFLOP/s, which training does not use (philisun.com, 'NVIDIA H800 vs H100'; DeepSeek-V3's "
                    "report measures 160 GB/s of NVLink between H800s, arXiv 2412.19437). 79.11 GiB as H100 80GB "
                    "(the same memory; no H800 out-of-memory message in our sources). Kernels are timed from the H100 "
                    "profile (device-h100-sxm also serves H800: no H800 kernel measurement is published), at "
                    "the H100's fitted scale (the same die and power; no H800 FSDP row has been fitted). {}",
                    kCapacity)}},
      {"h100-pcie",
       {"H100-PCIe-80GB", 756.5 * TFLOPS, 51 * TFLOPS, 378 * TFLOPS, 79.11 * GiB, 2.0 * TB, 0.455, 0.887, "device-h100-sxm",
        "NVIDIA H100 datasheet (PCIe): bf16 1,513 TFLOP/s with sparsity = 756.5 dense, TF32 756 sparse = 378 dense, "
        "FP32 51; 80 GB HBM2e at 2.0 TB/s; 114 SMs (the SXM5 has 132), 300-350 W; NVLink only through a bridge to "
        "one other card (600 GB/s both directions), PCIe 5.0 x16 (128 GB/s both directions) to the rest. 79.11 GiB "
        "as H100 SXM5 80GB (nvidia-smi shows 81559 MiB on both, published nvidia-smi outputs of H100 PCIe). "
        "Kernels are timed from the H100 SXM profile (device-h100-sxm also serves it: no H100 PCIe kernel "
        "measurement is in our sources), its tensor-core kernels at 756.5 / 989.4 of the SXM5's rate (the wave "
        "count still of 132 SMs) and its memory-bound kernels at 2.0 / 3.35, at the H100 SXM5's fitted scale (no "
        "H100 PCIe FSDP row has been fitted; a 350 W card may sustain less of its datasheet peak than the 500-700 W "
        "SXM5s the scale was fitted on). For the roofline only: gemm_efficiency and memory_efficiency as H100 "
        "SXM's."}},
      {"h100-nvl",
       {"H100-NVL-94GB", 835.5 * TFLOPS, 60 * TFLOPS, 417.5 * TFLOPS, 93.05 * GiB, 3.9 * TB, 0.455, 0.887, "device-h100-sxm",
        "NVIDIA H100 datasheet (H100 NVL): bf16 1,671 TFLOP/s with sparsity = 835.5 dense, TF32 835 sparse = 417.5 "
        "dense, FP32 60; 94 GB HBM3 at 3.9 TB/s; 132 SMs at a lower clock than the SXM5's, 350-400 W "
        "(configurable); a PCIe card bridged by NVLink to one other (600 GB/s both directions), PCIe 5.0 x16 to the "
        "rest. 93.05 GiB: nvidia-smi's 95830 MiB (published nvidia-smi outputs of H100 NVL) less the 550 MiB the "
        "driver keeps on H100 80GB (81559 MiB shown, 79.11 GiB given to a process), assumed the same; no H100 NVL "
        "out-of-memory message in our sources. Kernels are timed from the H100 SXM profile (device-h100-sxm also "
        "serves it), its tensor-core kernels at 835.5 / 989.4 of the SXM5's rate and its memory-bound kernels at "
        "3.9 / 3.35, at the H100 SXM5's fitted scale (no H100 NVL FSDP row has been fitted). For the roofline only: "
        "gemm_efficiency and memory_efficiency as H100 SXM's."}},
      {"h200-sxm",
       {"H200-SXM-141GB", 989.4 * TFLOPS, 66.9 * TFLOPS, 494.7 * TFLOPS, 139.80 * GiB, 4.8 * TB, 0.455, 0.887, "device-h200-sxm",
        fmt::format("NVIDIA H200 datasheet (SXM): same compute as H100 SXM (bf16 989.4 TFLOP/s dense, "
                    "TF32 494.7, FP32 66.9), 141 GB HBM3e at 4.8 TB/s; 139.80 GiB: {}, measured on our H200 "
                    "(calibrate/profiles/measured/h200-2026-12-04: torch 2.11, driver 580.159.04; nvidia-smi "
                    "shows 143771 MiB). Kernels are timed from the kernel profile device-h200-sxm (H100's GEMM and "
                    "attention measurements, H200's own memory curve; docs/compute-model.md), its training scale "
                    "fitted to two H200 FSDP sources (Trainy's 32-64 GPUs, S60; our one-GPU steps, S63; "
                    "docs/validation.md). For the roofline only: "
                    "gemm_efficiency 0.455 as for H100 SXM (best matmul 0.803, {}, 'H200 is the same'). memory_efficiency 0.887: the H100 STREAM ratio 2.97 / 3.35 "
                    "({}), assumed to carry over; no H200 STREAM measurement in our sources.",
                    kCapacity, kMamf, kStream)}},
      {"gh200",
       {"GH200-96GB", 989.4 * TFLOPS, 66.9 * TFLOPS, 494.7 * TFLOPS, 94.0 * GiB, 4.0 * TB, 0.455, 0.887, "device-h200-sxm",
        fmt::format("NVIDIA GH200 Grace Hopper Superchip datasheet, the GPU of the 96 GB HBM3 version: the H100's GH100 "
                    "compute (bf16 989.4 TFLOP/s dense, TF32 494.7, FP32 66.9), 96 GB HBM3 at 4.0 TB/s, on NVLink-C2C to "
                    "a Grace CPU; NVLink4 18 links, 900 GB/s bidirectional. 94.0 GiB: the HBM a process can use as CSCS "
                    "draws it for its Alps nodes ('~94 GB' of GPU memory per GH200; eth-cscs/cscs-docs "
                    "docs/images/alps/gh200-schematic.svg @80abed1), not a driver-reported capacity. The 'GH200 120GB' "
                    "and 'GH200 480GB' of nvidia-smi are this GPU with 120 or 480 GB of the CPU's LPDDR5X. Kernels are "
                    "timed from the H200 profile (device-h200-sxm also serves GH200: the same die, and its memory curve "
                    "measured on an HBM3e part, scaled to 4.0 TB/s), at the H200's fitted scale (no GH200 FSDP row has "
                    "been fitted). Checked, not fitted: mamf-finder's best bf16 matmul on GH200, 828.6 TFLOP/s, is 1.043x "
                    "H100 SXM's 794.5, and H200 is the same as H100 there ({}; gemm-gh200-sxm-mamf-bf16): the module's "
                    "power budget (configurable to 1,000 W for CPU, GPU and memory together, the datasheet) sustains "
                    "higher clocks, which the H200's scale does not give it.",
                    kMamf)}},
      {"b200",
       {"B200-SXM-180GB", 2250 * TFLOPS, 80 * TFLOPS, 1100 * TFLOPS, 178.35 * GiB, 8 * TB, 0.455, 0.887, "device-b200",
        fmt::format("NVIDIA HGX B200 datasheet, 1,000 W configuration, per GPU (as tabulated in glennklockwood.com/garden/"
        "processors/B200): bf16 2,250 TFLOP/s dense, TF32 1,100, FP32 80; 180 GB HBM3e (1.44 TB per 8-GPU "
        "board) at 8 TB/s; 148 SMs. 178.35 GiB: {} (cudaGetDeviceProperties' totalGlobalMem printed in "
        "pytorch/ao#4002; nvidia-smi shows 183359 MiB, NVIDIA/TensorRT-LLM#10278). Kernels are timed from the kernel profile device-b200 (published B200 "
        "GEMM, FlashAttention-2 and -4 and bandwidth measurements; docs/compute-model.md), its training scale "
        "Blackwell's (GB200's two sources): one dense FSDP run (S73: torchtitan's Llama 3 8B with SDPA's flash "
        "backend on B200, May 2025) is one source, which fits no device alone; "
        "the power-limited S59 rows are listed, not counted, and a mixture of experts' (S72) counted, not fitted "
        "(docs/validation.md). For the roofline only: gemm_efficiency 0.455 and "
        "memory_efficiency 0.887, H100 SXM's, assumed to carry over.", kCapacity)}},
      {"gb200",
       {"GB200-186GB", 2500 * TFLOPS, 80 * TFLOPS, 1250 * TFLOPS, 186 * GB, 8 * TB, 0.455, 0.887, "device-b200",
        "NVIDIA GB200 NVL72 product page, per rack, divided by its 72 GPUs (NVIDIA lists the tensor rates "
        "with sparsity; halved here): bf16 360 PFLOP/s -> 2,500 TFLOP/s dense per GPU, TF32 180 -> 1,250; "
        "13.4 TB HBM3e -> 186 GB per GPU (a datasheet figure: no driver-reported capacity in our sources) at 576 TB/s -> 8 TB/s; the B200 die at up to 1,200 W beside a Grace "
        "CPU. FP32 80 TFLOP/s: B200's, assumed. Kernels are timed from the kernel profile device-b200 (B200 "
        "measurements at 1,000 W; no GB200 kernel measurement is in it), its tensor-core kernels at 2500 / "
        "2250 of the B200's rate, at GB200's own fitted training scale (since stop 53: ten dense FSDP rows of "
        "two sources, S88 and S90; docs/validation.md). Checked, not fitted: mamf-finder's best bf16 matmul "
        "on GB200, 1,822 TFLOP/s, is 1.044x the B200's 1,745 (stas00/ml-engineering, Maximum Achievable "
        "Matmul FLOPS table; gemm-gb200-mamf-bf16-4096x9728x2048), and the two fits put GB200's tensor-core "
        "work at 1.046x the B200's. For the roofline only: gemm_efficiency 0.455 and "
        "memory_efficiency 0.887, H100 SXM's, assumed to carry over."}},
      {"b300",
       {"B300-SXM-288GB", 2250 * TFLOPS, 75 * TFLOPS, 1100 * TFLOPS, 267.88 * GiB, 8 * TB, 0.455, 0.887, "device-b200",
        fmt::format("NVIDIA HGX / DGX B300 datasheets, per GPU (Blackwell Ultra, up to 1,100 W; as tabulated in "
        "glennklockwood.com/garden/processors/B300 and the Verda and acecloud.ai B300 pages): bf16 2,250 TFLOP/s "
        "dense (the B200's: Blackwell Ultra raises FP4 and the softmax's exponentials, not bf16), TF32 1,100, FP32 75; "
        "288 GB HBM3e at up to 8 TB/s; NVLink5 as B200's. 267.88 GiB: nvidia-smi's 275040 MiB ('NVIDIA B300 "
        "SXM6 AC', published p6-b300 and Verda logs) less the 728 MiB the driver keeps on B200 (183359 shown, "
        "182631 given to a process), assumed the same; {}. Kernels are timed from the kernel profile device-b200 "
        "(B200 measurements; no B300 kernel is a profile point), at the B200's fitted scale (no B300 FSDP row has "
        "been fitted) and the same bf16 peak. Checked, not fitted: sustained cuBLAS bf16 GEMMs on random data "
        "under the 1,100 W cap run at 1,402-1,568 TFLOP/s (4096^3 to 16384^3; Llama FFN shapes 1,449-1,490), "
        "8192^3 at 1,486-1,517 against the profile's B200 point of 1,420 (ademeure/QuickRunCUDA "
        "b300_clean/CUBLAS_REAL_VALIDATION.md, Apr 2026): read B300's GEMMs as up to ~7% short. HBM read "
        "measured at 7.30 TB/s (b300_clean/B300_TRUE_REFERENCE.md). Not modelled: Blackwell Ultra's doubled "
        "exponential rate (10.7 against 5 tera-exponentials/s), which speeds attention's softmax: its attention "
        "runs at the B200's curves, which read long-sequence steps as slow. For the roofline only: "
        "gemm_efficiency 0.455 and memory_efficiency 0.887, H100 SXM's, assumed to carry over.", kCapacity)}},
      {"gb300",
       {"GB300-288GB", 2500 * TFLOPS, 80 * TFLOPS, 1250 * TFLOPS, 276.83 * GiB, 8 * TB, 0.455, 0.887, "device-b200",
        "NVIDIA GB300 NVL72 product page, per rack, divided by its 72 GPUs (as tabulated in "
        "glennklockwood.com/garden/processors/B300): 360 PFLOP/s of FP8 for training -> 5,000 TFLOP/s dense, "
        "bf16 half of it, 2,500; TF32 1,250, FP32 80; 288 GB of HBM3e a GPU (the rack's '20 TB', rounded) at "
        "576 TB/s -> 8 TB/s; a "
        "Blackwell Ultra GPU at up to 1,400 W beside a Grace CPU. "
        "276.83 GiB: nvidia-smi's 284208 MiB ('NVIDIA GB300', 1,400 W, on OCI's GB300 NVL72 hosts: "
        "oracle-quickstart/oci-gpu-quickstarts nvidia/GB300/README-GB300.md @dc146ca; DGX Station's GB300 is "
        "another part, 256,703 MiB) less the 728 MiB the driver keeps on B200, assumed the same. Kernels are "
        "timed from the kernel profile device-b200 (B200 measurements at 1,000 W; no GB300 kernel measurement is "
        "in it), at the B200's fitted training scale (no GB300 FSDP row has been fitted), its tensor-core kernels "
        "at 2500 / 2250 of the B200's rate. Not modelled: the doubled exponential rate of Blackwell Ultra (B300's "
        "entry). For the roofline only: gemm_efficiency 0.455 and memory_efficiency 0.887, H100 SXM's, assumed to "
        "carry over."}},
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
  });
  return table;
}

}  // namespace

std::vector<std::string> device_names() {
  std::vector<std::string> out;
  for (const auto& [name, d] : device_table()) out.push_back(name);
  return out;
}

const Aliases& device_aliases() {
  static const Aliases aliases = {{"a100", "a100-80gb"}, {"a100-40g", "a100-40gb"}, {"a100-80g", "a100-80gb"},
                                  {"h100", "h100-sxm"},  {"h100-sxm5", "h100-sxm"}, {"h200", "h200-sxm"},
                                  {"b200-sxm", "b200"}, {"gh200-96gb", "gh200"},
                                  {"b300-sxm", "b300"}, {"b300-sxm6", "b300"},
                                  {"v100", "v100-32gb"}, {"a100-pcie", "a100-pcie-80gb"}, {"a100-sxm-64gb", "a100-64gb"},
                                  {"h100-pcie-80gb", "h100-pcie"}, {"h100-nvl-94gb", "h100-nvl"}};
  return aliases;
}

std::string canonical_device_name(const std::string& name) { return resolve_alias(name, device_aliases()); }

DeviceProfile device(const std::string& name) {
  for (const auto& [n, d] : device_table())
    if (n == canonical_device_name(name)) return d;
  throw InputError(unknown_name("device preset", name, device_names(), device_aliases()));
}

}  // namespace tagcsim::topologies
