#include "sim/tensor_parallel.hpp"

#include "models/kernel_list.hpp"

#include <algorithm>

namespace tagcsim::sim {

TensorParallelTime tensor_parallel_time(const StepSetup& setup, int u, double forward_gemm_seconds,
                                        double backward_gemm_seconds) {
  TensorParallelTime out;
  if (!setup.tensor_parallel_group) return out;
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
  if (unit.kind == models::UnitKind::Block) {
    // The re-run under checkpointing stops before the down projection with early stop, and so
    // before the MLP's reduce-scatter.
    const bool rerun = unit.kernels && unit.kernels->recomputes;
    const int rerun_scatters = !rerun ? 0 : t.impl.checkpoint_early_stop ? 1 : 2;
    out.forward_seconds = 2 * block_gather + 2 * scatter;
    out.backward_seconds = 2 * block_gather + 2 * scatter + (rerun ? 2 * block_gather + rerun_scatters * scatter : 0);
    out.forward_collectives = 4;
    out.backward_collectives = 4 + (rerun ? 2 + rerun_scatters : 0);
  }
  if (embedding) {  // the partial embeddings reduce-scattered to sequence shards; backward gathers their gradient
    out.forward_seconds += scatter, out.backward_seconds += gather;
    out.forward_collectives += 1, out.backward_collectives += 1;
  }
  if (head) {  // the head's input gathered, the loss reduced over the vocabulary slices; backward scatters
    out.forward_seconds += gather + 2 * loss, out.backward_seconds += scatter;
    out.forward_collectives += 3, out.backward_collectives += 1;
  }
  if (t.async_tp) {
    // Micro-pipelined in tp chunks: the first chunk's transfer (the last's, for a reduce-scatter) has
    // no matmul to hide behind; the rest hides behind the unit's matmuls as far as they last.
    const double n = g.ranks();
    auto exposed = [&](double comm, double gemm) { return comm / n + std::max(0.0, comm * (n - 1) / n - gemm); };
    out.forward_seconds = exposed(out.forward_seconds, forward_gemm_seconds);
    out.backward_seconds = exposed(out.backward_seconds, backward_gemm_seconds);
  }
  return out;
}

}  // namespace tagcsim::sim
