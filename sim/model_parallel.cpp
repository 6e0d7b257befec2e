#include "sim/model_parallel.hpp"

#include "models/shapes.hpp"

#include "models/kernel_list.hpp"

#include <algorithm>

namespace tagcsim::sim {

namespace {

// Context parallelism: each block's K and V gathered over the CP group forward, again backward
// with their gradients reduce-scattered in fp32.
void add_context_parallel(const StepSetup& setup, int u, ModelParallelTime& out) {
  const auto& unit = setup.units[std::size_t(u)];
  if (!setup.context_parallel_group || unit.kind != models::UnitKind::Block) return;
  const auto& t = setup.training;
  const auto& m = setup.model;
  const Group& g = *setup.context_parallel_group;
  // SDPA gets K and V repeated to every head under GQA (torchtitan's repeat_kv runs before it).
  const bool repeated = t.impl.attention != models::AttentionKernel::FlashTriton && m.kv_heads < m.heads;
  const double width = double(repeated ? models::detail::q_dim(m) : models::detail::kv_dim(m));
  const double elements = 2.0 * t.micro_batch * setup.seq_len() * width;  // K and V of whole sequences
  const double gather =
      plan_collective(setup.cluster, CollectiveOp::AllGather, elements * bytes_of(t.param_dtype), g).seconds();
  const double scatter = plan_collective(setup.cluster, CollectiveOp::ReduceScatter, elements * 4, g).seconds();
  const bool rerun = unit.kernels && unit.kernels->recomputes;
  out.forward_seconds += gather;
  out.backward_seconds += (rerun ? 2 : 1) * gather + scatter;
  out.forward_collectives += 1;
  out.backward_collectives += (rerun ? 2 : 1) + 1;
}

// Tensor parallelism: the blocks' all-gathers and reduce-scatters, the embedding's and the head's;
// async TP hides them behind the unit's matmuls but for a chunk.
void add_tensor_parallel(const StepSetup& setup, int u, double forward_gemm_seconds, double backward_gemm_seconds,
                         ModelParallelTime& out) {
  if (!setup.tensor_parallel_group) return;
  const auto& unit = setup.units[std::size_t(u)];
  const auto& t = setup.training;
  const Group& g = *setup.tensor_parallel_group;
  const double tokens = double(t.micro_batch) * setup.seq_len();
  const double activations = tokens * setup.model.hidden;  // elements of the micro-batch's T x h
  const double e = bytes_of(t.param_dtype);
  auto seconds = [&](CollectiveOp op, double bytes) { return plan_collective(setup.cluster, op, bytes, g).seconds(); };
  const double block_gather = seconds(CollectiveOp::AllGather, activations * (t.impl.float8_linears ? 1 : e));
  const double gather = seconds(CollectiveOp::AllGather, activations * e);
  const double scatter = seconds(CollectiveOp::ReduceScatter, activations * e);
  const double loss = seconds(CollectiveOp::AllReduce, tokens * 4);

  const bool embedding = unit.kind == models::UnitKind::Root || unit.kind == models::UnitKind::Embedding;
  const bool head = unit.kind == models::UnitKind::Root || unit.kind == models::UnitKind::LmHead;
  ModelParallelTime tp;
  if (unit.kind == models::UnitKind::Block) {
    // The re-run under checkpointing stops before the down projection with early stop, and so
    // before the MLP's reduce-scatter.
    const bool rerun = unit.kernels && unit.kernels->recomputes;
    const int rerun_scatters = !rerun ? 0 : t.impl.checkpoint_early_stop ? 1 : 2;
    tp.forward_seconds = 2 * block_gather + 2 * scatter;
    tp.backward_seconds = 2 * block_gather + 2 * scatter + (rerun ? 2 * block_gather + rerun_scatters * scatter : 0);
    tp.forward_collectives = 4;
    tp.backward_collectives = 4 + (rerun ? 2 + rerun_scatters : 0);
  }
  if (embedding) {  // the partial embeddings reduce-scattered to sequence shards; backward gathers their gradient
    tp.forward_seconds += scatter, tp.backward_seconds += gather;
    tp.forward_collectives += 1, tp.backward_collectives += 1;
  }
  if (head) {  // the head's input gathered, the loss reduced over the vocabulary slices; backward scatters
    tp.forward_seconds += gather + 2 * loss, tp.backward_seconds += scatter;
    tp.forward_collectives += 3, tp.backward_collectives += 1;
  }
  if (t.async_tp) {
    // Micro-pipelined in tp chunks: the first chunk's transfer (the last's, for a reduce-scatter) has
    // no matmul to hide behind; the rest hides behind the unit's matmuls as far as they last.
    const double n = g.ranks();
    auto exposed = [&](double comm, double gemm) { return comm / n + std::max(0.0, comm * (n - 1) / n - gemm); };
    tp.forward_seconds = exposed(tp.forward_seconds, forward_gemm_seconds);
    tp.backward_seconds = exposed(tp.backward_seconds, backward_gemm_seconds);
  }
  out.forward_seconds += tp.forward_seconds, out.backward_seconds += tp.backward_seconds;
  out.forward_collectives += tp.forward_collectives, out.backward_collectives += tp.backward_collectives;
}

}  // namespace

ModelParallelTime model_parallel_time(const StepSetup& setup, int u, double forward_gemm_seconds,
                                      double backward_gemm_seconds) {
  ModelParallelTime out;
  add_tensor_parallel(setup, u, forward_gemm_seconds, backward_gemm_seconds, out);
  add_context_parallel(setup, u, out);
  return out;
}

}  // namespace tagcsim::sim
