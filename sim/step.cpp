#include "sim/step.hpp"

#include "sim/compute.hpp"

#include <algorithm>

namespace tagcsim::sim {
namespace {
// CUDA context, cuBLAS/NCCL workspaces and allocator fragmentation: a
// commonly observed ~2 GiB on 80 GB GPUs (an estimate, not a measurement).
constexpr double kWorkspaceBytes = 2.0 * (1ull << 30);
// FSDP keeps fp32 sharded params and grads; AdamW adds two fp32 moments.
constexpr double kShardedBytesPerParam = 4 + 4 + 8;
}  // namespace

double Memory::peak_bytes() const {
  return sharded_state_bytes + gathered_params_bytes + gradient_bytes + activation_bytes + workspace_bytes;
}

namespace {

Memory estimate_memory(const StepSetup& setup) {
  Memory m;
  const auto& units = setup.units;
  const auto& t = setup.training;
  double params = 0, largest = 0, second = 0, acts = 0;
  for (std::size_t i = 0; i < units.size(); ++i) {
    params += double(units[i].params);
    acts += units[i].activation_bytes;
    if (i == 0) continue;
    const double p = double(units[i].params);
    if (p > largest) second = largest, largest = p;
    else if (p > second) second = p;
  }
  m.sharded_state_bytes = params / setup.shard_size() * kShardedBytesPerParam;
  const double pb = bytes_of(t.param_dtype);
  // At the peak (start of backward): the root, the unit being computed and
  // the prefetched one; under SHARD_GRAD_OP every unit stays gathered.
  const double root = double(units.front().params);
  m.gathered_params_bytes = t.sharding == Sharding::ShardGradOp ? params * pb : (root + largest + second) * pb;
  // Unsharded gradients of the units being reduced; with no_sync every
  // unit's full gradient is accumulated locally.
  const double rb = std::max(bytes_of(t.reduce_dtype), pb);
  m.gradient_bytes = (t.grad_accumulation > 1 && t.no_sync) ? params * pb : (largest + second) * rb;
  m.activation_bytes = acts;
  m.workspace_bytes = kWorkspaceBytes;
  m.capacity_bytes = setup.cluster.gpu.memory_bytes;
  return m;
}

}  // namespace

StepResult summarize(const StepSetup& setup, Schedule schedule, Replay replay) {
  StepResult r;
  r.gpus = setup.cluster.gpus();
  double end = 0;
  double stream_busy[kStreams] = {0, 0, 0};
  for (std::size_t i = 0; i < schedule.tasks.size(); ++i) {
    const Task& t = schedule.tasks[i];
    const double d = replay.timings[i].end - replay.timings[i].start;
    end = std::max(end, replay.timings[i].end);
    stream_busy[int(t.stream)] += d;
    auto& b = r.breakdown;
    if (t.category == Category::Optimizer) b.optimizer_s += d;
    if (t.category == Category::CompressionKernel) b.compression_kernels_s += d;
    for (const Phase& ph : t.phases) {
      auto& c = r.collectives[ph.label.empty() ? to_string(t.category) : ph.label];
      c.count += ph.count;
      c.bytes += ph.plan.bytes * ph.count;
      c.node_egress_bytes += ph.plan.node_egress_bytes * ph.count;
    }
  }
  r.step_time_s = end;
  auto& b = r.breakdown;
  b.compute_s = stream_busy[int(Stream::Compute)] - b.optimizer_s;
  b.allgather_s = stream_busy[int(Stream::AllGather)];
  b.reduce_scatter_s = stream_busy[int(Stream::ReduceScatter)];
  b.exposed_comm_s = std::max(0.0, end - stream_busy[int(Stream::Compute)]);
  const int seq = setup.training.seq_len > 0 ? setup.training.seq_len : setup.model.seq_len;
  const double tokens = double(setup.training.micro_batch) * seq * setup.training.grad_accumulation;
  r.tokens_per_s_per_gpu = end > 0 ? tokens / end : 0;
  const double peak = peak_flops(setup.cluster.gpu, setup.training.param_dtype, setup.training.tf32);
  r.mfu = r.tokens_per_s_per_gpu * kernel_flops_per_token(setup) / peak;
  r.mfu_megatron = r.tokens_per_s_per_gpu * models::model_flops_per_token(setup.model) / peak;
  r.memory = estimate_memory(setup);
  r.schedule = std::move(schedule);
  r.replay = std::move(replay);
  return r;
}

StepResult simulate_fsdp(const StepSetup& setup) {
  Schedule s = build_step(setup);
  Replay r = replay(s, setup.cluster);
  return summarize(setup, std::move(s), std::move(r));
}

}  // namespace tagcsim::sim
