// One training step as a graph of tasks on three GPU streams.
//
// FSDP runs parameter all-gathers, computation and gradient reduce-scatters
// on separate CUDA streams; a task starts when its stream is free and the
// tasks it waits for are done. This file builds that graph for plain FSDP;
// compression policies (sim/policy.hpp) replace the gradient reduction of
// each unit by their own tasks. The graph is the same on every rank, so one
// graph describes the whole data-parallel job.
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

enum class Stream { Compute = 0, AllGather = 1, ReduceScatter = 2 };
inline constexpr int kStreams = 3;
const char* to_string(Stream s);

// What a task's time counts as in the step-time breakdown.
enum class Category {
  Forward, Backward, Optimizer,             // compute stream (backward includes recompute under checkpointing)
  CompressionKernel,                        // compression kernels (any stream)
  AllGather, ReduceScatter, AllReduce,      // FSDP's own collectives
  CompressedCollective,                     // index / sketch traffic of a compression policy
};
const char* to_string(Category c);

// A run of `count` identical collectives, one after another on the stream:
// one network phase carrying all their bytes, plus all their latencies.
struct Phase {
  CollectivePlan plan;
  int count = 1;
  std::string label;                       // what it carries, for the report ("index all_reduce")
};

struct Task {
  std::string name;                        // "fwd block.3", "rs block.3"
  Stream stream = Stream::Compute;
  Category category = Category::Forward;
  int unit = -1;
  double seconds = 0;                      // fixed duration (compute, kernels); after the phases if both
  std::vector<Phase> phases;               // collectives, simulated with contention
  std::vector<int> after;                  // tasks that must finish first
};

struct Schedule {
  std::vector<Task> tasks;                 // in issue order; each stream runs its tasks in this order
  int add(Task t);
};

// Everything the schedule depends on.
struct StepSetup {
  models::TransformerConfig model;
  topologies::Cluster cluster;
  Training training;
  std::vector<models::FsdpUnit> units;     // forward order, root first
  Group shard_group;                       // who all-gathers / reduce-scatters a unit
  std::optional<Group> replica_group;      // HYBRID_SHARD: who all-reduces a shard
  int shard_size() const { return shard_group.ranks(); }
};
StepSetup make_setup(const models::TransformerConfig& model, const topologies::Cluster& cluster,
                     const Training& training);

// Appends the tasks that reduce unit `u`'s gradient after task `grad_ready`
// and returns the task whose end means the reduced shard is ready.
using GradientReduction = std::function<int(Schedule&, const StepSetup&, int u, int grad_ready)>;
// Plain FSDP: reduce-scatter in reduce_dtype (then all-reduce across replicas under HYBRID_SHARD).
int fsdp_reduce_scatter(Schedule& s, const StepSetup& setup, int u, int grad_ready);
// HYBRID_SHARD: the all-reduce of unit u's reduced shard across replicas,
// after task `after` (returned unchanged when there are no replicas).
int replica_all_reduce(Schedule& s, const StepSetup& setup, int u, int after);

Schedule build_step(const StepSetup& setup, const GradientReduction& reduce = fsdp_reduce_scatter);

}  // namespace tagcsim::sim
