#include "sim/compute.hpp"

#include "common/input.hpp"
#include "kernels/profile.hpp"
#include "models/kernel_list.hpp"
#include "sim/kernel_profile_registry.hpp"
#include "sim/model_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

namespace tagcsim::sim {
namespace {

// Roofline fallback: FlashAttention reaches less of peak than a large GEMM (Dao 2023, Fig. 5-6).
constexpr double kAttentionVsGemm = 0.75;

// AdamW's foreach path, fp32 state, bytes per parameter of each pass over the shard:
// exp_avg lerp 12, exp_avg_sq mul 8 and addcmul 12, sqrt 8, div 8, add eps 8, param addcdiv 16,
// weight decay mul 8; gradient clipping: norm 4, scale 8. 92 in all.
constexpr double kAdamPassBytes[] = {12, 8, 12, 8, 8, 8, 16, 8, 4, 8};
// The fused path (torch.optim.AdamW(fused=True), _fused_adamw_): one kernel reads the parameter,
// its gradient and both moments and writes the parameter and the moments, 7 elements; clipping as
// above. Elements, not bytes: each is the master dtype's size.
constexpr double kFusedAdamPassElements[] = {7, 1, 2};

double roofline_seconds(double flops, double bytes, double gemm_fraction, const topologies::DeviceProfile& gpu,
                        Dtype compute, bool tf32) {
  const double gemm_rate = peak_flops(gpu, compute, tf32) * gpu.gemm_efficiency;
  const double gemm = flops * gemm_fraction;
  return gemm / gemm_rate + (flops - gemm) / (gemm_rate * kAttentionVsGemm) +
         bytes / (gpu.memory_bandwidth * gpu.memory_efficiency);
}

double roofline_kernel(const models::Kernel& k, const topologies::DeviceProfile& gpu, Dtype compute, bool tf32) {
  switch (k.kind) {
    case models::KernelKind::Gemm: return roofline_seconds(k.flops(), 0, 1, gpu, compute, tf32);
    case models::KernelKind::Attention: return roofline_seconds(k.flops(), 0, 0, gpu, compute, tf32);
    case models::KernelKind::Memory: return roofline_seconds(0, k.bytes, 1, gpu, compute, tf32);
  }
  return 0;
}

}  // namespace

double bytes_of(Dtype d) { return d == Dtype::FP32 ? 4 : 2; }
const char* to_string(Dtype d) {
  switch (d) {
    case Dtype::BF16: return "bf16";
    case Dtype::FP16: return "fp16";
    case Dtype::FP32: return "fp32";
  }
  return "?";
}
const char* to_string(Sharding s) {
  switch (s) {
    case Sharding::FullShard: return "full_shard";
    case Sharding::ShardGradOp: return "shard_grad_op";
    case Sharding::HybridShard: return "hybrid_shard";
  }
  return "?";
}

double peak_flops(const topologies::DeviceProfile& gpu, Dtype compute, bool tf32) {
  // PyTorch runs fp32 matmuls in full fp32 unless the user allows TF32 (nanoGPT does).
  if (compute != Dtype::FP32) return gpu.peak_flops_bf16;
  return tf32 && gpu.peak_flops_tf32 > 0 ? gpu.peak_flops_tf32 : gpu.peak_flops_fp32;
}

namespace {

// The HBM bandwidth of the GPU a profile measured: its preset's (0: no preset of that name).
// Looked up once per GPU name: reports ask for the profile of every unit.
double measured_memory_bandwidth(const KernelProfile& p) {
  static std::mutex lock;
  static std::map<std::string, double> known;
  const std::lock_guard<std::mutex> hold(lock);
  if (auto it = known.find(p.gpu); it != known.end()) return it->second;
  double bw = 0;
  for (const auto& name : topologies::device_names()) {
    const auto d = topologies::device(name);
    if (d.name == p.gpu) bw = d.memory_bandwidth;
  }
  return known[p.gpu] = bw;
}

}  // namespace

const KernelProfile* device_kernel_profile(const topologies::DeviceProfile& gpu) {
  if (gpu.profile.empty()) return nullptr;
  const KernelProfile& p = kernel_profile(gpu.profile);
  if (!p.serves(gpu.name))
    throw InputError(fmt::format("{}: kernel profile '{}' is for {}, it cannot serve the GPU '{}' (set gpu.profile "
                                 "to a profile of that GPU, or '' for the datasheet roofline)",
                                 p.gpu_where, p.name, p.gpu, gpu.name));
  // A GPU that is not the one measured (another device it also serves, or another peak or HBM
  // bandwidth than the profile's) gets a copy of the profile scaled to it and fitted as that
  // device, made once per process for each such GPU and kept with the loaded profiles, so that a
  // fit made later in this process reaches it too.
  const double measured_bw = measured_memory_bandwidth(p);
  KernelProfile::DeviceScale s;
  if (p.peak.bf16 > 0 && gpu.peak_flops_bf16 > 0) s.tensor = gpu.peak_flops_bf16 / p.peak.bf16;
  if (measured_bw > 0 && gpu.memory_bandwidth > 0) s.memory = gpu.memory_bandwidth / measured_bw;
  const std::string other_device = gpu.name == p.gpu ? "" : gpu.name;
  if (other_device.empty() && std::abs(s.tensor - 1) < 1e-9 && std::abs(s.memory - 1) < 1e-9) return &p;
  auto& r = detail::registry();
  const std::lock_guard<std::mutex> hold(r.mu);
  auto& copy = r.scaled[{p.file, s.tensor, s.memory, other_device}];
  if (!copy) {
    copy = std::make_unique<KernelProfile>(p);
    copy->device = s;
    copy->fit_gpu = other_device;
    copy->fitted = detail::profile_fitted_locked(r, *copy);
  }
  return copy.get();
}

std::string fitted_as(const KernelProfile& p) {
  return has_device_fit(p.fit_device())                     ? p.fit_device()
         : p.fit_device() != p.gpu && has_device_fit(p.gpu) ? p.gpu
                                                            : p.family;
}

std::string compute_model_description(const topologies::DeviceProfile& gpu) {
  const KernelProfile* p = device_kernel_profile(gpu);
  if (!p)
    return fmt::format("datasheet roofline (no kernel profile): gemm_efficiency {:g}, memory_efficiency {:g}",
                       gpu.gemm_efficiency, gpu.memory_efficiency);
  const auto& f = p->fitted;
  // A shipped profile is named as the repository has it, so reports do not depend on where it lives.
  const std::string dir = kernels::data_dir() + "/";
  const std::string file = p->file.rfind(dir, 0) == 0 ? "calibrate/profiles/" + p->file.substr(dir.size()) : p->file;
  std::string scaled;
  if (p->device.tensor != 1)
    scaled += fmt::format("; tensor-core kernels x{:.3f} ({:g} TFLOP/s bf16 against the profile's {:g})",
                          p->device.tensor, gpu.peak_flops_bf16 / 1e12, p->peak.bf16 / 1e12);
  if (p->device.memory != 1)
    scaled += fmt::format("; memory-bound kernels x{:.3f} ({:g} TB/s HBM against the measured {}'s)",
                          p->device.memory, gpu.memory_bandwidth / 1e12, p->gpu);
  const std::string fit_of = fitted_as(*p);
  return fmt::format("kernel profile {} ({}), {} fit: tensor_scale {:.3f}, memory_scale {:.3f}{}{}{}", p->name, file,
                     fit_of, f.tensor_scale, f.memory_scale,
                     f.basis.empty() ? fmt::format(" (not fitted: the scales of {})", f.borrowed) : "",
                     f.held_out.empty() ? "" : " (" + f.held_out + ")", scaled);
}

HostCost host_cost(const StepSetup& setup) {
  const HostCost& given = setup.training.host;
  const KernelProfile* prof = device_kernel_profile(setup.cluster.gpu);
  HostCost h;  // eager PyTorch's published per-op cost (sim/training.hpp)
  h.kernel_issue_s = given.kernel_issue_s >= 0 ? given.kernel_issue_s : prof ? prof->issue_seconds : h.kernel_issue_s;
  h.hook_s = given.hook_s >= 0 ? given.hook_s : prof ? prof->hook_seconds : h.hook_s;
  return h;
}

UnitCompute unit_compute(const models::FsdpUnit& unit, const topologies::DeviceProfile& gpu, Dtype compute, bool tf32,
                         models::AttentionKernel attention, double kernel_issue_s) {
  UnitCompute c;
  const KernelProfile* prof = device_kernel_profile(gpu);
  if (!unit.kernels) {
    // Built by hand: only its FLOPs and bytes are known.
    c.forward_seconds = roofline_seconds(unit.forward_flops, unit.forward_memory_bytes, unit.gemm_fraction, gpu,
                                         compute, tf32);
    c.backward_seconds = roofline_seconds(unit.backward_flops, unit.backward_memory_bytes,
                                          unit.backward_gemm_fraction, gpu, compute, tf32);
    c.forward_kernels = unit.forward_kernels;
    c.backward_kernels = unit.backward_kernels;
  } else {
    // After a kernel the host reads back (Kernel::host_sync) the GPU's queue is empty: the host
    // resumes once the copy back lands (one more launch) and issues the kernels that follow one
    // by one, each kernel_issue_s after the last, and the GPU idles wherever it outruns it. A
    // grouped GEMM PyTorch runs group by group (KernelProfile::per_group) reads its offsets back
    // first, then issues one mm a group.
    const double read_back = prof ? prof->min_kernel_seconds : 0;
    auto time = [&](const std::vector<models::Kernel>& list, double& gpu_s, int& count) {
      double host = -1;  // < 0: the host is ahead of the GPU
      count = 0;
      for (const auto& k : list) {
        if (prof && prof->per_group(k)) {
          host = gpu_s + read_back;
          const double group = prof->group_seconds(k, compute, tf32);
          for (int g = 0; g < k.groups; ++g) host += kernel_issue_s, gpu_s = std::max(gpu_s, host) + group;
          count += prof->launches(k);
          continue;
        }
        if (host >= 0) host += kernel_issue_s, gpu_s = std::max(gpu_s, host);
        gpu_s += prof ? prof->kernel_seconds(k, attention, compute, tf32) : roofline_kernel(k, gpu, compute, tf32);
        if (k.host_sync) host = gpu_s + read_back;
        ++count;
      }
    };
    time(unit.kernels->forward, c.forward_seconds, c.forward_kernels);
    time(unit.kernels->backward, c.backward_seconds, c.backward_kernels);
  }
  c.forward_issue_seconds = c.forward_kernels * kernel_issue_s;
  c.backward_issue_seconds = c.backward_kernels * kernel_issue_s;
  return c;
}

UnitCompute unit_compute(const StepSetup& setup, int u) {
  const auto& t = setup.training;
  const auto& unit = setup.units[std::size_t(u)];
  const double issue = host_cost(setup).kernel_issue_s;
  UnitCompute c = unit_compute(unit, setup.cluster.gpu, t.compute_dtype(), t.tf32, t.impl.attention, issue);
  // FSDP1 hands the module views of its flat parameter (FlatParamHandle._get_unflat_views: split,
  // then view); autograd's backward of that split concatenates the parameters' gradients into the
  // flat gradient, one copy of the unit's parameters in their dtype on the compute stream.
  if (t.api == Api::Fsdp1 && unit.kernels && unit.params > 0) {
    c.backward_seconds += memory_kernel_seconds(2 * double(unit.params) * bytes_of(t.param_dtype), setup.cluster.gpu);
    c.backward_kernels += 1;
    c.backward_issue_seconds += issue;
  }
  if (setup.tensor_parallel_group || setup.context_parallel_group || setup.expert_parallel_group) {
    // The compute stream waits for the TP and CP collectives; async TP hides a block's behind the
    // matmuls fused with each, every such matmul cut into one chunk of rows per GPU (a GEMM of
    // m / tp rows fills fewer waves than one of m).
    TpSiteGemms gemms;
    double chunking[2] = {0, 0};
    int extra_launches[2] = {0, 0};
    if (const KernelProfile* prof = device_kernel_profile(setup.cluster.gpu);
        prof && unit.kernels && t.async_tp && setup.tensor_parallel_group) {
      const double chunks = setup.tensor_parallel_group->ranks();
      for (int pass = 0; pass < 2; ++pass)
        for (const auto& k : pass == 0 ? unit.kernels->forward : unit.kernels->backward) {
          if (k.kind != models::KernelKind::Gemm || k.tp_site == models::TpSite::None) continue;
          models::Kernel chunk = k;
          chunk.m = k.m / chunks;
          const double chunked = chunks * prof->kernel_seconds(chunk, t.impl.attention, t.compute_dtype(), t.tf32);
          chunking[pass] += chunked - prof->kernel_seconds(k, t.impl.attention, t.compute_dtype(), t.tf32);
          extra_launches[pass] += int(chunks) - 1;
          gemms.at(k.pass, k.tp_site) += chunked;
        }
    }
    const auto tp = model_parallel_time(setup, u, gemms);
    c.forward_seconds += tp.forward_seconds + chunking[0];
    c.backward_seconds += tp.backward_seconds + chunking[1];
    c.forward_kernels += tp.forward_launches + extra_launches[0];
    c.backward_kernels += tp.backward_launches + extra_launches[1];
    c.forward_issue_seconds += (tp.forward_launches + extra_launches[0]) * issue;
    c.backward_issue_seconds += (tp.backward_launches + extra_launches[1]) * issue;
  }
  return c;
}

double memory_kernel_seconds(double bytes, const topologies::DeviceProfile& gpu) {
  if (bytes <= 0) return 0;
  const KernelProfile* prof = device_kernel_profile(gpu);
  return prof ? prof->memory_seconds(bytes) : bytes / (gpu.memory_bandwidth * gpu.memory_efficiency);
}

double optimizer_seconds(double shard_params, const Training& training, const topologies::DeviceProfile& gpu) {
  // Each pass is one memory-bound kernel over the shard. The foreach passes' bytes are fp32 state's
  // (bf16 state moves half of each); the fused ones count elements of the state's dtype.
  const double element = bytes_of(training.master_dtype);
  double t = 0;
  if (training.optimizer == Training::Optimizer::Fused)
    for (double elements : kFusedAdamPassElements) t += memory_kernel_seconds(elements * element * shard_params, gpu);
  else
    for (double b : kAdamPassBytes) t += memory_kernel_seconds(b * element / 4 * shard_params, gpu);
  return t;
}

double kernel_flops_per_token(const StepSetup& setup) {
  // Under tensor or context parallelism a unit's kernels are one GPU's share of its group's micro-batch.
  const double tokens = double(setup.training.micro_batch) * setup.seq_len() / setup.training.model_parallel();
  // The kernels are the busiest GPU's; its experts' extra rows (training.expert_imbalance) are the
  // other GPUs' fewer, so the utilization counts the average GPU's grouped GEMMs.
  const double experts_share = setup.training.expert_parallel > 1 ? 1 / setup.training.expert_imbalance : 1.0;
  double flops = 0;
  for (const auto& u : setup.units) {
    if (!u.kernels) return models::model_flops_per_token(setup.model, setup.seq_len());
    for (const auto* list : {&u.kernels->forward, &u.kernels->backward})
      for (const auto& k : *list)
        if (k.pass != models::Pass::Recompute) flops += k.flops() * (k.grouped ? experts_share : 1.0);
  }
  return tokens > 0 ? flops / tokens : 0;
}

void check_compute(const StepSetup& setup) {
  const KernelProfile* prof = device_kernel_profile(setup.cluster.gpu);
  if (setup.training.impl.float8_linears && (!prof || prof->peak.fp8 <= 0))
    throw InputError(fmt::format(
        "training.float8: the GPU '{}' has {}, so float8 Linears cannot be timed (float8 tensor cores arrive with "
        "Hopper; a profile gives their rate as peak.fp8)",
        setup.cluster.gpu.name,
        prof ? fmt::format("a kernel profile ({}) without a float8 rate (peak.fp8)", prof->file) : "no kernel profile"));
  if (!prof) return;
  const auto a = setup.training.impl.attention;
  if (!prof->has_attention(a)) {
    std::string have;
    for (const auto& k : prof->attention_kernels()) have += (have.empty() ? "" : ", ") + k;
    throw InputError(fmt::format("{}: kernel profile '{}' has no curves for the '{}' attention kernel, so it cannot "
                                 "time this run (it has: {}; set training.attention to one of them)",
                                 prof->file, prof->name, models::to_string(a), have));
  }
}

}  // namespace tagcsim::sim
