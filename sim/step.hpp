// One training step, end to end: schedule -> SimGrid replay -> step time,
// breakdown and memory.
#pragma once

#include "sim/replay.hpp"
#include "sim/schedule.hpp"

#include <map>
#include <string>
#include <vector>

namespace tagcsim::sim {

struct Breakdown {
  double compute_s = 0;         // compute stream busy: forward + backward (+ compression kernels run there)
  double exposed_comm_s = 0;    // step time the compute stream spends waiting for communication
  double allgather_s = 0;       // all-gather stream busy
  double reduce_scatter_s = 0;  // gradient-reduction stream busy (reduce-scatter, all-reduce, compressed)
  double optimizer_s = 0;
  double compression_kernels_s = 0;  // compression kernels, wherever they run
};

struct Memory {
  double sharded_state_bytes = 0;  // fp32 params + grads + AdamW moments of this GPU's shard
  double gathered_params_bytes = 0;  // unsharded parameters alive at the peak
  double gradient_bytes = 0;         // unsharded gradients alive at the peak (no_sync accumulation)
  double activation_bytes = 0;       // saved activations of one micro-batch
  double workspace_bytes = 0;        // CUDA context, NCCL and allocator slack
  double peak_bytes() const;
  double capacity_bytes = 0;
  bool fits() const { return peak_bytes() <= capacity_bytes; }
};

struct CollectiveTotals {
  int count = 0;
  double bytes = 0;          // buffer bytes (S) summed
  double node_egress_bytes = 0;  // what each node pushed into the fabric
};

struct StepResult {
  std::string policy = "fsdp";
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;           // model FLOPs as the kernels run them (causal attention halved) / peak
  double mfu_megatron = 0;  // the Megatron / LLM Foundry convention: 6N + 12 L h s per token / peak
  Breakdown breakdown;
  Memory memory;
  std::map<std::string, CollectiveTotals> collectives;  // by category name
  double expected_grad_error = 0;  // relative L2 error of the reduced gradient (0 = lossless)
  std::string grad_error_basis;
  int gpus = 0;
  Schedule schedule;  // what was replayed, for traces
  Replay replay;
};

// Turns a replayed schedule into the user's numbers.
StepResult summarize(const StepSetup& setup, Schedule schedule, Replay replay);

// Plain FSDP: build, replay, summarize.
StepResult simulate_fsdp(const StepSetup& setup);

}  // namespace tagcsim::sim
