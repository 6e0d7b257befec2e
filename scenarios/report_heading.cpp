// The report's heading: the model, the cluster, the collective and compute models and the FSDP
// settings a run simulates (report_heading.hpp).
#include "scenarios/report_heading.hpp"

#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tagcsim::scenarios::detail {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string gbits(double bytes_per_s) { return fmt::format("{:g} Gb/s", bytes_per_s * 8 / 1e9); }
std::string gbytes(double bytes_per_s) { return fmt::format("{:g} GB/s", bytes_per_s / 1e9); }

std::string fabric_text(const topologies::Cluster& c) {
  const auto& f = c.fabric;
  using K = topologies::Fabric::Kind;
  if (f.kind == K::SingleSwitch) return "one non-blocking switch";
  std::string out = fmt::format("{}-level fat tree, {} nodes per leaf", f.kind == K::FatTree2 ? 2 : 3, f.nodes_per_leaf);
  if (c.nodes_in_last_leaf() < c.nodes_in_leaf())
    out += fmt::format(" (the last of {} leaves holds {})", c.leaves(), c.nodes_in_last_leaf());
  if (f.kind == K::FatTree3) out += fmt::format(", {} leaves per pod", f.leaves_per_pod);
  return out + fmt::format(", oversubscription {:g}:1", f.oversubscription);
}

}  // namespace

std::string coordinates_text(const Point& p) {
  std::string out;
  for (const auto& [k, v] : p.coordinates) out += fmt::format("{}{}={}", out.empty() ? "" : ", ", k, v);
  return out;
}

std::string collective_model_description(const topologies::Cluster& c) {
  if (c.gpus() < 2) return "";
  const auto held = topologies::collective_held_out(topologies::connection_key(c));
  if (held.empty()) return "";
  return fmt::format("NCCL's tuner and cost model {} ({})", topologies::connection_text(c), held);
}

std::string heading(const Scenario& s, const Point& p) {
  const auto& st = p.setup;
  const auto& c = st.cluster;
  std::string out = fmt::format("{}: {} ({:.2f}B params, {} FSDP units) on {} x {} = {} x {}\n", s.name,
                                st.model.name, double(models::parameter_count(st.model)) / 1e9, st.units.size(),
                                c.nodes, c.name, c.gpus(), c.gpu.name);
  // With a kernel profile the GPU's kernels are timed from it (the `compute:` line below); the roofline's
  // GEMM efficiency only matters without one.
  out += fmt::format("  GPUs: {} nodes x {} = {} x {}, {:.1f} GiB each, {:g} TFLOP/s bf16 peak{}\n", c.nodes,
                     c.gpus_per_node, c.gpus(), c.gpu.name, c.gpu.memory_bytes / kGiB, c.gpu.peak_flops_bf16 / 1e12,
                     c.gpu.profile.empty() ? fmt::format(", GEMM efficiency {:g}", c.gpu.gemm_efficiency) : "");
  if (c.stragglers.any())
    out += fmt::format("  stragglers: {}; every GPU waits for it at each collective, so the step's kernels run at "
                       "its pace\n",
                       c.stragglers.slowest > 0
                           ? fmt::format("the slowest GPU at {:g} of the others' speed", c.stragglers.slowest)
                           : fmt::format("speeds spread by {:g}% (one standard deviation): the slowest of {} GPUs "
                                         "expected at {:.4f} of nominal ({:.2f} sigma below)",
                                         100 * c.stragglers.spread, c.gpus(), c.slowest_gpu_speed(),
                                         topologies::expected_max_of_normals(c.gpus())));
  if (c.gpus_per_node > 1)
    out += fmt::format("  within a node: {} {} per GPU per direction{}, efficiency {:g}\n", c.intra.kind,
                       gbytes(c.intra.bandwidth),
                       c.intra.mesh() && c.gpus_per_node > 2
                           ? fmt::format(" (a full mesh: {} a pair, no NVLS)", gbytes(c.intra.group_bandwidth(2, c.gpus_per_node)))
                           : "",
                       c.intra.efficiency);
  if (c.nodes > 1)
    out += fmt::format("  between nodes: {} x {} = {} per node, efficiency {:g}{}; {}\n", c.nics.count,
                       gbits(c.nics.bandwidth), gbits(c.nics.count * c.nics.bandwidth), c.nics.efficiency,
                       c.collectives.net_channel_rate > 0
                           ? ", NCCL channels of at most " + gbytes(c.collectives.net_channel_rate)
                           : "",
                       fabric_text(c));
  else
    out += "  between nodes: none (one node)\n";
  if (const auto d = collective_model_description(c); !d.empty()) out += "  collectives: " + d + "\n";
  if (!c.nccl.tuner_rules.empty())
    out += fmt::format("  NCCL tuner plugin: the {} rules of {}, applied before NCCL's own choice (the first that "
                       "matches a collective picks its algorithm, protocol and channels)\n",
                       c.nccl.tuner_rules.size(), c.nccl.tuner_config);
  const int seq = st.seq_len();
  const auto& t = st.training;
  out += fmt::format("  {} ({}), {}, shard group {} GPUs, micro-batch {} x {} tokens, {} micro-batch(es) = {} sequences "
                     "per step, params {} / reduce {}{}\n",
                     sim::to_string(t.api), sim::to_string(t.framework), sim::to_string(t.sharding), st.shard_size(),
                     t.micro_batch, seq, t.micro_batches_per_step(),
                     std::int64_t(t.micro_batch) * t.micro_batches_per_step() * c.gpus() / t.gpus_per_replica(),
                     sim::to_string(t.param_dtype), sim::to_string(t.reduce_dtype),
                     t.master_dtype != sim::Dtype::FP32 ? fmt::format(" / state {}", sim::to_string(t.master_dtype)) : "");
  if (const auto& m = st.model; m.experts > 0)
    out += fmt::format("  mixture of experts: {} experts of {} a block, {} a token{}{} ({:.2f}B of the {:.2f}B parameters "
                       "a token uses); {}, {}; five published runs validated: on H100 within 1% and 15% slower than predicted, on B200 10% and 27% slower, one 14% faster (docs/fsdp-semantics.md)\n",
                       m.experts, m.ffn, m.experts_per_token,
                       m.shared_experts > 0 ? fmt::format(" and {} shared", m.shared_experts) : "",
                       models::moe_block_count(m) < m.layers
                           ? fmt::format(", in {} of the {} blocks (the others a dense MLP of {})",
                                         models::moe_block_count(m), m.layers, m.dense_ffn > 0 ? m.dense_ffn : m.ffn)
                           : "",
                       double(models::active_parameter_count(m)) / 1e9, double(models::parameter_count(m)) / 1e9,
                       t.expert_parallel > 1
                           ? fmt::format("expert parallel over {} GPUs: {} experts each, FSDP-sharded over the {} "
                                         "GPUs holding the same ones, the tokens sent to them and back in "
                                         "all-to-alls, the host reading the token counts back in every block",
                                         t.expert_parallel, m.experts / t.expert_parallel,
                                         st.expert_shard_size())
                           : "FSDP gathers every expert with its block (no expert parallelism)",
                       t.expert_parallel > 1 && t.expert_imbalance > 1
                           ? fmt::format("routing uneven: the busiest GPU's experts run {:g}x the balanced rows, and "
                                         "every all-to-all waits for it (training.expert_imbalance)",
                                         t.expert_imbalance)
                           : "routing taken as balanced");
  if (const auto* prof = sim::device_kernel_profile(c.gpu);
      st.model.experts > 0 && prof && prof->gemm.grouped_mm == sim::KernelProfile::Gemm::GroupedMm::PerGroup)
    out += fmt::format("  experts' GEMMs: PyTorch has no fused torch._grouped_mm for the {}: its fallback reads each "
                       "call's offsets back to the host, then runs one mm per expert, each its own launch "
                       "(the profile's gemm.grouped_mm, docs/compute-model.md)\n",
                       c.gpu.name);
  if (t.tensor_parallel > 1)
    out += fmt::format("  tensor parallel over {} GPUs of a node (sequence parallel, {}), {}: each "
                       "micro-batch split among them\n",
                       t.tensor_parallel,
                       t.impl.tp_plan == models::Implementation::TpPlan::PerLinear
                           ? "each column-parallel Linear gathering its input, the logits gathered for the loss"
                       : t.impl.qk_norm_no_parallel
                           ? "torchtitan's plan with q_norm and k_norm in NoParallel: q and k gathered over every "
                             "head after their norms (training.tp_qk_norm)"
                           : "torchtitan's plan",
                       t.async_tp ? "async TP (collectives hidden behind their matmuls)"
                                  : "the compute stream waiting for each collective");
  if (t.pipeline_parallel > 1)
    out += fmt::format("  pipeline parallel over {} ranks of {} nodes each, {} stage(s) a rank, {} schedule: the "
                       "micro-batches pass through the stages, FSDP reducing the gradients after the last "
                       "(sim/pipeline.hpp)\n",
                       t.pipeline_parallel, c.nodes / t.pipeline_parallel, t.stages_per_rank,
                       sim::to_string(t.pipeline_schedule));
  if (t.context_parallel > 1)
    out += fmt::format("  context parallel over {} GPUs of a node: each holds 1/{} of every sequence (load-balanced "
                       "chunks), its attention gathering the whole sequence's K and V\n",
                       t.context_parallel, t.context_parallel);
  if (!p.pytorch_settings.empty())
    out += fmt::format("  PyTorch {}: {}\n", p.pytorch_version, fmt::join(p.pytorch_settings, "; "));
  if (!p.torchtitan_settings.empty())
    out += fmt::format("  torchtitan as of {}: {}\n", p.torchtitan_date, fmt::join(p.torchtitan_settings, "; "));
  if (t.impl.documents(seq))
    out += fmt::format("  documents of {:g} tokens packed into each sequence, each attending only within itself ({}: "
                       "{})\n",
                       t.impl.document_length, models::to_string(t.impl.attention),
                       t.impl.attention == models::AttentionKernel::Flex
                           ? "FlexAttention's block mask, 128 x 128 blocks from the sequence's start"
                           : "flash-attn's varlen call, each document its own sequence");
  if (t.autocast)
    out += fmt::format("  torch.autocast {0}: fp32 parameters gathered, matmuls and activations in {0}, each Linear's "
                       "weight and input cast every forward and their gradients back, the residual stream and norms "
                       "in fp32 (docs/fsdp-semantics.md)\n",
                       sim::to_string(*t.autocast));
  if (t.impl.float8_linears)
    out += fmt::format("  float8 Linears (torchao tensorwise), their weights all-gathered in {}\n",
                       t.impl.float8_all_gather ? "float8" : sim::to_string(t.param_dtype));
  out += fmt::format("  compute: {}\n", sim::compute_model_description(c.gpu));
  // Whether gradients travel once per step or once per micro-batch changes the traffic the most.
  if (t.grad_accumulation > 1)
    out += t.no_sync ? "  gradient accumulation: no_sync() on all but the last micro-batch, gradients reduced once "
                       "per step\n"
                     : "  gradient accumulation: gradients reduced after every micro-batch (no_sync: false)\n";
  if (s.points.size() > 1) {
    std::string keys;
    for (const auto& k : s.sweep_keys) keys += (keys.empty() ? "" : ", ") + k;
    out += fmt::format("  (at the first sweep point, {}; the sweep changes {})\n", coordinates_text(p), keys);
  }
  return out;
}

// Where a note holds: the swept values its points share when exactly those points have them
// ("cluster.nics.per_node=800 Gb/s"), else each point.

}  // namespace tagcsim::scenarios::detail
