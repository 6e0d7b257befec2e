// One training step as a graph of tasks on the streams FSDP runs it on.
//
// A task starts when its stream is free and the tasks it waits for are done.
// The streams are the host (the CPU thread that runs the Python loop and
// issues every kernel), the GPU's compute stream, FSDP1's post-backward stream,
// and one stream per NCCL communicator: NCCL runs one communicator's kernels in
// the order they were issued, so the all-gathers and reduce-scatters of one
// process group queue behind each other instead of sharing the network. This
// file builds that graph as FSDP1 (FullyShardedDataParallel) or FSDP2
// (fully_shard) issue it, hook by hook; docs/fsdp-semantics.md lists each
// behaviour with its PyTorch source. Compression policies (sim/policy.hpp)
// replace the gradient reduction of each unit by their own tasks. The graph is
// the same on every rank, so one graph describes the whole data-parallel job.
#pragma once

#include "models/model.hpp"
#include "sim/collective.hpp"
#include "sim/training.hpp"
#include "topologies/cluster.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tagcsim::sim {

enum class Stream {
  Compute = 0,        // the default CUDA stream: forward, backward, optimizer, FSDP2's copies
  AllGather = 1,      // the shard group's NCCL communicator: all-gathers, and reduce-scatters when they share it
  ReduceScatter = 2,  // a reduce-scatter process group of its own (training.reduce_scatter_group: separate)
  AllReduce = 3,      // HYBRID_SHARD's replica group: its all-reduces, on a stream and communicator of their own
  PostBackward = 4,   // FSDP1's post-backward stream: the gradient's cast to reduce_dtype and its divides
  Host = 5,           // the CPU thread: kernel issue, FSDP's hooks, and its waits on the GPU
};
inline constexpr int kStreams = 6;
const char* to_string(Stream s);

// What a task's time counts as in the step-time breakdown.
enum class Category {
  Forward, Backward, Optimizer,             // compute stream (backward includes recompute under checkpointing)
  CompressionKernel,                        // compression kernels (any stream)
  AllGather, ReduceScatter, AllReduce,      // FSDP's own collectives
  CompressedCollective,                     // index / sketch traffic of a compression policy
  FsdpCopy,                                 // FSDP's copies and casts (FSDP2 copy-out/copy-in, FSDP1 grad cast)
  Host,                                     // CPU: issuing kernels, running hooks, waiting for the GPU
};
const char* to_string(Category c);

// A run of `count` identical collectives, one after another on the stream:
// one network phase carrying all their bytes, plus all their latencies.
struct Phase {
  CollectivePlan plan;
  int count = 1;
  std::string label;                       // what it carries, for the report ("index all_reduce")
  int root = 0;                            // a reduce's or broadcast's root rank; the i-th of `count` has
                                           // root + i (mod the group's ranks), as TAGC's per-shard reduces
};

struct Task {
  std::string name;                        // "forward layers.3", "reduce-scatter layers.3"
  Stream stream = Stream::Compute;
  Category category = Category::Forward;
  int unit = -1;
  double seconds = 0;                      // fixed duration (compute, kernels); after the phases if both
  std::vector<Phase> phases;               // collectives, simulated with contention
  std::vector<int> after;                  // tasks that must finish first
  // When the host issues it: `issue_delay` seconds of host time after the
  // tasks in `issued_after` are done (the host stream's last task and the GPU
  // tasks the host waited for since). It cannot start before.
  std::vector<int> issued_after;
  double issue_delay = 0;
  // How many times the host reads this task's result back and blocks on it (a
  // compression kernel's device-to-host syncs: the bisection's .item() probes,
  // the peeling loop's flag; the counts of kernels/profile.hpp); 0: never. A
  // gradient reduction sets it; the FSDP builders then issue the task from the
  // host and make the host wait for its end (detail::Program::adopt).
  double host_syncs = 0;
};

// A block of GPU memory the schedule allocates and frees: alive from the
// start (or end) of task `from` to the end (or start) of task `to`; `to` -1:
// to the end of the step. The memory peak follows these (sim/step.hpp).
// ShardedState: the gradient shards (from a unit's first reduction in the step
// to the next step's zero_grad) and the optimizer's temporaries.
enum class MemoryKind { Params, Gradients, Activations, ShardedState };
// The CUDA stream whose allocations a buffer comes from: PyTorch's caching
// allocator reuses a freed block only for the stream it was allocated on, so
// each pool holds its own high-water mark (sim/step.cpp).
enum class MemoryPool {
  Compute,    // the default stream: activations, autograd's gradients, FSDP2's copies, the optimizer
  AllGather,  // FSDP1's unshard stream (the unsharded FlatParameter), FSDP2's all-gather outputs
  Reduce,     // FSDP1's post-backward stream, FSDP2's reduce-scatter stream: casts, gradient shards
};
inline constexpr int kMemoryPools = 3;
struct Buffer {
  MemoryKind kind = MemoryKind::Params;
  double bytes = 0;
  int from = -1;
  bool from_end = false;
  int to = -1;
  bool to_start = false;
  MemoryPool pool = MemoryPool::Compute;
};

struct Schedule {
  std::vector<Task> tasks;                 // in issue order; each stream runs its tasks in this order
  std::vector<Buffer> buffers;
  int add(Task t);
};

// Everything the schedule depends on.
struct StepSetup {
  models::TransformerConfig model;
  topologies::Cluster cluster;
  Training training;
  std::vector<models::FsdpUnit> units;     // forward order; a root unit (kind Root) first when the wrap has one
  Group shard_group;                       // who all-gathers / reduce-scatters a unit
  std::optional<Group> replica_group;      // HYBRID_SHARD: who all-reduces a shard
  std::optional<Group> post_forward_group; // FSDP2 reshard_after_forward: N: who holds a unit until backward
  std::optional<Group> tensor_parallel_group;   // who splits each block's matmuls (training.tensor_parallel > 1)
  std::optional<Group> context_parallel_group;  // who splits each sequence (training.context_parallel > 1)
  // Expert parallelism (training.expert_parallel > 1): who exchanges tokens in all-to-alls, and who
  // all-gathers and reduce-scatters the routed experts a GPU holds (the ranks holding the same ones).
  std::optional<Group> expert_parallel_group;
  std::optional<Group> expert_shard_group;
  int shard_size() const { return shard_group.ranks(); }
  // Ranks unit u's routed experts are sharded over: the expert shard group under expert
  // parallelism, else the shard group.
  int expert_shard_size() const { return expert_shard_group ? expert_shard_group->ranks() : shard_size(); }
  // Tokens per sequence: the training's, else the model's.
  int seq_len() const { return training.seq_len > 0 ? training.seq_len : model.seq_len; }
  // The communicator stream gradient reductions run on.
  Stream reduce_stream() const;
};
StepSetup make_setup(const models::TransformerConfig& model, const topologies::Cluster& cluster,
                     const Training& training);

// Appends the tasks that reduce unit `u`'s gradient after task `grad_ready`
// and returns the task whose end means the reduced shard is ready. Tasks on
// the same stream run in the order they are added, which is the order the
// host issued them.
using GradientReduction = std::function<int(Schedule&, const StepSetup&, int u, int grad_ready)>;
// Plain FSDP: reduce-scatter in reduce_dtype (then all-reduce across replicas under HYBRID_SHARD).
int fsdp_reduce_scatter(Schedule& s, const StepSetup& setup, int u, int grad_ready);
// HYBRID_SHARD: the all-reduce of unit u's reduced shard across replicas,
// after task `after` (returned unchanged when there are no replicas).
int replica_all_reduce(Schedule& s, const StepSetup& setup, int u, int after);

Schedule build_step(const StepSetup& setup, const GradientReduction& reduce = fsdp_reduce_scatter);

}  // namespace tagcsim::sim
