#include "sim/pipeline.hpp"

#include "common/input.hpp"
#include "sim/compute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <stdexcept>

namespace tagcsim::sim {

std::vector<std::vector<PipelineOp>> pipeline_order(PipelineSchedule schedule, int ranks, int stages_per_rank,
                                                    int microbatches) {
  const int p = ranks, v = stages_per_rank, m = microbatches;
  std::vector<std::vector<PipelineOp>> order(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    auto& ops = order[std::size_t(r)];
    if (schedule == PipelineSchedule::Gpipe) {
      for (int i = 0; i < m; ++i) ops.push_back({r, i, false});
      for (int i = 0; i < m; ++i) ops.push_back({r, i, true});
      continue;
    }
    // The j-th forward (backward) of the rank: rounds of p micro-batches through each of its
    // stages in turn (in reverse for backwards). One stage a rank is plain 1F1B.
    const int per_round = std::min(p, m);
    auto op = [&](int j, bool backward) {
      const int round = j / (per_round * v), within = j % (per_round * v);
      const int chunk = backward ? v - 1 - within / per_round : within / per_round;
      return PipelineOp{r + chunk * p, round * per_round + within % per_round, backward};
    };
    const int total = m * v;
    const int warmup = std::min(total, (v - 1) * per_round + (v > 1 ? 2 : 1) * (p - 1 - r));
    for (int j = 0; j < warmup; ++j) ops.push_back(op(j, false));
    for (int j = 0; j < total - warmup; ++j) ops.push_back(op(warmup + j, false)), ops.push_back(op(j, true));
    for (int j = total - warmup; j < total; ++j) ops.push_back(op(j, true));
  }
  return order;
}

PipelineTiming replay_pipeline(const std::vector<std::vector<PipelineOp>>& order, const std::vector<double>& forward_s,
                               const std::vector<double>& backward_s, double transfer_s,
                               const std::vector<double>& activation_share) {
  const int stages = int(forward_s.size());
  int microbatches = 0;
  std::vector<int> rank_of(static_cast<std::size_t>(stages), -1);
  for (std::size_t r = 0; r < order.size(); ++r)
    for (const auto& op : order[r]) rank_of[std::size_t(op.stage)] = int(r), microbatches = std::max(microbatches, op.microbatch + 1);
  // End of each stage's forward and backward of each micro-batch; -1 until it has run.
  std::vector<std::vector<double>> f(static_cast<std::size_t>(stages), std::vector<double>(static_cast<std::size_t>(microbatches), -1));
  auto b = f;
  PipelineTiming out;
  out.busy.assign(order.size(), 0);
  out.peak_in_flight.assign(order.size(), 0);
  std::vector<double> free(order.size(), 0), in_flight(order.size(), 0);
  std::vector<std::size_t> next(order.size(), 0);
  auto arrival = [&](double end, int from, int to) {
    return end < 0 ? -1.0 : end + (rank_of[std::size_t(from)] != rank_of[std::size_t(to)] ? transfer_s : 0);
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t r = 0; r < order.size(); ++r)
      while (next[r] < order[r].size()) {
        const auto& op = order[r][next[r]];
        const auto s = std::size_t(op.stage), i = std::size_t(op.microbatch);
        double ready = 0;
        if (!op.backward) {
          ready = op.stage == 0 ? 0 : arrival(f[s - 1][i], op.stage - 1, op.stage);
        } else {
          ready = op.stage == stages - 1 ? f[s][i] : arrival(b[s + 1][i], op.stage + 1, op.stage);
          if (f[s][i] < 0) ready = -1;
        }
        if (ready < 0) break;  // waits for another rank
        const double start = std::max(free[r], ready), seconds = op.backward ? backward_s[s] : forward_s[s];
        (op.backward ? b : f)[s][i] = free[r] = start + seconds;
        out.ops.push_back({int(r), op.stage, op.microbatch, op.backward, start, start + seconds});
        out.busy[r] += seconds;
        out.end = std::max(out.end, free[r]);
        const double share = activation_share.empty() ? 1.0 : activation_share[s];
        in_flight[r] += op.backward ? -share : share;
        out.peak_in_flight[r] = std::max(out.peak_in_flight[r], in_flight[r]);
        ++next[r], progress = true;
      }
  }
  for (std::size_t r = 0; r < order.size(); ++r)
    if (next[r] < order[r].size()) throw std::logic_error("pipeline schedule deadlocks");
  return out;
}

std::vector<int> stage_layers(int layers, int stages) {
  const int base = layers / stages;
  int extra = layers % stages, used = 0;
  std::vector<int> n(static_cast<std::size_t>(stages), base);
  for (int s = 1; s + 1 < stages; ++s)
    if (extra > 0) ++n[std::size_t(s)], --extra;
  for (int s = 0; s + 1 < stages; ++s) used += n[std::size_t(s)];
  n.back() = layers - used;
  return n;
}

namespace {

// One pipeline rank: its units (those of its stages, in forward order) and where each stage's start.
struct Rank {
  StepSetup setup;
  std::vector<int> stages;        // the stage ids it holds
  std::vector<int> first_unit;    // per held stage, its first unit in setup.units; plus the end
};

}  // namespace

StepResult simulate_pipeline(const StepSetup& setup, const std::function<StepResult(const StepSetup&)>& run) {
  const auto& t = setup.training;
  const int p = t.pipeline_parallel, v = t.stages_per_rank, m = t.microbatches(), S = p * v;
  const auto layers = stage_layers(setup.model.layers, S);
  // The units of the whole model, torchtitan's layout: tok_embeddings, the blocks, norm + output.
  std::vector<int> embedding, head, blocks;
  for (int u = 0; u < int(setup.units.size()); ++u) {
    const auto kind = setup.units[std::size_t(u)].kind;
    (kind == models::UnitKind::Block ? blocks : kind == models::UnitKind::Embedding ? embedding : head).push_back(u);
  }
  std::vector<int> first_layer(static_cast<std::size_t>(S), 0);
  for (int s = 1; s < S; ++s) first_layer[std::size_t(s)] = first_layer[std::size_t(s - 1)] + layers[std::size_t(s - 1)];

  // The whole job's slowest GPU sets every stage's pace, not the slowest of a stage's share.
  const double pace = setup.cluster.slowest_gpu_speed();
  std::vector<Rank> ranks(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    Rank& rank = ranks[std::size_t(r)];
    StepSetup& rs = rank.setup;
    rs = setup;
    rs.cluster.nodes /= p;  // a stage's nodes (make_setup built the groups on them)
    rs.cluster.stragglers = {.spread = 0, .slowest = pace};
    rs.training.pipeline_parallel = 1;
    rs.training.grad_accumulation = m;
    rs.training.no_sync = true;             // gradients reduced after the last micro-batch,
    rs.training.reduce_after_backward = true;  // once its backward is over
    rs.training.reshard_after_backward = false;  // parameters kept unsharded between micro-batches
    rs.units.clear();
    for (int k = 0; k < v; ++k) {
      const int s = r + k * p;
      rank.stages.push_back(s);
      rank.first_unit.push_back(int(rs.units.size()));
      if (s == 0)
        for (int u : embedding) rs.units.push_back(setup.units[std::size_t(u)]);
      for (int l = 0; l < layers[std::size_t(s)]; ++l)
        rs.units.push_back(setup.units[std::size_t(blocks[std::size_t(first_layer[std::size_t(s)] + l)])]);
      if (s == S - 1)
        for (int u : head) rs.units.push_back(setup.units[std::size_t(u)]);
    }
    rank.first_unit.push_back(int(rs.units.size()));
  }

  // Each stage's forward and backward of one micro-batch, and the share of its rank's saved
  // activations it holds.
  const auto stages = static_cast<std::size_t>(S);
  std::vector<double> forward(stages, 0.0), backward(stages, 0.0), share(stages, 0.0), saved(ranks.size(), 0.0);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const Rank& rank = ranks[r];
    double rank_activations = 0;
    std::vector<double> activations(rank.stages.size(), 0);
    for (std::size_t k = 0; k < rank.stages.size(); ++k) {
      const auto s = std::size_t(rank.stages[k]);
      for (int u = rank.first_unit[k]; u < rank.first_unit[k + 1]; ++u) {
        const auto c = unit_compute(rank.setup, u);
        forward[s] += c.forward_seconds / pace;
        backward[s] += c.backward_seconds / pace;
        activations[k] += rank.setup.units[std::size_t(u)].activation_bytes;
      }
      rank_activations += activations[k];
    }
    saved[r] = rank_activations;
    for (std::size_t k = 0; k < rank.stages.size(); ++k)
      share[std::size_t(rank.stages[k])] = rank_activations > 0 ? activations[k] / rank_activations : 1.0 / v;
  }
  // Each GPU sends its shard of the micro-batch's activations (its sequence shard under tensor or
  // context parallelism) to the GPU of the next stage on another node, each over its own NIC: an
  // exchange of two ranks one node apart in every stage, all of a node's GPUs at once.
  const double send_bytes = double(t.micro_batch) * setup.seq_len() * setup.model.hidden * bytes_of(t.param_dtype) /
                            t.model_parallel();
  const int stage_nodes = setup.cluster.nodes / p;
  const Group pair{.nodes = 2, .gpus_per_node = 1, .node_stride = stage_nodes, .count = setup.cluster.gpus_per_node};
  const double transfer = plan_collective(setup.cluster, CollectiveOp::AllGather, 2 * send_bytes, pair).seconds();

  const auto order = pipeline_order(t.pipeline_schedule, p, v, m);
  const auto timing = replay_pipeline(order, forward, backward, transfer, share);

  // Each rank's FSDP step over its stages, the micro-batches accumulated: what it spends beyond its
  // stages' compute (the all-gathers it waits for, the reduce-scatters after the last micro-batch,
  // the optimizer) comes on top of the schedule.
  // Ranks holding the same units (the middle ones) replay the same step: once each.
  std::map<std::vector<std::pair<const void*, std::int64_t>>, StepResult> replayed;
  auto replay_rank = [&](const StepSetup& rs) {
    std::vector<std::pair<const void*, std::int64_t>> key;
    for (const auto& u : rs.units) key.emplace_back(u.kernels.get(), u.params);
    auto it = replayed.find(key);
    if (it == replayed.end()) it = replayed.emplace(std::move(key), run(rs)).first;
    return it->second;
  };
  StepResult out;
  double extra = -1, peak = 0;
  Memory memory;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    StepResult rr = replay_rank(ranks[r].setup);
    const double beyond = std::max(0.0, rr.step_time_s - timing.busy[r]);
    // The schedule keeps several micro-batches' saved activations at once where accumulation keeps
    // one: the rest of them come on top of the accumulating step's peak.
    Memory mem = rr.memory;
    mem.activation_bytes += std::max(0.0, timing.peak_in_flight[r] - 1) * saved[r];
    if (mem.peak_bytes() > peak) peak = mem.peak_bytes(), memory = mem;
    if (beyond > extra) {
      extra = beyond;
      out = std::move(rr);
      out.breakdown.pipeline_bubble_s = std::max(0.0, timing.end - timing.busy[r]);
    }
  }
  out.memory = memory;
  out.pipeline_ops = timing.ops;
  out.step_time_s = timing.end + extra;
  out.breakdown.exposed_comm_s = std::max(0.0, out.step_time_s - out.breakdown.compute_s - out.breakdown.optimizer_s);
  out.gpus = setup.cluster.gpus();
  // A pipeline of p stages (each t x c GPUs) trains on m micro-batches a step.
  const double tokens = double(t.micro_batches_per_step()) * t.micro_batch * setup.seq_len() / t.gpus_per_replica();
  out.tokens_per_s_per_gpu = tokens / out.step_time_s;
  const double peak_flops_s = peak_flops(setup.cluster.gpu, t.compute_dtype(), t.tf32);
  out.mfu = out.tokens_per_s_per_gpu * kernel_flops_per_token(setup) / peak_flops_s;
  out.mfu_megatron = out.tokens_per_s_per_gpu * models::model_flops_per_token(setup.model, setup.seq_len()) / peak_flops_s;
  out.pipeline = fmt::format(
      "pipeline: {} over {} stages ({} a rank, {} blocks the most), {} micro-batches of {}: the schedule runs {:.3f} s "
      "with {:.3f} s of it idle on the slowest rank (the bubble), sends of {:.3g} MB between stages take {:.3f} ms; "
      "each rank's FSDP work and optimizer add {:.3f} s (sim/pipeline.hpp)",
      to_string(t.pipeline_schedule), S, v, *std::max_element(layers.begin(), layers.end()), m, t.micro_batch,
      timing.end, out.breakdown.pipeline_bubble_s, send_bytes / 1e6, transfer * 1e3, extra);
  return out;
}

}  // namespace tagcsim::sim
