#include "calibrate/box_plan.hpp"

#include "calibrate/box_measurements.hpp"
#include "common/input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace tagcsim::calibrate {
namespace {

constexpr double KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

std::vector<double> geometric(double from, double to, double factor) {
  std::vector<double> out;
  for (double s = from; s <= to * 1.0001; s *= factor) out.push_back(s);
  return out;
}

std::string gpus_text(const std::vector<int>& g) {
  std::string s;
  for (std::size_t i = 0; i < g.size(); ++i) s += fmt::format("{}{}", i ? "," : "", g[i]);
  return s;
}

std::string sizes_text(const std::vector<double>& v) {
  if (v.empty()) return "-";
  if (v.size() <= 4) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + bytes_text(v[i]);
    return s;
  }
  return fmt::format("{} .. {} ({} sizes, x{:g})", bytes_text(v.front()), bytes_text(v.back()), v.size(),
                     v[1] / v[0]);
}

// NCCL: the five collectives over all GPUs (the FSDP shard group of this box) swept over sizes;
// pairs for the topology (every pair at two sizes: an asymmetric PCIe tree or a missing NVLink
// shows up) and one pair swept, so that two rank counts separate launch and per-step latency.
void plan_nccl(BoxPlan& p) {
  const auto& g = p.gpus;
  const auto sweep = p.quick ? geometric(1 * KiB, 256 * MiB, 16) : geometric(8, 2 * GiB, 4);
  for (const char* op : {"all_gather", "reduce_scatter", "all_reduce", "reduce", "broadcast"})
    p.nccl.push_back({op, g, sweep, g.size() > 1 ? "all GPUs" : "one GPU: NCCL's trivial case (a copy)"});
  if (g.size() < 2) return;
  const std::vector<int> first_pair = {g[0], g[1]};
  const auto pair_ops = p.quick ? std::vector<const char*>{"all_reduce", "all_gather"}
                                : std::vector<const char*>{"all_gather", "reduce_scatter", "all_reduce"};
  if (g.size() > 2)
    for (const char* op : pair_ops) p.nccl.push_back({op, first_pair, sweep, "one pair: a second rank count"});
  // Every other pair at a latency-bound and a bandwidth-bound size (quick: GPU 0 with the last).
  std::vector<std::vector<int>> pairs;
  if (p.quick) pairs.push_back({g.front(), g.back()});
  else
    for (std::size_t a = 0; a < g.size(); ++a)
      for (std::size_t b = a + 1; b < g.size(); ++b) pairs.push_back({g[a], g[b]});
  for (const auto& pr : pairs) {
    if (g.size() > 2 && pr == first_pair) continue;
    p.nccl.push_back({"all_reduce", pr, g.size() == 2 ? sweep : std::vector<double>{64 * KiB, 256 * MiB},
                      g.size() == 2 ? "the pair" : "pair: topology"});
  }
}

// GEMMs: every distinct scenario shape in bf16 (the training dtype; fp16 runs at the same tensor-core
// rate), fp16, TF32 and float8 (e4m3 in, bf16 out: float8 Linears; skipped at run time on a GPU
// without float8 tensor cores); around each, the token dimension halved and doubled (micro-batch and
// sequence changes); and square GEMMs from 512 to 16384.
void plan_gemms(BoxPlan& p, const BoxPlanOptions& o) {
  std::set<std::tuple<double, double, double, std::string>> seen;
  auto add = [&](double m, double n, double k, const std::string& dtype, const std::string& origin) {
    if (!seen.insert({m, n, k, dtype}).second) return;
    models::Kernel g;
    g.kind = models::KernelKind::Gemm;
    g.m = m, g.n = n, g.k = k;
    p.gemms.push_back({g, dtype, origin});
  };
  const std::vector<std::string> dtypes = {"bf16", "fp16", "tf32", "fp8"};
  if (o.scenario) {
    const auto shapes = distinct_gemms(o.scenario->units);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const auto& s = shapes[i];
      // --quick: bf16 for every shape, the other dtypes for the largest only.
      for (const auto& d : dtypes)
        if (!p.quick || d == "bf16") add(s.m, s.n, s.k, d, "scenario: " + s.op);
    }
    if (!shapes.empty()) {
      const auto big = *std::max_element(shapes.begin(), shapes.end(),
                                         [](const auto& a, const auto& b) { return a.flops() < b.flops(); });
      for (const auto& d : dtypes) add(big.m, big.n, big.k, d, "scenario: " + big.op);
      if (!p.quick)
        for (const auto& s : shapes) {
          // The token dimension is m of forward and grad-input GEMMs, k of grad-weight GEMMs.
          const bool wgrad = s.op.find("wgrad") != std::string::npos;
          for (double f : {0.5, 2.0}) {
            if (wgrad) add(s.m, s.n, s.k * f, "bf16", "grid: tokens x" + fmt::format("{:g}", f) + " of " + s.op);
            else add(s.m * f, s.n, s.k, "bf16", "grid: tokens x" + fmt::format("{:g}", f) + " of " + s.op);
          }
        }
    }
  }
  const auto squares = p.quick ? std::vector<double>{1024, 4096, 8192} : geometric(512, 16384, 2);
  for (double s : squares)
    for (const auto& d : dtypes)
      if (!p.quick || d == "bf16" || s == 8192) add(s, s, s, d, "grid: square");
}

void plan_attention(BoxPlan& p, const BoxPlanOptions& o) {
  std::vector<double> head_dims = {64, 128};
  if (o.scenario) {
    head_dims.clear();
    for (const auto& a : distinct_attention(o.scenario->units)) {
      p.attention.push_back({a.batch_heads, a.seq, a.head_dim, a.causal, "scenario"});
      if (std::find(head_dims.begin(), head_dims.end(), a.head_dim) == head_dims.end()) head_dims.push_back(a.head_dim);
    }
    if (head_dims.empty()) head_dims = {64, 128};
  }
  // The sequence sweep at a fixed token count (batch x heads x seq = 131072, as flash-attention
  // benchmarks hold batch x seq fixed): the rate's dependence on seq at constant work per token.
  const auto seqs = p.quick ? std::vector<double>{1024, 4096} : geometric(512, 16384, 2);
  for (double hd : head_dims)
    for (double s : seqs) p.attention.push_back({std::max(1.0, 131072 / s), s, hd, true, "sweep"});
  p.attention_kernel =
      "math-blocked: cuBLASLt batched GEMMs for QK^T and PV (bf16, fp32 accumulate) and a softmax kernel, one "
      "query block at a time against the key blocks at or before it, so causal attention skips the masked blocks "
      "as flash attention skips masked tiles. Not cuDNN's fused SDPA: its graph needs the header-only "
      "cudnn-frontend (not a Debian package); cuDNN's backend API alone offers no documented causal SDPA";
}

}  // namespace

std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return fmt::format("{:g} {}", b, units[u]);
}

BoxPlan make_box_plan(const BoxPlanOptions& o) {
  BoxPlan p;
  p.quick = o.quick;
  p.out_dir = o.out_dir;
  p.scenario = o.scenario ? o.scenario->name : "";
  if (p.quick) p.warmup = 3, p.iterations = 10;
  const int visible = o.visible > 0 ? o.visible : o.assumed;
  p.gpus_assumed = o.visible <= 0;
  if (o.gpus.empty()) {
    for (int i = 0; i < visible; ++i) p.gpus.push_back(i);
  } else {
    std::set<int> seen;
    for (int i : o.gpus) {
      if (o.visible > 0 && (i < 0 || i >= o.visible))
        throw InputError(fmt::format("--gpus: GPU {} is out of range: this box has {} GPU(s), indices 0..{}", i,
                                     o.visible, o.visible - 1));
      if (i < 0) throw InputError(fmt::format("--gpus: expected GPU indices >= 0, got {}", i));
      if (!seen.insert(i).second) throw InputError(fmt::format("--gpus: GPU {} is listed twice", i));
      p.gpus.push_back(i);
    }
    p.gpus_assumed = false;
  }
  if (p.gpus.empty()) throw InputError("--gpus: expected at least one GPU");
  plan_nccl(p);
  plan_gemms(p, o);
  plan_attention(p, o);
  p.memory_kernels = {"copy", "scale", "add", "norm"};
  p.memory_sizes = p.quick ? geometric(64 * KiB, 256 * MiB, 16) : geometric(64 * KiB, 1 * GiB, 4);
  p.tagc_sizes = p.quick ? std::vector<double>{1 * MiB, 64 * MiB} : std::vector<double>{64 * KiB, 1 * MiB, 16 * MiB, 256 * MiB};

  const std::string gpu = o.gpu_name.empty() ? "<gpu>" : gpu_slug(o.gpu_name);
  const int n = int(p.gpus.size());
  p.files = {
      {"measurements.yaml", "every raw measurement (format tagcsim-box-measurements/1); the fits read only this"},
      {fmt::format("device-{}.yaml", gpu), "device kernel profile (format tagcsim-device-profile/1): GEMM, attention, "
                                           "memory, launch and host issue, NCCL's share of an SM"},
      {fmt::format("cluster-{}-{}gpu.yaml", gpu, n),
       "this box as a cluster (`cluster: {file: ...}` loads it): GPU, NVLink/PCIe bandwidth and latency, NCCL "
       "parameters as fitted"},
      {fmt::format("kernels-cuda-{}.json", gpu), "TAGC kernel profile for the compressing policies (kernels bench)"},
      {"report.txt", "calibration report: the box, every fit with its residuals, what was skipped"},
  };
  // A rough budget: NCCL dominated by its largest sizes at ~100 GB/s bus bandwidth plus 30 us a run.
  double t = 0;
  const int runs = p.warmup + p.iterations;
  for (const auto& s : p.nccl)
    for (double b : s.sizes) t += runs * (30e-6 + b / 100e9);
  for (const auto& g : p.gemms) t += runs * (10e-6 + g.shape.flops() / (g.dtype == "tf32" ? 300e12 : 600e12));
  for (const auto& a : p.attention) t += runs * 3.5 * 4 * a.batch_heads * a.seq * a.seq * a.head_dim / 150e12;
  for (double b : p.memory_sizes) t += 4 * runs * (5e-6 + b / 2e12);
  t += p.quick ? 20 : 60;  // the TAGC bench (its host-side data generation dominates)
  t += 15;                 // start-up: CUDA context, NCCL communicators, cuBLASLt heuristics
  p.estimated_seconds = t;
  return p;
}

std::string plan_text(const BoxPlan& p) {
  std::string out = fmt::format("tagcsim calibrate box{}: plan{}\n", p.quick ? " --quick" : "",
                                p.gpus_assumed ? " (no GPU visible here: planned for the GPUs below)" : "");
  out += fmt::format("GPUs: {} ({}); {} warm-up and {} timed runs per point, the median kept\n", gpus_text(p.gpus),
                     p.gpus.size(), p.warmup, p.iterations);
  if (!p.scenario.empty()) out += "scenario: " + p.scenario + "\n";
  out += fmt::format("\nNCCL ({} sweeps; one process, ncclCommInitAll, one stream per GPU, CUDA events; results "
                     "checked as nccl-tests does):\n",
                     p.nccl.size());
  for (const auto& s : p.nccl)
    out += fmt::format("  {:<15} GPUs {:<16} {}  [{}]\n", s.op, gpus_text(s.ranks), sizes_text(s.sizes), s.why);
  if (p.gpus.size() < 2) out += "  (one GPU: no pairs; the NVLink/PCIe fit is skipped)\n";
  out += fmt::format("\nGEMMs through cuBLASLt ({} shapes x dtypes; C[m x n] = A[m x k] B[k x n]):\n", p.gemms.size());
  for (const auto& g : p.gemms)
    out += fmt::format("  {:>6} x {:>6} x {:>6} {:<5} {:>9.3f} GFLOP  {}\n", g.shape.m, g.shape.n, g.shape.k, g.dtype,
                       g.shape.flops() / 1e9, g.origin);
  out += fmt::format("\nAttention, forward and backward ({} shapes): {}\n", p.attention.size(), p.attention_kernel);
  for (const auto& a : p.attention)
    out += fmt::format("  batch x heads {:>5g}  seq {:>6g}  head_dim {:>4g}  {}  {}\n", a.batch_heads, a.seq,
                       a.head_dim, a.causal ? "causal" : "full", a.origin);
  out += "\nMemory-bound kernels: ";
  for (std::size_t i = 0; i < p.memory_kernels.size(); ++i) out += (i ? ", " : "") + p.memory_kernels[i];
  out += fmt::format(" over {}; an empty kernel back to back (launch floor); cudaLaunchKernel's CPU time "
                     "(host issue cost)\n",
                     sizes_text(p.memory_sizes));
  out += "NCCL's blocks on the SMs: a bf16 8192-cube GEMM alone and beside 8, 16, 32 spinning blocks of 512 threads\n";
  out += fmt::format("TAGC kernels: `tagcsim kernels bench --backend cuda` at {}\n", sizes_text(p.tagc_sizes));
  out += fmt::format("\nFiles, under {}/:\n", p.out_dir);
  for (const auto& f : p.files) out += fmt::format("  {:<28} {}\n", f.name, f.what);
  out += fmt::format("\nEstimated time: about {:.0f} s\n", p.estimated_seconds);
  return out;
}

}  // namespace tagcsim::calibrate
