// FSDP2 (fully_shard) as its hooks issue the step.
//
// Sources, torch/distributed/fsdp/_fully_shard/ (formerly
// torch/distributed/_composable/fsdp/): _fsdp_state.py (FSDPState:
// _root_pre_forward, _pre_forward, _post_forward, _pre_backward,
// _root_post_backward_final_callback), _fsdp_param_group.py (FSDPParamGroup:
// unshard, wait_for_unshard, reshard, pre_backward, post_backward,
// _backward_prefetch, finalize_backward), _fsdp_collectives.py
// (foreach_all_gather, foreach_all_gather_copy_out, foreach_reduce,
// foreach_reduce_scatter_copy_in, _get_gradient_divide_factors), _fsdp_param.py
// (per-parameter sharding, to_accumulated_grad_if_needed); torchtitan's
// models/llama3/infra/parallelize.py apply_fsdp (the wrapping).
#include "sim/schedule_program.hpp"

namespace tagcsim::sim::detail {
namespace {

enum class Held { Sharded, PostForward, Unsharded };

struct Fsdp2 {
  const StepSetup& setup;
  const GradientReduction& reduce;
  Schedule s;
  Program p{s};
  Costs cost;
  int U = 0;
  int root = -1;                 // the root wrapper's unit, or -1 (torchtitan: the root keeps no parameters)
  double pb = 2, rb = 4;
  std::vector<Held> held;
  std::vector<int> pending_ag;   // all-gather issued, not yet copied out
  std::vector<int> params_from;  // copy-out that made the unit's unsharded parameters
  std::vector<int> kept_from;    // reshard to N GPUs: the forward after which the unit keeps 1/N
  int ag_state = -1;             // comm_ctx.all_gather_state: the previous forward copy-out...
  int held_ag = -1;              // ... and the all-gather whose output it keeps alive
  int rs_state = -1;             // comm_ctx.reduce_scatter_state: the last reduce-scatter
  std::vector<int> accumulated;  // no-sync: the backward that started the unit's fp32 accumulated gradient
  std::vector<int> reductions;   // this micro-batch's post-reduce events
  GradientShards shard_grads;

  Fsdp2(const StepSetup& st, const GradientReduction& r)
      : setup(st), reduce(r), cost(costs_of(st)), U(int(st.units.size())), root(root_unit(st)),
        pb(bytes_of(st.training.param_dtype)), rb(bytes_of(st.training.reduce_dtype)), held(U, Held::Sharded),
        pending_ag(U, -1), params_from(U, -1), kept_from(U, -1), accumulated(U, -1), shard_grads(U) {}

  const std::string& name(int u) const { return setup.units[u].name; }
  double P(int u) const { return double(setup.units[u].params); }
  // Bytes of the unit's gathered parameters: P(u) in param_dtype, its Linear weights in float8 under
  // float8 all-gather (they stay float8 once unsharded: torchao's post-all-gather wraps them).
  double G(int u) const { return all_gather_bytes(setup, setup.units[u]); }

  // The root is not resharded after forward (FSDPState._lazy_init sets its
  // post_forward_mesh_info to None), nor is torchtitan's [norm, output] unit
  // (apply_fsdp: "FSDP would prefetch them immediately after the forward").
  bool reshards_after_forward(int u) const {
    if (u == root) return false;
    if (setup.training.wrap == models::WrapPolicy::Torchtitan && setup.units[u].kind == models::UnitKind::LmHead)
      return false;
    return setup.training.reshard_after_forward != 0;
  }

  // FSDPParamGroup.unshard: an all-gather over the shard group, or over the
  // post-forward group when the unit was resharded to N GPUs.
  void unshard(int u, const char* phase) {
    if (held[u] == Held::Unsharded || pending_ag[u] >= 0 || P(u) <= 0) return;
    const bool small = held[u] == Held::PostForward;
    pending_ag[u] = p.issue(all_gather_task(setup, u, small ? *setup.post_forward_group : setup.shard_group, phase));
    if (small) p.buffer(MemoryKind::Params, G(u) / setup.post_forward_group->ranks(), kept_from[u],
                        pending_ag[u], true, true);
  }

  // The all-gather output kept for implicit prefetch is freed (its memory is
  // alive until task `until`).
  void release_held_output(int until) {
    if (held_ag < 0) return;
    // The all-gather output is allocated on the all-gather stream (foreach_all_gather).
    p.buffer(MemoryKind::Params, G(s.tasks[std::size_t(held_ag)].unit), held_ag, until, false, false,
             MemoryPool::AllGather);
    ag_state = held_ag = -1;
  }

  // FSDPParamGroup.wait_for_unshard: the copy-out runs on the compute stream
  // after the all-gather. In forward (implicit prefetch) the all-gather output
  // is kept until the next unit's copy-out and the all-gather streams wait for
  // the previous copy-out first; in backward they wait for this one.
  void wait_for_unshard(int u, bool forward) {
    if (pending_ag[u] < 0) return;
    const int ag = pending_ag[u];
    if (forward && ag_state >= 0) p.wait(Stream::AllGather, ag_state);
    p.wait(Stream::Compute, ag);
    const int out = p.issue(copy_task("all-gather copy-out " + name(u), u, Stream::Compute, 2 * G(u),
                                      *cost.gpu));
    if (forward) {
      release_held_output(out);
      ag_state = out, held_ag = ag;
    } else {
      p.wait(Stream::AllGather, out);
      p.buffer(MemoryKind::Params, G(u), ag, out, false, false, MemoryPool::AllGather);
    }
    pending_ag[u] = -1;
    params_from[u] = out;
    held[u] = Held::Unsharded;
  }

  // FSDPParamGroup.reshard: free the unsharded parameters, or keep 1/N of them.
  void reshard(int u, bool to_post_forward) {
    if (held[u] != Held::Unsharded) return;
    const int last_use = p.last(Stream::Compute);
    p.buffer(MemoryKind::Params, G(u), params_from[u], last_use);
    held[u] = to_post_forward ? Held::PostForward : Held::Sharded;
    kept_from[u] = last_use;
  }

  void flush_forward_all_gather_state() {
    // The root's post-forward: the all-gather streams wait for the last
    // copy-out, and the last all-gather output is freed.
    if (ag_state < 0) return;
    p.wait(Stream::AllGather, ag_state);
    release_held_output(ag_state);
  }

  // FSDPParamGroup.post_backward.
  void post_backward(int u, bool sync, int bwd) {
    p.host("post-backward " + name(u), cost.hook_s);
    const double Pu = P(u);
    if (Pu <= 0) return;
    // to_accumulated_grad_if_needed: accumulate in reduce_dtype when it is not the parameters'.
    const bool fp32_accumulation = setup.training.reduce_dtype != setup.training.param_dtype;
    const int had = accumulated[u];
    if (!sync) {
      // reduce_grads false: accumulate the unsharded gradient (in fp32 when it
      // differs from the parameters), then reshard (reshard_after_backward).
      if (fp32_accumulation) {
        const double bytes = had >= 0 ? Pu * (pb + 2 * rb) : Pu * (pb + rb);  // add into it, or cast into it
        p.issue(copy_task("grad accumulate " + name(u), u, Stream::Compute, bytes, *cost.gpu));
      }
      p.buffer(MemoryKind::Gradients, Pu * pb, bwd, p.last(Stream::Compute));
      if (had < 0) accumulated[u] = p.last(Stream::Compute);
      if (setup.training.reshard_after_backward) reshard(u, false);
      return;
    }
    if (had >= 0 && fp32_accumulation)
      p.issue(copy_task("grad accumulate " + name(u), u, Stream::Compute, Pu * (pb + 2 * rb), *cost.gpu));
    reshard(u, false);
    // Back-pressure: the compute stream waits for the previous reduce-scatter
    // before this copy-in (comm_ctx.reduce_scatter_state).
    p.wait(Stream::Compute, rs_state);
    // foreach_reduce_scatter_copy_in on the compute stream, into a reduce_dtype
    // buffer; bf16/fp32 divide by NCCL's AVG, fp16 pre/post-divides.
    double bytes = (had >= 0 && fp32_accumulation ? rb : pb) * Pu + rb * Pu;
    if (setup.training.reduce_dtype == Dtype::FP16)
      bytes += 2 * Pu * rb + (setup.expert_shard_group ? 2 * shard_params(setup, u) : 2 * Pu / setup.shard_size()) * rb;
    const int copy_in =
        p.issue(copy_task("reduce-scatter copy-in " + name(u), u, Stream::Compute, bytes, *cost.gpu));
    const std::size_t before = s.tasks.size();
    const int done = reduce(s, setup, u, copy_in);
    rs_state = p.adopt(before, setup.reduce_stream(), done);
    reductions.push_back(done);
    if (had >= 0) p.buffer(MemoryKind::Gradients, Pu * (fp32_accumulation ? rb : pb), had, copy_in);
    p.buffer(MemoryKind::Gradients, Pu * pb, bwd, copy_in);
    // The reduce-scatter input, allocated on the compute stream, freed once the reduce-scatter is done.
    p.buffer(MemoryKind::Gradients, Pu * rb, copy_in, rs_state);
    // The gradient shard, made on the reduce-scatter stream (foreach_reduce).
    shard_grads.reduced(p, setup, u, rs_state);
    accumulated[u] = -1;
  }

  void micro_batch(bool sync) {
    std::vector<int> order;  // forward hook order: the root (if any) first
    if (root >= 0) order.push_back(root);
    for (int u = 0; u < U; ++u)
      if (u != root) order.push_back(u);
    std::vector<int> fwd(U, -1), bwd(U, -1);
    reductions.clear();
    const int N = setup.training.reshard_after_forward;

    // _root_pre_forward: the all-gather streams wait for the compute stream
    // (the optimizer, or the previous micro-batch's backward).
    p.host("root pre-forward", cost.hook_s);
    p.wait(Stream::AllGather, p.last(Stream::Compute));
    for (int u : order) {
      // pre_forward: unshard (issued after the previous unit's forward:
      // implicit prefetch), wait_for_unshard (copy-out on the compute stream).
      p.host("pre-forward " + name(u), cost.hook_s);
      unshard(u, "fwd");
      wait_for_unshard(u, true);
      if (u == root) continue;  // the root's own forward runs after the others'
      p.host("issue forward " + name(u), cost.units[u].forward_issue_seconds);
      fwd[u] = p.issue(compute_task(setup, u, Category::Forward, cost.units[u].forward_seconds));
      p.host("post-forward " + name(u), cost.hook_s);
      if (reshards_after_forward(u)) reshard(u, N > 1);
    }
    if (root >= 0) {
      p.host("issue forward " + name(root), cost.units[root].forward_issue_seconds);
      fwd[root] = p.issue(compute_task(setup, root, Category::Forward, cost.units[root].forward_seconds));
      p.host("post-forward " + name(root), cost.hook_s);
    }
    flush_forward_all_gather_state();

    // Backward in reverse post-forward order (the root's post-forward comes
    // last, so its pre-backward runs first). pre_backward: unshard unless
    // prefetched, copy-out, then prefetch the next unit (backward prefetch of
    // one, _backward_prefetch).
    std::vector<int> border;
    if (root >= 0) border.push_back(root);
    for (int i = U - 1; i >= 0; --i)
      if (i != root) border.push_back(i);
    std::vector<int> deferred;  // units whose inputs need no gradient: post_backward runs in the final callback
    for (std::size_t k = 0; k < border.size(); ++k) {
      const int u = border[k];
      p.host("pre-backward " + name(u), cost.hook_s);
      unshard(u, "bwd");
      wait_for_unshard(u, false);
      if (k + 1 < border.size()) unshard(border[k + 1], "bwd");
      p.host("issue backward " + name(u), cost.units[u].backward_issue_seconds);
      bwd[u] = p.issue(compute_task(setup, u, Category::Backward, cost.units[u].backward_seconds));
      // RegisterPostBackwardFunction hangs post_backward on the unit's inputs;
      // the root's and the token embedding's inputs (token ids) need no
      // gradient, so theirs run in _root_post_backward_final_callback.
      const bool input_without_grad = u == root || setup.units[u].kind == models::UnitKind::Embedding;
      if (input_without_grad || (sync && setup.training.reduce_after_backward)) deferred.push_back(u);
      else post_backward(u, sync, bwd[u]);
    }
    p.host("post-backward callback", cost.hook_s);
    for (int u : deferred) post_backward(u, sync, bwd[u]);
    // finalize_backward (every backward unless set_is_last_backward(False)):
    // the compute stream waits for each group's post-reduce event and the
    // last reduce-scatter.
    for (int r : reductions) p.wait(Stream::Compute, r);
    p.wait(Stream::Compute, rs_state);
    rs_state = -1;
    for (int u = 0; u < U; ++u) {
      p.buffer(MemoryKind::Activations, setup.units[u].activation_bytes, fwd[u], bwd[u]);
      p.buffer(MemoryKind::Activations, setup.units[u].backward_transient_bytes, bwd[u], bwd[u]);
    }
  }

  Schedule build() {
    const int M = setup.training.grad_accumulation;
    for (int m = 0; m < M; ++m) micro_batch(m == M - 1 || !setup.training.no_sync);
    optimizer_step(p, setup, cost);
    return std::move(s);
  }
};

}  // namespace

Schedule build_fsdp2(const StepSetup& setup, const GradientReduction& reduce) {
  Fsdp2 f(setup, reduce);
  return f.build();
}

}  // namespace tagcsim::sim::detail
