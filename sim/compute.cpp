#include "sim/compute.hpp"

#include <algorithm>
#include <cmath>

namespace tagcsim::sim {
namespace {
// FlashAttention-2 forward reaches ~50-73% of the tensor cores' peak on A100
// and H100 (Dao, 2023, Fig. 5-6) while large GEMMs reach ~80-87%; we take the
// attention core at 0.75 of the device's GEMM efficiency.
constexpr double kAttentionVsGemm = 0.75;
// AdamW touches 4 fp32 arrays in and 3 out per parameter.
constexpr double kAdamBytesPerParam = 7 * 4;

// cuBLAS reaches 10% less of peak on 4096-wide GEMMs than on 8192-wide ones
// (published square-matmul rates: A100 228.0 vs 253.7 TFLOP/s, H100 742.9 vs
// 824.2; docs/validation.md). The device's gemm_efficiency is the 8192-wide
// one; narrower GEMMs are scaled log-linearly, and not below 4096, where
// nothing was measured.
double gemm_size_factor(int width) {
  if (width <= 0 || width >= 8192) return 1;
  return 0.90 + 0.10 * std::log2(std::max(width, 4096) / 4096.0);
}
}  // namespace

double bytes_of(Dtype d) { return d == Dtype::FP32 ? 4 : 2; }
const char* to_string(Dtype d) {
  switch (d) {
    case Dtype::BF16: return "bf16";
    case Dtype::FP16: return "fp16";
    case Dtype::FP32: return "fp32";
  }
  return "?";
}
const char* to_string(Sharding s) {
  switch (s) {
    case Sharding::FullShard: return "full_shard";
    case Sharding::ShardGradOp: return "shard_grad_op";
    case Sharding::HybridShard: return "hybrid_shard";
  }
  return "?";
}

double peak_flops(const topologies::DeviceProfile& gpu, Dtype compute, bool tf32) {
  // PyTorch runs fp32 matmuls in full fp32 unless the user allows TF32 (nanoGPT does).
  if (compute != Dtype::FP32) return gpu.peak_flops_bf16;
  return tf32 && gpu.peak_flops_tf32 > 0 ? gpu.peak_flops_tf32 : gpu.peak_flops_fp32;
}

UnitCompute unit_compute(const models::FsdpUnit& unit, const topologies::DeviceProfile& gpu, Dtype compute,
                         bool tf32, double kernel_issue_s) {
  const double gemm_rate = peak_flops(gpu, compute, tf32) * gpu.gemm_efficiency * gemm_size_factor(unit.gemm_width);
  const double attn_rate = gemm_rate * kAttentionVsGemm;
  const double mem_rate = gpu.memory_bandwidth * gpu.memory_efficiency;
  auto seconds = [&](double flops, double mem_bytes, double gemm_fraction) {
    const double gemm = flops * gemm_fraction;
    return gemm / gemm_rate + (flops - gemm) / attn_rate + mem_bytes / mem_rate;
  };
  // Under activation checkpointing the model's backward already includes the recomputed forward.
  return UnitCompute{seconds(unit.forward_flops, unit.forward_memory_bytes, unit.gemm_fraction),
                     seconds(unit.backward_flops, unit.backward_memory_bytes, unit.backward_gemm_fraction),
                     unit.forward_kernels * kernel_issue_s, unit.backward_kernels * kernel_issue_s};
}

double optimizer_seconds(double shard_params, const topologies::DeviceProfile& gpu) {
  return shard_params * kAdamBytesPerParam / (gpu.memory_bandwidth * gpu.memory_efficiency);
}

}  // namespace tagcsim::sim
