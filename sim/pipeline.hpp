// Pipeline parallelism under FSDP (training.pipeline_parallel), as torchtitan runs
// torch.distributed.pipelining: the blocks split into stages across nodes, each micro-batch's
// activations sent from stage to stage, and each rank running its stages' forwards and backwards in
// the order its schedule says (GPipe, 1F1B, interleaved 1F1B). FSDP shards each stage over the GPUs
// of its nodes, keeps the parameters unsharded through the step and reduces the gradients after
// the last micro-batch's backward (the pipelining stage's backward_maybe_with_nosync: FSDP's
// set_requires_gradient_sync and set_reshard_after_backward false, then post_backward by hand).
//
// How a step is timed: each distinct pipeline rank is replayed on its own (sim/step.hpp) as FSDP
// with the schedule's micro-batches accumulated on its stages' units, which gives its FSDP work,
// optimizer and host; the schedule itself is replayed here, op by op, from each stage's forward and
// backward time per micro-batch and the send between stages, which gives the bubble. The step is
// the schedule's end plus the most any rank spends outside its stages' compute.
#pragma once

#include "sim/step.hpp"

#include <functional>
#include <vector>

namespace tagcsim::sim {

// One op of a pipeline schedule: a stage's forward or backward of one micro-batch.
struct PipelineOp {
  int stage = 0;
  int microbatch = 0;
  bool backward = false;
};

// The order each rank runs its ops in (torch/distributed/pipelining/schedules.py): GPipe all
// forwards then all backwards; 1F1B p - r - 1 forwards, then one forward and one backward in turn,
// then the rest of the backwards; interleaved 1F1B over stages r, r + p, ... (the looped
// placement), Megatron's order: forwards by rounds of p micro-batches through each of the rank's
// stages, (v - 1) p + 2 (p - r - 1) of them first, backwards through the stages in reverse.
std::vector<std::vector<PipelineOp>> pipeline_order(PipelineSchedule schedule, int ranks, int stages_per_rank,
                                                    int microbatches);

struct PipelineTiming {
  double end = 0;                    // when the last op of any rank ends
  std::vector<double> busy;          // per rank: the seconds its ops ran
  std::vector<double> peak_in_flight;  // per rank: the most micro-batches' activations it held, each stage's
                                     // counted by its share of the rank's activation bytes
  std::vector<StepResult::PipelineSlice> ops;  // every op with its rank, start and end
};

// Replays the schedule: an op starts when its rank has finished the op before it and what it
// needs has arrived: a forward the previous stage's forward of the same micro-batch, a backward
// the next stage's backward (and its own forward), each `transfer_s` after it ends when the two
// stages sit on different ranks. forward_s and backward_s are per stage and micro-batch;
// activation_share the share of its rank's saved activations each stage holds per micro-batch.
PipelineTiming replay_pipeline(const std::vector<std::vector<PipelineOp>>& order, const std::vector<double>& forward_s,
                               const std::vector<double>& backward_s, double transfer_s,
                               const std::vector<double>& activation_share = {});

// torchtitan's split of `layers` blocks into `stages` (generate_split_points at 9dec370): the first
// stage takes layers / stages, the middle ones one more while the remainder lasts, the last the rest.
std::vector<int> stage_layers(int layers, int stages);

// The step under pipeline parallelism: `run` replays one pipeline rank's FSDP step (the plain or a
// policy's), given that rank's setup; notes says what the pipeline did.
StepResult simulate_pipeline(const StepSetup& setup, const std::function<StepResult(const StepSetup&)>& run);

}  // namespace tagcsim::sim
