// A device's kernel profile: measured kernel times, and how a kernel of any shape is timed
// from them.
//
// A profile is a versioned YAML file (format tagcsim-device-profile/1) in calibrate/profiles/,
// named device-<gpu>.yaml, with its metadata (GPU, clocks, driver, CUDA, cuBLAS, cuDNN, how it
// was measured) and four tables, every point citing its source:
//   gemm:      (m, n, k, dtype) -> TFLOP/s, plus the tile and the SM count for wave quantization
//   attention: curves of TFLOP/s by sequence length, per kernel, direction, causality, head dim
//   memory:    GB/s by bytes moved (small kernels do not reach peak)
//   launch/host: the shortest kernel, and the CPU time eager PyTorch takes to issue one
// docs/compute-model.md describes the format and the interpolation; `tagcsim calibrate box`
// writes the same format for the local GPUs (calibrate/box_profile_writer.cpp).
#pragma once

#include "models/kernel_list.hpp"
#include "models/model.hpp"
#include "sim/training.hpp"

#include <map>
#include <string>
#include <vector>

namespace tagcsim::sim {

// The physical parameters fitted to published FSDP throughput, one set per device family
// (`tagcsim validate --fit`, calibrate/profiles/fit-training.yaml). 1 means the kernels run as
// profiled.
struct FittedParameters {
  double tensor_scale = 1;  // tensor-core kernels (GEMMs, attention) in training / in the profile
  double memory_scale = 1;  // memory-bound kernels in training / in the profile
  std::string basis;        // how they were fitted ("" when not fitted)
  std::string borrowed;     // when not fitted: whose scales it takes ("hopper's, its predecessor's")
  std::string held_out;     // how its rows came out with their source held out of the fit ("" when not known)
};

class KernelProfile {
 public:
  std::string name;    // "device-a100-40gb"
  std::string file;    // where it was read from
  std::string gpu;     // the DeviceProfile name it serves ("A100-SXM4-40GB")
  std::string gpu_where;  // "file:line: gpu", for errors about what it serves
  std::vector<std::string> also_serves;  // other device names (a variant of the same chip)
  // The device whose fitted tensor scale it runs with: its own GPU, or, in the copy made for a
  // device it also serves, that device; with no fit of its own, that device takes the measured
  // GPU's (the same die: GB200 runs at B200's fit), and only then its family's.
  std::string fit_gpu;
  const std::string& fit_device() const { return fit_gpu.empty() ? gpu : fit_gpu; }
  std::string family;  // "ampere", "hopper": which fitted parameters apply
  std::map<std::string, std::string> metadata;  // gpu_name, clocks, driver, cuda, cublas, cudnn, measured_by, ...
  int sms = 0;

  struct Peak {
    double bf16 = 0, tf32 = 0, fp32 = 0;  // FLOP/s, datasheet
    double fp8 = 0;                       // 0: no float8 tensor cores (before Hopper) or not given
  } peak;

  struct GemmPoint {
    double m = 0, n = 0, k = 0, batch = 1;
    std::string dtype;  // "bf16" or "fp16" (the same tensor-core rate), "fp8" (e4m3 inputs, bf16 output)
    double seconds = 0;
    std::string source;
    double correction = 1;  // model time / measured time
  };
  struct Gemm {
    // The output tiles the GEMM library chooses from (one SM computes one tile per wave); a
    // query takes the tile, and the split of k when the tiles do not fill the SMs, that runs
    // fastest, as cuBLAS's heuristics aim to.
    std::vector<std::pair<double, double>> tiles = {{128, 256}};
    int max_split_k = 1;
    double k_overhead = 0;              // pipeline fill and drain, in elements of k
    std::vector<GemmPoint> points;      // 16-bit points, sorted by FLOPs
    std::vector<GemmPoint> fp8_points;  // float8 points (torch._scaled_mm), sorted by FLOPs; may be empty
    // Grouped GEMMs (torch._grouped_mm, a mixture of experts' experts), measured: `groups` GEMMs
    // whose rows stack to m, one forward, or a forward and its two backward GEMMs (the input's
    // gradient, m x k x n; the groups' weight gradients, stacked: groups k x n x m / groups).
    struct GroupedPoint {
      double m = 0, n = 0, k = 0, groups = 0;
      bool backward = false;
      double seconds = 0;
      std::string source;
    };
    std::vector<GroupedPoint> grouped;
    // A grouped GEMM's rate over the dense GEMMs' of its stacked shape, as the profile models them:
    // the geometric mean over the grouped points; 1 where none is measured.
    double grouped_efficiency = 1;
    // How PyTorch runs torch._grouped_mm on this GPU (`grouped_mm.kernel`): Fused, one CUTLASS
    // kernel (compute capability 9.x and 10.x); PerGroup, its fallback on every other GPU
    // (aten/src/ATen/native/GroupedMMUtils.h, _grouped_mm_fallback): the offsets copied to the
    // host, which waits for the GPU to reach them, then one mm per group, each its own launch.
    enum class GroupedMm { Fused, PerGroup } grouped_mm = GroupedMm::Fused;
  } gemm;

  struct AttentionPoint {
    double seq = 0, tflops = 0;
    std::string source;
  };
  struct AttentionCurve {
    models::AttentionKernel kernel = models::AttentionKernel::Flash2;
    std::string direction;  // "fwd", "bwd", "fwd+bwd"
    bool causal = true;
    double head_dim = 0;
    std::vector<AttentionPoint> points;  // ascending seq
  };
  struct Attention {
    double bwd_fwd_rate_ratio = 0.85;  // backward TFLOP/s over forward, where only one is measured
    std::string bwd_fwd_source;
    std::vector<AttentionCurve> curves;
  } attention;

  struct MemoryPoint {
    double bytes = 0, seconds = 0;
    std::string source;
  };
  std::vector<MemoryPoint> memory;  // ascending bytes

  double min_kernel_seconds = 0;  // the shortest a kernel launched on a stream takes
  double issue_seconds = 0;       // CPU time eager PyTorch takes to issue one kernel
  double hook_seconds = 0;        // CPU time of FSDP's hooks, per unit and pass
  // Of an SM, what one of NCCL's spinning thread blocks takes from the compute kernels beside it
  // (`nccl_sm.block_share`, measured by `tagcsim calibrate box`); 1 (the whole SM) when not measured.
  double nccl_block_share = 1;

  FittedParameters fitted;
  // The GPU a scenario describes against the one the profile measured, when they differ (a what-if
  // `gpu: {peak_flops_bf16: ..., memory_bandwidth: ...}`, or a variant of the chip): tensor-core
  // kernels run at its datasheet peak over the profile's, memory-bound kernels above the launch
  // floor at its HBM bandwidth over the measured GPU's preset. 1: as measured (compute.cpp,
  // device_kernel_profile).
  struct DeviceScale {
    double tensor = 1, memory = 1;
  } device;

  // The profile's own time of a dense GEMM (its model and measured correction, no fitted scale).
  double profiled_gemm_seconds(double m, double n, double k) const;
  // Kernel times on one GPU, fitted parameters applied, never below min_kernel_seconds.
  double gemm_seconds(double m, double n, double k, Dtype dtype = Dtype::BF16, bool tf32 = false) const;
  // A float8 GEMM (torchao's Float8Linear: e4m3 inputs, bf16 output) at peak.fp8, corrected by the
  // measured fp8 shapes nearest it (the 16-bit ones where the profile has none). Needs peak.fp8.
  double fp8_gemm_seconds(double m, double n, double k) const;
  // An fp32 GEMM without TF32 on CUDA cores (cuBLAS's SIMT sgemm, Kernel::fp32): its FLOPs at the
  // datasheet's fp32 rate (peak.fp32, an upper bound: no sgemm measurement is shipped), or its
  // fp32 operands and output at the stream bandwidth, whichever is longer.
  double fp32_simt_gemm_seconds(double m, double n, double k) const;
  // Within a sliding window shorter than the sequence, at the causal rate of a sequence as long as
  // the window (docs/compute-model.md).
  // Under context parallelism (query_shards c > 1), one GPU's load-balanced share: its causal
  // diagonal call at the causal rate of seq / c, the other c - 1 half-blocks at the non-causal rate
  // of seq / 2c. With documents of d tokens packed into each sequence (document, causal only):
  // seq / d causal documents at the causal rate of d tokens; FlexAttention's are timed as d + 128
  // (its block mask's tiles start at the sequence's start, not the document's).
  double attention_seconds(models::AttentionKernel kernel, bool backward, double batch_heads, double seq,
                           double head_dim, bool causal, double window = 0, double query_shards = 1,
                           double document = 0) const;
  double memory_seconds(double bytes) const;
  // A grouped GEMM this GPU runs group by group (gemm.grouped_mm PerGroup): one group's GEMM, the
  // groups' rows shared evenly (m / groups of the stacked m: the token rows forward and for the
  // input's gradient, the weight rows for the weights' gradients).
  bool per_group(const models::Kernel& k) const;
  int launches(const models::Kernel& k) const { return per_group(k) ? k.groups : 1; }  // the host issues
  double group_seconds(const models::Kernel& k, Dtype dtype = Dtype::BF16, bool tf32 = false) const;
  // Any kernel of a unit's list, its GPU time; attention runs on `attention`. A per-group grouped
  // GEMM: its groups' GEMMs back to back (what the host's issuing adds is sim::unit_compute's).
  double kernel_seconds(const models::Kernel& k, models::AttentionKernel attention, Dtype dtype = Dtype::BF16,
                        bool tf32 = false) const;

  // The pieces of the GEMM time, for tests and docs: the physical model (waves of tiles at peak
  // with the k overhead, or the bytes at the streaming bandwidth) and the measured correction for
  // this shape (from the two measured shapes nearest in log (m, n, k)).
  double gemm_model_seconds(double m, double n, double k, double batch, Dtype dtype, bool tf32) const;
  double fp8_gemm_model_seconds(double m, double n, double k, double batch) const;
  double gemm_correction(double m, double n, double k, double batch = 1, bool fp8 = false) const;
  // Attention TFLOP/s (flash-attention FLOP convention) before the fitted scale.
  double attention_tflops(models::AttentionKernel kernel, bool backward, double seq, double head_dim,
                          bool causal) const;
  bool has_attention(models::AttentionKernel kernel) const;
  std::vector<std::string> attention_kernels() const;  // the kernels it has curves for
  bool serves(const std::string& device_name) const;
  double stream_bandwidth() const;  // bytes/s of the largest memory point
};

// The profile named `ref`: a name in calibrate/profiles ("device-h100-sxm"), or a path to a
// YAML file. Loaded once per process, with the family's fitted parameters applied. Throws
// InputError with the file:line of what is wrong (a missing field, a curve that is not
// monotonic, an unknown key).
const KernelProfile& kernel_profile(const std::string& ref);
KernelProfile parse_kernel_profile(const std::string& text, const std::string& file);
std::string kernel_profile_path(const std::string& ref);
std::vector<std::string> shipped_kernel_profiles();

// The fitted parameters: calibrate/profiles/fit-training.yaml, unless overridden. They are kept
// per family ("hopper") and per device (device_fit_key("H200-SXM-141GB")): a device with a fit of
// its own uses it, any other device its family's. (A kernel profile's copy for a part it also
// serves takes the measured part's fit before the family's: KernelProfile::fit_gpu.)
FittedParameters fitted_parameters(const std::string& family);
FittedParameters fitted_parameters(const std::string& gpu, const std::string& family);
std::string device_fit_key(const std::string& gpu);  // "device:H200-SXM-141GB"
bool is_device_fit_key(const std::string& key);
std::string fit_key_label(const std::string& key);  // "H200-SXM-141GB" for a device's key, a family as it is
bool has_device_fit(const std::string& gpu);
// Replaces a family's or a device's parameters for this process (the validation fits use it);
// applies to the profiles already loaded. remove_... drops one override, and a device's own fit from
// the file with it (a fold without that device's rows must not keep what they said).
void override_fitted_parameters(const std::string& key, const FittedParameters& p);
void remove_fitted_parameters(const std::string& key);
void clear_fitted_overrides();
std::string fit_file_path();
// How tagcsim's predicted speedup came out on the published pairs of rows that changed only this
// scenario setting ("training.float8", "cluster.nodes"), held out, as the fit file keeps it
// (`tagcsim validate --fit --write --loso`): the setting's line and those of its named variants
// ("training.seq_len at the same tokens a micro-batch"), by setting; empty when no pair changed it.
std::vector<std::pair<std::string, std::string>> what_if_held_out(const std::string& setting);

}  // namespace tagcsim::sim
