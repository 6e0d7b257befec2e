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
  double compute_s = 0;         // compute stream busy: forward, backward, FSDP copies (and compression kernels there)
  double exposed_comm_s = 0;    // step time the compute stream spends waiting (for communication or the host)
  double allgather_s = 0;       // all-gathers' time
  double reduce_scatter_s = 0;  // gradient reductions' time (reduce-scatter, all-reduce, compressed)
  double optimizer_s = 0;
  double compression_kernels_s = 0;  // compression kernels, wherever they run
  double fsdp_copy_s = 0;       // FSDP's copies and casts (FSDP2 copy-out/copy-in, FSDP1 gradient cast)
  double host_s = 0;            // host busy issuing kernels and running FSDP's hooks
  double sm_slowdown_s = 0;     // what the compute stream's kernels lost to the SMs NCCL's kernels held
  double pipeline_bubble_s = 0; // pipeline parallelism: the schedule's idle time on the slowest rank (in exposed_comm_s)
  double expert_all_to_all_s = 0;  // expert parallelism: the compute stream waiting for its all-to-alls (in compute_s)
};

// Memory per GPU at the step's peak, following the schedule: each buffer is
// alive while the replayed tasks that make and use it run (sim/schedule.hpp),
// in the caching allocator's pool of the stream that allocated it
// (sim/step.cpp explains the allocator's part).
struct Memory {
  // The live tensors at the moment their sum peaks (torch.cuda.max_memory_allocated):
  double sharded_state_bytes = 0;    // fp32 params + AdamW moments of this GPU's shard, gradient shards made so far, optimizer temporaries
  double gathered_params_bytes = 0;  // unsharded parameters (and FSDP2 all-gather outputs)
  double gradient_bytes = 0;         // unsharded gradients in flight, both dtypes
  double activation_bytes = 0;       // saved activations, recomputed blocks, loss logits, gradients inside a block
  double allocated_bytes() const;    // the sum of the parts above
  // What the caching allocator holds beyond them: the blocks other streams
  // keep cached, and fragmentation; capped by the GPU when it has to release them.
  double fragmentation_bytes = 0;
  double reserved_bytes() const { return allocated_bytes() + fragmentation_bytes; }
  double workspace_bytes = 0;        // CUDA context and NCCL buffers, outside the allocator
  double peak_bytes() const { return reserved_bytes() + workspace_bytes; }
  double capacity_bytes = 0;
  // The live tensors fit (with the workspace); otherwise the run stops out of memory.
  bool fits() const { return peak_bytes() <= capacity_bytes; }
  // What the allocator would hold if it never had to give memory back: each
  // pool's high-water mark, plus fragmentation (torch.cuda.max_memory_reserved
  // of a run with room to spare).
  double cached_bytes = 0;
  double pool_peak_bytes[kMemoryPools] = {};  // by MemoryPool, the persistent shards in Compute's
  // It fits, but the cache does not: the allocator frees its cached blocks
  // (synchronizing the device) and retries allocations during the step.
  bool under_pressure() const { return fits() && cached_bytes + workspace_bytes > capacity_bytes; }
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
  std::string pipeline;  // pipeline parallelism: what the schedule did (sim/pipeline.hpp)
  // Pipeline parallelism: each op of the schedule as it was replayed, for the trace.
  struct PipelineSlice {
    int rank = 0, stage = 0, microbatch = 0;
    bool backward = false;
    double start = 0, end = 0;
  };
  std::vector<PipelineSlice> pipeline_ops;
  int gpus = 0;
  Schedule schedule;  // what was replayed, for traces
  Replay replay;
};

// Turns a replayed schedule into the user's numbers.
StepResult summarize(const StepSetup& setup, Schedule schedule, Replay replay);

// Plain FSDP: build, replay, summarize.
StepResult simulate_fsdp(const StepSetup& setup);

}  // namespace tagcsim::sim
