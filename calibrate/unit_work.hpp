// The kernels one FSDP unit runs, with their shapes: what `calibrate box` measures for a
// scenario and what `calibrate check` runs for each compute task.
//
// Per micro-batch of T = micro_batch x seq tokens, every nn.Linear in -> out is a forward GEMM
// (m, n, k) = (T, out, in) and, backward, a grad-input GEMM (T, in, out) and a grad-weight GEMM
// (in, out, T). The attention core is one call per pass over micro_batch x heads sequences.
// Element-wise work is the unit's memory traffic (models/units.cpp counts it). The FLOPs add up
// to the unit's (tests/test_calibrate_box.cpp checks it), so measuring these shapes measures
// what the simulator's compute model predicts.
//
// (The compute-fidelity work adds models/kernel_list.hpp with the same lists; once both are on
// main this file becomes a thin adapter of it.)
#pragma once

#include "models/model.hpp"
#include "sim/training.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tagcsim::calibrate {

struct GemmShape {
  double m = 0, n = 0, k = 0;  // C[m x n] = A[m x k] B[k x n]
  std::string op;              // "attn.qkv fwd", "mlp.down wgrad"
  double flops() const { return 2 * m * n * k; }
};

struct AttentionShape {
  double batch_heads = 0;  // micro_batch x query heads
  double seq = 0, head_dim = 0;
  int kv_heads = 0;
  bool causal = true;
};

struct UnitWork {
  std::vector<GemmShape> forward;   // forward GEMMs
  std::vector<GemmShape> backward;  // recompute (under checkpointing) then grad-input and grad-weight GEMMs
  std::optional<AttentionShape> attention;  // forward and backward core, on this unit
  bool recompute = false;           // the backward runs the forward (and its attention) again
  double forward_bytes = 0;         // element-wise traffic (reads + writes)
  double backward_bytes = 0;
};

UnitWork unit_work(const models::TransformerConfig& model, const models::FsdpUnit& unit, const sim::Training& t);

// Every distinct (m, n, k) of a model's units, in first-seen order (forward, then backward).
std::vector<GemmShape> distinct_gemms(const models::TransformerConfig& model,
                                      const std::vector<models::FsdpUnit>& units, const sim::Training& t);

}  // namespace tagcsim::calibrate
