#include "sim/step.hpp"

#include "sim/pipeline.hpp"

#include "sim/compute.hpp"
#include "sim/model_parallel.hpp"
#include "sim/schedule_program.hpp"

#include <algorithm>

namespace tagcsim::sim {
namespace {
// CUDA context, cuBLAS and NCCL workspaces outside PyTorch's allocator: a
// commonly observed ~2 GiB on 80 GB GPUs (an estimate, not a measurement).
constexpr double kWorkspaceBytes = 2.0 * (1ull << 30);
}  // namespace

double Memory::allocated_bytes() const {
  return sharded_state_bytes + gathered_params_bytes + gradient_bytes + activation_bytes;
}

namespace {

// Walks the schedule's buffers through the replayed times: the live tensors
// at the moment their sum peaks, and what the caching allocator
// (c10/cuda/CUDACachingAllocator.cpp) holds around them. The allocator reuses a
// freed block only for an allocation on the stream that allocated it
// (get_free_block compares the block's stream), and keeps what cudaMalloc gave
// it until a cudaMalloc fails: then it frees every unused cached block
// (release_cached_blocks, whose cudaFree synchronizes the device) and retries
// (stats num_alloc_retries). So with room to spare it holds each stream's pool
// at that pool's own high-water mark, not the peak of the sum (the gradient
// shards, made on the reduction stream as backward ends and freed by zero_grad
// before the next forward, keep their blocks from the activations), plus
// fragmentation (allocator_fragmentation of the memory that churns: blocks
// split and rounded, training.hpp). Without that room it gives cached blocks
// back and the GPU fills up; a run fails only when the live tensors do not fit.
Memory estimate_memory(const StepSetup& setup, const Schedule& s, const Replay& r, double step_end) {
  Memory m;
  double shard = 0;
  for (int u = 0; u < int(setup.units.size()); ++u) shard += detail::shard_params(setup, u);
  // fp32 parameter shards and AdamW's two moments: allocated once, alive through every step.
  const double persistent =
      shard * (detail::shard_bytes_per_param(setup.training) + detail::moment_bytes_per_param(setup.training));

  struct Event {
    double time;
    double bytes;  // + allocate, - free
    MemoryKind kind;
    MemoryPool pool;
  };
  std::vector<Event> events;
  events.reserve(2 * s.buffers.size());
  for (const Buffer& b : s.buffers) {
    const auto& from = r.timings[std::size_t(b.from)];
    const double start = b.from_end ? from.end : from.start;
    double end = step_end;
    if (b.to >= 0) end = b.to_start ? r.timings[std::size_t(b.to)].start : r.timings[std::size_t(b.to)].end;
    events.push_back({start, b.bytes, b.kind, b.pool});
    events.push_back({std::max(start, end), -b.bytes, b.kind, b.pool});
  }
  // At equal times frees come first: a buffer freed at the end of one task
  // makes room for one allocated as the next starts.
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.time < b.time || (a.time == b.time && a.bytes < b.bytes);
  });
  constexpr int K = 4, Pl = kMemoryPools;
  double now[K] = {}, at_peak[K] = {}, pool_total[Pl] = {}, pool_peak[Pl] = {}, total = 0, peak = 0;
  for (const Event& e : events) {
    now[int(e.kind)] += e.bytes;
    total += e.bytes;
    pool_total[int(e.pool)] += e.bytes;
    pool_peak[int(e.pool)] = std::max(pool_peak[int(e.pool)], pool_total[int(e.pool)]);
    if (total > peak) {
      peak = total;
      std::copy(now, now + K, at_peak);
    }
  }
  // Sums of allocations and frees of unequal sizes can leave a kind that holds nothing at the peak
  // at a rounding's +-1e-8 bytes: a tensor holds whole bytes, so less than one byte is none.
  for (double& bytes : at_peak) bytes = bytes < 1.0 ? 0.0 : bytes;
  m.sharded_state_bytes = persistent + at_peak[int(MemoryKind::ShardedState)];
  m.gathered_params_bytes = at_peak[int(MemoryKind::Params)];
  m.gradient_bytes = at_peak[int(MemoryKind::Gradients)];
  m.activation_bytes = at_peak[int(MemoryKind::Activations)];

  double pools = 0;
  for (int p = 0; p < Pl; ++p) {
    m.pool_peak_bytes[p] = pool_peak[p] + (p == int(MemoryPool::Compute) ? persistent : 0);
    pools += pool_peak[p];
  }
  m.cached_bytes = persistent + pools * (1 + setup.training.allocator_fragmentation);
  m.workspace_bytes = kWorkspaceBytes;
  m.capacity_bytes = setup.cluster.gpu.memory_bytes;
  // The allocator fills what the live tensors leave of the GPU, at most its cache.
  const double allocated = m.allocated_bytes();
  const double room = m.capacity_bytes - m.workspace_bytes;
  m.fragmentation_bytes = std::max(0.0, std::min(m.cached_bytes, std::max(allocated, room)) - allocated);
  return m;
}

}  // namespace

StepResult summarize(const StepSetup& setup, Schedule schedule, Replay replay) {
  StepResult r;
  r.gpus = setup.cluster.gpus();
  double end = 0;
  double stream_busy[kStreams] = {};
  auto& b = r.breakdown;
  const double pace = setup.cluster.slowest_gpu_speed();  // a straggler's kernels are slower, not held back
  for (std::size_t i = 0; i < schedule.tasks.size(); ++i) {
    const Task& t = schedule.tasks[i];
    const double d = replay.timings[i].end - replay.timings[i].start;
    end = std::max(end, replay.timings[i].end);
    stream_busy[int(t.stream)] += d;
    // Sleeps leave rounding in a task's replayed time; a nanosecond is more than that, less than any slowdown.
    if (t.stream == Stream::Compute && t.phases.empty() && d - t.seconds / pace > 1e-9) b.sm_slowdown_s += d - t.seconds / pace;
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
  // Expert parallelism's all-to-alls sit inside the blocks' compute tasks (sim/model_parallel.hpp):
  // named apart here, per micro-batch times the step's micro-batches.
  if (setup.expert_parallel_group) {
    const int micro_batches = setup.training.micro_batches_per_step();
    auto& a2a = r.collectives["alltoall (expert parallel)"];
    for (int u = 0; u < int(setup.units.size()); ++u) {
      const auto x = expert_exchange(setup, u);
      a2a.count += (x.forward_count + x.backward_count) * micro_batches;
      a2a.bytes += x.bytes * micro_batches;
      a2a.node_egress_bytes += x.node_egress_bytes * micro_batches;
      b.expert_all_to_all_s += (x.forward_seconds + x.backward_seconds) * micro_batches;
    }
  }
  r.step_time_s = end;
  b.compute_s = stream_busy[int(Stream::Compute)] - b.optimizer_s;
  b.exposed_comm_s = std::max(0.0, end - stream_busy[int(Stream::Compute)]);
  // Each tensor- or context-parallel group trains on one micro-batch: a GPU's share is 1/t/c of it.
  const double tokens = double(setup.training.micro_batch) * setup.seq_len() *
                        setup.training.micro_batches_per_step() / setup.training.gpus_per_replica();
  r.tokens_per_s_per_gpu = end > 0 ? tokens / end : 0;
  const double peak = peak_flops(setup.cluster.gpu, setup.training.compute_dtype(), setup.training.tf32);
  r.mfu = r.tokens_per_s_per_gpu * kernel_flops_per_token(setup) / peak;
  r.mfu_megatron = r.tokens_per_s_per_gpu * models::model_flops_per_token(setup.model, setup.seq_len()) / peak;
  r.memory = estimate_memory(setup, schedule, replay, end);
  r.schedule = std::move(schedule);
  r.replay = std::move(replay);
  return r;
}

StepResult simulate_fsdp(const StepSetup& setup) {
  if (setup.training.pipeline_parallel > 1) return simulate_pipeline(setup, simulate_fsdp);
  Schedule s = build_step(setup);
  Replay r = replay(s, setup.cluster);
  return summarize(setup, std::move(s), std::move(r));
}

}  // namespace tagcsim::sim
