// How long a unit's computation takes on one GPU.
//
// Roofline per unit: GEMM FLOPs at the device's measured GEMM efficiency,
// attention-core FLOPs at a lower one (FlashAttention reaches less of peak
// than a large GEMM), plus element-wise traffic at the achieved HBM bandwidth.
// GEMMs and element-wise kernels are separate kernels, so their times add.
#pragma once

#include "models/model.hpp"
#include "sim/training.hpp"
#include "topologies/cluster.hpp"

namespace tagcsim::sim {

// FLOP/s of the tensor cores for the compute dtype, before efficiency.
double peak_flops(const topologies::DeviceProfile& gpu, Dtype compute, bool tf32 = false);

struct UnitCompute {
  double forward_seconds = 0;
  double backward_seconds = 0;
  // CPU time to issue the unit's kernels (the host stream of sim/schedule.hpp):
  // for now the unit's kernel count times `kernel_issue_s`.
  double forward_issue_seconds = 0;
  double backward_issue_seconds = 0;
};

UnitCompute unit_compute(const models::FsdpUnit& unit, const topologies::DeviceProfile& gpu, Dtype compute,
                         bool tf32 = false, double kernel_issue_s = 0);

// AdamW over this GPU's shard: reads fp32 param, grad, m, v; writes param, m, v.
double optimizer_seconds(double shard_params, const topologies::DeviceProfile& gpu);

}  // namespace tagcsim::sim
