// Reading device kernel profiles and timing kernels from them (docs/compute-model.md).
//
// GEMM: a physical model gives each shape's time, and the measured points correct it.
//   model(m, n, k) = max(min over tiles and splits of
//                            waves * SMs * tile_m * tile_n * 2 (k / split + k_overhead) / peak
//                            + split > 1 ? split * m * n * 4 bytes / streaming bandwidth,
//                        (m k + k n + m n) * bytes per element / streaming bandwidth)
//   with waves = ceil(ceil(m / tile_m) * ceil(n / tile_n) * split / SMs): a GEMM whose tiles do
//   not fill the SMs' last wave pays for the whole wave (wave quantization), a partial tile for
//   the whole tile (tile quantization), and a short k loop for the pipeline's fill and drain.
//   The library picks the tile, and splits k (up to max_split_k ways, adding the fp32 partial
//   sums' traffic) when the tiles would leave SMs idle.
//   Each measured point i has a correction c_i = model_i / measured_i; a query takes
//   the corrections of the two measured shapes nearest in log (m, n, k), weighted by 1 / distance^2,
//   and its time is model / c. So a measured shape returns its measured time.
//   A float8 GEMM (e4m3 inputs, bf16 output) runs the same model at peak.fp8 with one byte per
//   input element, corrected by the profile's fp8 points (its 16-bit points where it has none).
// Attention: TFLOP/s by sequence length and head dim (sim/kernel_profile_attention.cpp).
// Memory-bound: time by bytes, linear in log-log between points; below the smallest point its
//   time (a small kernel costs what the smallest one did), above the largest its bandwidth.
// Every kernel takes at least min_kernel_seconds. The family's fitted parameters scale the
// tensor-core rate (GEMM, attention) and the memory bandwidth (the part of a memory-bound
// kernel's time above the launch floor).
#include "sim/kernel_profile.hpp"
#include "sim/kernel_profile_registry.hpp"
#include "sim/log_interp.hpp"

#include "common/input.hpp"
#include "kernels/profile.hpp"
#include "models/kernel_list.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

namespace tagcsim::sim {
namespace {

constexpr const char* kFormat = "tagcsim-device-profile/1";

std::string required_source(const Input& pt) {
  const auto s = pt["source"].as_string();
  if (s.empty()) pt["source"].fail("expected the id of the measurement this point comes from");
  return s;
}

models::AttentionKernel read_attention_kernel(const Input& in) {
  const auto names = models::attention_kernel_names();
  const auto s = in.as_string();
  for (const auto k : {models::AttentionKernel::Flash2, models::AttentionKernel::Flash3,
                       models::AttentionKernel::FlashTriton, models::AttentionKernel::Cudnn,
                       models::AttentionKernel::Math, models::AttentionKernel::Flex})
    if (s == models::to_string(k)) return k;
  in.fail(unknown_name("attention kernel", s, names));
}

void read_gemm(const Input& g, KernelProfile& p) {
  g.expect_keys({"tiles", "max_split_k", "tiles_source", "k_overhead", "k_overhead_source", "points", "grouped",
                 "grouped_mm"});
  const Input tiles = g["tiles"];
  if (!tiles.is_sequence() || tiles.size() == 0) tiles.fail("expected a list of [tile_m, tile_n], e.g. [[128, 256]]");
  p.gemm.tiles.clear();
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    const Input t = tiles.at(i);
    if (!t.is_sequence() || t.size() != 2) t.fail("expected [tile_m, tile_n], e.g. [128, 256]");
    p.gemm.tiles.emplace_back(t.at(0).as_positive(), t.at(1).as_positive());
  }
  p.gemm.max_split_k = g["max_split_k"].as_int_between(1, 64);
  (void)g["tiles_source"].as_string();
  p.gemm.k_overhead = g["k_overhead"].as_non_negative();
  (void)g["k_overhead_source"].as_string();
  const Input pts = g["points"];
  if (pts.size() == 0) pts.fail("expected at least one measured GEMM");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const Input pt = pts.at(i);
    pt.expect_keys({"m", "n", "k", "batch", "dtype", "tflops", "seconds", "source", "note"});
    KernelProfile::GemmPoint q;
    q.m = pt["m"].as_positive();
    q.n = pt["n"].as_positive();
    q.k = pt["k"].as_positive();
    if (auto b = pt.find("batch")) q.batch = b->as_positive();
    q.dtype = pt["dtype"].as_choice({"bf16", "fp16", "fp8"});
    if (q.dtype == "fp8" && p.peak.fp8 <= 0)
      pt["dtype"].fail("an fp8 point needs the profile's peak.fp8 (the datasheet's dense float8 rate)");
    const double flops = 2 * q.batch * q.m * q.n * q.k;
    if (pt.has("tflops") == pt.has("seconds")) pt.fail("expected exactly one of 'tflops' and 'seconds'");
    q.seconds = pt.has("tflops") ? flops / (pt["tflops"].as_positive() * 1e12) : pt["seconds"].as_positive();
    q.source = required_source(pt);
    auto& list = q.dtype == "fp8" ? p.gemm.fp8_points : p.gemm.points;
    for (const auto& o : list)
      if (o.m == q.m && o.n == q.n && o.k == q.k && o.batch == q.batch)
        pt.fail(fmt::format("the shape {}x{}x{} is measured twice (once from {})", q.m, q.n, q.k, o.source));
    list.push_back(std::move(q));
  }
  if (p.gemm.points.empty()) pts.fail("expected at least one 16-bit (bf16 or fp16) GEMM: the fp8 ones do not time the others");
  if (const auto grouped = g.find("grouped")) {
    if (!grouped->is_sequence() || grouped->size() == 0)
      grouped->fail("expected a list of measured grouped GEMMs: {m, n, k, groups, pass: fwd | fwd+bwd, time, source}");
    for (std::size_t i = 0; i < grouped->size(); ++i) {
      const Input pt = grouped->at(i);
      pt.expect_keys({"m", "n", "k", "groups", "pass", "time", "dtype", "source", "note"});
      KernelProfile::Gemm::GroupedPoint q;
      q.m = pt["m"].as_positive();
      q.n = pt["n"].as_positive();
      q.k = pt["k"].as_positive();
      q.groups = double(pt["groups"].as_int_between(2, 1 << 20));
      q.backward = pt["pass"].as_choice({"fwd", "fwd+bwd"}) == "fwd+bwd";
      (void)pt["dtype"].as_choice({"bf16"});
      q.seconds = pt["time"].as_seconds();
      if (!(q.seconds > 0)) pt["time"].fail("expected a positive time");
      q.source = required_source(pt);
      p.gemm.grouped.push_back(std::move(q));
    }
  }
  // Absent: the fused kernel, which every profile with measured grouped points has.
  if (const auto gm = g.find("grouped_mm")) {
    if (!gm->is_map()) gm->fail("expected {kernel: fused | per_group, source: ...}");
    gm->expect_keys({"kernel", "source"});
    if ((*gm)["kernel"].as_choice({"fused", "per_group"}) == "per_group") {
      if (g.has("grouped"))
        (*gm)["kernel"].fail("measured grouped points time the fused kernel: a per_group GPU times each group's "
                             "GEMM from the dense points, so drop one of them");
      p.gemm.grouped_mm = KernelProfile::Gemm::GroupedMm::PerGroup;
    }
    if ((*gm)["source"].as_string().empty())
      (*gm)["source"].fail("expected where the kernel choice comes from (PyTorch's source, and the version)");
  }
}

void read_attention(const Input& a, KernelProfile& p) {
  a.expect_keys({"bwd_fwd_rate_ratio", "bwd_fwd_source", "curves"});
  p.attention.bwd_fwd_rate_ratio = a["bwd_fwd_rate_ratio"].as_positive();
  p.attention.bwd_fwd_source = a["bwd_fwd_source"].as_string();
  const Input curves = a["curves"];
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const Input c = curves.at(i);
    c.expect_keys({"kernel", "direction", "causal", "head_dim", "points", "note"});
    KernelProfile::AttentionCurve curve;
    curve.kernel = read_attention_kernel(c["kernel"]);
    curve.direction = c["direction"].as_choice({"fwd", "bwd", "fwd+bwd"});
    curve.causal = c["causal"].as_bool();
    curve.head_dim = c["head_dim"].as_positive();
    const Input pts = c["points"];
    if (pts.size() == 0) pts.fail("expected at least one point");
    for (std::size_t j = 0; j < pts.size(); ++j) {
      const Input pt = pts.at(j);
      pt.expect_keys({"seq", "tflops", "source", "note"});
      KernelProfile::AttentionPoint q{pt["seq"].as_positive(), pt["tflops"].as_positive(), required_source(pt)};
      if (!curve.points.empty()) {
        const auto& last = curve.points.back();
        if (q.seq <= last.seq)
          pt["seq"].fail(fmt::format("not monotonic: sequence length {:g} after {:g} (points must be in increasing "
                                     "order of seq)", q.seq, last.seq));
        // At a fixed token count the time goes as seq / rate: it must not fall as seq grows.
        if (q.seq / q.tflops < last.seq / last.tflops * (1 - 1e-9))
          pt["tflops"].fail(fmt::format("not monotonic: {:g} TFLOP/s at seq {:g} after {:g} at {:g} would make a longer "
                                        "sequence take less time per token", q.tflops, q.seq, last.tflops, last.seq));
      }
      curve.points.push_back(std::move(q));
    }
    for (const auto& o : p.attention.curves)
      if (o.kernel == curve.kernel && o.direction == curve.direction && o.causal == curve.causal &&
          o.head_dim == curve.head_dim)
        c.fail(fmt::format("a second {} {} curve for causal={} head_dim={:g}", models::to_string(curve.kernel),
                           curve.direction, curve.causal, curve.head_dim));
    p.attention.curves.push_back(std::move(curve));
  }
}

void read_memory(const Input& m, KernelProfile& p) {
  m.expect_keys({"points"});
  const Input pts = m["points"];
  if (pts.size() == 0) pts.fail("expected at least one point");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const Input pt = pts.at(i);
    pt.expect_keys({"bytes", "GBps", "source", "note"});
    const double bytes = pt["bytes"].as_positive();
    KernelProfile::MemoryPoint q{bytes, bytes / (pt["GBps"].as_positive() * 1e9), required_source(pt)};
    if (!p.memory.empty()) {
      const auto& last = p.memory.back();
      if (q.bytes <= last.bytes)
        pt["bytes"].fail(fmt::format("not monotonic: {:g} bytes after {:g} (points must be in increasing order of "
                                     "bytes)", q.bytes, last.bytes));
      if (q.seconds < last.seconds * (1 - 1e-9))  // a clamped point written as a rate may read back an ulp short
        pt["GBps"].fail(fmt::format("not monotonic: moving {:g} bytes would take less time than {:g} bytes",
                                    q.bytes, last.bytes));
    }
    p.memory.push_back(std::move(q));
  }
}

// Per point: how far the measured time is from the physical model's (c = model / measured).
void calibrate_gemm(KernelProfile& p) {
  auto by_flops = [](const auto& a, const auto& b) { return a.batch * a.m * a.n * a.k < b.batch * b.m * b.n * b.k; };
  for (auto& q : p.gemm.points) q.correction = p.gemm_model_seconds(q.m, q.n, q.k, q.batch, Dtype::BF16, false) / q.seconds;
  for (auto& q : p.gemm.fp8_points) q.correction = p.fp8_gemm_model_seconds(q.m, q.n, q.k, q.batch) / q.seconds;
  std::stable_sort(p.gemm.points.begin(), p.gemm.points.end(), by_flops);
  std::stable_sort(p.gemm.fp8_points.begin(), p.gemm.fp8_points.end(), by_flops);
  // A grouped GEMM against the dense GEMMs the profile gives its stacked shapes.
  double log_sum = 0;
  for (const auto& q : p.gemm.grouped) {
    double dense = p.profiled_gemm_seconds(q.m, q.n, q.k);
    if (q.backward) dense += p.profiled_gemm_seconds(q.m, q.k, q.n) + p.profiled_gemm_seconds(q.groups * q.k, q.n, q.m / q.groups);
    log_sum += std::log(dense / q.seconds);
  }
  if (!p.gemm.grouped.empty()) p.gemm.grouped_efficiency = std::exp(log_sum / double(p.gemm.grouped.size()));
}

}  // namespace

// ---- parsing ----

KernelProfile parse_kernel_profile(const std::string& text, const std::string& file) {
  const Input doc = Input::load_string(text, file);
  if (!doc.is_map()) doc.fail("expected a device kernel profile (a map; see docs/compute-model.md)");
  doc.expect_keys({"format", "name", "gpu", "also_serves", "family", "metadata", "peak", "gemm", "attention",
                   "memory", "launch", "host", "nccl_sm"});
  if (doc["format"].as_string() != kFormat)
    doc["format"].fail(fmt::format("expected '{}', got '{}'", kFormat, doc["format"].as_string()));
  KernelProfile p;
  p.file = file;
  p.name = doc["name"].as_string();
  p.gpu = doc["gpu"].as_string();
  p.gpu_where = doc["gpu"].where();
  if (auto a = doc.find("also_serves"))
    for (std::size_t i = 0; i < a->size(); ++i) p.also_serves.push_back(a->at(i).as_string());
  p.family = doc["family"].as_string();

  const Input meta = doc["metadata"];
  meta.expect_keys({"gpu_name", "sms", "clocks", "driver", "cuda", "cublas", "cudnn", "measured_by", "notes"});
  for (auto key : {"gpu_name", "clocks", "driver", "cuda", "cublas", "cudnn", "measured_by"})
    p.metadata[key] = meta[key].as_string();
  if (auto n = meta.find("notes")) p.metadata["notes"] = n->as_string();
  p.sms = meta["sms"].as_int_between(1, 1 << 16);

  const Input peak = doc["peak"];
  peak.expect_keys({"bf16", "tf32", "fp32", "fp8", "source"});
  p.peak.bf16 = peak["bf16"].as_flop_rate();
  if (auto f = peak.find("fp8")) p.peak.fp8 = f->as_flop_rate();
  p.peak.tf32 = peak["tf32"].as_flop_rate();
  p.peak.fp32 = peak["fp32"].as_flop_rate();
  (void)peak["source"].as_string();

  read_memory(doc["memory"], p);  // first: the GEMM model's memory bound uses its bandwidth
  read_gemm(doc["gemm"], p);
  read_attention(doc["attention"], p);

  const Input launch = doc["launch"];
  launch.expect_keys({"min_kernel_seconds", "source"});
  p.min_kernel_seconds = launch["min_kernel_seconds"].as_seconds();
  (void)required_source(launch);
  const Input host = doc["host"];
  host.expect_keys({"issue_seconds", "hook_seconds", "source"});
  p.issue_seconds = host["issue_seconds"].as_seconds();
  p.hook_seconds = host["hook_seconds"].as_seconds();
  (void)required_source(host);
  if (const auto nccl = doc.find("nccl_sm")) {
    nccl->expect_keys({"block_share", "source"});
    const Input share = (*nccl)["block_share"];
    p.nccl_block_share = share.as_non_negative();
    if (p.nccl_block_share > 1) share.fail(fmt::format("expected a share of one SM in [0, 1], got {:g}", p.nccl_block_share));
    (void)required_source(*nccl);
  }

  calibrate_gemm(p);
  return p;
}

std::string kernel_profile_path(const std::string& ref) {
  if (ref.find('/') != std::string::npos || (ref.size() > 5 && ref.substr(ref.size() - 5) == ".yaml")) return ref;
  return kernels::data_dir() + "/" + ref + ".yaml";
}

std::vector<std::string> shipped_kernel_profiles() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(kernels::data_dir(), ec)) {
    const auto name = f.path().filename().string();
    if (name.rfind("device-", 0) == 0 && f.path().extension() == ".yaml") out.push_back(f.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const KernelProfile& kernel_profile(const std::string& ref) {
  const auto path = kernel_profile_path(ref);
  auto& r = detail::registry();
  std::lock_guard lock(r.mu);
  if (auto it = r.profiles.find(path); it != r.profiles.end()) return *it->second;
  std::ifstream in(path);
  if (!in) {
    std::string shipped;
    for (const auto& s : shipped_kernel_profiles()) shipped += (shipped.empty() ? "" : ", ") + s;
    throw InputError(fmt::format("{}: no such kernel profile (shipped: {})", path, shipped));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto p = std::make_unique<KernelProfile>(parse_kernel_profile(ss.str(), path));
  p->fitted = detail::profile_fitted_locked(r, *p);
  return *r.profiles.emplace(path, std::move(p)).first->second;
}

// ---- timing ----

bool KernelProfile::serves(const std::string& device_name) const {
  return device_name == gpu || std::find(also_serves.begin(), also_serves.end(), device_name) != also_serves.end();
}

double KernelProfile::stream_bandwidth() const { return memory.back().bytes / memory.back().seconds; }

namespace {
// Waves of output tiles at `peak_rate`, splitting k while the tiles leave SMs idle, or the operands'
// traffic at the streaming bandwidth, whichever is longer.
double tile_model_seconds(const KernelProfile& p, double m, double n, double k, double batch, double peak_rate,
                          double traffic_bytes) {
  double compute = std::numeric_limits<double>::infinity();
  for (const auto& [tm, tn] : p.gemm.tiles) {
    const double tiles = batch * std::ceil(m / tm) * std::ceil(n / tn);
    // Split k only while the tiles leave SMs idle, and never below a k-slice of 256.
    const int max_split = tiles >= p.sms ? 1 : std::min(p.gemm.max_split_k, std::max(1, int(k / 256)));
    for (int split = 1; split <= max_split; ++split) {
      const double waves = std::ceil(tiles * split / p.sms);
      double t = waves * p.sms * tm * tn * 2 * (k / split + p.gemm.k_overhead) / peak_rate;
      if (split > 1) t += batch * split * m * n * 4 / p.stream_bandwidth();  // fp32 partial sums, then reduced
      compute = std::min(compute, t);
    }
  }
  return std::max(compute, traffic_bytes / p.stream_bandwidth());
}
}  // namespace

double KernelProfile::gemm_model_seconds(double m, double n, double k, double batch, Dtype dtype, bool tf32) const {
  const double peak_rate = dtype != Dtype::FP32 ? peak.bf16 : (tf32 ? peak.tf32 : peak.fp32);
  const double elem = dtype == Dtype::FP32 ? 4 : 2;
  return tile_model_seconds(*this, m, n, k, batch, peak_rate, batch * (m * k + k * n + m * n) * elem);
}

double KernelProfile::fp8_gemm_model_seconds(double m, double n, double k, double batch) const {
  // One byte per input element, the bf16 output two.
  return tile_model_seconds(*this, m, n, k, batch, peak.fp8, batch * (m * k + k * n + 2 * m * n));
}

double KernelProfile::gemm_correction(double m, double n, double k, double batch, bool fp8) const {
  // The correction carries what the tile model leaves out of a shape like the query's: the two
  // measured shapes nearest in log2 (batch x m, n, k), weighted by 1 / distance^2 (exact at a
  // measured shape). Not by FLOPs alone: a skinny GEMM (802816 x 192 x 768 on A100) has the FLOPs
  // of a square one and nothing else in common with it. A float8 GEMM takes the float8 points'
  // corrections, or the 16-bit ones' where the profile has none.
  const auto& pts = fp8 && !gemm.fp8_points.empty() ? gemm.fp8_points : gemm.points;
  auto distance2 = [&](const GemmPoint& q) {
    const double dm = std::log2(batch * m / (q.batch * q.m)), dn = std::log2(n / q.n), dk = std::log2(k / q.k);
    return dm * dm + dn * dn + dk * dk;
  };
  std::size_t a = pts.size(), b = pts.size();  // the nearest and the next (ties: the file's order)
  double da = 0, db = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const double d = distance2(pts[i]);
    if (d == 0) return pts[i].correction;
    if (a == pts.size() || d < da) b = a, db = da, a = i, da = d;
    else if (b == pts.size() || d < db) b = i, db = d;
  }
  if (b == pts.size()) return pts[a].correction;
  const double wa = 1 / da, wb = 1 / db;
  return (wa * pts[a].correction + wb * pts[b].correction) / (wa + wb);
}

double KernelProfile::profiled_gemm_seconds(double m, double n, double k) const {
  return gemm_model_seconds(m, n, k, 1, Dtype::BF16, false) / gemm_correction(m, n, k);
}

double KernelProfile::gemm_seconds(double m, double n, double k, Dtype dtype, bool tf32) const {
  const double t =
      gemm_model_seconds(m, n, k, 1, dtype, tf32) / gemm_correction(m, n, k) / fitted.tensor_scale / device.tensor;
  return std::max(t, min_kernel_seconds);
}

double KernelProfile::fp8_gemm_seconds(double m, double n, double k) const {
  if (peak.fp8 <= 0)
    throw InputError(fmt::format("{}: kernel profile '{}' has no float8 rate (peak.fp8): {} has no float8 tensor "
                                 "cores, or the profile does not give them",
                                 file, name, gpu));
  const double t =
      fp8_gemm_model_seconds(m, n, k, 1) / gemm_correction(m, n, k, 1, true) / fitted.tensor_scale / device.tensor;
  return std::max(t, min_kernel_seconds);
}

double KernelProfile::fp32_simt_gemm_seconds(double m, double n, double k) const {
  const double compute = 2 * m * n * k / peak.fp32;
  const double traffic = 4 * (m * k + k * n + m * n) / stream_bandwidth();
  return std::max({compute, traffic, min_kernel_seconds});
}

double KernelProfile::memory_seconds(double bytes) const {
  const auto& p = memory;
  double t;
  if (bytes <= p.front().bytes) {
    t = p.front().seconds;
  } else if (bytes >= p.back().bytes) {
    t = p.back().seconds * bytes / p.back().bytes;
  } else {
    std::size_t i = 0;
    while (p[i + 1].bytes < bytes) ++i;
    t = std::exp(lerp_log(bytes, p[i].bytes, p[i + 1].bytes, std::log(p[i].seconds), std::log(p[i + 1].seconds)));
  }
  // The fitted scale slows the bandwidth-bound part, not the launch floor a small kernel costs.
  t = min_kernel_seconds + std::max(0.0, t - min_kernel_seconds) / fitted.memory_scale / device.memory;
  return std::max(t, min_kernel_seconds);
}

bool KernelProfile::per_group(const models::Kernel& k) const {
  return k.kind == models::KernelKind::Gemm && k.groups > 1 && !k.fp8 && gemm.grouped_mm == Gemm::GroupedMm::PerGroup;
}

double KernelProfile::group_seconds(const models::Kernel& k, Dtype dtype, bool tf32) const {
  return std::max(min_kernel_seconds, gemm_seconds(k.m / k.groups, k.n, k.k, dtype, tf32));
}

double KernelProfile::kernel_seconds(const models::Kernel& k, models::AttentionKernel attention, Dtype dtype,
                                     bool tf32) const {
  switch (k.kind) {
    case models::KernelKind::Gemm:
      if (k.fp8) return fp8_gemm_seconds(k.m, k.n, k.k);
      if (k.fp32) return fp32_simt_gemm_seconds(k.m, k.n, k.k);
      if (per_group(k)) return k.groups * group_seconds(k, dtype, tf32);
      // A grouped GEMM (k.groups > 1) at its stacked shape's dense time over the measured efficiency.
      return std::max(min_kernel_seconds,
                      gemm_seconds(k.m, k.n, k.k, dtype, tf32) / (k.groups > 1 ? gemm.grouped_efficiency : 1.0));
    case models::KernelKind::Attention:
      return attention_seconds(attention, k.backward, k.batch_heads, k.seq, k.head_dim, k.causal, k.window,
                               k.query_shards, k.document);
    case models::KernelKind::Memory: return memory_seconds(k.bytes);
  }
  return min_kernel_seconds;
}

}  // namespace tagcsim::sim
