// Tensor, context and expert parallelism's collectives, as one GPU's compute stream waits for them.
//
// Tensor parallelism (training.tensor_parallel), torchtitan's sequence-parallel plan (parallelize.py,
// apply_tp): each GPU of a TP group holds a column slice of q/k/v and of the MLP's gate and up, a
// row slice of the out and down projections, and a sequence shard of the residual stream, where
// the norms run. So each block all-gathers the sequence before attention and before the MLP, and
// reduce-scatters the partial sums after each: two all-gathers and two reduce-scatters of the
// micro-batch's T x h activations forward, the same backward (an all-gather's gradient is a
// reduce-scatter and the reverse), and again where checkpointing re-runs the block (but the MLP's
// reduce-scatter, after the early stop). The token embedding (vocabulary rows) reduce-scatters its
// output; the head all-gathers its input and reduces the loss over its vocabulary slice (two
// all-reduces of a float per token). Float8 Linears all-gather their input in float8 (torchao's
// Float8ColwiseParallel) and their output gradient too (Float8RowwiseParallel). The compute stream
// waits for each, and for the copy PyTorch's functional collectives make to gather or scatter
// along the sequence dimension. With async TP (torch.compile's micro-pipelining,
// torch/_inductor/fx_passes/micro_pipeline_tp.py: an all-gather fused with the matmuls that read
// it, a matmul with the reduce-scatter of its output, each cut into one chunk per GPU) a compiled
// block's fusable collectives hide behind its matmuls, all but one chunk's worth; the backward
// reduce-scatters and the collectives outside the blocks stay as they are.
//
// Context parallelism (training.context_parallel), PyTorch's context_parallel as torchtitan runs it
// (torch/distributed/tensor/experimental/_attention.py: load-balanced sequence chunks, the
// all-gather rotation): each GPU holds 1/c of every sequence, and each block's attention gathers
// the whole sequence's K and V (as SDPA receives them: repeated to every head under GQA); the
// backward gathers them again and reduce-scatters their gradients in fp32 (convert_to_f32).
//
// Expert parallelism (training.expert_parallel): each MoE block's tokens go to the GPUs of their
// experts and back in all-to-alls over the EP group (model_parallel.cpp, add_expert_parallel).
#pragma once

#include "models/kernel_list.hpp"
#include "sim/schedule.hpp"

namespace tagcsim::sim {

struct ModelParallelTime {
  double forward_seconds = 0, backward_seconds = 0;  // what the unit's forward and backward wait for
  int forward_launches = 0, backward_launches = 0;  // collectives and the copies beside them
};

// Async TP: the matmul seconds beside each of a block's sequence collectives (models::TpSite), by
// pass; each fused collective hides behind its own matmuls only.
struct TpSiteGemms {
  double seconds[3][4] = {};  // [models::Pass][site - 1]
  double& at(models::Pass pass, models::TpSite site) { return seconds[int(pass)][int(site) - 1]; }
  double at(models::Pass pass, models::TpSite site) const { return seconds[int(pass)][int(site) - 1]; }
};

// Unit u's expert-parallel all-to-alls for one micro-batch (none outside an MoE block, or without
// expert parallelism): their time the compute stream waits for, their count, their buffers' bytes.
struct ExpertExchange {
  double forward_seconds = 0, backward_seconds = 0;
  int forward_count = 0, backward_count = 0;
  double bytes = 0;              // nccl-tests' S summed: each all-to-all's send buffer
  double node_egress_bytes = 0;  // what each node pushed into the fabric for them
};
ExpertExchange expert_exchange(const StepSetup& setup, int u);

// Unit u's TP, CP and EP collectives; zero without any. `gemms` matters under async TP only.
ModelParallelTime model_parallel_time(const StepSetup& setup, int u, const TpSiteGemms& gemms = {});

}  // namespace tagcsim::sim
