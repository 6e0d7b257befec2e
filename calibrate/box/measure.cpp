// measure(): the plan, in order: the box, NCCL, GEMMs, attention, memory-bound kernels, launch
// and host issue, the TAGC bench. Compute is measured on the plan's first GPU (the others are the
// same part); NCCL over the GPUs each sweep names.
#include "calibrate/box/attention.hpp"
#include "calibrate/box/cuda_util.hpp"
#include "calibrate/box/gemm.hpp"
#include "calibrate/box/kernels.hpp"
#include "calibrate/box/libs.hpp"
#include "calibrate/box/measure_parts.hpp"
#include "calibrate/box/runtime.hpp"
#include "common/input.hpp"
#include "kernels/bench.hpp"
#include "kernels/tagc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

namespace tagcsim::calibrate::box {

bool built() { return true; }

int visible_gpus(std::string& why) {
  why = kernels::cuda_problem();
  if (!why.empty()) return 0;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    why = "cudaGetDeviceCount failed";
    return 0;
  }
  return n;
}

std::string gpu_name(int index) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  return p.name;
}

namespace {

void run_memory(const BoxPlan& plan, BoxMeasurements& m, const Progress& progress, cudaStream_t s) {
  const double biggest = *std::max_element(plan.memory_sizes.begin(), plan.memory_sizes.end());
  const std::size_t n_max = std::size_t(biggest / 8) + 1024;
  DeviceBuffer x(n_max * 4), y(n_max * 4), z(n_max * 4);
  kern::fill_uniform(x.get(), n_max, kern::Fill::Fp32, 3, s);
  kern::fill_uniform(y.get(), n_max, kern::Fill::Fp32, 4, s);
  for (const auto& k : plan.memory_kernels)
    for (double bytes : plan.memory_sizes) {
      // Bytes per element read + written: copy, scale, norm 8; add 12.
      const double per = k == "add" ? 12 : 8;
      std::size_t n = std::size_t(bytes / per);
      if (k == "norm") n = std::max<std::size_t>(4096, n / 4096 * 4096);  // rows of 4096 (a hidden size)
      const double t = time_median(plan.warmup, plan.iterations, s, [&] {
        if (k == "copy") kern::copy(y.as<float>(), x.as<float>(), n, s);
        else if (k == "scale") kern::scale(y.as<float>(), x.as<float>(), 0.5f, n, s);
        else if (k == "add") kern::add(z.as<float>(), x.as<float>(), y.as<float>(), n, s);
        else kern::rms_norm(y.as<float>(), x.as<float>(), n / 4096, 4096, s);
      });
      m.memory.push_back({k, double(n) * per, t});
      if (progress) progress(fmt::format("memory {:<6} {:>12.0f} B {:>10.2f} us {:>8.1f} GB/s", k, double(n) * per,
                                         t * 1e6, double(n) * per / t / 1e9));
    }
}

// A bf16 GEMM alone, then beside blocks that spin as NCCL's do while a collective is in flight:
// what one such block takes from the GEMM (calibrate/box_fit.hpp, DeviceFit::nccl_block_share).
void run_sm_hold(Gemm& gemm, const BoxPlan& plan, BoxMeasurements& m, const Progress& progress, cudaStream_t s) {
  constexpr std::size_t kSide = 8192;
  constexpr int kThreads = 512;  // NCCL's Simple protocol
  const int warmup = std::min(plan.warmup, 3), iters = std::min(plan.iterations, 10);
  const double alone = gemm.time(kSide, kSide, kSide, GemmType::Bf16, warmup, iters, s);
  Stream side;
  for (int blocks : {8, 16, 32}) {
    // Long enough to cover the fills, the warm-up and the timed runs even if each ran 3x slower.
    kern::spin(blocks, kThreads, 3.0 * (warmup + iters + 2) * alone + 0.01, side.get());
    const double beside = gemm.time(kSide, kSide, kSide, GemmType::Bf16, warmup, iters, s);
    BOX_CUDA(cudaStreamSynchronize(side.get()));
    m.sm_holds.push_back({blocks, kThreads, double(kSide), double(kSide), double(kSide), alone, beside});
    if (progress)
      progress(fmt::format("SM hold {:>2} blocks: GEMM {:.2f} us alone, {:.2f} us beside", blocks, alone * 1e6,
                           beside * 1e6));
  }
}

void run_launch(BoxMeasurements& m, const Progress& progress, cudaStream_t s) {
  constexpr int kLaunches = 2000;
  for (int i = 0; i < 100; ++i) kern::empty(s);
  BOX_CUDA(cudaStreamSynchronize(s));
  Event start, stop;
  start.record(s);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kLaunches; ++i) kern::empty(s);
  const auto t1 = std::chrono::steady_clock::now();
  stop.record(s);
  BOX_CUDA(cudaEventSynchronize(stop.get()));
  m.issue_s = std::chrono::duration<double>(t1 - t0).count() / kLaunches;
  // GPU time per launch once the queue is ahead of the GPU: the launch floor.
  m.empty_kernel_s = stop.since(start) / kLaunches;
  if (progress)
    progress(fmt::format("launch: empty kernel {:.2f} us of GPU time, cudaLaunchKernel {:.2f} us of CPU time",
                         m.empty_kernel_s * 1e6, m.issue_s * 1e6));
}

}  // namespace

BoxMeasurements measure(const BoxPlan& plan, const std::string& out_dir, const Progress& progress) {
  BoxMeasurements m;
  m.quick = plan.quick;
  if (progress) progress(fmt::format("box: GPUs {} ...", plan.gpus.size()));
  m.box = box_info(plan.gpus);
  if (progress) progress(fmt::format("box: {} x {}, driver {}, CUDA {}, NCCL {}, cuBLASLt {}, cuDNN {}",
                                     m.box.gpus.size(), m.box.gpus.front().name, m.box.driver, m.box.cuda_runtime,
                                     m.box.nccl, m.box.cublaslt, m.box.cudnn));
  m.nccl = run_nccl(plan, m.notes, progress);

  const int dev = plan.gpus.front();
  BOX_CUDA(cudaSetDevice(dev));
  Stream stream;
  const cudaStream_t s = stream.get();
  std::string why;
  if (const CublasLt* lt = cublaslt(why)) {
    Gemm gemm(*lt);
    // Float8 tensor cores arrive with compute capability 8.9 (Ada) and 9.0 (Hopper).
    const int sm = m.box.gpus.front().sm;
    int fp8_failed = 0;
    std::string fp8_error;
    if (sm < 89 && std::any_of(plan.gemms.begin(), plan.gemms.end(), [](const auto& g) { return g.dtype == "fp8"; }))
      m.notes.push_back(fmt::format("float8 GEMMs not measured: compute capability {}.{} has no float8 tensor cores",
                                    sm / 10, sm % 10));
    for (const auto& g : plan.gemms) {
      const bool fp8 = g.dtype == "fp8";
      if (fp8 && sm < 89) continue;
      double t = 0;
      try {
        t = gemm.time(std::size_t(g.shape.m), std::size_t(g.shape.n), std::size_t(g.shape.k), parse_gemm_type(g.dtype),
                      plan.warmup, plan.iterations, s);
      } catch (const std::runtime_error& e) {
        if (!fp8) throw;
        // cuBLASLt's float8 kernels want dimensions in multiples of 16, and an old cuBLASLt has none:
        // the shape is left out, the 16-bit measurements stand.
        if (!fp8_failed++) fp8_error = e.what();
        continue;
      }
      m.gemm.push_back({g.shape.m, g.shape.n, g.shape.k, g.dtype, t, g.origin});
      if (progress)
        progress(fmt::format("GEMM {:>6g} x {:>6g} x {:>6g} {:<5} {:>10.2f} us {:>7.1f} TFLOP/s", g.shape.m, g.shape.n,
                             g.shape.k, g.dtype, t * 1e6, g.shape.flops() / t / 1e12));
    }
    if (fp8_failed)
      m.notes.push_back(fmt::format("float8 GEMMs: {} shape(s) not measured, cuBLASLt refused them ({})", fp8_failed,
                                    fp8_error));
    for (const auto& a : plan.attention)
      for (bool bwd : {false, true}) {
        AttentionSample x;
        x.kernel = "math-blocked";
        x.direction = bwd ? "bwd" : "fwd";
        x.causal = a.causal;
        x.batch_heads = a.batch_heads, x.seq = a.seq, x.head_dim = a.head_dim;
        x.origin = a.origin;
        x.seconds = time_attention(gemm, std::size_t(a.batch_heads), std::size_t(a.seq), std::size_t(a.head_dim),
                                   a.causal, bwd, std::min(plan.warmup, 3), std::min(plan.iterations, 10), s);
        m.attention.push_back(x);
        if (progress)
          progress(fmt::format("attention {} bh {:g} seq {:g} hd {:g}: {:.2f} us, {:.1f} TFLOP/s", x.direction,
                               x.batch_heads, x.seq, x.head_dim, x.seconds * 1e6, x.flops() / x.seconds / 1e12));
      }
    run_sm_hold(gemm, plan, m, progress, s);
  } else {
    m.notes.push_back("GEMMs and attention not measured: " + why);
    if (progress) progress("GEMM: skipped: " + why);
  }
  run_memory(plan, m, progress, s);
  run_launch(m, progress, s);

  // The TAGC kernels: the existing bench, in this process, on the first GPU.
  kernels::BenchOptions bo;
  bo.backend = kernels::Backend::Cuda;
  bo.sizes_bytes = plan.tagc_sizes;
  bo.command = "tagcsim calibrate box (kernels bench, in process)";
  bo.progress = [&](const std::string& line) {
    if (progress) progress("TAGC " + line);
  };
  try {
    const auto report = kernels::run_bench(bo);
    m.tagc_bench = fmt::format("kernels-cuda-{}.json", gpu_slug(m.box.gpus.front().name));
    std::ofstream f(std::filesystem::path(out_dir) / m.tagc_bench);
    f << kernels::bench_json(report);
    if (!f) throw InputError(fmt::format("--out: cannot write {}/{}", out_dir, m.tagc_bench));
  } catch (const kernels::BackendUnavailable& e) {
    m.notes.push_back(std::string("TAGC kernels not measured: ") + e.what());
  }
  BOX_CUDA(cudaDeviceSynchronize());
  return m;
}

}  // namespace tagcsim::calibrate::box
