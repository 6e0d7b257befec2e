#include "calibrate/box_fit.hpp"

#include "calibrate/unit_work.hpp"
#include "common/input.hpp"
#include "sim/compute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

namespace tagcsim::calibrate {
namespace {

bool contains(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }

// Dense tensor-core FLOP per clock per SM for 16-bit inputs, and plain FP32 FLOP per clock per SM,
// by compute capability (NVIDIA's architecture whitepapers: A100 312 TFLOP/s = 108 SMs x 1.41 GHz
// x 2048; H100 SXM 989.4 = 132 x 1.83 GHz x 4096; Ada and GA10x 1024).
std::pair<double, double> per_sm_rates(int sm) {
  if (sm >= 100) return {8192, 256};
  if (sm >= 90) return {4096, 256};
  if (sm == 80) return {2048, 128};
  if (sm >= 86) return {1024, 256};
  if (sm >= 70) return {1024, 128};  // Volta/Turing: 8 tensor cores x 64 FMA
  return {0, 128};
}

}  // namespace

LatencyBandwidthFit fit_latency_bandwidth(const std::vector<double>& x, const std::vector<double>& t,
                                          const std::string& what) {
  if (x.size() != t.size() || x.size() < 2)
    throw InputError(fmt::format("{}: expected at least 2 measurements to fit a floor and a rate, got {}", what,
                                 x.size()));
  // Minimise sum ((a + b x - t) / t)^2 over (a, b = 1 / rate): 2 x 2 normal equations.
  double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = 1 / (t[i] * t[i]);
    s11 += w, s12 += w * x[i], s22 += w * x[i] * x[i];
    r1 += w * t[i], r2 += w * x[i] * t[i];
  }
  const double det = s11 * s22 - s12 * s12;
  if (!(std::abs(det) > 0)) throw InputError(fmt::format("{}: the sizes do not vary; cannot fit a rate", what));
  LatencyBandwidthFit f;
  double a = (r1 * s22 - r2 * s12) / det, b = (s11 * r2 - s12 * r1) / det;
  if (a < 0) {  // a floor below zero is not physical: fit the rate alone
    a = 0;
    b = r2 / s22;
  }
  if (!(b > 0)) throw InputError(fmt::format("{}: the times do not grow with size; cannot fit a rate", what));
  f.intercept_s = a;
  f.rate = 1 / b;
  f.points = int(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = std::abs((a + b * x[i]) / t[i] - 1);
    f.mean_abs_error += e / double(x.size());
    f.max_abs_error = std::max(f.max_abs_error, e);
  }
  return f;
}

std::string device_preset_for(const std::string& name, double memory_bytes) {
  if (contains(name, "H200")) return "h200-sxm";
  if (contains(name, "H100") && !contains(name, "PCIe") && !contains(name, "NVL")) return "h100-sxm";
  if (contains(name, "A100") && !contains(name, "PCIe")) return memory_bytes > 50e9 ? "a100-80gb" : "a100-40gb";
  if (contains(name, "V100")) return "v100-32gb";
  if (name == "NVIDIA L4" || contains(name, " L4")) return "l4";
  return {};
}

topologies::Cluster box_base_cluster(const BoxMeasurements& m, const std::vector<int>& gpus) {
  if (m.box.gpus.empty()) throw InputError("box measurements: no GPU listed");
  const BoxGpu& g = m.box.gpus[std::size_t(gpus.empty() ? 0 : gpus.front())];
  const int n = int(std::max<std::size_t>(1, gpus.size()));
  // The DGX preset of the box's generation is the base: one box has no inter-node traffic to
  // measure, so its NICs, transport, rails and fabric stand in (datasheet values), and `nodes:`
  // on top of the box's cluster file asks about a cluster of such boxes. NCCL's costs start from
  // the values the presets carry (fitted to every shipped nccl-tests table).
  const auto dgx = topologies::preset(g.sm >= 90 ? "dgx-h100-ib400" : "dgx-a100-ib200");
  topologies::Cluster c = dgx;
  c.name = fmt::format("box-{}-{}gpu", gpu_slug(g.name), n);
  c.nodes = 1;
  c.gpus_per_node = n;
  const std::string preset = device_preset_for(g.name, g.memory_bytes);
  if (!preset.empty()) {
    c.gpu = topologies::device(preset);
    c.gpu.source += fmt::format(" (preset '{}' for the box's '{}')", preset, g.name);
  } else {
    const auto [tensor, fp32] = per_sm_rates(g.sm);
    const double clock = g.sm_clock_mhz * 1e6;
    c.gpu = topologies::DeviceProfile{};
    c.gpu.name = g.name;
    c.gpu.peak_flops_bf16 = g.sms * clock * tensor;
    c.gpu.peak_flops_fp32 = g.sms * clock * fp32;
    c.gpu.peak_flops_tf32 = c.gpu.peak_flops_bf16 / 2;
    c.gpu.memory_bandwidth = 2 * g.memory_clock_mhz * 1e6 * g.bus_width_bits / 8;
    c.gpu.source = fmt::format(
        "no preset for '{}': peaks computed as {} SMs x {:g} MHz (cudaDevAttrClockRate) x {:g} dense 16-bit "
        "tensor-core FLOP/clock/SM for sm_{} (NVIDIA architecture whitepapers), TF32 half of that; memory "
        "bandwidth 2 x {:g} MHz x {} bits (cudaDevAttrMemoryClockRate, bus width)",
        g.name, g.sms, g.sm_clock_mhz, tensor, g.sm, g.memory_clock_mhz, g.bus_width_bits);
  }
  c.gpu.memory_bytes = g.memory_bytes;
  c.gpu.sm = g.sm;  // NCCL's per-generation latency tables, as measured
  // The link: NVLink between every pair (an NVSwitch board, or a bridged pair), else PCIe. NVLink3
  // and NVLink4 are the presets' fabrics (their generation names share fitted efficiencies);
  // NVLink SHARP needs NVSwitch.
  const bool nvlink = m.box.nvlink_pair_fraction() == 1.0;
  std::string link;
  if (nvlink && g.sm >= 80 && g.sm < 100) {
    c.intra = g.sm >= 90 ? topologies::preset("dgx-h100-ib400").intra : topologies::preset("dgx-a100-ib200").intra;
    link = g.sm >= 90 ? "NVLink4, 900 GB/s bidirectional (H100 datasheet)" : "NVLink3, 600 GB/s bidirectional (A100 datasheet)";
  } else if (nvlink) {
    c.intra = {"nvswitch", g.sm >= 100 ? 900e9 : 150e9, 0.5e-6, 0.8};
    c.intra.name = g.sm >= 100 ? "nvlink5" : "nvlink2";
    c.intra.nvls_efficiency = g.sm >= 100 ? topologies::preset("dgx-h100-ib400").intra.nvls_efficiency : 0;
    // One box has no NVLS tree to measure: across nodes it takes the preset's.
    c.intra.nvls_tree_efficiency = g.sm >= 100 ? topologies::preset("dgx-h100-ib400").intra.nvls_tree_efficiency : 0;
    link = g.sm >= 100 ? "NVLink5, 1.8 TB/s bidirectional (B200 datasheet); efficiencies start from NVLink4's"
                       : "NVLink2, 300 GB/s bidirectional (V100 datasheet); efficiency 0.8 assumed";
  } else {
    c.intra = {"pcie", g.sm >= 90 ? 63e9 : 31.5e9, 1e-6, 0.8};
    c.intra.name = g.sm >= 90 ? "pcie5" : "pcie4";
    link = g.sm >= 90 ? "PCIe 5.0 x16, 63 GB/s per direction (PCI-SIG); efficiency 0.8 assumed"
                      : "PCIe 4.0 x16, 31.5 GB/s per direction (PCI-SIG); efficiency 0.8 assumed";
  }
  if (nvlink) c.intra.kind = n > 2 ? "nvswitch" : "nvlink";
  if (c.intra.kind != "nvswitch") c.intra.nvls_efficiency = c.intra.nvls_tree_efficiency = 0;
  c.source = fmt::format(
      "this box, measured by tagcsim calibrate box ({}): {} x {}, driver {}, CUDA {}, NCCL {}. Intra-node link: {}. "
      "NICs, transport and fabric not measured (one node): those of the {} preset stand in. {}",
      m.box.date, n, g.name, m.box.driver, m.box.cuda_runtime, m.box.nccl, link, dgx.name, dgx.source);
  return c;
}

std::vector<Point> nccl_points(const BoxMeasurements& m) {
  std::vector<Point> out;
  for (std::size_t i = 0; i < m.nccl.size(); ++i) {
    const auto& s = m.nccl[i];
    std::string gpus;
    for (std::size_t j = 0; j < s.ranks.size(); ++j) gpus += fmt::format("{}{}", j ? "," : "", s.ranks[j]);
    if (s.wrong != 0)
      throw InputError(fmt::format("measurements nccl[{}] ({} of {} bytes on GPUs {}): {} wrong results; fix the "
                                   "system before calibrating against it",
                                   i, s.op, s.bytes, gpus, s.wrong));
    Point p;
    p.op_name = s.op;
    p.op = sim::parse_collective_op(s.op);
    p.nodes = 1;
    p.gpus_per_node = int(s.ranks.size());
    // One thread launches every GPU's kernels (ncclCommInitAll, the ranks' calls in one group), as
    // nccl-tests -g k does: the host's launch cost per GPU shows.
    p.gpus_per_process = p.gpus_per_node;
    p.bytes = s.bytes;
    p.time_s = s.time_s;
    p.algbw = s.bytes / s.time_s;
    p.busbw = p.algbw * sim::bus_factor(*p.op, p.ranks());
    p.where = fmt::format("{} GPUs {}", s.op, gpus);
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

// The GEMM efficiency that makes the simulator's datasheet roofline (sim::unit_compute without a
// kernel profile) reproduce the measured GEMM + attention time of the scenario's units: the
// roofline is linear in 1 / gemm_efficiency once memory traffic is taken out, so efficiency =
// predicted time at efficiency 1 / measured time. The kernels are the units' own lists.
void fit_gemm(BoxFit& f) {
  auto& d = f.device;
  const auto& m = f.measured;
  const auto& gpu = f.base.gpu;
  std::map<std::tuple<double, double, double>, double> bf16;
  for (const auto& s : m.gemm)
    if (s.dtype == "bf16") bf16[{s.m, s.n, s.k}] = s.seconds;
  if (bf16.empty()) {
    f.notes.push_back("no bf16 GEMM measured: the device's GEMM efficiency stays at its preset value");
    d.gemm_efficiency = gpu.gemm_efficiency;
    d.gemm_basis = "preset (not measured)";
    return;
  }
  // The measured time of one of the units' attention calls, 0 when not measured.
  auto attention_time = [&](const models::Kernel& a) {
    for (const auto& s : m.attention)
      if (s.origin == "scenario" && s.batch_heads == a.batch_heads && s.seq == a.seq && s.head_dim == a.head_dim &&
          s.causal == a.causal && (s.direction == "bwd") == a.backward)
        return s.seconds;
    return 0.0;
  };
  double predicted1 = 0, measured = 0, gemm_only = 0, attn_meas = 0;
  int units = 0;
  if (f.scenario) {
    auto ideal = gpu;
    ideal.profile.clear();          // the datasheet roofline
    ideal.gemm_efficiency = 1;
    ideal.memory_bandwidth = 1e30;  // take the element-wise traffic out
    for (const auto& u : f.scenario->units) {
      if (!u.kernels) continue;  // timed from its FLOPs: nothing was measured for it
      const auto w = unit_work(u);
      double gemms = 0, attention = 0;
      bool complete = true;
      for (const auto* pass : {&w.forward, &w.backward}) {
        for (const auto& g : pass->gemms) {
          auto it = bf16.find({g.m, g.n, g.k});
          if (it == bf16.end()) complete = false;
          else gemms += it->second;
        }
        for (const auto& a : pass->attention) {
          const double t = attention_time(a);
          if (t > 0) attention += t;
          else complete = false;
        }
      }
      if (!complete || gemms + attention <= 0) continue;
      const auto uc = sim::unit_compute(u, ideal, sim::Dtype::BF16);
      predicted1 += uc.forward_seconds + uc.backward_seconds;
      measured += gemms + attention;
      gemm_only += gemms;
      attn_meas += attention;
      ++units;
    }
  }
  if (units > 0) {
    d.gemm_efficiency = std::min(1.0, predicted1 / measured);
    d.gemm_basis = fmt::format("the scenario's {} units: the simulator's roofline at efficiency 1 predicts {:.3f} ms "
                               "of GEMM and attention, measured {:.3f} ms (GEMMs {:.3f} ms, attention {:.3f} ms)",
                               units, predicted1 * 1e3, measured * 1e3, gemm_only * 1e3, attn_meas * 1e3);
    double af = 0, at = 0, gf = 0, gt = 0;
    for (const auto& a : m.attention)
      if (a.origin == "scenario") af += a.flops(), at += a.seconds;
    for (const auto& s : m.gemm)
      if (s.dtype == "bf16" && s.origin.rfind("scenario", 0) == 0) gf += s.flops(), gt += s.seconds;
    if (at > 0 && gt > 0 && gf > 0) d.attention_vs_gemm = (af / at) / (gf / gt);
    return;
  }
  // No scenario (or an incomplete one): the large square GEMMs, where the model's size factor is 1.
  std::vector<double> eff;
  for (const auto& [shape, t] : bf16) {
    const auto [mm, nn, kk] = shape;
    if (mm == nn && nn == kk && mm >= 8192) eff.push_back(2 * mm * nn * kk / t / gpu.peak_flops_bf16);
  }
  if (eff.empty()) {
    d.gemm_efficiency = gpu.gemm_efficiency;
    d.gemm_basis = "preset: neither the scenario's shapes nor a square bf16 GEMM of 8192 or more was measured";
    f.notes.push_back("GEMM efficiency not fitted: " + d.gemm_basis);
    return;
  }
  std::sort(eff.begin(), eff.end());
  d.gemm_efficiency = std::min(1.0, eff[eff.size() / 2]);
  d.gemm_basis = fmt::format("median rate / peak of the {} square bf16 GEMMs of 8192 and more", eff.size());
}

void fit_memory(BoxFit& f) {
  auto& d = f.device;
  std::vector<double> x, t;
  for (const auto& s : f.measured.memory)
    if (s.kernel != "norm") x.push_back(s.bytes), t.push_back(s.seconds);
  if (x.size() < 2) {
    d.memory_efficiency = f.base.gpu.memory_efficiency;
    f.notes.push_back("memory efficiency not fitted: fewer than 2 streaming-kernel measurements");
    return;
  }
  d.memory = fit_latency_bandwidth(x, t, "memory-bound kernels");
  d.memory_efficiency = d.memory.rate / f.base.gpu.memory_bandwidth;
  if (d.memory_efficiency > 1) {
    d.memory_note = fmt::format("at bound: the streaming rate {:.0f} GB/s exceeds the datasheet's {:.0f} GB/s (data "
                                "held in L2?); efficiency held at 1",
                                d.memory.rate / 1e9, f.base.gpu.memory_bandwidth / 1e9);
    d.memory_efficiency = 1;
  }
}

FitOptions box_fit_options() {
  FitOptions o;
  // NCCL's pipeline depths are NCCL's, not the box's: they stay at the values fitted to every
  // published table. The fit still holds any other parameter the box's sweeps do not determine.
  o.hold = {Param::RingDepth, Param::TreeDepth, Param::NvlsDepth};
  o.prior_weight = 0;  // the box's own sweeps reach the bandwidth-bound sizes: its data alone speaks
  return o;
}

}  // namespace

double block_share(const SmHoldSample& s, int sms) {
  // The blocks take x of the GPU's SMs from the GEMM: beside = alone / (1 - x), x = share x blocks / SMs.
  return std::clamp((1 - s.alone_s / s.beside_s) * sms / s.blocks, 0.0, 1.0);
}

void fit_block_share(BoxFit& f) {
  const auto& holds = f.measured.sm_holds;
  const int sms = f.measured.box.sms();
  if (holds.empty() || sms <= 0) return;
  auto& d = f.device;
  double sum = 0;
  std::string each;
  for (const auto& s : holds) {
    const double x = block_share(s, sms);
    sum += x;
    each += fmt::format("{}{} blocks: {:.3f}", each.empty() ? "" : ", ", s.blocks, x);
  }
  d.nccl_block_share = sum / holds.size();
  d.nccl_block_basis = fmt::format("mean of {} bf16 GEMMs of {:g} x {:g} x {:g} beside spinning blocks of {} threads "
                                   "on {} SMs ({})",
                                   holds.size(), holds.front().m, holds.front().n, holds.front().k,
                                   holds.front().threads, sms, each);
}

BoxFit fit_box(const BoxMeasurements& m, const std::optional<ScenarioShapes>& scenario) {
  BoxFit f;
  f.measured = m;
  f.scenario = scenario;
  // The GPUs the all-GPU sweeps ran over (the widest NCCL sample), else every GPU of the box.
  for (const auto& s : m.nccl)
    if (s.ranks.size() > f.gpus.size()) f.gpus = s.ranks;
  if (f.gpus.empty())
    for (const auto& g : m.box.gpus) f.gpus.push_back(g.index);
  f.base = box_base_cluster(m, f.gpus);
  f.cluster = f.base;

  const auto points = nccl_points(m);
  const bool any_pair = std::any_of(points.begin(), points.end(), [](const Point& p) { return p.ranks() >= 2; });
  if (!any_pair) {
    f.nccl_skipped = points.empty() ? "no NCCL sample" : "one GPU: NCCL over one GPU exchanges nothing, so there is "
                                                         "no NVLink/PCIe bandwidth or NCCL cost to fit";
    f.notes.push_back("NCCL fit skipped: " + f.nccl_skipped + "; the cluster file keeps the starting values");
  } else {
    std::vector<Sample> samples;
    for (const auto& p : points)
      samples.push_back({p, f.base, fmt::format("{} over {} GPU{}", p.op_name, p.ranks(), p.ranks() == 1 ? "" : "s")});
    f.nccl = fit(samples, box_fit_options());
    if (std::any_of(samples.begin(), samples.end(), [&](const Sample& s) { return s.table != samples.front().table; }))
      try {
        f.nccl_held_out = held_out_by_table(samples, box_fit_options());
      } catch (const InputError& e) {
        f.held_out_skipped = e.what();
      }
    for (auto& p : f.nccl->params) {  // the reasons, in this command's words (it has no --hold or --free)
      if (p.status == ParamFit::Status::Held && p.why.rfind("on request", 0) == 0)
        p.why = "NCCL's own pipeline constant: held at the presets' value, fitted to every published table "
                "(calibrate/profiles/nccl-model.yaml)";
      if (auto at = p.why.find(" (--free to fit it)"); at != std::string::npos) p.why.erase(at, 19);
    }
    f.cluster = with_fit(f.base, *f.nccl);
    // One box measures one node's NVLS, not a tree across nodes: the tree keeps its published share
    // of one node's rate (NCCL's warp split per channel), now of this box's.
    if (const auto& bi = f.base.intra; bi.nvls_efficiency > 0 && bi.nvls_tree_efficiency > 0)
      f.cluster.intra.nvls_tree_efficiency =
          bi.nvls_tree_efficiency * f.cluster.intra.nvls_efficiency / bi.nvls_efficiency;
  }
  fit_gemm(f);
  fit_memory(f);
  fit_block_share(f);
  f.cluster.gpu.gemm_efficiency = f.device.gemm_efficiency;
  f.cluster.gpu.memory_efficiency = f.device.memory_efficiency;
  for (const auto& n : m.notes) f.notes.push_back(n);
  return f;
}

}  // namespace tagcsim::calibrate
