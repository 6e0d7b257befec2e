#include "sim/schedule.hpp"

#include "common/input.hpp"
#include "sim/compute.hpp"

#include <fmt/format.h>

#include <numeric>

namespace tagcsim::sim {

const char* to_string(Stream s) {
  switch (s) {
    case Stream::Compute: return "compute";
    case Stream::AllGather: return "all-gather";
    case Stream::ReduceScatter: return "reduce-scatter";
  }
  return "?";
}

const char* to_string(Category c) {
  switch (c) {
    case Category::Forward: return "forward";
    case Category::Backward: return "backward";
    case Category::Optimizer: return "optimizer";
    case Category::CompressionKernel: return "compression_kernel";
    case Category::AllGather: return "all_gather";
    case Category::ReduceScatter: return "reduce_scatter";
    case Category::AllReduce: return "all_reduce";
    case Category::CompressedCollective: return "compressed_collective";
  }
  return "?";
}

int Schedule::add(Task t) {
  tasks.push_back(std::move(t));
  return int(tasks.size()) - 1;
}

StepSetup make_setup(const models::TransformerConfig& model, const topologies::Cluster& cluster,
                     const Training& training) {
  StepSetup s;
  s.model = model;
  s.cluster = cluster;
  s.training = training;
  models::TrainingShape shape;
  shape.micro_batch = training.micro_batch;
  shape.seq_len = training.seq_len > 0 ? training.seq_len : model.seq_len;
  shape.activation_bytes = bytes_of(training.param_dtype);
  shape.activation_checkpointing = training.activation_checkpointing;
  shape.impl = training.impl;
  s.units = models::fsdp_units(model, training.wrap, shape);

  const int gpn = cluster.gpus_per_node;
  if (training.sharding != Sharding::HybridShard) {
    s.shard_group = whole_cluster(cluster);
    return s;
  }
  // HYBRID_SHARD: shard inside groups of G GPUs, replicate across them.
  const int G = training.hybrid_shard_gpus > 0 ? training.hybrid_shard_gpus : gpn;
  if (G <= gpn) {
    if (gpn % G != 0)
      throw InputError(fmt::format("training.hybrid_shard_gpus: {} GPUs per shard group do not divide the {} GPUs "
                                   "of a node", G, gpn));
    s.shard_group = Group{.nodes = 1, .gpus_per_node = G, .node_stride = 1, .count = cluster.gpus() / G};
    s.replica_group = Group{.nodes = cluster.nodes, .gpus_per_node = gpn / G, .node_stride = 1, .count = G};
  } else {
    if (G % gpn != 0 || cluster.nodes % (G / gpn) != 0)
      throw InputError(fmt::format("training.hybrid_shard_gpus: a shard group of {} GPUs must be whole nodes of {} "
                                   "GPUs that divide the cluster's {} nodes", G, gpn, cluster.nodes));
    const int m = G / gpn;
    s.shard_group = Group{.nodes = m, .gpus_per_node = gpn, .node_stride = 1, .count = cluster.nodes / m};
    s.replica_group = Group{.nodes = cluster.nodes / m, .gpus_per_node = 1, .node_stride = m, .count = G};
  }
  return s;
}

int fsdp_reduce_scatter(Schedule& s, const StepSetup& setup, int u, int grad_ready) {
  const auto& unit = setup.units[u];
  const double bytes = double(unit.params) * bytes_of(setup.training.reduce_dtype);
  Task rs{.name = "reduce-scatter " + unit.name, .stream = Stream::ReduceScatter,
          .category = Category::ReduceScatter, .unit = u};
  rs.phases = {{plan_collective(setup.cluster, CollectiveOp::ReduceScatter, bytes, setup.shard_group)}};
  rs.after = {grad_ready};
  return replica_all_reduce(s, setup, u, s.add(std::move(rs)));
}

int replica_all_reduce(Schedule& s, const StepSetup& setup, int u, int after) {
  if (!setup.replica_group || setup.replica_group->ranks() <= 1) return after;
  const double shard_bytes =
      double(setup.units[u].params) * bytes_of(setup.training.reduce_dtype) / setup.shard_size();
  Task ar{.name = "all-reduce " + setup.units[u].name, .stream = Stream::ReduceScatter,
          .category = Category::AllReduce, .unit = u};
  ar.phases = {{plan_collective(setup.cluster, CollectiveOp::AllReduce, shard_bytes, *setup.replica_group)}};
  ar.after = {after};
  return s.add(std::move(ar));
}

Schedule build_step(const StepSetup& setup, const GradientReduction& reduce) {
  Schedule s;
  const auto& units = setup.units;
  const int U = int(units.size());
  const int M = setup.training.grad_accumulation;
  const int L = std::max(1, setup.training.max_inflight_all_gathers);
  const bool reshard = setup.training.sharding != Sharding::ShardGradOp;
  const Dtype dtype = setup.training.param_dtype;

  std::vector<UnitCompute> cost;
  for (int u = 0; u < U; ++u) cost.push_back(unit_compute(setup, u));

  auto gather = [&](int u, const char* phase, std::vector<int> after) {
    Task t{.name = fmt::format("all-gather {} {}", phase, units[u].name), .stream = Stream::AllGather,
           .category = Category::AllGather, .unit = u};
    t.phases = {{plan_collective(setup.cluster, CollectiveOp::AllGather, double(units[u].params) * bytes_of(dtype),
                                 setup.shard_group)}};
    t.after = std::move(after);
    return s.add(std::move(t));
  };
  auto compute = [&](int u, Category c, double seconds, std::vector<int> after) {
    Task t{.name = fmt::format("{} {}", to_string(c), units[u].name), .stream = Stream::Compute, .category = c,
           .unit = u, .seconds = seconds};
    t.after = std::move(after);
    return s.add(std::move(t));
  };

  // The root unit (0) is gathered first and kept until the end of backward;
  // its computation (embedding, final norm, head) is placed after the blocks'
  // in forward and before them in backward, where its head dominates.
  std::vector<int> fwd_order;
  for (int u = 1; u < U; ++u) fwd_order.push_back(u);
  fwd_order.push_back(0);

  std::vector<int> final_reductions;
  std::size_t reduced_before = 0;  // reductions of earlier micro-batches in final_reductions
  for (int m = 0; m < M; ++m) {
    const bool sync = m == M - 1 || !setup.training.no_sync;
    // FSDP's end-of-backward callback makes the compute stream wait for the
    // gradient reductions, so the next micro-batch starts after them.
    const std::vector<int> earlier(final_reductions.begin() + std::ptrdiff_t(reduced_before), final_reductions.end());
    reduced_before = final_reductions.size();
    std::vector<int> ag(U, -1), fwd(U, -1), bwd(U, -1);
    // Forward: the rate limiter lets an all-gather start once the unit L
    // places earlier has computed and freed its parameters.
    // The root's pre-forward also makes the all-gather stream wait for them.
    ag[0] = gather(0, "fwd", earlier);
    for (int i = 0; i + 1 < U; ++i) {
      const int u = fwd_order[i];
      std::vector<int> after;
      if (i >= L) after.push_back(fwd[fwd_order[i - L]]);
      ag[u] = gather(u, "fwd", after);
      std::vector<int> ready = {ag[u]};
      if (i == 0) ready.insert(ready.end(), earlier.begin(), earlier.end());
      fwd[u] = compute(u, Category::Forward, cost[u].forward_seconds, ready);
    }
    fwd[0] = compute(0, Category::Forward, cost[0].forward_seconds, {ag[0]});
    const int forward_done = fwd[0];

    // Backward runs the forward order in reverse: root's head first.
    std::vector<int> bwd_order(fwd_order.rbegin(), fwd_order.rend());
    for (int k = 0; k < U; ++k) {
      const int u = bwd_order[k];
      std::vector<int> ready = {k == 0 ? forward_done : bwd[bwd_order[k - 1]]};
      if (u != 0 && reshard) {
        std::vector<int> after = {fwd[fwd_order[U - 2]]};  // re-gather only after forward freed it
        if (setup.training.backward_prefetch == BackwardPrefetch::Pre) {
          if (k - L >= 0) after.push_back(bwd[bwd_order[k - L]]);
        } else if (k >= 1) {
          after.push_back(bwd[bwd_order[k - 1]]);
        }
        ready = {gather(u, "bwd", after)};
      }
      bwd[u] = compute(u, Category::Backward, cost[u].backward_seconds, ready);
      // The root's gradients (embedding) are complete only at the very end.
      if (sync && u != 0) final_reductions.push_back(reduce(s, setup, u, bwd[u]));
    }
    if (sync) final_reductions.push_back(reduce(s, setup, 0, bwd[bwd_order.back()]));
  }

  std::int64_t params = 0;
  for (const auto& u : units) params += u.params;
  Task opt{.name = "optimizer step", .stream = Stream::Compute, .category = Category::Optimizer, .unit = -1,
           .seconds = optimizer_seconds(double(params) / setup.shard_size(), setup.cluster.gpu)};
  opt.after = final_reductions;
  s.add(std::move(opt));
  return s;
}

}  // namespace tagcsim::sim
