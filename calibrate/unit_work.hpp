// The kernels of one FSDP unit as `calibrate box` measures them and `calibrate check` runs them:
// an adapter over the unit's kernel lists (models/kernel_list.hpp), the same lists the simulator
// times (sim/compute.hpp). Nothing here models a kernel: the GEMM shapes, the attention calls and
// the memory-bound kernels' bytes are read off those lists, so what the box measures and what the
// check runs is what the simulator predicts, kernel for kernel.
#pragma once

#include "models/kernel_list.hpp"
#include "models/model.hpp"

#include <string>
#include <vector>

namespace tagcsim::calibrate {

// One pass of a unit, split by kernel kind, in the order the pass runs them.
struct PassWork {
  std::vector<models::Kernel> gemms;       // C[m x n] = A[m x k] B[k x n]
  std::vector<models::Kernel> attention;   // flash-attention calls (backward's recompute forward included)
  std::vector<double> memory_bytes;        // one entry per memory-bound kernel: its bytes read + written
  double bytes() const;                    // all memory-bound kernels together
};

struct UnitWork {
  PassWork forward, backward;  // backward: under checkpointing, the forward's kernels again first
  bool recompute = false;
};

// InputError for a unit without kernel lists: units built by hand, and the units of wrap:
// torchtitan, which models::fsdp_units gives none (the simulator times them from their FLOPs).
const models::UnitKernels& kernels_of(const models::FsdpUnit& unit);
UnitWork unit_work(const models::FsdpUnit& unit);

// Every distinct GEMM (m, n, k) of the units, in first-seen order (each unit forward, then
// backward); units without kernel lists add none.
std::vector<models::Kernel> distinct_gemms(const std::vector<models::FsdpUnit>& units);
// Every distinct attention shape (batch x heads, seq, head_dim, causal), forward calls, first-seen order.
std::vector<models::Kernel> distinct_attention(const std::vector<models::FsdpUnit>& units);

}  // namespace tagcsim::calibrate
