#include "sim/model_parallel.hpp"

#include "models/shapes.hpp"

#include "models/kernel_list.hpp"
#include "sim/compute.hpp"

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
  const bool repeated = t.impl.repeats_kv(m, setup.seq_len());
  const double width = double(repeated ? models::detail::q_dim(m) : models::detail::kv_dim(m));
  const double elements = 2.0 * t.micro_batch * setup.seq_len() * width;  // K and V of whole sequences
  const double gather =
      plan_collective(setup.cluster, CollectiveOp::AllGather, elements * bytes_of(t.param_dtype), g).seconds();
  const double scatter = plan_collective(setup.cluster, CollectiveOp::ReduceScatter, elements * 4, g).seconds();
  const bool rerun = unit.kernels && unit.kernels->recomputes;
  out.forward_seconds += gather;
  out.backward_seconds += (rerun ? 2 : 1) * gather + scatter;
  out.forward_launches += 1;
  out.backward_launches += (rerun ? 2 : 1) + 1;
}

// Tensor parallelism: the blocks' all-gathers and reduce-scatters, the embedding's and the head's.
// Each runs along the sequence dimension of a (batch, sequence, hidden) activation, and PyTorch's
// functional collectives move that dimension to the front and back with a copy
// (torch/distributed/_functional_collectives.py: all_gather_tensor concatenates the gathered chunks
// along gather_dim, reduce_scatter_tensor concatenates its input's chunks before the collective):
// one memory-bound kernel reading and writing the whole tensor beside each, except the backward
// reduce-scatters of a compiled block, whose copy joins the element-wise sum of the dgrads before
// it. Async TP (torch.compile's micro-pipelining) fuses a compiled block's all-gathers into the
// matmuls that read them and its forward reduce-scatters into the matmuls that write them, with
// no copy (fused_all_gather_matmul and fused_matmul_reduce_scatter work on the moved dimension in
// place), and hides them behind the unit's matmuls but for a chunk. What it cannot fuse stays as
// it was: the backward reduce-scatters, whose input is a sum of dgrads rather than one matmul's
// output, and the embedding's and head's collectives, outside the compiled blocks.
// Under tp_plan: per_linear each column-parallel Linear (q, k, v; gate, up) redistributes the
// sequence-sharded input itself, so the attention's and the MLP's input collectives run once per
// Linear, the replicated embedding needs no forward collective, and the head gathers the logits
// (along the vocabulary, with its copy) where loss parallelism would all-reduce three per-token values.
void add_tensor_parallel(const StepSetup& setup, int u, const TpSiteGemms& gemms, ModelParallelTime& out) {
  if (!setup.tensor_parallel_group) return;
  const auto& unit = setup.units[std::size_t(u)];
  const auto& t = setup.training;
  const Group& g = *setup.tensor_parallel_group;
  const double tokens = double(t.micro_batch) * setup.seq_len();
  const double activations = tokens * setup.model.hidden;  // elements of the micro-batch's T x h
  const double e = bytes_of(t.param_dtype);
  const double gathered_bytes = activations * (t.impl.float8_linears ? 1 : e);  // float8 Linears gather in float8
  auto collective = [&](CollectiveOp op, double bytes) { return plan_collective(setup.cluster, op, bytes, g).seconds(); };
  auto memory = [&](double bytes) { return memory_kernel_seconds(bytes, setup.cluster.gpu); };
  const double n = g.ranks();
  const double block_gather = collective(CollectiveOp::AllGather, gathered_bytes);
  const double gather = collective(CollectiveOp::AllGather, activations * e);
  const double scatter = collective(CollectiveOp::ReduceScatter, activations * e);
  const double loss = collective(CollectiveOp::AllReduce, tokens * 4);
  const bool per_linear = t.impl.tp_plan == models::Implementation::TpPlan::PerLinear;
  // Column-parallel Linears reading the attention's and the MLP's input: one gather between them
  // under torchtitan's plan, one each under per_linear.
  const auto& m = setup.model;
  const int attention_inputs = per_linear ? (models::detail::llama_layout(m) ? 3 : 1) : 1;
  const int mlp_inputs = per_linear && m.gated_mlp ? 2 : 1;
  const double block_gather_copy = memory(2 * gathered_bytes), copy = memory(2 * activations * e);
  // A fused matmul + reduce-scatter sums the n partial chunks it received in one reduction kernel
  // (torch/distributed/_symmetric_memory: _fused_matmul_reduce_scatter_impl's reduce_fn).
  const double partial_sum = memory(activations * e * (1 + 1 / n));

  double fwd = 0, bwd = 0;
  int fwd_launches = 0, bwd_launches = 0;
  // A collective the compute stream waits for, with the copy beside it.
  auto waited = [](double& pass, int& launches, double seconds, double copy_seconds) {
    pass += seconds + copy_seconds, launches += copy_seconds > 0 ? 2 : 1;
  };
  // A block collective: fused under async TP with the matmuls of its site, micro-pipelined in n
  // chunks (the first chunk's transfer, the last's for a reduce-scatter, has no matmul to hide
  // behind; the rest hides as far as they last); else waited for with its copy.
  auto block = [&](double& pass, int& launches, double seconds, double copy_seconds, models::Pass p,
                   models::TpSite site, bool scatters) {
    if (!t.async_tp) return waited(pass, launches, seconds, copy_seconds);
    pass += seconds / n + std::max(0.0, seconds * (n - 1) / n - gemms.at(p, site));
    if (scatters) pass += partial_sum, launches += 1;
    launches += 1;
  };

  const bool embedding = unit.kind == models::UnitKind::Root || unit.kind == models::UnitKind::Embedding;
  const bool head = unit.kind == models::UnitKind::Root || unit.kind == models::UnitKind::LmHead;
  if (unit.kind == models::UnitKind::Block) {
    // The re-run under checkpointing stops before the down projection with early stop, and so
    // before the MLP's reduce-scatter. torchtitan's per-op policy saves every reduce-scatter's
    // output (reduce_scatter_tensor is in its save list), so its re-run scatters nothing.
    const bool rerun = unit.kernels && unit.kernels->recomputes;
    const int rerun_scatters = !rerun || t.impl.selective_op ? 0 : t.impl.rerun_stops_early() ? 1 : 2;
    using models::Pass, models::TpSite;
    for (int i = 0; i < 2; ++i) {
      const TpSite in = i == 0 ? TpSite::AttentionIn : TpSite::MlpIn;
      const TpSite out_site = i == 0 ? TpSite::AttentionOut : TpSite::MlpOut;
      const int inputs = i == 0 ? attention_inputs : mlp_inputs;
      for (int k = 0; k < inputs; ++k) block(fwd, fwd_launches, block_gather, block_gather_copy, Pass::Forward, in, false);
      block(fwd, fwd_launches, scatter, copy, Pass::Forward, out_site, true);
      // Backward: the reduce-scatter's gradient is an all-gather (of the out and down projections'
      // output gradient, in float8 under float8 Linears) feeding their dgrad; the all-gather's is a
      // reduce-scatter of the summed q/k/v (gate/up) dgrads, which no single matmul writes (of each
      // one's dgrad under per_linear).
      block(bwd, bwd_launches, block_gather, block_gather_copy, Pass::Backward, out_site, false);
      for (int k = 0; k < inputs; ++k) waited(bwd, bwd_launches, scatter, t.impl.compiled ? 0 : copy);
      if (rerun)
        for (int k = 0; k < inputs; ++k)
          block(bwd, bwd_launches, block_gather, block_gather_copy, Pass::Recompute, in, false);
      if (i < rerun_scatters) block(bwd, bwd_launches, scatter, copy, Pass::Recompute, out_site, true);
    }
    if (t.impl.qk_norm_no_parallel) {
      // NoParallel's output hook gathers the normed q and k over their heads (all_gather_tensor along
      // the heads dimension: the chunks joined by a copy); backward gathers the gradients of the
      // heads SDPA took back, q's and the repeated K's, both q wide. Nothing to fuse: rotary reads them.
      const double q_bytes = tokens * double(models::detail::q_dim(m)) * e;
      const double k_bytes = tokens * double(models::detail::kv_dim(m)) * e;
      const double q_gather = collective(CollectiveOp::AllGather, q_bytes), q_copy = memory(2 * q_bytes);
      const double k_gather = collective(CollectiveOp::AllGather, k_bytes), k_copy = memory(2 * k_bytes);
      for (int pass = 0; pass < (rerun ? 2 : 1); ++pass) {
        double& seconds = pass == 0 ? fwd : bwd;
        int& launches = pass == 0 ? fwd_launches : bwd_launches;
        waited(seconds, launches, q_gather, q_copy), waited(seconds, launches, k_gather, k_copy);
      }
      for (int k = 0; k < 2; ++k) waited(bwd, bwd_launches, q_gather, q_copy);
    }
  }
  if (embedding) {  // the partial embeddings reduce-scattered to sequence shards; backward gathers their gradient
    if (!per_linear) waited(fwd, fwd_launches, scatter, copy);  // a replicated embedding is sliced in place
    waited(bwd, bwd_launches, gather, copy);
  }
  if (head) {  // the head's input gathered, the loss reduced over the vocabulary slices; backward scatters
    waited(fwd, fwd_launches, gather, copy), waited(bwd, bwd_launches, scatter, copy);
    if (per_linear) {  // the logits gathered along the vocabulary for a whole-vocabulary loss on every rank
      const double logits = tokens * double(m.vocab) * e;
      waited(fwd, fwd_launches, collective(CollectiveOp::AllGather, logits), memory(2 * logits));
    } else {
      // Loss parallelism all-reduces each token's max and sum of exponentials, and its target's
      // logit from the GPU whose slice holds it (_MaskPartial); its backward needs none.
      for (int k = 0; k < 3; ++k) waited(fwd, fwd_launches, loss, 0);
    }
  }
  out.forward_seconds += fwd, out.backward_seconds += bwd;
  out.forward_launches += fwd_launches, out.backward_launches += bwd_launches;
}

// Expert parallelism (torchtitan's ExpertParallel, _token_dispatch and _token_combine): each MoE
// block's forward exchanges its tokens' expert counts (E int64s), sends each permuted token row to
// its expert's GPU and brings the outputs back, three all-to-alls over the EP group; the backward
// sends the two gradients the other way. A fully checkpointed block re-runs all three, early stop
// or not: the scores weigh the experts' outputs after the return, and that product's backward reads
// them (models/units.cpp, early_stop_skips_last). torchtitan's op-level policy keeps every
// _c10d_functional.all_to_all_single output (the rows' all_to_all_single_autograd dispatches to it)
// and the host's copy of the counts, since torchtitan#1672: its re-run exchanges nothing. That PR's
// run (DeepSeek-V3 16B, EP 4, 8 x ~512 tokens by its log's FLOPs a token, A100s by its MFU) rose
// 4.51 GiB at its peak (70.02 -> 74.53), where both exchanges' rows in 26 MoE blocks come to 4.87 GiB.
// selective_op_recomputes_all_to_all: a list that did not name them, re-run as under full
// checkpointing.
// Each GPU sends T k rows of h elements; balanced, it receives as many. With
// training.expert_imbalance r the busiest GPU receives r T k rows, and every exchange waits for it:
// each token all-to-all is timed as one of r T k rows a GPU.
void add_expert_parallel(const StepSetup& setup, int u, ModelParallelTime& out) {
  const ExpertExchange x = expert_exchange(setup, u);
  out.forward_seconds += x.forward_seconds, out.backward_seconds += x.backward_seconds;
  out.forward_launches += x.forward_count, out.backward_launches += x.backward_count;
}

}  // namespace

ExpertExchange expert_exchange(const StepSetup& setup, int u) {
  ExpertExchange x;
  const auto& unit = setup.units[std::size_t(u)];
  if (!setup.expert_parallel_group || unit.kind != models::UnitKind::Block || unit.expert_params <= 0) return x;
  const auto& m = setup.model;
  const Group& g = *setup.expert_parallel_group;
  const double rows = double(setup.training.micro_batch) * setup.seq_len() * m.experts_per_token;
  const double count_bytes = 8.0 * m.experts,
               token_bytes = rows * setup.training.expert_imbalance * m.hidden * bytes_of(setup.training.compute_dtype());
  const auto count_plan = plan_collective(setup.cluster, CollectiveOp::AllToAll, count_bytes, g);
  const auto token_plan = plan_collective(setup.cluster, CollectiveOp::AllToAll, token_bytes, g);
  const double counts = count_plan.seconds(), tokens = token_plan.seconds();
  const auto& impl = setup.training.impl;
  const bool rerun = unit.kernels && unit.kernels->recomputes &&
                     (!impl.selective_op || impl.selective_op_recomputes_all_to_all);
  x.forward_seconds = counts + 2 * tokens;
  x.backward_seconds = 2 * tokens + (rerun ? counts + 2 * tokens : 0);
  x.forward_count = 3;
  x.backward_count = 2 + (rerun ? 3 : 0);
  const int token_exchanges = 2 + 2 + (rerun ? 2 : 0);
  const int count_exchanges = 1 + (rerun ? 1 : 0);
  x.bytes = count_exchanges * count_bytes + token_exchanges * token_bytes;
  x.node_egress_bytes = count_exchanges * count_plan.node_egress_bytes + token_exchanges * token_plan.node_egress_bytes;
  return x;
}

ModelParallelTime model_parallel_time(const StepSetup& setup, int u, const TpSiteGemms& gemms) {
  ModelParallelTime out;
  add_tensor_parallel(setup, u, gemms, out);
  add_context_parallel(setup, u, out);
  add_expert_parallel(setup, u, out);
  return out;
}

}  // namespace tagcsim::sim
