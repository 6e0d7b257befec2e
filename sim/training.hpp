// How the model is trained: the FSDP settings a PyTorch user chooses.
//
// docs/fsdp-semantics.md lists every behaviour these settings select, with
// the PyTorch source each one follows.
#pragma once

#include "models/model.hpp"

#include <optional>
#include <string>

namespace tagcsim::sim {

enum class Sharding { FullShard, ShardGradOp, HybridShard };
enum class BackwardPrefetch { Pre, Post, None };
enum class Dtype { BF16, FP16, FP32 };
// FSDP1 is FullyShardedDataParallel (one FlatParameter per unit);
// FSDP2 is fully_shard (per-parameter DTensor sharding).
enum class Api { Fsdp1, Fsdp2 };
// Whose training loop runs FSDP: it decides the defaults the user did not set.
enum class Framework { PyTorch, Torchtitan, Composer };
// NCCL communicators: reduce-scatters share the all-gathers' process group
// (PyTorch's default), or run on a group of their own.
enum class ReduceScatterGroup { Shared, Separate };
// torch.distributed.pipelining's schedules (training.pipeline_schedule).
enum class PipelineSchedule { Gpipe, OneFOneB, Interleaved1F1B };

double bytes_of(Dtype d);
const char* to_string(Sharding s);
const char* to_string(Dtype d);
const char* to_string(Api a);
const char* to_string(Framework f);
const char* to_string(PipelineSchedule s);  // as the scenario spells it: gpipe, 1f1b, interleaved_1f1b

// The CPU thread that runs the Python training loop and issues every kernel.
// These defaults serve GPUs without a kernel profile; a profile carries its host's own
// (calibrate/profiles/device-*.yaml `host:`), and the scenario's `training.host` overrides both.
struct HostCost {
  // Per kernel launched by eager PyTorch: pytorch/pytorch issue 41383 measures
  // 5 us per op without autograd and 6.8 us with it (CPU tensors, so dispatch
  // only; launch-cpu-pt41383-* in validation/data/published_kernels.yaml);
  // tritonbench (K09/K10) 2.7-4.2 us to launch an empty compiled kernel on
  // H100. torch.compile and CUDA graphs lower it.
  double kernel_issue_s = 6.8e-6;
  // Per FSDP hook call (pre/post forward, pre/post backward): an estimate of
  // their Python, not a measurement.
  double hook_s = 50e-6;
};

struct Training {
  Api api = Api::Fsdp1;
  Framework framework = Framework::PyTorch;
  Sharding sharding = Sharding::FullShard;
  int hybrid_shard_gpus = 0;        // HYBRID_SHARD: GPUs per shard group (0: one node)
  // Tensor parallelism inside a node over this many GPUs (torchtitan's sequence-parallel plan); FSDP
  // shards each GPU's part over the GPUs that hold the same part, one group per TP rank.
  int tensor_parallel = 1;
  bool async_tp = false;            // torchtitan's async TP: the TP collectives overlap their own matmuls
  // Context parallelism inside a node over this many GPUs (PyTorch's context_parallel, as torchtitan
  // runs it): each holds 1/c of every sequence; FSDP shards over them too.
  int context_parallel = 1;
  // Expert parallelism over this many consecutive GPUs (torchtitan's expert_parallel_degree, which
  // borrows them from the data-parallel shard group): each holds experts / ep of every block's routed
  // experts, FSDP-sharded over the GPUs holding the same ones, and its tokens reach their experts in
  // all-to-alls. FSDP2 with torchtitan's layout only.
  int expert_parallel = 1;
  // The busiest GPU's routed rows over the balanced share, under expert parallelism (1: balanced).
  double expert_imbalance = 1;
  // GPUs that share one micro-batch: tensor_parallel x context_parallel.
  int model_parallel() const { return tensor_parallel * context_parallel; }
  // Pipeline parallelism across nodes (torch.distributed.pipelining, torchtitan's
  // pipeline_parallel_degree): the blocks split into pipeline_parallel x stages_per_rank stages, each
  // micro-batch of micro_batch sequences passing through them; pipeline_microbatches of them a step
  // (0: pipeline_parallel, torchtitan's default). sim/pipeline.hpp.
  int pipeline_parallel = 1;
  PipelineSchedule pipeline_schedule = PipelineSchedule::OneFOneB;
  int stages_per_rank = 1;
  int pipeline_microbatches = 0;
  int microbatches() const { return pipeline_microbatches > 0 ? pipeline_microbatches : pipeline_parallel; }
  // Micro-batches a step: the pipeline's under pipeline parallelism, else gradient accumulation's.
  int micro_batches_per_step() const { return pipeline_parallel > 1 ? microbatches() : grad_accumulation; }
  // GPUs that together train one data-parallel rank's micro-batches: TP x CP x PP.
  int gpus_per_replica() const { return model_parallel() * pipeline_parallel; }
  models::WrapPolicy wrap = models::WrapPolicy::Block;
  int micro_batch = 1;              // sequences per GPU per micro-batch
  int seq_len = 0;                  // 0: the model's
  int grad_accumulation = 1;        // micro-batches per step
  // Skip the gradient reduction on all but the last micro-batch (FSDP1's
  // no_sync(), FSDP2's set_requires_gradient_sync(False)). Scenarios default
  // it per framework: only plain FSDP1 loops call no_sync().
  bool no_sync = true;
  // Reduce every unit's gradient only once the last micro-batch's backward is over, one unit after
  // another: torch.distributed.pipelining's stage (backward_maybe_with_nosync) runs FSDP's
  // post_backward by hand after its last backward. Set for each pipeline rank (sim/pipeline.cpp).
  bool reduce_after_backward = false;
  // FSDP2's set_reshard_after_backward: free the unsharded parameters after each micro-batch's
  // backward; the pipelining stage keeps them through the step (false), resharding after the last.
  bool reshard_after_backward = true;
  Dtype param_dtype = Dtype::BF16;  // all-gathered parameters and compute
  Dtype reduce_dtype = Dtype::FP32; // reduce-scatter of gradients
  // torch.autocast over fp32 parameters (Lightning's bf16-mixed and 16-mixed with FSDP, whose
  // FSDPPrecision gathers fp32 and reduces in 16 bits; llama-recipes' bfSixteen_mixed): the matmuls
  // and the activations in this dtype, FSDP's all-gathers in param_dtype, and each Linear casting its
  // weight (impl.autocast_casts). Unset: no autocast, compute in param_dtype.
  std::optional<Dtype> autocast;
  Dtype compute_dtype() const { return autocast ? *autocast : param_dtype; }
  // What the sharded parameters, their gradients and AdamW's two moments are kept in: fp32 (mixed
  // precision's master weights), or bf16 when the model is cast before it is wrapped
  // (model.to(torch.bfloat16)), as some training loops do.
  Dtype master_dtype = Dtype::FP32;
  // AdamW's implementation: foreach (a kernel per elementwise op over the shard, torch.optim's
  // default) or fused (one kernel reading parameter, gradient and both moments and writing three).
  enum class Optimizer { Foreach, Fused } optimizer = Optimizer::Foreach;
  bool activation_checkpointing = false;
  bool tf32 = false;                // fp32 matmuls on tensor cores (torch.backends.cuda.matmul.allow_tf32)
  // FSDP1's rate limiter (limit_all_gathers, PyTorch's default since 2.1): the
  // CPU blocks before an all-gather while max_inflight_all_gathers frees are
  // pending. PyTorch fixes that depth at 2 (_limiter_utils.py); another value
  // is an explicit what-if.
  bool limit_all_gathers = true;
  int max_inflight_all_gathers = 2;
  BackwardPrefetch backward_prefetch = BackwardPrefetch::Pre;  // FSDP1 only
  // FSDP2's reshard_after_forward: -1 true (free to the shard), 0 false (keep
  // unsharded until backward), N > 1 reshard to N GPUs (backward all-gathers
  // over them).
  int reshard_after_forward = -1;
  ReduceScatterGroup reduce_scatter_group = ReduceScatterGroup::Shared;
  HostCost host{-1, -1};             // -1: the profile's (or HostCost's defaults); sim::host_cost resolves it
  // The caching allocator's reserve beyond the allocated peak, as a fraction of
  // it: torchtitan's published H100 runs show peak reserved minus peak
  // allocated of 8-14 GiB (issue 11's survey, not vendored in validation/data),
  // about 0.15 of their allocated peak.
  double allocator_fragmentation = 0.15;
  models::Implementation impl;      // attention kernel, torch.compile, fused loss, checkpointed share
};

}  // namespace tagcsim::sim
