#include "sim/policy.hpp"

#include "sim/pipeline.hpp"

#include "sim/compute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>

namespace tagcsim::sim {

const char* to_string(PolicyKind k) {
  switch (k) {
    case PolicyKind::Fsdp: return "fsdp";
    case PolicyKind::Lhc: return "lhc";
    case PolicyKind::Tagc: return "tagc";
    case PolicyKind::TagcBatched: return "tagc-batched";
  }
  return "?";
}

bool selected(const Selection& s, const models::FsdpUnit& u) {
  switch (s.rule) {
    case Selection::Rule::All: return true;
    case Selection::Rule::MinParams: return u.params >= s.min_params;
    case Selection::Rule::Kinds:
      for (auto k : s.kinds)
        if (k == u.kind) return true;
      return false;
    case Selection::Rule::Tagc:
      // TAGC compresses the large non-attention linear layers (MLP, token
      // embedding, head) and leaves attention, norms and position embeddings
      // alone. A unit holding several kinds (a whole block) follows its majority.
      if (u.kind == models::UnitKind::PositionEmbedding) return false;
      return 2 * (u.mlp_params + u.embedding_params) > u.params;
  }
  return false;
}

std::string describe(const Selection& s) {
  switch (s.rule) {
    case Selection::Rule::All: return "every unit";
    case Selection::Rule::MinParams: return fmt::format("units of at least {} parameters", s.min_params);
    case Selection::Rule::Kinds: {
      std::string out = "units of kind";
      for (auto k : s.kinds) out += fmt::format(" {}", models::to_string(k));
      return out;
    }
    case Selection::Rule::Tagc: return "TAGC's rule: non-attention linear units (MLP, embedding, head)";
  }
  return "";
}

std::vector<std::string> check_policy(const Policy& p, int ranks, const std::string& where,
                                      double decoded_elements) {
  std::vector<std::string> warnings;
  if (p.kind == PolicyKind::Fsdp) return warnings;
  if (!(p.ratio > 1))
    throw InputError(fmt::format("{}: policy {}: ratio must be > 1 (uncompressed / sketch size), got {}", where,
                                 p.label, p.ratio));
  if (!(p.sparsity >= 0 && p.sparsity < 1))
    throw InputError(fmt::format("{}: policy {}: sparsity must be in [0, 1), got {}", where, p.label, p.sparsity));
  using E = kernels::IndexEncoding;
  if (p.index == E::Bit4Sum && ranks > kernels::kMaxRanks4BitSum)
    throw InputError(fmt::format("{}: policy {}: a 4-bit SUM index overflows above {} ranks; this shard group has "
                                 "{} (use 8bit-max)",
                                 where, p.label, kernels::kMaxRanks4BitSum, ranks));
  if (p.index == E::Bit1Sum && ranks > 1) {
    const auto q = unit_quality(p, ranks, decoded_elements);
    warnings.push_back(fmt::format(
        "policy {}: the 1-bit SUM index is lossy over {} ranks: where two ranks flag the same element the byte "
        "sum carries into the neighbouring flag, so real gradient values are dropped or invented; expected "
        "recovered fraction {:.3f}, relative gradient error {:.2g} (use 1bit-or, 4bit-sum or 8bit-max)",
        p.label, ranks, q.recovered_fraction, q.relative_l2_error));
  }
  return warnings;
}

kernels::KernelProfile kernel_profile_for(const topologies::DeviceProfile& gpu) {
  // A measured bench for this device wins over the bandwidth model.
  // kernels/gpu-check.sh names it after nvidia-smi's GPU name: kernels-cuda-h100-80gb-hbm3.json and
  // the like; the device family ("h100" of "H100-SXM5-80GB") picks it.
  std::string family = gpu.name.substr(0, gpu.name.find('-'));
  for (auto& ch : family) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  std::vector<std::string> found;
  const std::filesystem::path dir(kernels::data_dir());
  if (!family.empty() && std::filesystem::is_directory(dir))
    for (const auto& f : std::filesystem::directory_iterator(dir)) {
      const std::string name = f.path().filename().string();
      if (name.rfind("kernels-cuda-" + family, 0) == 0 && f.path().extension() == ".json") found.push_back(f.path());
    }
  if (!found.empty()) {
    std::sort(found.begin(), found.end());  // the same file whatever the directory order
    return kernels::load_profile(found.front());
  }
  return kernels::bandwidth_model(gpu.name, gpu.memory_bandwidth, gpu.memory_efficiency);
}

namespace {

constexpr double kFp32 = 4;

struct UnitShape {
  double elements = 0;        // fp32 gradient elements of the unit
  double shard = 0;           // elements of one destination shard
  double whole_blocks = 0;    // elements of a shard inside whole blocks
  double tail = 0;            // elements of a shard past its last whole block (sent plain)
};

UnitShape shape_of(const StepSetup& setup, int u) {
  UnitShape s;
  s.elements = double(setup.units[u].params);
  s.shard = s.elements / setup.shard_size();
  s.whole_blocks = std::floor(s.shard / kernels::kBlock) * kernels::kBlock;
  s.tail = s.shard - s.whole_blocks;
  return s;
}

double sketch_bytes(double elements, double ratio) {
  // R = ceil(blocks / ratio) rows of B float counters; the mapping stays local.
  const double blocks = std::ceil(elements / kernels::kBlock);
  return std::ceil(blocks / ratio) * kernels::kBlock * kFp32;
}

// `host_syncs`: how often the host reads the task's result back (kernels/profile.hpp's count); the
// FSDP builders make the host block until the task is done (Task::host_syncs).
Task kernel_task(const std::string& name, int u, double seconds, std::vector<int> after, double host_syncs = 0) {
  Task t;
  t.name = name;
  t.category = Category::CompressionKernel;
  t.unit = u;
  t.seconds = seconds;
  t.after = std::move(after);
  t.host_syncs = host_syncs;
  return t;
}

// Where a policy's collectives run. PyTorch's ProcessGroupNCCL runs every collective of one process
// group on that group's one internal NCCL stream, whatever CUDA stream issued it; TAGC's reference
// calls dist.all_reduce / dist.reduce on the default group (nanoGPT/train.py, tagc/tagc.py), FSDP's,
// so its collectives queue with FSDP's all-gathers. `process_group: own` models a group of its own.
Stream comm_stream(const Policy& p) { return p.own_process_group ? Stream::ReduceScatter : Stream::AllGather; }

Task comm_task(const Policy& p, const std::string& name, int u, std::vector<Phase> phases, std::vector<int> after) {
  Task t;
  t.name = name;
  t.stream = comm_stream(p);
  t.category = Category::CompressedCollective;
  t.unit = u;
  t.phases = std::move(phases);
  t.after = std::move(after);
  return t;
}

kernels::Stage sparsify_stage(const Policy& p) {
  return p.exact_topk ? kernels::Stage::SparsifyTopk : kernels::Stage::SparsifyBisect;
}

double sparsify_seconds(const Policy& p, const kernels::KernelProfile& kp, double n) {
  if (p.sparsity <= 0) return 0;
  return kp.seconds(sparsify_stage(p), n, p.index);
}

// The host's reads of one sparsification: the reference's bisection calls .item() once per probe
// (tagc/tagc.py sparsify(): count_nonzero().item()), the top-k none.
double sparsify_syncs(const Policy& p) {
  return p.sparsity > 0 ? kernels::stage_cost(sparsify_stage(p), p.index).host_syncs : 0;
}

// The host's reads of one decode: the peeling loop reads its flag after every round
// (`while flag[0] != 0`, in TAGC's and LHC's references alike) and stops when nothing peeled.
double decode_syncs(double rounds) { return rounds * kernels::stage_cost(kernels::Stage::DecodeRound).host_syncs; }

// Sparsify (with error feedback) then create the index, over n elements.
double prepare_seconds(const Policy& p, const kernels::KernelProfile& kp, double n) {
  return sparsify_seconds(p, kp, n) + kp.seconds(kernels::Stage::IndexCreate, n, p.index);
}

// Peeling runs rounds until nothing peels; how many, the quality model's
// measurements say (each round is its own launches and a host read).
double decode_seconds(const kernels::KernelProfile& kp, const Policy& p, double n, double rounds) {
  return kp.seconds(kernels::Stage::IndexRead, n, p.index) + rounds * kp.seconds(kernels::Stage::DecodeRound, n) +
         kp.seconds(kernels::Stage::Estimate, n);
}

}  // namespace

kernels::QualityEstimate unit_quality(const Policy& p, int ranks, double decoded_elements) {
  // Units of one model repeat a few sizes: interpolate the measured grid once per setting.
  using Key = std::tuple<int, double, double, double, int, double>;
  static std::map<Key, kernels::QualityEstimate> memo;
  const Key key{ranks, p.sparsity, p.overlap, p.ratio, int(p.index), decoded_elements};
  auto it = memo.find(key);
  if (it == memo.end())
    it = memo.emplace(key, kernels::estimate_quality({.ranks = ranks, .sparsity = p.sparsity, .overlap = p.overlap,
                                                      .ratio = p.ratio, .encoding = p.index,
                                                      .shard_elements = decoded_elements}))
             .first;
  return it->second;
}

double decoded_elements(const Policy& p, const StepSetup& setup, const models::FsdpUnit& u) {
  return p.kind == PolicyKind::Lhc ? double(u.params) : double(u.params) / setup.shard_size();
}

std::optional<Policy> unit_policy(const Policy& p, const models::FsdpUnit& u) {
  if (p.kind == PolicyKind::Fsdp) return std::nullopt;
  for (const auto& k : p.by_kind) {
    if (k.kind != u.kind) continue;
    if (!k.compress) return std::nullopt;
    Policy q = p;
    q.ratio = k.ratio;
    q.sparsity = k.sparsity;
    q.index = k.index;
    return q;
  }
  if (p.kind == PolicyKind::Lhc || selected(p.selection, u)) return p;
  return std::nullopt;
}

namespace {

// What a unit's compressed reduction needs.
struct Ctx {
  const StepSetup& setup;
  const Policy& p;  // this unit's settings
  const kernels::KernelProfile& kp;
  double decode_rounds;
};

// TAGC as published: for each destination shard, on one serialised NCCL
// stream, an index all-reduce then a sketch reduce to the shard's owner; the
// kernels of shard s+1 run while shard s communicates. The N identical
// shards become one kernel task and one communication task whose network
// phase carries all N shards' bytes and latencies, so N-fold work does not
// become N-fold events.
// The host blocks three times per unit (tagc/tagc.py runs in FSDP's
// post-backward hook, on the Python thread): on shard 0's bisection, which
// waits for the unit's gradient; on the other shards' bisections; and on the
// owner's peeling loop, which waits for its shard's sketch. The waits end
// with the task that holds them, so they include the packs (index read and
// compress) of the second task and the estimate after the loop, a small part
// of each.
int tagc_unit(Schedule& s, const Ctx& ctx, int u, int grad_ready) {
  const auto& [setup, p, kp, rounds] = ctx;
  const auto& unit = setup.units[u];
  const auto sh = shape_of(setup, u);
  const int N = setup.shard_size();
  const auto& g = setup.shard_group;
  const auto& c = setup.cluster;
  const double prep = prepare_seconds(p, kp, sh.shard);
  const double pack = kp.seconds(kernels::Stage::IndexRead, sh.shard, p.index) +
                      kp.seconds(kernels::Stage::Compress, sh.shard, p.index);
  const auto index_ar = plan_collective(c, CollectiveOp::AllReduce,
                                        std::ceil(sh.whole_blocks * kernels::index_bytes_per_element(p.index)), g);
  const auto sketch_reduce = plan_collective(c, CollectiveOp::Reduce, sketch_bytes(sh.whole_blocks, p.ratio), g);

  const int first =
      s.add(kernel_task("tagc sparsify+index shard 0 " + unit.name, u, prep, {grad_ready}, sparsify_syncs(p)));
  const int rest = s.add(kernel_task(fmt::format("tagc kernels x{} shards {}", N, unit.name), u,
                                     (N - 1) * prep + N * pack, {first}, (N - 1) * sparsify_syncs(p)));
  std::vector<Phase> phases = {{index_ar, N, "index all_reduce"}};
  if (N > 1) phases.push_back({sketch_reduce, N - 1, "sketch reduce"});
  if (sh.tail > 0)
    phases.push_back({plan_collective(c, CollectiveOp::Reduce, sh.tail * kFp32, g), N, "tail reduce"});
  const int comm = s.add(comm_task(p, fmt::format("tagc index+sketch x{} {}", N, unit.name), u, phases, {first}));
  // The last shard's sketch can leave only once the last compress is done; its owner, rank N-1,
  // is the root (the N-1 before it are rooted at ranks 0 to N-2, Phase::root's default).
  const int last = s.add(comm_task(p, "tagc last sketch reduce " + unit.name, u,
                                   {{sketch_reduce, 1, "sketch reduce", N - 1}}, {comm, rest}));
  const int decode = s.add(kernel_task("tagc decode " + unit.name, u, decode_seconds(kp, p, sh.shard, rounds), {last},
                                       decode_syncs(rounds)));
  return replica_all_reduce(s, setup, u, decode);
}

// Ours: sketch all N shards in one pass (linearity makes the per-shard
// sketches exact), then one reduce-scatter of a correct-OR index and one of
// the sketches (with the plain tail appended to each shard's part). 4-bit
// SUM and 8-bit MAX are NCCL reductions; a 1-bit OR needs a ring of
// ncclSend/ncclRecv with an OR kernel, which moves the same bytes as a
// reduce-scatter, so it is modelled as one. Its peeling loop reads a flag
// per round like the reference's, so the host waits for the decode (and for
// the sparsification under `sparsify: bisect`).
int batched_unit(Schedule& s, const Ctx& ctx, int u, int grad_ready) {
  const auto& [setup, p, kp, rounds] = ctx;
  const auto& unit = setup.units[u];
  const auto sh = shape_of(setup, u);
  const int N = setup.shard_size();
  const auto& g = setup.shard_group;
  const auto& c = setup.cluster;
  const double prep = prepare_seconds(p, kp, sh.elements);
  const int k1 = s.add(kernel_task("batched sparsify+index " + unit.name, u, prep, {grad_ready}, sparsify_syncs(p)));
  const auto index_rs = plan_collective(c, CollectiveOp::ReduceScatter,
                                        std::ceil(N * sh.whole_blocks * kernels::index_bytes_per_element(p.index)), g);
  const int idx = s.add(comm_task(p, "batched index reduce-scatter " + unit.name, u,
                                  {{index_rs, 1, "index reduce_scatter"}}, {k1}));
  const int k2 = s.add(kernel_task("batched sketch " + unit.name, u,
                                   kp.seconds(kernels::Stage::CompressBatched, sh.elements, p.index), {k1}));
  const auto sketch_rs = plan_collective(
      c, CollectiveOp::ReduceScatter, N * (sketch_bytes(sh.whole_blocks, p.ratio) + sh.tail * kFp32), g);
  const int sk = s.add(comm_task(p, "batched sketch reduce-scatter " + unit.name, u,
                                 {{sketch_rs, 1, "sketch reduce_scatter"}}, {k2, idx}));
  const int decode = s.add(kernel_task("batched decode " + unit.name, u, decode_seconds(kp, p, sh.shard, rounds), {sk},
                                       decode_syncs(rounds)));
  return replica_all_reduce(s, setup, u, decode);
}

// LHC: no sparsification; index and sketch of the whole unit all-reduced,
// every rank decodes the whole unit and keeps its shard.
int lhc_unit(Schedule& s, const Ctx& ctx, int u, int grad_ready) {
  const auto& [setup, p, kp, rounds] = ctx;
  const auto& unit = setup.units[u];
  const auto sh = shape_of(setup, u);
  const auto& g = setup.shard_group;
  const auto& c = setup.cluster;
  const double prep = prepare_seconds(p, kp, sh.elements) + kp.seconds(kernels::Stage::IndexRead, sh.elements, p.index) +
                      kp.seconds(kernels::Stage::Compress, sh.elements, p.index);
  const int k = s.add(kernel_task("lhc index+sketch " + unit.name, u, prep, {grad_ready}));
  const auto index_ar =
      plan_collective(c, CollectiveOp::AllReduce, std::ceil(sh.elements * kernels::index_bytes_per_element(p.index)), g);
  const auto sketch_ar = plan_collective(c, CollectiveOp::AllReduce, sketch_bytes(sh.elements, p.ratio), g);
  const int comm = s.add(comm_task(p, "lhc index+sketch all-reduce " + unit.name, u,
                                   {{index_ar, 1, "index all_reduce"}, {sketch_ar, 1, "sketch all_reduce"}}, {k}));
  const int decode = s.add(kernel_task("lhc decode " + unit.name, u, decode_seconds(kp, p, sh.elements, rounds), {comm},
                                       decode_syncs(rounds)));
  return replica_all_reduce(s, setup, u, decode);
}

}  // namespace

Schedule build_policy_step(const StepSetup& setup, const Policy& policy, const kernels::KernelProfile& kp) {
  StepSetup plain = setup;
  if (policy.reduce_dtype) plain.training.reduce_dtype = *policy.reduce_dtype;
  return build_step(plain, [&](Schedule& s, const StepSetup& st, int u, int grad_ready) {
    const auto up = unit_policy(policy, st.units[u]);
    if (!up) return fsdp_reduce_scatter(s, st, u, grad_ready);
    const Ctx ctx{st, *up, kp, unit_quality(*up, st.shard_size(), decoded_elements(*up, st, st.units[u])).decode_rounds};
    switch (policy.kind) {
      case PolicyKind::Tagc: return tagc_unit(s, ctx, u, grad_ready);
      case PolicyKind::TagcBatched: return batched_unit(s, ctx, u, grad_ready);
      case PolicyKind::Lhc: return lhc_unit(s, ctx, u, grad_ready);
      case PolicyKind::Fsdp: break;
    }
    return fsdp_reduce_scatter(s, st, u, grad_ready);
  });
}

GradientError expected_error(const StepSetup& setup, const Policy& policy) {
  // Gradient energy taken as proportional to parameters: each compressed
  // unit's decode error, weighted by its share, the rest sent exactly.
  GradientError e;
  double total = 0, compressed = 0, sq = 0;
  std::optional<kernels::QualityEstimate> shown;
  for (const auto& u : setup.units) {
    total += double(u.params);
    const auto up = unit_policy(policy, u);
    if (!up) continue;
    const auto q = unit_quality(*up, setup.shard_size(), decoded_elements(*up, setup, u));
    compressed += double(u.params);
    sq += q.relative_l2_error * q.relative_l2_error * double(u.params);
    if (!shown || q.relative_l2_error > shown->relative_l2_error) shown = q;  // the worst-decoded unit
  }
  e.compressed_fraction = total > 0 ? compressed / total : 0;
  e.relative_l2_error = total > 0 ? std::sqrt(sq / total) : 0;
  if (shown)
    e.basis = fmt::format("{:.0f}% of parameters compressed; worst-decoded unit: load {:.2f}, recovered fraction {:.3f} "
                          "(quality model: calibrate/profiles/tagc-quality.csv)",
                          100 * e.compressed_fraction, shown->load, shown->recovered_fraction);
  else
    e.basis = "no unit compressed";
  return e;
}

StepResult simulate(const StepSetup& setup, const Policy& policy) {
  if (setup.training.pipeline_parallel > 1)
    return simulate_pipeline(setup, [&](const StepSetup& rank) { return simulate(rank, policy); });
  const auto kp = kernel_profile_for(setup.cluster.gpu);
  Schedule s = build_policy_step(setup, policy, kp);
  Replay r = replay(s, setup.cluster);
  StepResult out = summarize(setup, std::move(s), std::move(r));
  out.policy = policy.label;
  if (policy.kind == PolicyKind::Fsdp) return out;
  const auto e = expected_error(setup, policy);
  out.expected_grad_error = e.relative_l2_error;
  out.grad_error_basis = fmt::format("{}: {}; kernels: {}", policy.label, e.basis, kp.source);
  return out;
}

}  // namespace tagcsim::sim
