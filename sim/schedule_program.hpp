// Internal to sim/schedule*.cpp: building a schedule the way the CPU thread
// issues it.
//
// The FSDP builders walk the training loop as the host runs it: a hook costs
// host time, a kernel is issued at the host's current position (it cannot
// start before), `stream.wait_stream(other)` and `wait_event` become a
// dependency of the stream's next task, and `event.synchronize()` blocks the
// host until a GPU task is done. Host time accumulates into one host task
// between two such waits; a GPU task records how far into it the host issued
// it (Task::issued_after, issue_delay), so the host costs one task per wait,
// not one per kernel.
#pragma once

#include "sim/compute.hpp"
#include "sim/schedule.hpp"

#include <array>
#include <string>
#include <vector>

namespace tagcsim::sim::detail {

class Program {
 public:
  explicit Program(Schedule& s);

  // The host spends `seconds` (hook Python, kernel issue).
  void host(const std::string& what, double seconds);
  // The host blocks until GPU task `task` is done (CUDA event.synchronize()).
  void sync(int task);
  // Stream `waiter`'s next task waits for task `task` (wait_stream / wait_event); -1 is ignored.
  void wait(Stream waiter, int task);
  // Issues a GPU task at the host's current position, after the stream's pending waits.
  int issue(Task t);
  // Ends the host's current task (at a wait, and at the end of the step).
  void flush();
  // Last task added to stream `s`, -1 if none.
  int last(Stream s) const { return last_[int(s)]; }
  // Tasks added straight to the schedule (by a gradient reduction) from index
  // `from` on: the streams' last tasks follow them, and the host issues each
  // task it reads back (Task::host_syncs > 0) and blocks until it is done, in
  // the order they were added, as the hook's Python thread does. Returns the
  // last of them on `stream`, or `fallback` when none is.
  int adopt(std::size_t from, Stream stream, int fallback);
  void buffer(MemoryKind kind, double bytes, int from, int to, bool from_end = false, bool to_start = false,
              MemoryPool pool = MemoryPool::Compute);
  Schedule& schedule() { return s_; }

 private:
  Schedule& s_;
  std::array<int, kStreams> last_;
  std::array<std::vector<int>, kStreams> waits_;
  int host_last_ = -1;
  std::string pending_name_;  // the first host cost of the pending task
  bool pending_more_ = false;
  double pending_s_ = 0;
  std::vector<int> pending_after_;
};

// What the FSDP builders share.
struct Costs {
  const topologies::DeviceProfile* gpu = nullptr;  // times the copies and casts
  std::vector<UnitCompute> units;
  double hook_s = 0;
};
Costs costs_of(const StepSetup& setup);

// Sharded state per parameter, in the training's master dtype (fp32 unless the model was cast):
// the parameter shard and its gradient's, and AdamW's two moments.
double shard_bytes_per_param(const Training& t);
inline double moment_bytes_per_param(const Training& t) { return 2 * shard_bytes_per_param(t); }
// FSDP1 pads each FlatParameter to a multiple of the shard group's size.
double padded_flat_numel(std::int64_t params, int shard_size);
// Parameters of unit u held by one GPU: FSDP1's padded FlatParameter shard; FSDP2 chunks each
// parameter on dim 0, a shard of exactly 1/N when N divides dim 0 (every validated model).
double shard_params(const StepSetup& setup, int u);
// The optimizer step's temporaries: torch.optim.AdamW's foreach path (the default on CUDA;
// torchtitan, fms-fsdp, plain PyTorch) computes sqrt(exp_avg_sq) for the whole shard at once,
// "~ sizeof(params) more peak memory than the for-loop version" (its docstring): one state element
// per shard parameter. Composer's DecoupledAdamW loops over parameters: one flat shard at a time.
// The fused kernel keeps nothing beside the state.
double optimizer_temporary_bytes(const StepSetup& setup);

// Each unit's fp32 gradient shard: the output of its first reduce-scatter of the step (task
// `reduced`), allocated on the reduction stream, kept as the sharded parameter's .grad (later
// micro-batches accumulate into it) until the next step's zero_grad(set_to_none=True).
class GradientShards {
 public:
  explicit GradientShards(int units) : made_(std::size_t(units), 0) {}
  void reduced(Program& p, const StepSetup& setup, int u, int reduced);

 private:
  std::vector<char> made_;
};

// The step's end in both APIs: the optimizer's hook on the host, the optimizer over the shards on
// the compute stream, and its temporaries while it runs. Returns the optimizer's task.
int optimizer_step(Program& p, const StepSetup& setup, const Costs& cost);

Task compute_task(const StepSetup& setup, int u, Category c, double seconds);
Task copy_task(const std::string& name, int u, Stream stream, double bytes, const topologies::DeviceProfile& gpu);
Task all_gather_task(const StepSetup& setup, int u, const Group& group, const char* phase);
// The bytes one all-gather of the unit moves: its parameters in param_dtype, the blocks' Linear
// weights in float8 under float8 all-gather.
double all_gather_bytes(const StepSetup& setup, const models::FsdpUnit& unit);
// A unit's all-gather or reduce-scatter of `bytes` over `group`: one collective, or under expert
// parallelism two back to back, the routed experts' share (expert_params at bytes_per_param) over
// the expert shard group.
std::vector<Phase> shard_group_phases(const StepSetup& setup, const models::FsdpUnit& unit, CollectiveOp op,
                                      double bytes_per_param, double bytes, const Group& group);
Task optimizer_task(const StepSetup& setup);
// The unit whose forward and backward compute sit at the ends of the passes
// although its hooks run first and last: the root wrapper of block and size
// wraps; -1 under torchtitan's layout, which has none.
int root_unit(const StepSetup& setup);

Schedule build_fsdp1(const StepSetup& setup, const GradientReduction& reduce);
Schedule build_fsdp2(const StepSetup& setup, const GradientReduction& reduce);

}  // namespace tagcsim::sim::detail
