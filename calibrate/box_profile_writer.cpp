// The device kernel profile of a measured box, in the format sim/kernel_profile.hpp reads
// (tagcsim-device-profile/1, docs/compute-model.md): the box's GEMMs, attention, memory sweep,
// launch floor and host issue cost.
//
// What the format cannot hold, and where it goes instead:
//   - TF32 GEMMs (the format takes bf16/fp16 points): in the comment block below the header and in
//     report.txt;
//   - fp16 next to bf16 of the same shape (the loader rejects a shape measured twice): bf16 only,
//     fp16 runs at the same tensor-core rate and is in measurements.yaml.
// Attention: the box runs math-blocked attention (calibrate/box/attention.hpp), written as the
// `math` kernel; the fused kernels it cannot run (flash2, flash3, cudnn) keep the published curves
// of the shipped profile of the same GPU, each point with its source, so that a scenario on the
// box's cluster file times its own attention kernel.
// The loader's monotonicity rules (attention: time per token does not fall as seq grows; memory:
// more bytes never take less time) are enforced here by clamping, and each clamp is noted.
#include "calibrate/box_fit.hpp"

#include "common/input.hpp"
#include "common/json.hpp"
#include "sim/compute.hpp"
#include "sim/kernel_profile.hpp"
#include "sim/training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

namespace tagcsim::calibrate {
namespace {

std::string q(const std::string& s) { return json_string(s); }

std::string family_of(int sm) {
  if (sm >= 100) return "blackwell";
  if (sm >= 90) return "hopper";
  if (sm >= 89) return "ada";
  if (sm >= 80) return "ampere";
  if (sm >= 75) return "turing";
  return "volta";
}

std::string us(double s) { return fmt::format("{:.4g} us", s * 1e6); }

// Rates are written with 6 significant digits, and the loader checks monotonicity on what it
// reads: the checks here run on the written value, and a clamped rate steps down until it passes.
double as_written(double rate) { return std::stod(fmt::format("{:.6g}", rate)); }
template <class Ok>
double at_most(double rate, Ok ok) {
  double r = as_written(rate);
  for (int i = 0; i < 64 && !ok(r); ++i) r = as_written(r - std::pow(10.0, std::floor(std::log10(r)) - 5));  // 1 in the 6th digit
  return r;
}
std::string tflops(double f) { return fmt::format("{:.6g} TFLOP/s", f / 1e12); }

}  // namespace

double gemm_peak_flops(const topologies::DeviceProfile& gpu, const std::string& dtype) {
  if (dtype == "tf32") return sim::peak_flops(gpu, sim::Dtype::FP32, true);
  return sim::peak_flops(gpu, sim::Dtype::BF16, false) * (dtype == "fp8" ? 2 : 1);
}

bool has_device_profile(const BoxFit& f) {
  const auto& m = f.measured;
  const bool gemm = std::any_of(m.gemm.begin(), m.gemm.end(), [](const auto& s) { return s.dtype == "bf16" || s.dtype == "fp16"; });
  const bool copy = std::any_of(m.memory.begin(), m.memory.end(), [](const auto& s) { return s.kernel == "copy"; });
  return gemm && copy && !m.box.gpus.empty();
}

std::string device_profile_yaml(const BoxFit& f) {
  const auto& m = f.measured;
  const auto& b = m.box;
  const BoxGpu& g = b.gpus[std::size_t(f.gpus.empty() ? 0 : f.gpus.front())];
  const std::string slug = gpu_slug(g.name);
  const std::string stamp = fmt::format("measured: tagcsim calibrate box, {}", b.date);
  std::vector<std::string> clamps;

  std::string out = fmt::format(
      "# Kernel profile of {} measured on this box by `tagcsim calibrate box` ({}).\n"
      "# Format and interpolation: docs/compute-model.md (tagcsim-device-profile/1). Raw data: measurements.yaml.\n",
      g.name, b.date);
  // TF32 GEMMs: the format has no place for them yet.
  std::string tf32;
  for (const auto& s : m.gemm)
    if (s.dtype == "tf32")
      tf32 += fmt::format("#   {:g} x {:g} x {:g}: {:.4g} s, {:.1f} TFLOP/s ({})\n", s.m, s.n, s.k, s.seconds,
                          s.flops() / s.seconds / 1e12, s.origin);
  if (!tf32.empty()) out += "# TF32 GEMMs (cuBLASLt, CUBLAS_COMPUTE_32F_FAST_TF32), not yet a field of the format:\n" + tf32;

  out += fmt::format("format: tagcsim-device-profile/1\nname: {}\ngpu: {}\nfamily: {}\n", q("device-" + slug + "-box"),
                     q(f.base.gpu.name), family_of(g.sm));
  out += fmt::format(
      "metadata:\n  gpu_name: {}\n  sms: {}\n  clocks: {}\n  driver: {}\n  cuda: {}\n  cublas: {}\n  cudnn: {}\n"
      "  measured_by: {}\n  notes: {}\n",
      q(g.name), g.sms,
      q(fmt::format("SM {:g} MHz, memory {:g} MHz (peak: cudaDevAttrClockRate, cudaDevAttrMemoryClockRate)",
                    g.sm_clock_mhz, g.memory_clock_mhz)),
      q(b.driver), q(fmt::format("runtime {} (static), driver supports {}", b.cuda_runtime, b.cuda_driver)),
      q("cuBLASLt " + b.cublaslt), q(b.cudnn + " (not used: attention runs as math-blocked, see notes)"),
      q(fmt::format("{} on GPUs of this box; NCCL {}", m.command, b.nccl)),
      q("attention: math-blocked (cuBLASLt batched GEMMs + softmax, masked key blocks skipped) as the math kernel, "
        "not cuDNN's fused SDPA (needs cudnn-frontend); the fused kernels' curves are the shipped profile's " +
        (f.base.gpu.profile.empty() ? std::string("(none for this GPU)") : f.base.gpu.profile) + "; host: " + b.host));
  // Float8: where the box measured float8 GEMMs.
  const bool fp8 = std::any_of(m.gemm.begin(), m.gemm.end(), [](const auto& s) { return s.dtype == "fp8"; });
  out += fmt::format("peak: {{bf16: {}, tf32: {}, fp32: {}{}, source: {}}}\n", tflops(f.base.gpu.peak_flops_bf16),
                     tflops(f.base.gpu.peak_flops_tf32), tflops(f.base.gpu.peak_flops_fp32),
                     fp8 ? ", fp8: " + tflops(gemm_peak_flops(f.base.gpu, "fp8")) : std::string(),
                     q(f.base.gpu.source + (fp8 ? "; fp8: twice bf16, as every float8 datasheet rate is" : "")));

  // GEMM points: bf16 (fp16 where no bf16 was measured for the shape), one per shape.
  std::map<std::tuple<double, double, double>, const GemmSample*> pts;
  for (const auto& s : m.gemm)
    if (s.dtype == "bf16") pts[{s.m, s.n, s.k}] = &s;
  for (const auto& s : m.gemm)
    if (s.dtype == "fp16") pts.try_emplace({s.m, s.n, s.k}, &s);
  // The GEMM model's tiles, split-k limit and k overhead are not fitted here: the shipped device
  // profiles' values (CUTLASS's default SM80/SM90 tile shapes; TileLang's k overhead on H800).
  out += fmt::format(
      "gemm:\n  tiles: [[256, 128], [128, 256], [128, 128], [128, 64], [64, 128]]\n  max_split_k: 8\n"
      "  tiles_source: {}\n  k_overhead: 192\n  k_overhead_source: {}\n",
      q("not fitted here: the CTA tile shapes of CUTLASS's default SM80/SM90 tensor-core GEMM configurations, as in "
        "the shipped device profiles; the measured points below correct the model where they are"),
      q("not fitted here: the shipped device profiles' value (TileLang fp16 GEMMs 8192 x 8192 x k on H800, "
        "gemm-h800-tilelang-fp16-8192x8192x*)"));
  out += pts.empty() ? "  points: []\n" : "  points:\n";
  std::map<std::tuple<double, double, double>, const GemmSample*> fp8_pts;
  for (const auto& s : m.gemm)
    if (s.dtype == "fp8") fp8_pts[{s.m, s.n, s.k}] = &s;
  for (const auto* list : {&pts, &fp8_pts})
    for (const auto& [shape, s] : *list)
      out += fmt::format("    - {{m: {:g}, n: {:g}, k: {:g}, dtype: {}, seconds: {:.6g}, source: {}}}\n", s->m, s->n,
                         s->k, s->dtype, s->seconds, q(stamp + ", " + s->origin));
  // Which torch._grouped_mm PyTorch runs here follows the compute capability (docs/compute-model.md).
  const bool fused = g.sm >= 90 && g.sm < 110;
  out += fmt::format("  grouped_mm: {{kernel: {}, source: {}}}\n", fused ? "fused" : "per_group",
                     q(fmt::format("compute capability {}.{} (cudaGetDeviceProperties): PyTorch's _grouped_mm_cuda "
                                   "runs {} there",
                                   g.sm / 10, g.sm % 10,
                                   fused ? "CUTLASS's grouped GEMM (9.x; 10.x from PyTorch 2.9)"
                                         : "_grouped_mm_fallback, offsets read back and one mm per group "
                                           "(PyTorch 2.9 on)")));

  // Attention: one curve per (direction, causal, head dim), ascending seq.
  std::map<std::tuple<std::string, bool, double>, std::map<double, const AttentionSample*>> curves;
  for (const auto& s : m.attention) {
    auto& c = curves[{s.direction, s.causal, s.head_dim}];
    if (s.origin == "sweep" || !c.count(s.seq)) c[s.seq] = &s;
  }
  double ratio_sum = 0;
  int ratio_n = 0;
  for (const auto& [key, c] : curves) {
    const auto& [dir, causal, hd] = key;
    if (dir != "bwd") continue;
    auto fwd = curves.find({"fwd", causal, hd});
    if (fwd == curves.end()) continue;
    for (const auto& [seq, s] : c)
      if (auto it = fwd->second.find(seq); it != fwd->second.end())
        ratio_sum += (s->flops() / s->seconds) / (it->second->flops() / it->second->seconds), ++ratio_n;
  }
  out += fmt::format("attention:\n  bwd_fwd_rate_ratio: {:.4g}\n  bwd_fwd_source: {}\n",
                     ratio_n ? ratio_sum / ratio_n : 0.85,
                     q(ratio_n ? fmt::format("{}: mean backward / forward TFLOP/s over {} sequence lengths", stamp, ratio_n)
                               : "not measured: 0.85 assumed"));
  // The fused kernels' curves from the shipped profile of the same GPU (published measurements).
  const sim::KernelProfile* shipped = nullptr;
  if (!f.base.gpu.profile.empty()) {
    try {
      shipped = &sim::kernel_profile(f.base.gpu.profile);
    } catch (const InputError&) {
      shipped = nullptr;  // a damaged shipped profile leaves the box's own curves
    }
  }
  std::string borrowed;
  if (shipped)
    for (const auto& c : shipped->attention.curves) {
      if (c.kernel == models::AttentionKernel::Math) continue;  // the box measured its own
      borrowed += fmt::format("    - kernel: {}\n      direction: {}\n      causal: {}\n      head_dim: {:g}\n      note: {}\n"
                              "      points:\n",
                              models::to_string(c.kernel), c.direction, c.causal ? "true" : "false", c.head_dim,
                              q(fmt::format("not run on this box: the published curve of {} ({})", shipped->name,
                                            f.base.gpu.profile)));
      for (const auto& pt : c.points)
        borrowed += fmt::format("        - {{seq: {:g}, tflops: {:g}, source: {}}}\n", pt.seq, pt.tflops, q(pt.source));
    }
  out += curves.empty() && borrowed.empty() ? "  curves: []\n" : "  curves:\n";
  out += borrowed;
  for (const auto& [key, c] : curves) {
    const auto& [dir, causal, hd] = key;
    out += fmt::format("    - kernel: math\n      direction: {}\n      causal: {}\n      head_dim: {:g}\n      note: {}\n"
                       "      points:\n",
                       dir, causal ? "true" : "false", hd,
                       q("measured on this box: math-blocked attention on cuBLASLt (calibrate/box/attention.hpp), flash-attention FLOP convention"));
    double last_seq = 0, last_rate = 0;
    for (const auto& [seq, s] : c) {
      double rate = as_written(s->flops() / s->seconds / 1e12);
      // The loader's rule: time per token (seq / rate) must not fall as seq grows.
      if (last_seq > 0 && seq / rate < last_seq / last_rate) {
        const double clamped = at_most(last_rate * seq / last_seq, [&](double r) { return seq / r >= last_seq / last_rate; });
        clamps.push_back(fmt::format("attention {} hd {:g} seq {:g}: {:.1f} TFLOP/s clamped to {:.1f}", dir, hd, seq,
                                     rate, clamped));
        rate = clamped;
      }
      out += fmt::format("        - {{seq: {:g}, tflops: {:.6g}, source: {}}}\n", seq, rate,
                         q(fmt::format("{}, batch x heads {:g} ({})", stamp, s->batch_heads, s->origin)));
      last_seq = seq, last_rate = rate;
    }
  }

  // Memory: the copy kernel by bytes moved; seconds never fall as bytes grow.
  std::map<double, double> copy;
  for (const auto& s : m.memory)
    if (s.kernel == "copy") copy[s.bytes] = s.seconds;
  out += copy.empty() ? "memory:\n  points: []\n" : "memory:\n  points:\n";
  double last = 0;
  for (const auto& [bytes, secs] : copy) {
    // Seconds as the loader computes them from the written rate.
    const auto seconds = [&](double gbps) { return bytes / (gbps * 1e9); };
    double gbps = as_written(bytes / secs / 1e9);
    if (seconds(gbps) < last) {
      gbps = at_most(bytes / last / 1e9, [&](double r) { return seconds(r) >= last; });
      clamps.push_back(fmt::format("memory {:.0f} bytes: {:.4g} s raised to {:.4g} s", bytes, secs, seconds(gbps)));
    }
    out += fmt::format("    - {{bytes: {:.0f}, GBps: {:.6g}, source: {}}}\n", bytes, gbps,
                       q(stamp + ", device-to-device copy kernel (read + write bytes)"));
    last = seconds(gbps);
  }
  out += fmt::format("launch: {{min_kernel_seconds: {}, source: {}}}\n", us(m.empty_kernel_s),
                     q(stamp + ": an empty kernel launched back to back on one stream, GPU time per launch"));
  // Eager PyTorch issues a kernel in its dispatcher's time plus the launch: the dispatcher's from
  // pytorch/pytorch#41383 (CPU tensors, so no launch in it), the launch as measured here.
  const sim::HostCost eager;
  out += fmt::format("host: {{issue_seconds: {}, hook_seconds: {}, source: {}}}\n", us(eager.kernel_issue_s + m.issue_s),
                     us(eager.hook_s),
                     q(fmt::format("{}: issue_seconds = {:.2f} us of cudaLaunchKernel CPU time measured on this host + "
                                   "{:.1f} us of eager PyTorch dispatch per op with autograd "
                                   "(launch-cpu-pt41383-scalar-mul-grad, CPU tensors: no launch in it); hook_seconds "
                                   "assumed as in the shipped profiles (no measurement of FSDP's Python hooks)",
                                   stamp, m.issue_s * 1e6, eager.kernel_issue_s * 1e6)));
  if (f.device.nccl_block_share > 0)
    out += fmt::format("nccl_sm: {{block_share: {:.4g}, source: {}}}\n", f.device.nccl_block_share,
                       q(stamp + ": " + f.device.nccl_block_basis));
  if (!clamps.empty()) {
    out += "# Clamped to the format's monotonicity rules:\n";
    for (const auto& c : clamps) out += "#   " + c + "\n";
  }
  return out;
}

}  // namespace tagcsim::calibrate
