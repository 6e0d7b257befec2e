// report.txt: the box, each fit and its residuals, what was skipped; and writing the files.
#include "calibrate/box_fit.hpp"

#include "calibrate/profile.hpp"
#include "common/input.hpp"
#include "sim/compute.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tagcsim::calibrate {
namespace {

void write_file(const std::string& path, const std::string& text, const std::string& flag) {
  std::ofstream f(path);
  if (!f) throw InputError(fmt::format("{}: cannot write '{}': {}", flag, path, std::strerror(errno)));
  f << text;
  if (!f.flush()) throw InputError(fmt::format("{}: cannot write '{}': {}", flag, path, std::strerror(errno)));
}

}  // namespace

std::string box_report(const BoxFit& f) {
  const auto& m = f.measured;
  const auto& b = m.box;
  std::string out = fmt::format("tagcsim calibrate box: calibration report\n{}\n\n", m.command);
  out += fmt::format("Box ({}): driver {}, CUDA runtime {} (driver supports {}), NCCL {}, cuBLASLt {}, cuDNN {}\n",
                     b.date, b.driver, b.cuda_runtime, b.cuda_driver, b.nccl, b.cublaslt, b.cudnn);
  out += fmt::format("Host: {}\n", b.host);
  for (const auto& g : b.gpus)
    out += fmt::format("  GPU {}: {} (sm_{}, {} SMs, {:.1f} GiB, SM {:g} MHz, memory {:g} MHz x {} bits, {})\n", g.index,
                       g.name, g.sm, g.sms, g.memory_bytes / (1 << 30), g.sm_clock_mhz, g.memory_clock_mhz,
                       g.bus_width_bits, g.pci);
  for (const auto& l : b.links)
    out += fmt::format("  GPUs {}-{}: peer access {}, NVLinks {}, performance rank {}\n", l.a, l.b,
                       l.p2p ? "yes" : "no", l.nvlinks < 0 ? std::string("unknown") : std::to_string(l.nvlinks),
                       l.performance_rank);

  out += "\n== NCCL (the collective model fitted by calibrate/fit.hpp; error = model / measured time - 1)\n";
  out += fmt::format("Base: {} {} ({} GB/s per direction), {}\n", f.base.intra.kind, f.base.intra.name,
                     f.base.intra.bandwidth / 1e9, f.base.source);
  if (f.nccl) {
    out += param_table(*f.nccl, "  ");
    out += fmt::format("  residuals: median |error| {:.1f}%, max {:.1f}% ({}), {} points; {} iterations\n",
                       f.nccl->error.median_abs * 100, f.nccl->error.max_abs * 100, f.nccl->error.worst,
                       f.nccl->error.points, f.nccl->iterations);
    out += "  by size: " + band_line(f.nccl->points) + "\n";
    if (!f.nccl_held_out.empty()) {
      out += "  held out, each predicted by a fit to the other samples (what the fit does on a collective it was "
             "not given):\n" +
             held_out_table_lines(f.nccl_held_out, "    ");
    } else if (!f.held_out_skipped.empty()) {
      out += "  held out: not fitted (" + f.held_out_skipped + ")\n";
    }
    out += residual_table(f.nccl->points, "  ");
  } else {
    out += "  skipped: " + f.nccl_skipped + "\n";
  }

  out += has_device_profile(f)
             ? "\n== Device profile: the measured kernels below, for the simulator to interpolate (the cluster file names it)\n"
             : "\n== Device profile: not written (no 16-bit GEMM or no copy sweep measured); the cluster file uses the "
               "datasheet roofline with the efficiencies below\n";
  const auto& gpu = f.base.gpu;
  out += fmt::format("\n== GEMMs (cuBLASLt; peak bf16 {:.1f}, TF32 {:.1f} TFLOP/s: {})\n", gpu.peak_flops_bf16 / 1e12,
                     gpu.peak_flops_tf32 / 1e12, gpu.source);
  out += fmt::format("  gemm_efficiency {:.4f}: {}\n", f.device.gemm_efficiency, f.device.gemm_basis);
  out += fmt::format("  {:>7} {:>7} {:>7} {:<5} {:>11} {:>9} {:>8}  {}\n", "m", "n", "k", "dtype", "seconds",
                     "TFLOP/s", "of peak", "origin");
  for (const auto& s : m.gemm) {
    const double peak = gemm_peak_flops(gpu, s.dtype);
    const double rate = s.flops() / s.seconds;
    out += fmt::format("  {:>7g} {:>7g} {:>7g} {:<5} {:>11.4g} {:>9.1f} {:>7.1f}%  {}\n", s.m, s.n, s.k, s.dtype,
                       s.seconds, rate / 1e12, 100 * rate / peak, s.origin);
  }
  out += "\n== Attention, forward and backward (flash-attention FLOP convention)\n";
  if (f.device.attention_vs_gemm > 0)
    out += fmt::format("  measured attention rate / GEMM rate at the scenario's shapes: {:.3f} (the simulator assumes "
                       "0.75, sim/compute.cpp)\n",
                       f.device.attention_vs_gemm);
  for (const auto& s : m.attention)
    out += fmt::format("  {:<12} {:<3} {} bh {:>5g} seq {:>6g} hd {:>4g}: {:.4g} s, {:.1f} TFLOP/s ({})\n", s.kernel,
                       s.direction, s.causal ? "causal" : "full  ", s.batch_heads, s.seq, s.head_dim, s.seconds,
                       s.flops() / s.seconds / 1e12, s.origin);
  out += "\n== NCCL's blocks on the SMs: a GEMM alone and beside spinning blocks\n";
  if (m.sm_holds.empty()) out += "  not measured\n";
  for (const auto& s : m.sm_holds)
    out += fmt::format("  {:>3} blocks of {} threads: {:.4g} s alone, {:.4g} s beside: {:.3f} of an SM per block\n",
                       s.blocks, s.threads, s.alone_s, s.beside_s,
                       block_share(s, m.box.sms()));
  if (f.device.nccl_block_share > 0)
    out += fmt::format("  block_share {:.3f} (the simulator's default, 1: a whole SM per channel): {}\n",
                       f.device.nccl_block_share, f.device.nccl_block_basis);
  out += "\n== Memory-bound kernels: t = floor + bytes / rate over copy, scale and add\n";
  if (f.device.memory.points > 0)
    out += fmt::format("  rate {:.1f} GB/s = {:.4f} of the datasheet's {:.1f} GB/s; floor {:.2f} us; residuals mean "
                       "{:.1f}%, max {:.1f}% over {} points{}\n",
                       f.device.memory.rate / 1e9, f.device.memory_efficiency, gpu.memory_bandwidth / 1e9,
                       f.device.memory.intercept_s * 1e6, f.device.memory.mean_abs_error * 100,
                       f.device.memory.max_abs_error * 100, f.device.memory.points,
                       f.device.memory_note.empty() ? "" : "; " + f.device.memory_note);
  for (const auto& s : m.memory) {
    const double model = f.device.memory.points > 0 ? f.device.memory.intercept_s + s.bytes / f.device.memory.rate : 0;
    out += fmt::format("  {:<6} {:>12g} B {:>11.4g} s {:>9.1f} GB/s{}\n", s.kernel, s.bytes, s.seconds,
                       s.bytes / s.seconds / 1e9,
                       model > 0 ? fmt::format("  model {:+.1f}%", 100 * (model / s.seconds - 1)) : "");
  }
  out += fmt::format("\n== Launch and host\n  empty kernel back to back: {:.2f} us of GPU time per launch\n"
                     "  cudaLaunchKernel: {:.2f} us of CPU time per launch (the simulator's host.kernel_issue is "
                     "{:.1f} us for eager PyTorch)\n",
                     m.empty_kernel_s * 1e6, m.issue_s * 1e6, sim::HostCost{}.kernel_issue_s * 1e6);
  out += "  TAGC kernels: " + (m.tagc_bench.empty() ? std::string("not run") : m.tagc_bench) + "\n";
  if (!f.notes.empty()) {
    out += "\n== Notes\n";
    for (const auto& n : f.notes) out += "  - " + n + "\n";
  }
  return out;
}

void check_writable_dir(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw InputError(fmt::format("{}: cannot create the output folder '{}': {}", flag, dir,
                                 ec ? ec.message() : "not a directory"));
  const auto probe = (std::filesystem::path(dir) / ".tagcsim-write-probe").string();
  {
    std::ofstream f(probe);
    if (!f) throw InputError(fmt::format("{}: cannot write in the output folder '{}': {}", flag, dir, std::strerror(errno)));
  }
  std::filesystem::remove(probe, ec);
}

namespace {
std::string profile_file(const BoxPlan& plan) {
  for (const auto& file : plan.files)
    if (file.name.rfind("device-", 0) == 0) return file.name;
  return {};
}
}  // namespace

void write_box_files(const BoxFit& f, const BoxPlan& plan, const std::string& dir) {
  check_writable_dir(dir, "--out");
  auto path = [&](const std::string& name) { return (std::filesystem::path(dir) / name).string(); };
  for (const auto& file : plan.files) {
    const auto& n = file.name;
    if (n == "measurements.yaml") write_file(path(n), measurements_yaml(f.measured), "--out");
    else if (n.rfind("device-", 0) == 0) {
      if (has_device_profile(f)) write_file(path(n), device_profile_yaml(f), "--out");
    } else if (n.rfind("cluster-", 0) == 0) {
      write_file(path(n), box_cluster_yaml(f, has_device_profile(f) ? profile_file(plan) : ""), "--out");
    }
    else if (n == "report.txt") write_file(path(n), box_report(f), "--out");
  }
}

}  // namespace tagcsim::calibrate
