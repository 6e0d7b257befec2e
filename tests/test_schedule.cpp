// The FSDP step schedule, on cases small enough to compute by hand.
//
// Every case runs on a toy cluster where durations are round numbers, with
// the host's costs set to zero unless the case is about the host. Each
// comment gives the timeline the checks follow from; docs/fsdp-semantics.md
// names the PyTorch source of every rule used.
#include "models/model.hpp"
#include "sim/replay.hpp"
#include "sim/schedule.hpp"
#include "sim/step.hpp"
#include "sim/trace.hpp"
#include "replay_testing.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace tagcsim;
using namespace tagcsim::sim;

namespace {

// 2 nodes x 1 GPU, 1 GB/s NICs, no latency; a GPU doing 1 TFLOP/s with
// (nearly) unbounded memory bandwidth, so that every duration is a round number.
topologies::Cluster toy_cluster() {
  topologies::Cluster c;
  c.name = "toy";
  c.nodes = 2;
  c.gpus_per_node = 1;
  c.gpu = {.name = "toy", .peak_flops_bf16 = 1e12, .peak_flops_fp32 = 1e12, .peak_flops_tf32 = 1e12,
           .memory_bytes = 1e12, .memory_bandwidth = 1e18, .gemm_efficiency = 1, .memory_efficiency = 1};
  c.intra = {.kind = "pcie", .bandwidth = 1e12, .latency = 0, .efficiency = 1};
  c.nics = {.count = 1, .bandwidth = 1e9, .latency = 0, .efficiency = 1};
  return c;
}

models::FsdpUnit unit(const char* name, double params, double fwd_s, double bwd_s,
                      models::UnitKind kind = models::UnitKind::Block) {
  models::FsdpUnit u;
  u.name = name;
  u.kind = kind;
  u.params = std::int64_t(params);
  u.forward_flops = fwd_s * 1e12;
  u.backward_flops = bwd_s * 1e12;
  u.gemm_fraction = u.backward_gemm_fraction = 1;
  return u;
}

Training no_host(Training t = {}) {
  t.host = {.kernel_issue_s = 0, .hook_s = 0};
  return t;
}

StepSetup with_units(std::vector<models::FsdpUnit> units, const Training& t = no_host()) {
  StepSetup s = make_setup(models::preset("gpt2-124m"), toy_cluster(), t);
  s.units = std::move(units);
  return s;
}

StepSetup two_units(const Training& t = no_host()) {
  // Root: 1e9 params (all-gather of bf16: 1 s at 2 ranks; reduce-scatter of fp32: 2 s).
  // Block: 0.5e9 params (0.5 s and 1 s).
  return with_units({unit("root", 1e9, 1, 2, models::UnitKind::Root), unit("block", 0.5e9, 2, 4)}, t);
}

// A root with one parameter and no work, and three blocks of 0.5e9 params:
// all-gather a = 0.5 s, reduce-scatter r = 1 s, forward 1 s, backward 2 s.
StepSetup three_blocks(const Training& t = no_host()) {
  return with_units({unit("root", 1, 0, 0, models::UnitKind::Root), unit("B1", 0.5e9, 1, 2),
                     unit("B2", 0.5e9, 1, 2), unit("B3", 0.5e9, 1, 2)},
                    t);
}

const TaskTiming& timing(const StepResult& r, const std::string& name) {
  for (std::size_t i = 0; i < r.schedule.tasks.size(); ++i)
    if (r.schedule.tasks[i].name == name) return r.replay.timings[i];
  FAIL("no task " << name);
  return r.replay.timings.front();
}

int count(const Schedule& s, Category c) {
  int n = 0;
  for (const auto& t : s.tasks) n += t.category == c;
  return n;
}

constexpr double kTight = 1e-6;

}  // namespace

TEST_CASE("a two-unit FULL_SHARD step overlaps exactly what FSDP lets it overlap") {
  // One NCCL stream, in issue order: all-gather root [0, 1], block [1, 1.5], and the block again for
  //   backward [1.5, 2] (prefetched by the root's pre-backward hook; with one block the rate
  //   limiter never makes the host wait, so it is issued long before it is needed), then
  //   reduce-scatter block [10.5, 11.5], root [11.5, 13.5].
  // compute: fwd block [1.5, 3.5], fwd root [3.5, 4.5], bwd root [4.5, 6.5], bwd block [6.5, 10.5];
  //   the optimizer's time is ~0.
  const auto r = simulate_fsdp(two_units());
  CHECK(r.step_time_s == doctest::Approx(13.5).epsilon(kTight));
  CHECK(r.breakdown.compute_s == doctest::Approx(9.0).epsilon(kTight));
  CHECK(r.breakdown.exposed_comm_s == doctest::Approx(4.5).epsilon(kTight));  // 1.5 before, 3 after the compute
  CHECK(r.breakdown.allgather_s == doctest::Approx(2.0).epsilon(kTight));
  CHECK(r.breakdown.reduce_scatter_s == doctest::Approx(3.0).epsilon(kTight));
  CHECK(timing(r, "all-gather bwd block").start == doctest::Approx(1.5).epsilon(kTight));
  CHECK(r.collectives.at("all_gather").count == 3);
  CHECK(r.collectives.at("reduce_scatter").bytes == doctest::Approx(4 * 1.5e9));
}

TEST_CASE("SHARD_GRAD_OP keeps parameters gathered, so backward needs no all-gather") {
  auto t = no_host();
  t.sharding = Sharding::ShardGradOp;
  const auto r = simulate_fsdp(two_units(t));
  CHECK(r.collectives.at("all_gather").count == 2);
  CHECK(r.step_time_s == doctest::Approx(13.5).epsilon(kTight));  // that all-gather was hidden anyway
}

TEST_CASE("no_sync accumulation reduce-scatters once per step, without it once per micro-batch") {
  auto t = no_host();
  t.grad_accumulation = 3;
  CHECK(simulate_fsdp(two_units(t)).collectives.at("reduce_scatter").count == 2);
  t.no_sync = false;
  CHECK(simulate_fsdp(two_units(t)).collectives.at("reduce_scatter").count == 6);
}

TEST_CASE("fix 1: BACKWARD_POST overlaps like BACKWARD_PRE, NONE exposes reduce-scatter and all-gather") {
  // Three blocks, a = 0.5, r = 1, fwd 1, bwd 2; the root has no work. Forward: all-gather B1 [0, .5],
  // fwd B1 [.5, 1.5], B2 [1.5, 2.5], B3 [2.5, 3.5] (their all-gathers hide behind the forwards).
  // PRE and POST issue the next backward all-gather before the current reduce-scatter, so on the one
  // NCCL stream: bwd B3 [3.5, 5.5], RS B3 [5.5, 6.5] then all-gather B1 [6.5, 7]; bwd B2 [5.5, 7.5],
  // RS B2 [7.5, 8.5], bwd B1 [7.5, 9.5], RS B1 [9.5, 10.5]: step 10.5.
  auto t = no_host();
  t.backward_prefetch = BackwardPrefetch::Pre;
  const auto pre = simulate_fsdp(three_blocks(t));
  CHECK(pre.step_time_s == doctest::Approx(10.5).epsilon(kTight));
  CHECK(timing(pre, "backward B1").start == doctest::Approx(7.5).epsilon(kTight));
  t.backward_prefetch = BackwardPrefetch::Post;
  const auto post = simulate_fsdp(three_blocks(t));
  CHECK(post.step_time_s == doctest::Approx(10.5).epsilon(kTight));
  CHECK(timing(post, "all-gather bwd B1").start == doctest::Approx(6.5).epsilon(kTight));
  // NONE issues the next all-gather in the next pre-backward hook, behind the current reduce-scatter:
  // bwd B3 [3.5, 5.5], RS B3 [5.5, 6.5], AG B2 [6.5, 7], bwd B2 [7, 9], RS B2 [9, 10], AG B1 [10, 10.5],
  // bwd B1 [10.5, 12.5], RS B1 [12.5, 13.5]: r + a = 1.5 s exposed at each of the two hand-overs.
  t.backward_prefetch = BackwardPrefetch::None;
  const auto none = simulate_fsdp(three_blocks(t));
  CHECK(none.step_time_s == doctest::Approx(13.5).epsilon(kTight));
  CHECK(timing(none, "backward B2").start == doctest::Approx(7.0).epsilon(kTight));
  CHECK(timing(none, "backward B1").start == doctest::Approx(10.5).epsilon(kTight));
}

TEST_CASE("fix 1: BACKWARD_POST does not prefetch the first backward unit") {
  // The host needs 3 s to issue the root's backward (one kernel at 3 s). With the rate limiter (2)
  // the host last waited for fwd B2 (2.5 s) in the root's pre-backward hook. PRE prefetches B3 right
  // there (all-gather [2.5, 3]); POST issues it in B3's own pre-backward hook, after the root's backward
  // kernels, at 5.5: bwd B3 waits for it [6, 8] instead of starting at 5.5. Only this first all-gather
  // is exposed: PRE ends at 12.5, POST at 13.
  auto setup = three_blocks();
  setup.units[0].backward_kernels = 1;
  setup.training.host.kernel_issue_s = 3;
  setup.training.backward_prefetch = BackwardPrefetch::Pre;
  const auto pre = simulate_fsdp(setup);
  CHECK(pre.step_time_s == doctest::Approx(12.5).epsilon(kTight));
  CHECK(timing(pre, "all-gather bwd B3").start == doctest::Approx(2.5).epsilon(kTight));
  CHECK(timing(pre, "backward B3").start == doctest::Approx(5.5).epsilon(kTight));
  setup.training.backward_prefetch = BackwardPrefetch::Post;
  const auto post = simulate_fsdp(setup);
  CHECK(post.step_time_s == doctest::Approx(13.0).epsilon(kTight));
  CHECK(timing(post, "all-gather bwd B3").start == doctest::Approx(5.5).epsilon(kTight));
  CHECK(timing(post, "backward B3").start == doctest::Approx(6.0).epsilon(kTight));
}

TEST_CASE("fix 2: collectives on one communicator queue, HYBRID_SHARD's all-reduce overlaps them") {
  // 2 nodes x 2 GPUs; NVLink and NICs at 1 GB/s. A shard group inside a node all-gathers 2 GB in
  // 1 s over NVLink; each of the two replica groups (one GPU per node) all-reduces 0.5 GB, sending
  // 2 (N-1)/N x 0.5 GB = 0.5 GB per GPU, 1 GB through each node's NIC: 1 s.
  auto c = toy_cluster();
  c.gpus_per_node = 2;
  c.intra.bandwidth = 1e9;
  const Group shard{.nodes = 1, .gpus_per_node = 2, .node_stride = 1, .count = 2};
  const Group replica{.nodes = 2, .gpus_per_node = 1, .node_stride = 1, .count = 2};
  Schedule s;
  Task ag{.name = "ag", .stream = Stream::AllGather, .category = Category::AllGather};
  ag.phases = {{plan_collective(c, CollectiveOp::AllGather, 2e9, shard)}};
  Task rs{.name = "rs", .stream = Stream::AllGather, .category = Category::ReduceScatter};
  rs.phases = {{plan_collective(c, CollectiveOp::ReduceScatter, 2e9, shard)}};
  Task ar{.name = "ar", .stream = Stream::AllReduce, .category = Category::AllReduce};
  ar.phases = {{plan_collective(c, CollectiveOp::AllReduce, 0.5e9, replica)}};
  s.add(ag);
  s.add(rs);
  s.add(ar);
  const auto r = replay(s, c);
  // Issued back to back on the shard group's communicator: one after the other, 1 + 1 s.
  CHECK(r.timings[0].end == doctest::Approx(1.0).epsilon(kTight));
  CHECK(r.timings[1].start == doctest::Approx(1.0).epsilon(kTight));
  CHECK(r.timings[1].end == doctest::Approx(2.0).epsilon(kTight));
  // The all-reduce runs at once on its own communicator and stream.
  CHECK(r.timings[2].start == doctest::Approx(0.0));
  CHECK(r.timings[2].end == doctest::Approx(1.0).epsilon(kTight));
}

TEST_CASE("fix 2: separate communicators share the NICs: each of two takes twice as long") {
  const auto c = toy_cluster();
  const auto plan = plan_collective(c, CollectiveOp::AllGather, 2e9, whole_cluster(c));  // 1 s alone
  Schedule s;
  Task a{.name = "a", .stream = Stream::AllGather, .category = Category::AllGather};
  a.phases = {{plan}};
  Task b = a;
  b.stream = Stream::ReduceScatter;
  s.add(a);
  s.add(b);
  const auto r = replay(s, c);
  CHECK(r.timings[0].end == doctest::Approx(2.0).epsilon(kTight));
  CHECK(r.timings[1].end == doctest::Approx(2.0).epsilon(kTight));
}

TEST_CASE("fix 2 and 4: FSDP queues reduce-scatters with all-gathers, HSDP all-reduces on their own stream") {
  auto c = toy_cluster();
  c.gpus_per_node = 4;
  Training t = no_host();
  t.sharding = Sharding::HybridShard;
  const auto s = make_setup(models::preset("gpt2-124m"), c, t);
  CHECK(s.shard_size() == 4);
  REQUIRE(s.replica_group);
  CHECK(s.replica_group->ranks() == 2);
  CHECK(s.replica_group->count == 4);
  const Schedule schedule = build_step(s);
  for (const auto& task : schedule.tasks) {
    if (task.category == Category::AllGather || task.category == Category::ReduceScatter)
      CHECK(task.stream == Stream::AllGather);
    if (task.category == Category::AllReduce) CHECK(task.stream == Stream::AllReduce);
  }
  CHECK(count(schedule, Category::AllReduce) == int(s.units.size()));
  // A reduce-scatter group of its own is a what-if: its reduce-scatters leave the shared queue.
  t.reduce_scatter_group = ReduceScatterGroup::Separate;
  for (const auto& task : build_step(make_setup(models::preset("gpt2-124m"), c, t)).tasks)
    if (task.category == Category::ReduceScatter) CHECK(task.stream == Stream::ReduceScatter);
}

TEST_CASE("fix 3: the next micro-batch's root all-gather waits for the compute stream") {
  // Two micro-batches under no_sync. Micro-batch 0 ends its backward at 10.5 (as the two-unit step).
  // The root's pre-forward makes the unshard stream wait for the compute stream, so micro-batch 1
  // all-gathers the root [10.5, 11.5] and the block [11.5, 12], fwd block [12, 14], fwd root
  // [14, 15], bwd root [15, 17], bwd block [17, 21], reduce-scatter block [21, 22], root [22, 24].
  auto t = no_host();
  t.grad_accumulation = 2;
  t.no_sync = true;
  const auto r = simulate_fsdp(two_units(t));
  const auto& s = r.schedule.tasks;
  int second_root_gather = -1, seen = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i].name == "all-gather fwd root" && seen++ == 1) second_root_gather = int(i);
  REQUIRE(second_root_gather >= 0);
  CHECK(r.replay.timings[std::size_t(second_root_gather)].start == doctest::Approx(10.5).epsilon(kTight));
  CHECK(r.step_time_s == doctest::Approx(24.0).epsilon(kTight));
  // FSDP2's root pre-forward makes the all-gather streams wait for the compute stream the same way.
  // Its root is freed after backward, so micro-batch 1 gathers it again at 10.5; the block's
  // reduce-scatter [21, 22] and then the root's (its post_backward runs in the final callback,
  // after the compute stream waited for the block's reduce-scatter) [22, 24].
  t.api = Api::Fsdp2;
  const auto r2 = simulate_fsdp(two_units(t));
  seen = 0;
  for (std::size_t i = 0; i < r2.schedule.tasks.size(); ++i)
    if (r2.schedule.tasks[i].name == "all-gather fwd root" && seen++ == 1)
      CHECK(r2.replay.timings[i].start == doctest::Approx(10.5).epsilon(kTight));
  CHECK(seen == 2);
  CHECK(r2.step_time_s == doctest::Approx(24.0).epsilon(kTight));
}

TEST_CASE("fix 7: FSDP2 accumulates no-sync gradients in fp32") {
  // Two micro-batches, no_sync, bf16 params and fp32 reduce, HBM at 1e12 B/s. Micro-batch 0's
  // post_backward casts the block's bf16 gradient into an fp32 accumulator (read 2, write 4 bytes
  // per parameter: 3 ms for 0.5e9); micro-batch 1 adds into it (read 2 + 4, write 4: 5 ms) and the
  // copy-in reads it in fp32 (read 4, write 4: 4 ms).
  auto t = no_host();
  t.api = Api::Fsdp2;
  t.grad_accumulation = 2;
  t.no_sync = true;
  auto setup = two_units(t);
  setup.cluster.gpu.memory_bandwidth = 1e12;
  const auto r = simulate_fsdp(setup);
  std::vector<double> accumulate;
  for (std::size_t i = 0; i < r.schedule.tasks.size(); ++i)
    if (r.schedule.tasks[i].name == "grad accumulate block")
      accumulate.push_back(r.replay.timings[i].end - r.replay.timings[i].start);
  REQUIRE(accumulate.size() == 2);
  CHECK(accumulate[0] == doctest::Approx(3e-3).epsilon(kTight));
  CHECK(accumulate[1] == doctest::Approx(5e-3).epsilon(kTight));
  const auto& copy_in = timing(r, "reduce-scatter copy-in block");
  CHECK(copy_in.end - copy_in.start == doctest::Approx(4e-3).epsilon(kTight));
  CHECK(r.collectives.at("reduce_scatter").count == 2);
}

TEST_CASE("fix 3: SHARD_GRAD_OP under no_sync keeps parameters unsharded, later micro-batches skip all-gathers") {
  auto t = no_host();
  t.grad_accumulation = 3;
  t.sharding = Sharding::ShardGradOp;
  CHECK(count(build_step(two_units(t)), Category::AllGather) == 2);  // micro-batch 0's forward only
  t.no_sync = false;
  CHECK(count(build_step(two_units(t)), Category::AllGather) == 6);  // every forward
  t.sharding = Sharding::FullShard;
  t.no_sync = true;
  CHECK(count(build_step(two_units(t)), Category::AllGather) == 9);  // 2 forward + 1 backward, 3 times
}

TEST_CASE("fix 5: the rate limiter is a bool, in backward it holds one unit more than in forward") {
  // Four blocks (a = 0.5, fwd 1, bwd 2), reduce-scatters on a group of their own so that only the
  // limiter orders the all-gathers. Forward: all-gather B3 waits for fwd B1 (1.5), B4 for fwd B2 (2.5).
  // Backward (b1 = B4 ... b4 = B1), PRE: the pre-backward hook of b_k prefetches b_k+1 after the
  // host waits for the oldest of two pending frees, which is b_k-2's: all-gather b4 = B1 waits for
  // bwd b1 = B4, [4.5, 6.5], not for bwd b2 as a depth of 2 would say.
  auto setup = with_units({unit("root", 1, 0, 0, models::UnitKind::Root), unit("B1", 0.5e9, 1, 2),
                           unit("B2", 0.5e9, 1, 2), unit("B3", 0.5e9, 1, 2), unit("B4", 0.5e9, 1, 2)});
  setup.training.reduce_scatter_group = ReduceScatterGroup::Separate;
  const auto on = simulate_fsdp(setup);
  CHECK(timing(on, "all-gather fwd B3").start == doctest::Approx(1.5).epsilon(kTight));
  CHECK(timing(on, "all-gather fwd B4").start == doctest::Approx(2.5).epsilon(kTight));
  CHECK(timing(on, "backward B4").end == doctest::Approx(6.5).epsilon(kTight));
  CHECK(timing(on, "all-gather bwd B1").start == doctest::Approx(6.5).epsilon(kTight));
  // limit_all_gathers: false: the host never waits; every all-gather follows the previous one.
  setup.training.limit_all_gathers = false;
  const auto off = simulate_fsdp(setup);
  CHECK(timing(off, "all-gather fwd B3").start == doctest::Approx(1.0).epsilon(kTight));
  CHECK(timing(off, "all-gather bwd B1").start < 6.5);
}

TEST_CASE("fix 6: the host issues every kernel, it runs ahead unless FSDP makes it wait") {
  // No GPU work and no communication to speak of: the step is the host's time. FSDP1 runs, per
  // micro-batch, the root pre-forward, pre/post-forward of the block, the root's post-forward and
  // pre-backward, pre/post-backward of the block, the root's post-backward and the final callback,
  // then the optimizer's: 10 hook-sized host costs of 1 ms.
  auto setup = with_units({unit("root", 1, 0, 0, models::UnitKind::Root), unit("block", 1, 0, 0)});
  setup.training.host = {.kernel_issue_s = 0, .hook_s = 1e-3};
  CHECK(simulate_fsdp(setup).step_time_s == doctest::Approx(10e-3).epsilon(1e-4));
  // With seconds of GPU work the host is ahead: only the first hook (before the first all-gather)
  // adds to the two-unit step.
  auto two = two_units();
  two.training.host = {.kernel_issue_s = 0, .hook_s = 1e-3};
  CHECK(simulate_fsdp(two).step_time_s == doctest::Approx(13.5 + 1e-3).epsilon(kTight));
}

TEST_CASE("fix 6: FSDP1 casts and divides the gradient, FSDP2 copies 14 bytes per parameter") {
  // HBM at 1e12 B/s. FSDP1 (bf16 params, fp32 reduce, 2 ranks): the post-backward stream reads 2 and
  // writes 4 bytes per parameter to cast, then reads and writes 4 to pre-divide (predivide factor 2),
  // and the shard is post-divided (4 + 4 bytes on half): 6 + 8 + 4 = 18 bytes per parameter.
  auto setup = two_units();
  setup.cluster.gpu.memory_bandwidth = 1e12;
  const auto r1 = simulate_fsdp(setup);
  CHECK(timing(r1, "grad cast+divide block").end - timing(r1, "grad cast+divide block").start ==
        doctest::Approx(18 * 0.5e9 / 1e12).epsilon(kTight));
  // FSDP2: copy-out after each all-gather (read 2, write 2), copy-in before the reduce-scatter
  // (read 2, write 4): a block resharded after forward copies 4 + 4 + 6 = 14 bytes per parameter,
  // the root (kept from forward to backward) 4 + 6.
  setup.training.api = Api::Fsdp2;
  const auto r2 = simulate_fsdp(setup);
  double copied = 0;
  for (std::size_t i = 0; i < r2.schedule.tasks.size(); ++i)
    if (r2.schedule.tasks[i].category == Category::FsdpCopy && r2.schedule.tasks[i].unit == 1)
      copied += (r2.replay.timings[i].end - r2.replay.timings[i].start) * 1e12;
  CHECK(copied == doctest::Approx(14 * 0.5e9).epsilon(kTight));
  CHECK(r2.breakdown.fsdp_copy_s == doctest::Approx((14 * 0.5e9 + 10 * 1e9) / 1e12).epsilon(kTight));
}

TEST_CASE("fix 7: FSDP2's compute stream waits for the previous reduce-scatter") {
  // FSDP2, three blocks with slow reduce-scatters: 0.5e9 params at 0.25 GB/s NICs: all-gather 2 s,
  // reduce-scatter 4 s; backward 1 s, forward 1 s. In post_backward the compute stream waits for
  // the previous reduce-scatter before its copy-in: bwd B2 ends at t, but the copy-in of B2 (and so
  // bwd B1) waits until RS B3 ends. Without that wait, bwd B1 would follow bwd B2 at once.
  auto setup = with_units({unit("root", 1, 0, 0, models::UnitKind::Root), unit("B1", 0.5e9, 1, 1),
                           unit("B2", 0.5e9, 1, 1), unit("B3", 0.5e9, 1, 1)});
  setup.training.api = Api::Fsdp2;
  setup.cluster.nics.bandwidth = 0.25e9;
  const auto r = simulate_fsdp(setup);
  const double rs_b3_end = timing(r, "reduce-scatter B3").end;
  CHECK(timing(r, "backward B2").end < rs_b3_end);
  CHECK(timing(r, "reduce-scatter copy-in B2").start == doctest::Approx(rs_b3_end).epsilon(kTight));
  CHECK(timing(r, "backward B1").start >= rs_b3_end);
}

TEST_CASE("fix 8: the memory peak follows the rate limiter's depth") {
  // Six blocks of 0.5e9 bf16 params (1 GB unsharded each; gradients reduced in bf16, 1 GB), all-gathers
  // (0.5 s) much faster than compute (10 s forward, 20 s backward), no activations, reduce-scatters on
  // a group of their own so that only the limiter orders the all-gathers. The peak is in backward:
  // the host prefetches b_k+1 once b_k-L's free is done, so when bwd b_k-L ends and bwd b_k-L+1
  // starts, L + 1 blocks are unsharded (b_k-L+1 .. b_k+1, one more than in forward).
  std::vector<models::FsdpUnit> units = {unit("root", 1, 0, 0, models::UnitKind::Root)};
  for (int i = 0; i < 6; ++i) units.push_back(unit("B", 0.5e9, 10, 20));
  auto setup = with_units(units);
  setup.training.reduce_dtype = Dtype::BF16;
  setup.training.reduce_scatter_group = ReduceScatterGroup::Separate;
  double previous = 0;
  for (int depth = 1; depth <= 3; ++depth) {
    setup.training.max_inflight_all_gathers = depth;
    const auto m = simulate_fsdp(setup).memory;
    CAPTURE(depth);
    // The unsharded blocks live in the unshard stream's pool of the caching allocator; the step's
    // overall peak is at the optimizer here (fp32 gradient shards and AdamW's temporaries of 1.5e9
    // parameters per rank outweigh 4 GB), so the limiter shows in that pool's own peak.
    CHECK(m.pool_peak_bytes[int(MemoryPool::AllGather)] == doctest::Approx((depth + 1) * 1e9).epsilon(1e-6));
    CHECK(m.peak_bytes() > previous);
    previous = m.peak_bytes();
  }
}

namespace {
// A fat tree of leaves of 4 nodes x 2 GPUs, 2:1 oversubscribed: the symmetry cut of `nodes` replays
// `cut_nodes` and ends every task when the full replay does.
void check_cut(int nodes, Sharding sharding, int cut_nodes, int shard_gpus, int leaves_per_pod = 0) {
  CAPTURE(nodes);
  auto c = toy_cluster();
  c.nodes = nodes;
  c.gpus_per_node = 2;
  using K = topologies::Fabric::Kind;
  c.fabric = {.kind = leaves_per_pod ? K::FatTree3 : K::FatTree2, .nodes_per_leaf = 4,
              .leaves_per_pod = leaves_per_pod, .oversubscription = 2, .switch_latency = 0};
  Training t;
  t.sharding = sharding;
  t.hybrid_shard_gpus = shard_gpus;
  test::check_cut_matches_full(build_step(make_setup(models::preset("gpt2-124m"), c, t)), c, cut_nodes);
}
}  // namespace

TEST_CASE("replaying two leaves instead of the whole fat tree gives the same times, to the nanosecond") {
  // HSDP with one leaf per shard group, so that shard rings stay in leaves and replica rings cross them.
  check_cut(4 * 16, Sharding::HybridShard, 8, 8);
  // An odd number of leaves: each leaf of a ring that crosses them still sends one hop out and
  // takes one in, so two leaves stand for five (and for 5 x 375 when the cluster is that big).
  check_cut(4 * 5, Sharding::HybridShard, 8, 8);
  check_cut(4 * 5, Sharding::FullShard, 8, 8);
  // Shard groups of 3 nodes straddle the leaves of 4: the layout repeats every 3 leaves, and the
  // replica rings' stride of 3 nodes every 3 too; 6 leaves (two of each ring) stand for 12.
  check_cut(4 * 12, Sharding::HybridShard, 24, 6);
  // Three levels, pods of 2 leaves: two pods stand for three.
  check_cut(4 * 2 * 3, Sharding::FullShard, 16, 8, 2);
}

TEST_CASE("a partly filled last leaf: two full leaves stand for the cluster when it holds whole repeats of the groups") {
  // 5 full leaves and one of 2 nodes (or 1): FULL_SHARD's rings span the whole cluster.
  check_cut(22, Sharding::FullShard, 8, 2);
  check_cut(21, Sharding::FullShard, 8, 2);
  // HSDP: one node per shard group, replica rings over all 22 nodes: still whole-cluster rings.
  check_cut(22, Sharding::HybridShard, 8, 2);
  // Shard groups of 2 nodes tile the 22 and the partial leaf holds one whole group: two leaves
  // stand for it too. Groups of 3 nodes tile 21 but do not divide a leaf of 4, so their pattern
  // does not repeat with the leaves: all 21 replay.
  check_cut(22, Sharding::HybridShard, 8, 4);
  check_cut(21, Sharding::HybridShard, 21, 6);
  // Three levels: two pods of two leaves, and a third pod of one leaf and a half.
  check_cut(4 * 2 * 2 + 6, Sharding::FullShard, 16, 8, 2);
}

TEST_CASE("the Chrome trace has one track per stream, the host's included, and one slice per task") {
  auto setup = two_units();
  setup.training.host.hook_s = 1e-3;
  const auto r = simulate_fsdp(setup);
  const std::string trace = chrome_trace(r, "two units");
  for (const char* track : {"\"compute\"", "\"nccl shard group\"", "\"nccl replica group\"", "\"post-backward\"",
                            "\"host\""})
    CHECK(trace.find(track) != std::string::npos);
  std::size_t slices = 0;
  for (std::size_t at = 0; (at = trace.find("\"ph\":\"X\"", at)) != std::string::npos; ++at) ++slices;
  CHECK(slices == r.schedule.tasks.size());
  CHECK(count(r.schedule, Category::Host) > 0);
  // The backward of the block runs [6.5, 10.5] s, 1 ms later for the first hook (to the microsecond).
  const auto at = trace.find("\"name\":\"backward block\",\"cat\":\"backward\",\"ph\":\"X\",\"pid\":0,\"tid\":0,");
  REQUIRE(at != std::string::npos);
  const std::string ts = "\"ts\":6501000.00";
  CHECK(trace.compare(trace.find("\"ts\":", at), ts.size(), ts) == 0);
  CHECK(trace.find("\"dur\":4000000.000", at) < trace.find('}', at));
}
