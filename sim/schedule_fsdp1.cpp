// FSDP1 (FullyShardedDataParallel) as its hooks issue the step.
//
// Sources, torch/distributed/fsdp/ unless named: _runtime_utils.py (hooks,
// _unshard, _reshard, _post_backward_hook, _reduce_grad,
// _post_backward_final_callback, _wait_for_computation_stream),
// _limiter_utils.py (_FreeEventQueue), _exec_order_utils.py (the backward
// prefetch target: the previous unit in post-forward order),
// docs/source/notes/fsdp.rst (implicit forward prefetch, one NCCL stream).
#include "sim/schedule_program.hpp"

#include <deque>

namespace tagcsim::sim::detail {
namespace {

struct Fsdp1 {
  const StepSetup& setup;
  const GradientReduction& reduce;
  Schedule s;
  Program p{s};
  Costs cost;
  int U = 0;
  int root = 0;
  int limit = 0;                 // 0: no rate limiter
  std::deque<int> free_events;   // _FreeEventQueue: compute tasks after which a unit was freed
  std::vector<char> unsharded;   // does the unit hold its unsharded FlatParameter
  std::vector<int> gathered_by;  // the all-gather that unsharded it (memory)
  int last_ag = -1;              // the unshard stream's last all-gather
  std::vector<int> no_sync_grad; // no_sync: the backward that started accumulating the unit's unsharded gradient
  std::vector<int> reductions;   // this micro-batch's gradient reductions
  GradientShards shard_grads;

  Fsdp1(const StepSetup& st, const GradientReduction& r)
      : setup(st), reduce(r), cost(costs_of(st)), U(int(st.units.size())), unsharded(U, 0), gathered_by(U, -1),
        no_sync_grad(U, -1), shard_grads(U) {
    // limit_all_gathers is a bool; _FreeEventQueue holds at most 2 pending frees.
    limit = st.training.limit_all_gathers ? std::max(1, st.training.max_inflight_all_gathers) : 0;
  }

  const std::string& name(int u) const { return setup.units[u].name; }
  // FlatParamHandle pads the flat parameter to a multiple of the shard group
  // (_flat_param.py: _get_shard's numel_to_pad): the unsharded buffer the
  // all-gather fills holds the padding too.
  double padded_params(int u) const { return shard_params(setup, u) * setup.shard_size(); }

  // _unshard: the rate limiter first (the CPU waits for the oldest pending
  // free once `limit` are pending), then the all-gather if the unit is sharded.
  void unshard(int u, const char* phase) {
    if (limit > 0 && int(free_events.size()) >= limit) {
      p.sync(free_events.front());
      free_events.pop_front();
    }
    if (unsharded[u]) return;
    last_ag = p.issue(all_gather_task(setup, u, setup.shard_group, phase));
    unsharded[u] = 1;
    gathered_by[u] = last_ag;
  }

  // _reshard: frees the unsharded FlatParameter and records the free event on
  // the compute stream after its last use.
  void reshard(int u, bool free) {
    if (!free || !unsharded[u]) return;
    const int last_use = p.last(Stream::Compute);
    // Allocated on the unshard stream (FlatParamHandle.unshard under _unshard's stream context).
    p.buffer(MemoryKind::Params, padded_params(u) * bytes_of(setup.training.param_dtype), gathered_by[u], last_use,
             false, false, MemoryPool::AllGather);
    unsharded[u] = 0;
    if (limit > 0) free_events.push_back(last_use);
  }

  // _post_backward_hook with gradient sync: the post-backward stream waits for
  // the compute stream; the reduction (fsdp_reduce_scatter: the cast to
  // reduce_dtype and the divides on that stream, the reduce-scatter on the
  // shard group's NCCL queue, HYBRID_SHARD's all-reduce on the replica group's
  // stream; or a compression policy's tasks) follows.
  void reduce_unit(int u, int grad_ready, int grad_from) {
    const auto& t = setup.training;
    const double P = double(setup.units[u].params);
    const double pb = bytes_of(t.param_dtype), rb = bytes_of(t.reduce_dtype);
    const std::size_t before = s.tasks.size();
    const int done = reduce(s, setup, u, grad_ready);
    const int consumed = p.adopt(before, setup.reduce_stream(), done);
    int cast = -1;
    for (std::size_t i = before; i < s.tasks.size() && cast < 0; ++i)
      if (s.tasks[i].stream == Stream::PostBackward) cast = int(i);
    reductions.push_back(done);
    // The unsharded gradient in param dtype (autograd's, on the compute
    // stream) until cast, then in reduce dtype (the cast runs on the
    // post-backward stream, which allocates it) until reduce-scattered (both
    // while the cast runs); divided in place.
    if (cast >= 0 && t.reduce_dtype != t.param_dtype) {
      p.buffer(MemoryKind::Gradients, P * pb, grad_from, cast);
      p.buffer(MemoryKind::Gradients, P * rb, cast, consumed, false, false, MemoryPool::Reduce);
    } else {
      p.buffer(MemoryKind::Gradients, P * pb, grad_from, consumed);
    }
    // The gradient shard, made on the post-backward stream (_reduce_grad).
    shard_grads.reduced(p, setup, u, consumed);
  }

  // The unit's gradient after its backward: reduced, or kept unsharded
  // (no_sync). The post-backward stream waits for everything the compute
  // stream was given so far (wait_stream), which for the root is the whole
  // backward: its embedding gradient comes last.
  void gradient(int u, bool sync, int bwd) {
    const int from = no_sync_grad[u] >= 0 ? no_sync_grad[u] : bwd;
    if (sync) {
      no_sync_grad[u] = -1;
      reduce_unit(u, p.last(Stream::Compute), from);
    } else if (no_sync_grad[u] < 0) {
      no_sync_grad[u] = bwd;  // .grad stays unsharded (param dtype) until the synced backward
    }
  }

  void activations(int u, int fwd, int bwd) {
    const auto& unit = setup.units[u];
    p.buffer(MemoryKind::Activations, unit.activation_bytes, fwd, bwd);
    p.buffer(MemoryKind::Activations, unit.backward_transient_bytes, bwd, bwd);
    // The module's parameters are views of the FlatParameter (split, then view:
    // FlatParamHandle._get_unflat_views), so autograd holds each parameter's
    // gradient until the split's backward concatenates them into the flat
    // gradient: the unit's gradient twice while its backward ends.
    p.buffer(MemoryKind::Gradients, double(unit.params) * bytes_of(setup.training.param_dtype), bwd, bwd);
  }

  void micro_batch(bool sync) {
    const auto& t = setup.training;
    const bool reshard_after_forward = t.sharding != Sharding::ShardGradOp;
    std::vector<int> blocks;  // hook order of the non-root units
    for (int u = 0; u < U; ++u)
      if (u != root) blocks.push_back(u);
    std::vector<int> fwd(U, -1), bwd(U, -1);
    reductions.clear();

    // _root_pre_forward: _wait_for_computation_stream makes the unshard
    // stream wait for the compute stream, so the root's all-gather waits for
    // the previous micro-batch's backward (or the optimizer).
    p.host("root pre-forward", cost.hook_s);
    p.wait(Stream::AllGather, p.last(Stream::Compute));
    unshard(root, "fwd");
    p.wait(Stream::Compute, last_ag);
    for (int u : blocks) {
      // _pre_forward_unshard: all-gather on the unshard stream, the compute
      // stream waits for it; the next unit's all-gather is issued only after
      // this unit's forward (implicit forward prefetch, fsdp.rst).
      p.host("pre-forward " + name(u), cost.hook_s);
      unshard(u, "fwd");
      p.wait(Stream::Compute, last_ag);
      p.host("issue forward " + name(u), cost.units[u].forward_issue_seconds);
      fwd[u] = p.issue(compute_task(setup, u, Category::Forward, cost.units[u].forward_seconds));
      // _post_forward_reshard: FULL_SHARD and HYBRID_SHARD free; the root never does.
      p.host("post-forward " + name(u), cost.hook_s);
      reshard(u, reshard_after_forward);
    }
    // The root's own forward (embedding, final norm, head and loss) is placed
    // after the blocks, where its head dominates.
    p.host("issue forward " + name(root), cost.units[root].forward_issue_seconds);
    fwd[root] = p.issue(compute_task(setup, root, Category::Forward, cost.units[root].forward_seconds));
    p.host("post-forward " + name(root), cost.hook_s);

    // Backward, in reverse post-forward order. The root's pre-backward hook
    // unshards it (a no-op that still passes the rate limiter) and, under
    // BACKWARD_PRE, prefetches the last block.
    const std::vector<int> order(blocks.rbegin(), blocks.rend());
    const auto prefetch = t.backward_prefetch;
    std::vector<char> prefetched(U, 0);
    p.host("pre-backward " + name(root), cost.hook_s);
    unshard(root, "bwd");
    p.wait(Stream::Compute, last_ag);
    if (prefetch == BackwardPrefetch::Pre && !order.empty()) unshard(order[0], "bwd"), prefetched[order[0]] = 1;
    p.host("issue backward " + name(root), cost.units[root].backward_issue_seconds);
    bwd[root] = p.issue(compute_task(setup, root, Category::Backward, cost.units[root].backward_seconds));
    for (std::size_t k = 0; k < order.size(); ++k) {
      const int u = order[k];
      const int next = k + 1 < order.size() ? order[k + 1] : -1;
      // _pre_backward_hook: unshard unless prefetched, compute waits for the
      // unshard stream; BACKWARD_PRE prefetches the next unit here, before
      // this unit's gradient kernels are issued.
      p.host("pre-backward " + name(u), cost.hook_s);
      if (!prefetched[u]) unshard(u, "bwd");
      p.wait(Stream::Compute, last_ag);
      if (prefetch == BackwardPrefetch::Pre && next >= 0) unshard(next, "bwd"), prefetched[next] = 1;
      p.host("issue backward " + name(u), cost.units[u].backward_issue_seconds);
      bwd[u] = p.issue(compute_task(setup, u, Category::Backward, cost.units[u].backward_seconds));
      // _post_backward_hook: reshard (_should_free_in_backward: when syncing,
      // or always under FULL/HYBRID_SHARD), BACKWARD_POST prefetches the next
      // unit here, before this unit's reduce-scatter is issued; with NONE the
      // next all-gather is issued only in the next pre-backward hook, behind
      // this reduce-scatter on the one NCCL stream.
      p.host("post-backward " + name(u), cost.hook_s);
      reshard(u, sync || reshard_after_forward);
      if (prefetch == BackwardPrefetch::Post && next >= 0) unshard(next, "bwd"), prefetched[next] = 1;
      gradient(u, sync, bwd[u]);
    }
    // The root's gradient (embedding) is complete only at the very end.
    p.host("post-backward " + name(root), cost.hook_s);
    reshard(root, sync || reshard_after_forward);
    gradient(root, sync, bwd[root]);
    // _post_backward_final_callback: with sync, the compute stream waits for
    // the post-backward stream and the all-reduce stream.
    p.host("post-backward callback", cost.hook_s);
    if (sync)
      for (int r : reductions) p.wait(Stream::Compute, r);
    for (int u = 0; u < U; ++u) activations(u, fwd[u], bwd[u]);
  }

  Schedule build() {
    const int M = setup.training.grad_accumulation;
    for (int m = 0; m < M; ++m) micro_batch(m == M - 1 || !setup.training.no_sync);
    optimizer_step(p, setup, cost);
    for (int u = 0; u < U; ++u)
      if (unsharded[u])
        p.buffer(MemoryKind::Params, padded_params(u) * bytes_of(setup.training.param_dtype), gathered_by[u], -1, false,
                 false, MemoryPool::AllGather);
    return std::move(s);
  }
};

}  // namespace

// FSDP1 wraps the model's root module itself: the first unit is the root
// (the scenario loader keeps torchtitan's root-less layout to fsdp: 2).
Schedule build_fsdp1(const StepSetup& setup, const GradientReduction& reduce) {
  Fsdp1 f(setup, reduce);
  return f.build();
}

}  // namespace tagcsim::sim::detail
