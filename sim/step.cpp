#include "sim/step.hpp"

#include "sim/compute.hpp"

#include <algorithm>

namespace tagcsim::sim {
namespace {
// CUDA context, cuBLAS and NCCL workspaces outside PyTorch's allocator: a
// commonly observed ~2 GiB on 80 GB GPUs (an estimate, not a measurement).
constexpr double kWorkspaceBytes = 2.0 * (1ull << 30);
// FSDP keeps fp32 sharded params and grads; AdamW adds two fp32 moments.
constexpr double kShardedBytesPerParam = 4 + 4 + 8;
}  // namespace

double Memory::allocated_bytes() const {
  return sharded_state_bytes + gathered_params_bytes + gradient_bytes + activation_bytes;
}

namespace {

// Walks the schedule's buffers through the replayed times: the peak of what
// is allocated, and what it is made of at that moment.
Memory estimate_memory(const StepSetup& setup, const Schedule& s, const Replay& r, double step_end) {
  Memory m;
  double params = 0;
  for (const auto& u : setup.units) params += double(u.params);
  m.sharded_state_bytes = params / setup.shard_size() * kShardedBytesPerParam;

  struct Event {
    double time;
    double bytes;  // + allocate, - free
    MemoryKind kind;
  };
  std::vector<Event> events;
  events.reserve(2 * s.buffers.size());
  for (const Buffer& b : s.buffers) {
    const auto& from = r.timings[std::size_t(b.from)];
    const double start = b.from_end ? from.end : from.start;
    double end = step_end;
    if (b.to >= 0) end = b.to_start ? r.timings[std::size_t(b.to)].start : r.timings[std::size_t(b.to)].end;
    events.push_back({start, b.bytes, b.kind});
    events.push_back({std::max(start, end), -b.bytes, b.kind});
  }
  // At equal times frees come first: a buffer freed at the end of one task
  // makes room for one allocated as the next starts.
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.time < b.time || (a.time == b.time && a.bytes < b.bytes);
  });
  double now[3] = {0, 0, 0}, at_peak[3] = {0, 0, 0}, peak = 0;
  for (const Event& e : events) {
    now[int(e.kind)] += e.bytes;
    const double total = now[0] + now[1] + now[2];
    if (total > peak) {
      peak = total;
      std::copy(now, now + 3, at_peak);
    }
  }
  m.gathered_params_bytes = at_peak[int(MemoryKind::Params)];
  m.gradient_bytes = at_peak[int(MemoryKind::Gradients)];
  m.activation_bytes = at_peak[int(MemoryKind::Activations)];
  m.fragmentation_bytes = m.allocated_bytes() * setup.training.allocator_fragmentation;
  m.workspace_bytes = kWorkspaceBytes;
  m.capacity_bytes = setup.cluster.gpu.memory_bytes;
  return m;
}

}  // namespace

StepResult summarize(const StepSetup& setup, Schedule schedule, Replay replay) {
  StepResult r;
  r.gpus = setup.cluster.gpus();
  double end = 0;
  double stream_busy[kStreams] = {};
  auto& b = r.breakdown;
  for (std::size_t i = 0; i < schedule.tasks.size(); ++i) {
    const Task& t = schedule.tasks[i];
    const double d = replay.timings[i].end - replay.timings[i].start;
    end = std::max(end, replay.timings[i].end);
    stream_busy[int(t.stream)] += d;
    switch (t.category) {
      case Category::Optimizer: b.optimizer_s += d; break;
      case Category::CompressionKernel: b.compression_kernels_s += d; break;
      case Category::AllGather: b.allgather_s += d; break;
      case Category::ReduceScatter:
      case Category::AllReduce:
      case Category::CompressedCollective: b.reduce_scatter_s += d; break;
      case Category::FsdpCopy: b.fsdp_copy_s += d; break;
      case Category::Host: b.host_s += d; break;
      default: break;
    }
    for (const Phase& ph : t.phases) {
      auto& c = r.collectives[ph.label.empty() ? to_string(t.category) : ph.label];
      c.count += ph.count;
      c.bytes += ph.plan.bytes * ph.count;
      c.node_egress_bytes += ph.plan.node_egress_bytes * ph.count;
    }
  }
  r.step_time_s = end;
  b.compute_s = stream_busy[int(Stream::Compute)] - b.optimizer_s;
  b.exposed_comm_s = std::max(0.0, end - stream_busy[int(Stream::Compute)]);
  const int seq = setup.training.seq_len > 0 ? setup.training.seq_len : setup.model.seq_len;
  const double tokens = double(setup.training.micro_batch) * seq * setup.training.grad_accumulation;
  r.tokens_per_s_per_gpu = end > 0 ? tokens / end : 0;
  const double peak = peak_flops(setup.cluster.gpu, setup.training.param_dtype, setup.training.tf32);
  r.mfu = r.tokens_per_s_per_gpu * kernel_flops_per_token(setup) / peak;
  r.mfu_megatron = r.tokens_per_s_per_gpu * models::model_flops_per_token(setup.model) / peak;
  r.memory = estimate_memory(setup, schedule, replay, end);
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
