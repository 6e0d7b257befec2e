// How long a unit's computation takes on one GPU, and how long the CPU takes to issue it.
//
// Each unit carries the list of kernels PyTorch runs for it (models/kernel_list.hpp); each
// kernel is timed from the GPU's kernel profile (sim/kernel_profile.hpp): GEMMs from measured
// shapes with wave quantization, attention from measured curves, memory-bound kernels from a
// bandwidth-by-size curve, every kernel at least a launch. FSDP's own copies and casts are tasks
// of the schedule (sim/schedule_fsdp*.cpp), timed here as memory-bound kernels.
//
// The host: eager PyTorch issues every kernel from one CPU thread, and FSDP runs its hooks per
// unit. forward_/backward_issue_seconds are the CPU time to issue a unit's kernels; the
// schedule's host stream spends it (and the hooks), and the GPU waits when it is the longer.
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
  double forward_issue_seconds = 0;   // CPU time to issue them: kernels x the host's issue cost
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
// Whose fitted scales a profile's copy runs at: the device's own where a source measured it, else,
// for a part the profile also serves, the measured part's, else its family's.
std::string fitted_as(const KernelProfile& p);

// The host's costs for this setup: the scenario's `training.host` where given, else the kernel
// profile's measured ones, else eager PyTorch's published per-op cost (HostCost's defaults).
HostCost host_cost(const StepSetup& setup);

// The unit's own kernels (no FSDP work), on this GPU, each issued at `kernel_issue_s` of CPU time.
UnitCompute unit_compute(const models::FsdpUnit& unit, const topologies::DeviceProfile& gpu, Dtype compute,
                         bool tf32 = false, models::AttentionKernel attention = models::AttentionKernel::Flash2,
                         double kernel_issue_s = 0);
// The same with the setup's dtypes, attention kernel and host cost.
UnitCompute unit_compute(const StepSetup& setup, int unit);

// One memory-bound kernel moving `bytes` (FSDP's copies and casts): the profile's bandwidth curve.
double memory_kernel_seconds(double bytes, const topologies::DeviceProfile& gpu);

// AdamW over this GPU's shard with gradient-norm clipping, as the training keeps its state
// (master_dtype) and runs it (optimizer): the foreach path moves 92 bytes per fp32 parameter in ten
// passes, the fused one 40 in three.
double optimizer_seconds(double shard_params, const Training& training, const topologies::DeviceProfile& gpu);

// Model FLOPs per trained token as the kernels run them (causal attention at the FLOPs a flash
// kernel does; no recompute): tagcsim's MFU. The Megatron / LLM Foundry convention is
// models::model_flops_per_token (6N + 12 L h s, no causal discount).
double kernel_flops_per_token(const StepSetup& setup);

// Checks that the GPU's profile can time this setup (its attention kernel is profiled);
// InputError naming the profile and what it has otherwise.
void check_compute(const StepSetup& setup);

}  // namespace tagcsim::sim
