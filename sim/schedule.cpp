#include "sim/schedule.hpp"

#include "common/input.hpp"
#include "sim/schedule_program.hpp"

#include <fmt/format.h>

namespace tagcsim::sim {

const char* to_string(Stream s) {
  switch (s) {
    case Stream::Compute: return "compute";
    case Stream::AllGather: return "nccl shard group";
    case Stream::ReduceScatter: return "nccl reduce-scatter group";
    case Stream::AllReduce: return "nccl replica group";
    case Stream::PostBackward: return "post-backward";
    case Stream::Host: return "host";
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
    case Category::FsdpCopy: return "fsdp_copy";
    case Category::Host: return "host";
  }
  return "?";
}

const char* to_string(Api a) { return a == Api::Fsdp1 ? "fsdp1" : "fsdp2"; }

const char* to_string(Framework f) {
  switch (f) {
    case Framework::PyTorch: return "pytorch";
    case Framework::Torchtitan: return "torchtitan";
    case Framework::Composer: return "composer";
  }
  return "?";
}

const char* to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::Gpipe: return "gpipe";
    case PipelineSchedule::OneFOneB: return "1f1b";
    case PipelineSchedule::Interleaved1F1B: return "interleaved_1f1b";
  }
  return "?";
}

int Schedule::add(Task t) {
  tasks.push_back(std::move(t));
  return int(tasks.size()) - 1;
}

Stream StepSetup::reduce_stream() const {
  return training.reduce_scatter_group == ReduceScatterGroup::Separate ? Stream::ReduceScatter : Stream::AllGather;
}

namespace {

// Groups of G GPUs tiling the cluster: inside a node (G divides it) or whole
// consecutive nodes. `key` names the setting in errors.
Group groups_of(const topologies::Cluster& c, int G, const char* key) {
  const int gpn = c.gpus_per_node;
  if (G <= gpn) {
    if (gpn % G != 0)
      throw InputError(fmt::format("training.{}: groups of {} GPUs do not divide the {} GPUs of a node", key, G, gpn));
    return Group{.nodes = 1, .gpus_per_node = G, .node_stride = 1, .count = c.gpus() / G};
  }
  if (G % gpn != 0 || c.nodes % (G / gpn) != 0)
    throw InputError(fmt::format("training.{}: a group of {} GPUs must be whole nodes of {} GPUs that divide the "
                                 "cluster's {} nodes",
                                 key, G, gpn, c.nodes));
  const int m = G / gpn;
  return Group{.nodes = m, .gpus_per_node = gpn, .node_stride = 1, .count = c.nodes / m};
}

}  // namespace

StepSetup make_setup(const models::TransformerConfig& model, const topologies::Cluster& cluster,
                     const Training& training) {
  StepSetup s;
  s.model = model;
  s.cluster = cluster;
  s.training = training;
  models::TrainingShape shape;
  shape.micro_batch = training.micro_batch;
  shape.seq_len = s.seq_len();
  shape.activation_bytes = bytes_of(training.compute_dtype());
  shape.activation_checkpointing = training.activation_checkpointing;
  shape.impl = training.impl;
  shape.tensor_parallel = training.tensor_parallel;
  shape.context_parallel = training.context_parallel;
  shape.expert_parallel = training.expert_parallel;
  shape.expert_imbalance = training.expert_imbalance;
  const int gpn = cluster.gpus_per_node;
  const int tp = training.tensor_parallel, cp = training.context_parallel;
  if (gpn % tp != 0)
    throw InputError(fmt::format("training.tensor_parallel: {} GPUs do not divide a node's {} (tensor "
                                 "parallelism stays inside a node)",
                                 tp, gpn));
  if (gpn % cp != 0)
    throw InputError(fmt::format("training.context_parallel: {} GPUs do not divide a node's {} (context "
                                 "parallelism stays inside a node here)",
                                 cp, gpn));
  s.units = models::fsdp_units(model, training.wrap, shape);
  // Pipeline parallelism: each stage on nodes / pp nodes of its own, where the groups below live
  // (sim/pipeline.cpp replays each pipeline rank on them).
  const int pp = training.pipeline_parallel;
  if (pp > 1 && cluster.nodes % pp != 0)
    throw InputError(fmt::format("training.pipeline_parallel: {} stages do not split the cluster's {} nodes (each "
                                 "stage takes whole nodes)",
                                 pp, cluster.nodes));
  if (const int stages = pp * training.stages_per_rank; pp > 1 && model.layers < stages)
    throw InputError(fmt::format("training.pipeline_parallel: {} stages need at least as many blocks; model '{}' has {}",
                                 stages, model.name, model.layers));
  topologies::Cluster stage = cluster;
  stage.nodes = cluster.nodes / pp;
  // Context parallelism over consecutive GPUs; FSDP shards over them too (torchtitan's dp_shard_cp).
  if (cp > 1) s.context_parallel_group = groups_of(stage, cp, "context_parallel");

  if (tp > 1) {
    // Tensor parallelism inside a node, over consecutive GPUs; FSDP shards each one's part over the
    // GPUs holding the same part: every node's gpn / tp of them, one group per TP rank.
    s.tensor_parallel_group = groups_of(stage, tp, "tensor_parallel");
    s.shard_group = Group{.nodes = stage.nodes, .gpus_per_node = gpn / tp, .node_stride = 1, .count = tp};
  } else if (training.sharding != Sharding::HybridShard) {
    s.shard_group = whole_cluster(stage);
  } else {
    // HYBRID_SHARD: shard inside groups of G GPUs, replicate across them.
    const int G = training.hybrid_shard_gpus > 0 ? training.hybrid_shard_gpus : gpn;
    s.shard_group = groups_of(stage, G, "hybrid_shard_gpus");
    s.replica_group = G <= gpn ? Group{.nodes = stage.nodes, .gpus_per_node = gpn / G, .node_stride = 1, .count = G}
                               : Group{.nodes = stage.nodes / (G / gpn), .gpus_per_node = 1,
                                       .node_stride = G / gpn, .count = G};
  }
  // FSDP2's reshard_after_forward=N (fully_shard, _get_post_forward_mesh_info):
  // a non-trivial divisor of the shard group, held by consecutive ranks.
  const int N = training.reshard_after_forward;
  if (training.api == Api::Fsdp2 && N > 1) {
    if (N >= s.shard_size() || s.shard_size() % N != 0)
      throw InputError(fmt::format("training.reshard_after_forward: {} must divide the shard group's {} GPUs and be "
                                   "smaller (true, false, or a divisor such as the GPUs of a node)",
                                   N, s.shard_size()));
    s.post_forward_group = groups_of(stage, N, "reshard_after_forward");
  }
  // Expert parallelism borrows consecutive GPUs of the shard group (torchtitan's dp_shard_in_ep);
  // the GPUs holding the same experts, one in every ep, shard them (dp_shard_mod_ep).
  if (const int ep = training.expert_parallel; ep > 1) {
    const int dp = s.shard_size();
    if (ep > dp || dp % ep != 0)
      throw InputError(fmt::format("training.expert_parallel: {} GPUs do not divide the {} GPUs FSDP shards over", ep, dp));
    s.expert_parallel_group = groups_of(stage, ep, "expert_parallel");
    s.expert_shard_group = ep <= gpn ? Group{.nodes = stage.nodes, .gpus_per_node = gpn / ep, .node_stride = 1, .count = ep}
                                     : Group{.nodes = stage.nodes / (ep / gpn), .gpus_per_node = 1,
                                             .node_stride = ep / gpn, .count = ep};
  }
  return s;
}

int fsdp_reduce_scatter(Schedule& s, const StepSetup& setup, int u, int grad_ready) {
  const auto& unit = setup.units[u];
  const auto& t = setup.training;
  if (t.api == Api::Fsdp1) {
    // FSDP1's _post_backward_hook, on the post-backward stream: the gradient
    // cast to reduce_dtype, then _reduce_grad's pre-divide of the unsharded
    // gradient (_gradient_predivide_factor) and post-divide of the shard.
    const double P = double(unit.params), pb = bytes_of(t.param_dtype), rb = bytes_of(t.reduce_dtype);
    const int N = setup.shard_size();
    double copy = t.reduce_dtype != t.param_dtype ? P * (pb + rb) : 0;
    if (N > 1) copy += 2 * P * rb + 2 * P / N * rb;
    if (copy > 0) {
      Task cast = detail::copy_task("grad cast+divide " + unit.name, u, Stream::PostBackward, copy,
                                    setup.cluster.gpu);
      cast.after = {grad_ready};
      grad_ready = s.add(std::move(cast));
    }
  }
  Task rs{.name = "reduce-scatter " + unit.name, .stream = setup.reduce_stream(),
          .category = Category::ReduceScatter, .unit = u};
  rs.phases = detail::shard_group_phases(setup, unit, CollectiveOp::ReduceScatter, bytes_of(t.reduce_dtype),
                                 double(unit.params) * bytes_of(t.reduce_dtype), setup.shard_group);
  rs.after = {grad_ready};
  return replica_all_reduce(s, setup, u, s.add(std::move(rs)));
}

int replica_all_reduce(Schedule& s, const StepSetup& setup, int u, int after) {
  if (!setup.replica_group || setup.replica_group->ranks() <= 1) return after;
  // Its own stream and process group (FSDP1 _runtime_utils.py _init_streams:
  // _all_reduce_stream, _reduce_grad: all_reduce on _inter_node_pg; FSDP2
  // _fsdp_collectives.py foreach_reduce: all_reduce_stream): it overlaps the
  // shard group's queue instead of waiting in it.
  const double shard_bytes =
      double(setup.units[u].params) * bytes_of(setup.training.reduce_dtype) / setup.shard_size();
  Task ar{.name = "all-reduce " + setup.units[u].name, .stream = Stream::AllReduce,
          .category = Category::AllReduce, .unit = u};
  ar.phases = {{plan_collective(setup.cluster, CollectiveOp::AllReduce, shard_bytes, *setup.replica_group)}};
  ar.after = {after};
  return s.add(std::move(ar));
}

Schedule build_step(const StepSetup& setup, const GradientReduction& reduce) {
  return setup.training.api == Api::Fsdp1 ? detail::build_fsdp1(setup, reduce) : detail::build_fsdp2(setup, reduce);
}

namespace detail {

Program::Program(Schedule& s) : s_(s) { last_.fill(-1); }

void Program::host(const std::string& what, double seconds) {
  if (seconds <= 0) return;
  if (pending_name_.empty()) pending_name_ = what;
  else pending_more_ = true;
  pending_s_ += seconds;
}

void Program::sync(int task) {
  if (task < 0) return;
  flush();
  pending_after_.push_back(task);
}

void Program::flush() {
  if (pending_s_ <= 0 && pending_after_.empty()) return;
  // Named after what the host waited for (if anything) and the first thing it did then.
  std::string name = pending_after_.empty() ? "" : "wait for " + s_.tasks[std::size_t(pending_after_.front())].name;
  if (!pending_name_.empty()) name += (name.empty() ? "" : ", then ") + pending_name_ + (pending_more_ ? " ..." : "");
  Task t{.name = std::move(name), .stream = Stream::Host, .category = Category::Host, .seconds = pending_s_};
  t.after = std::move(pending_after_);
  host_last_ = s_.add(std::move(t));
  last_[int(Stream::Host)] = host_last_;
  pending_name_.clear();
  pending_more_ = false;
  pending_s_ = 0;
  pending_after_.clear();
}

void Program::wait(Stream waiter, int task) {
  if (task >= 0) waits_[int(waiter)].push_back(task);
}

int Program::issue(Task t) {
  // The host's current task starts once its predecessor and the GPU tasks it
  // waits for are done; this task is issued pending_s_ into it.
  if (host_last_ >= 0) t.issued_after.push_back(host_last_);
  t.issued_after.insert(t.issued_after.end(), pending_after_.begin(), pending_after_.end());
  t.issue_delay = pending_s_;
  auto& w = waits_[int(t.stream)];
  t.after.insert(t.after.end(), w.begin(), w.end());
  w.clear();
  const Stream stream = t.stream;
  const int id = s_.add(std::move(t));
  last_[int(stream)] = id;
  return id;
}

int Program::adopt(std::size_t from, Stream stream, int fallback) {
  int found = fallback;
  const std::size_t end = s_.tasks.size();
  for (std::size_t i = from; i < end; ++i) {
    last_[int(s_.tasks[i].stream)] = int(i);
    if (s_.tasks[i].stream == stream) found = int(i);
  }
  // A task the host reads back (a compression kernel's .item() or flag) is
  // issued at the host's position and the host waits for it: it issues
  // nothing else, neither the next unit's kernels nor FSDP's hooks, until then.
  // No host task is made between them: the walk of calibrate check and the
  // replay both read the host's order from the task order, and a host task
  // made now would come after the tasks it precedes. The host's pending time
  // is spent before the first read-back task (its issue delay); each later one
  // is issued as the wait for the one before it ends.
  std::vector<int> synced;
  for (std::size_t i = from; i < end; ++i) {
    Task& t = s_.tasks[i];
    if (t.host_syncs <= 0) continue;
    if (host_last_ >= 0) t.issued_after.push_back(host_last_);
    t.issued_after.insert(t.issued_after.end(), pending_after_.begin(), pending_after_.end());
    t.issued_after.insert(t.issued_after.end(), synced.begin(), synced.end());
    t.issue_delay = synced.empty() ? pending_s_ : 0;
    synced.push_back(int(i));
  }
  if (!synced.empty()) {
    pending_s_ = 0;
    pending_name_.clear();
    pending_more_ = false;
    pending_after_.insert(pending_after_.end(), synced.begin(), synced.end());
  }
  return found;
}

void Program::buffer(MemoryKind kind, double bytes, int from, int to, bool from_end, bool to_start, MemoryPool pool) {
  if (bytes <= 0 || from < 0) return;
  s_.buffers.push_back(Buffer{kind, bytes, from, from_end, to, to_start, pool});
}

double padded_flat_numel(std::int64_t params, int shard_size) {
  const std::int64_t n = std::max(shard_size, 1);
  return double((params + n - 1) / n * n);
}

double shard_bytes_per_param(const Training& t) { return bytes_of(t.master_dtype); }

double shard_params(const StepSetup& setup, int u) {
  const auto& unit = setup.units[std::size_t(u)];
  const int n = setup.shard_size();
  if (setup.expert_shard_group)  // FSDP2 only: no padding
    return double(unit.params - unit.expert_params) / n + double(unit.expert_params) / setup.expert_shard_size();
  return (setup.training.api == Api::Fsdp1 ? padded_flat_numel(unit.params, n) : double(unit.params)) / n;
}

std::vector<Phase> shard_group_phases(const StepSetup& setup, const models::FsdpUnit& unit, CollectiveOp op,
                                      double expert_bytes_per_param, double bytes, const Group& group) {
  if (!setup.expert_shard_group || unit.expert_params <= 0) return {{plan_collective(setup.cluster, op, bytes, group)}};
  // torchtitan's block and its experts module are fully_shard units of their own, issued back to
  // back: the block's parameters over the shard group, its experts over the expert shard group.
  const double experts = double(unit.expert_params) * expert_bytes_per_param;
  return {{plan_collective(setup.cluster, op, bytes - experts, group)},
          {plan_collective(setup.cluster, op, experts, *setup.expert_shard_group), 1, fmt::format("experts {}", to_string(op))}};
}

double optimizer_temporary_bytes(const StepSetup& setup) {
  if (setup.training.optimizer == Training::Optimizer::Fused) return 0;
  double total = 0, largest = 0;
  for (int u = 0; u < int(setup.units.size()); ++u) {
    total += shard_params(setup, u);
    largest = std::max(largest, shard_params(setup, u));
  }
  return shard_bytes_per_param(setup.training) * (setup.training.framework == Framework::Composer ? largest : total);
}

void GradientShards::reduced(Program& p, const StepSetup& setup, int u, int reduced) {
  if (made_[std::size_t(u)]) return;
  made_[std::size_t(u)] = 1;
  p.buffer(MemoryKind::ShardedState, shard_params(setup, u) * shard_bytes_per_param(setup.training), reduced, -1, false, false,
           MemoryPool::Reduce);
}

int optimizer_step(Program& p, const StepSetup& setup, const Costs& cost) {
  p.host("optimizer step", cost.hook_s);
  const int opt = p.issue(optimizer_task(setup));
  p.flush();
  p.buffer(MemoryKind::ShardedState, optimizer_temporary_bytes(setup), opt, opt);
  return opt;
}

Costs costs_of(const StepSetup& setup) {
  Costs c{.gpu = &setup.cluster.gpu};
  for (int u = 0; u < int(setup.units.size()); ++u) c.units.push_back(unit_compute(setup, u));
  c.hook_s = host_cost(setup).hook_s;
  return c;
}

Task compute_task(const StepSetup& setup, int u, Category c, double seconds) {
  return Task{.name = fmt::format("{} {}", to_string(c), setup.units[u].name), .stream = Stream::Compute,
              .category = c, .unit = u, .seconds = seconds};
}

Task copy_task(const std::string& name, int u, Stream stream, double bytes, const topologies::DeviceProfile& gpu) {
  return Task{.name = name, .stream = stream, .category = Category::FsdpCopy, .unit = u,
              .seconds = memory_kernel_seconds(bytes, gpu)};
}

Task all_gather_task(const StepSetup& setup, int u, const Group& group, const char* phase) {
  const auto& unit = setup.units[u];
  Task t{.name = fmt::format("all-gather {} {}", phase, unit.name), .stream = Stream::AllGather,
         .category = Category::AllGather, .unit = u};
  t.phases = shard_group_phases(setup, unit, CollectiveOp::AllGather, bytes_of(setup.training.param_dtype),
                                all_gather_bytes(setup, unit), group);
  return t;
}

double all_gather_bytes(const StepSetup& setup, const models::FsdpUnit& unit) {
  const double all = double(unit.params) * bytes_of(setup.training.param_dtype);
  if (!setup.training.impl.float8_all_gather || unit.kind == models::UnitKind::Root) return all;
  // The blocks' Linear weights travel in float8, one byte each (their biases and the norms stay in
  // param_dtype; the root's head is not converted).
  const double linear = double(unit.attention_params + unit.mlp_params);
  return all - linear * (bytes_of(setup.training.param_dtype) - 1);
}

Task optimizer_task(const StepSetup& setup) {
  std::int64_t params = 0;
  for (const auto& u : setup.units) params += u.params;
  double shard = double(params) / setup.shard_size();
  if (setup.expert_shard_group) {  // the routed experts over their own, smaller group
    shard = 0;
    for (int u = 0; u < int(setup.units.size()); ++u) shard += shard_params(setup, u);
  }
  return Task{.name = "optimizer step", .stream = Stream::Compute, .category = Category::Optimizer, .unit = -1,
              .seconds = optimizer_seconds(shard, setup.training, setup.cluster.gpu)};
}

int root_unit(const StepSetup& setup) {
  return !setup.units.empty() && setup.units.front().kind == models::UnitKind::Root ? 0 : -1;
}

}  // namespace detail
}  // namespace tagcsim::sim
