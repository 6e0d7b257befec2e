// How long a unit's computation takes on one GPU, and how long the CPU takes to issue it.
//
// Each unit carries the list of kernels PyTorch runs for it (models/kernel_list.hpp); each
// kernel is timed from the GPU's kernel profile (sim/kernel_profile.hpp): GEMMs from measured
// shapes with wave quantization, attention from measured curves, memory-bound kernels from a
// bandwidth-by-size curve, every kernel at least a launch. FSDP's own kernels are added: the
// cast of the shard to param_dtype before each all-gather, the gradient's cast to reduce_dtype
// and its division around the reduce-scatter, and the optimizer over the shard.
//
// The host: eager PyTorch issues every kernel from one CPU thread, and FSDP runs its hooks per
// unit. forward_/backward_issue_seconds are that CPU time; when it exceeds the GPU time the GPU
// waits (the schedule's host stream uses them).
//
// A GPU without a kernel profile (and units built by hand, without a kernel list) falls back to
// the datasheet roofline: FLOPs at peak x gemm_efficiency, bytes at the HBM bandwidth x
// memory_efficiency. docs/compute-model.md has the details.
#pragma once

#include "models/model.hpp"
#include "sim/kernel_profile.hpp"
#include "sim/schedule.hpp"
#include "sim/training.hpp"
#include "topologies/cluster.hpp"

#include <string>
#include <vector>

namespace tagcsim::sim {

// FLOP/s of the tensor cores for the compute dtype, before efficiency.
double peak_flops(const topologies::DeviceProfile& gpu, Dtype compute, bool tf32 = false);

struct UnitCompute {
  double forward_seconds = 0;         // GPU time of the unit's forward kernels
  double backward_seconds = 0;        // GPU time of its backward (recompute included)
  double forward_issue_seconds = 0;   // CPU time to issue them: kernels x issue cost + FSDP's hooks
  double backward_issue_seconds = 0;
  int forward_kernels = 0;
  int backward_kernels = 0;
};

// The GPU's kernel profile, or null when it has none (datasheet roofline). Throws InputError
// when the profile cannot be read or does not serve this GPU.
const KernelProfile* device_kernel_profile(const topologies::DeviceProfile& gpu);
// "kernel profile device-h100-sxm (calibrate/profiles/device-h100-sxm.yaml), hopper fit ..." or
// "datasheet roofline (no kernel profile)": what the report names.
std::string compute_model_description(const topologies::DeviceProfile& gpu);

// The unit's own kernels (no FSDP work), on this GPU.
UnitCompute unit_compute(const models::FsdpUnit& unit, const topologies::DeviceProfile& gpu, Dtype compute,
                         bool tf32 = false, models::AttentionKernel attention = models::AttentionKernel::Flash2);
// The unit's kernels plus FSDP's own (casts around the collectives), as the schedule runs them.
UnitCompute unit_compute(const StepSetup& setup, int unit);

// The host and the GPU as a two-stage pipeline over the units' forward (in order) then backward
// (reversed): a unit's kernels start on the GPU when the CPU starts issuing them, after the GPU's
// previous work, and end no earlier than its last kernel is issued. A minimal stand-in for the
// schedule's host stream: the compute time of one micro-batch with the CPU in the loop.
double host_gpu_pipeline_seconds(const std::vector<UnitCompute>& units);

// AdamW over this GPU's shard (torch.optim.AdamW's foreach path with gradient-norm clipping:
// 92 bytes of fp32 traffic per parameter in ten passes).
double optimizer_seconds(double shard_params, const topologies::DeviceProfile& gpu);

// Model FLOPs per trained token as the kernels run them (causal attention at the FLOPs a flash
// kernel does; no recompute): tagcsim's MFU. The Megatron / LLM Foundry convention is
// models::model_flops_per_token (6N + 12 L h s, no causal discount).
double kernel_flops_per_token(const StepSetup& setup);

// Checks that the GPU's profile can time this setup (its attention kernel is profiled);
// InputError naming the profile and what it has otherwise.
void check_compute(const StepSetup& setup);

}  // namespace tagcsim::sim
