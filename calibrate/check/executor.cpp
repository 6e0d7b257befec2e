// `calibrate check`'s executor: the simulator's schedule, run for real.
//
// One thread per GPU stands for one FSDP rank (PyTorch's process). Each walks the schedule in its
// issue order, as the CPU thread of that rank would (calibrate/check_walk.hpp, tested on the CPU):
//   - a host task: block on the GPU tasks it waits for (cudaEventSynchronize: FSDP's
//     event.synchronize() in the rate limiter), then spin for its modelled host time (hooks,
//     kernel issue) unless --no-host-emulation;
//   - a GPU task: the host first reaches its issue point (the syncs before it, and issue_delay of
//     host time), then enqueues it on the CUDA stream of its sim::Stream after cudaStreamWaitEvent
//     on the tasks it waits for on other streams, between two CUDA events that time it.
// What a task runs: forward/backward the unit's kernel list (models/kernel_list.hpp, the list the
// simulator times) in order: each GEMM through cuBLASLt in the parameters' dtype, each attention
// call math-blocked (calibrate/box/attention.hpp), each memory-bound kernel as one streaming
// kernel of its bytes; the optimizer, FSDP's copies and casts the bytes their modelled time
// implies at the GPU's streaming rate; collectives the NCCL call of each phase, `count` times, on
// one communicator per stream (a process group each); compression kernels TAGC's CUDA kernels
// (kernels/tagc.hpp) on the compute stream. Every stream of the schedule (host, compute, the
// communicators', FSDP1's post-backward) has its CUDA stream; host tasks run on the thread.
#include "calibrate/box/attention.hpp"
#include "calibrate/box/cuda_util.hpp"
#include "calibrate/box/gemm.hpp"
#include "calibrate/box/kernels.hpp"
#include "calibrate/box/libs.hpp"
#include "calibrate/box/measure_parts.hpp"
#include "calibrate/box/runtime.hpp"
#include "calibrate/check_stages.hpp"
#include "calibrate/check_walk.hpp"
#include "calibrate/unit_work.hpp"
#include "common/input.hpp"
#include "kernels/tagc.hpp"
#include "sim/compute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace tagcsim::calibrate::box {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
void spin_until(Clock::time_point t) {
  while (Clock::now() < t) {
  }
}

bool is_gpu(const sim::Task& t) { return t.stream != sim::Stream::Host; }

// The communicators of one stream: the GPUs split into the phase's groups.
struct CommSet {
  std::vector<ncclComm_t> by_gpu;  // the communicator GPU i uses
  std::vector<std::vector<ncclComm_t>> owned;
};

struct Shared {
  const sim::StepSetup& setup;
  const sim::Policy& policy;
  const sim::Schedule& s;
  const CheckOptions& o;
  const Nccl* nccl = nullptr;
  const CublasLt* lt = nullptr;
  std::map<std::pair<int, int>, CommSet> comms;  // (stream, group ranks) -> communicators
  std::vector<std::vector<sim::TaskTiming>> timings;  // per step, rank 0
  std::vector<std::vector<double>> step_s;           // per step, per GPU
  std::mutex error_mu;
  std::exception_ptr error;
};

// Group of `ranks` GPUs containing GPU i: consecutive blocks on the shard group's streams,
// strided on the replica group's (HYBRID_SHARD inside one node).
std::vector<int> group_of(int i, int ranks, int n, bool strided) {
  std::vector<int> g;
  if (strided) {
    const int stride = n / ranks;
    for (int k = 0; k < ranks; ++k) g.push_back(i % stride + k * stride);
  } else {
    const int first = i / ranks * ranks;
    for (int k = 0; k < ranks; ++k) g.push_back(first + k);
  }
  return g;
}

void make_comms(Shared& sh) {
  const int n = int(sh.o.gpus.size());
  for (const auto& t : sh.s.tasks)
    for (const auto& ph : t.phases) {
      const int ranks = ph.plan.group.ranks();
      const auto key = std::make_pair(int(t.stream), ranks);
      if (sh.comms.count(key)) continue;
      if (ranks > n || n % ranks)
        throw InputError(fmt::format("task '{}': a collective over {} GPUs does not fit the {} GPUs of this run", t.name,
                                     ranks, n));
      CommSet cs;
      cs.by_gpu.resize(std::size_t(n));
      const bool strided = t.stream == sim::Stream::AllReduce;
      std::vector<char> placed(std::size_t(n), 0);
      for (int i = 0; i < n; ++i) {
        if (placed[std::size_t(i)]) continue;
        const auto g = group_of(i, ranks, n, strided);
        std::vector<int> devs;
        for (int r : g) devs.push_back(sh.o.gpus[std::size_t(r)]), placed[std::size_t(r)] = 1;
        std::vector<ncclComm_t> c(g.size());
        check_nccl(sh.nccl->CommInitAll(c.data(), int(c.size()), devs.data()), "ncclCommInitAll");
        for (std::size_t k = 0; k < g.size(); ++k) cs.by_gpu[std::size_t(g[k])] = c[k];
        cs.owned.push_back(std::move(c));
      }
      sh.comms.emplace(key, std::move(cs));
    }
}

// One rank: its GPU, streams, buffers and the work of each task.
class Rank {
 public:
  Rank(Shared& sh, int rank) : sh_(sh), rank_(rank), dev_(sh.o.gpus[std::size_t(rank)]) {
    BOX_CUDA(cudaSetDevice(dev_));
    for (auto& st : streams_) st = std::make_unique<Stream>();
    gemm_ = std::make_unique<Gemm>(*sh.lt);
    type_ = sh.setup.training.param_dtype == sim::Dtype::FP32
                ? GemmType::Tf32
                : sh.setup.training.param_dtype == sim::Dtype::FP16 ? GemmType::Fp16 : GemmType::Bf16;
    allocate();
    base_ = std::make_unique<Event>();  // events belong to this GPU: made after cudaSetDevice
    for (std::size_t i = 0; i < sh.s.tasks.size(); ++i) start_.emplace_back(), end_.emplace_back();
  }

  // One step; returns the rank's step time (last task end).
  double step(std::vector<sim::TaskTiming>& out) {
    BOX_CUDA(cudaSetDevice(dev_));
    const auto& tasks = sh_.s.tasks;
    base_->record(stream(sim::Stream::Compute));
    BOX_CUDA(cudaEventSynchronize(base_->get()));
    Host host(*this);
    const auto host_times = walk_host(sh_.s, host, sh_.o.emulate_host);
    BOX_CUDA(cudaDeviceSynchronize());
    out.assign(tasks.size(), {});
    double last = 0;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      out[i] = is_gpu(tasks[i]) ? sim::TaskTiming{start_[i].since(*base_), end_[i].since(*base_)} : host_times[i];
      last = std::max(last, out[i].end);
    }
    return last;
  }

 private:
  cudaStream_t stream(sim::Stream s) { return streams_[std::size_t(s)]->get(); }
  // Bytes/s of a streaming kernel on this GPU, as the simulator times FSDP's copies.
  double hbm_rate() const {
    const auto& g = sh_.setup.cluster.gpu;
    const auto* prof = sim::device_kernel_profile(g);
    return prof ? prof->stream_bandwidth() : g.memory_bandwidth * g.memory_efficiency;
  }

  void allocate() {
    const auto& setup = sh_.setup;
    std::size_t a = 1, b = 1, c = 1;
    double traffic = 1 << 20, coll = 1 << 20;
    std::size_t tagc = 0;
    for (const auto& u : setup.units) {
      const auto& kl = kernels_of(u);
      for (const auto* list : {&kl.forward, &kl.backward})
        for (const auto& k : *list) switch (k.kind) {
            case models::KernelKind::Gemm:
              a = std::max(a, std::size_t(k.m * k.k));
              b = std::max(b, std::size_t(k.k * k.n));
              c = std::max(c, std::size_t(k.m * k.n));
              break;
            case models::KernelKind::Attention:
              if (!attention_.count(key_of(k)))
                attention_[key_of(k)] = std::make_unique<MathAttention>(*gemm_, std::get<0>(key_of(k)),
                                                                        std::get<1>(key_of(k)), std::get<2>(key_of(k)));
              break;
            case models::KernelKind::Memory: traffic = std::max(traffic, k.bytes); break;
          }
      if (sim::unit_policy(sh_.policy, u)) tagc = std::max(tagc, std::size_t(u.params));
    }
    for (const auto& t : sh_.s.tasks) {
      for (const auto& ph : t.phases) coll = std::max(coll, ph.plan.bytes);
      if (!t.phases.empty() || !is_gpu(t)) continue;
      if (t.category != sim::Category::Forward && t.category != sim::Category::Backward)
        traffic = std::max(traffic, t.seconds * hbm_rate());
    }
    traffic = std::min(traffic, kTrafficBuffer);
    const std::size_t e = element_bytes(type_);
    ga_ = DeviceBuffer(a * e), gb_ = DeviceBuffer(b * e), gc_ = DeviceBuffer(c * e);
    const auto fill = type_ == GemmType::Tf32 ? kern::Fill::Fp32 : type_ == GemmType::Fp16 ? kern::Fill::Fp16 : kern::Fill::Bf16;
    kern::fill_uniform(ga_.get(), a, fill, 5, nullptr);
    kern::fill_uniform(gb_.get(), b, fill, 6, nullptr);
    tin_ = DeviceBuffer(std::size_t(traffic / 2) + 64), tout_ = DeviceBuffer(std::size_t(traffic / 2) + 64);
    for (int s : {int(sim::Stream::AllGather), int(sim::Stream::ReduceScatter), int(sim::Stream::AllReduce)}) {
      send_[s] = DeviceBuffer(std::size_t(coll) + 256);
      recv_[s] = DeviceBuffer(std::size_t(coll) + 256);
    }
    if (tagc > 0) {
      kernels::EngineOptions eo;
      eo.device = dev_;
      eo.stream = stream(sim::Stream::Compute);
      engine_ = kernels::make_engine(kernels::Backend::Cuda, eo);
      stages_ = std::make_unique<StageBuffers>(*engine_, tagc, sh_.setup.shard_size());
    }
    BOX_CUDA(cudaDeviceSynchronize());
  }

  // The walk's side on this GPU: the host clock, CUDA events to wait on, the task's stream.
  class Host : public HostSide {
   public:
    explicit Host(Rank& r) : r_(r), t0_(Clock::now()) {}
    double now() override { return seconds_since(t0_); }
    double wait(int task) override {
      BOX_CUDA(cudaEventSynchronize(r_.end_[std::size_t(task)].get()));
      return now();
    }
    void spend_until(double t) override {
      spin_until(t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(t)));
    }
    void issue(int task) override { r_.issue(task); }

   private:
    Rank& r_;
    Clock::time_point t0_;
  };

  void issue(int i) {
    const auto& tasks = sh_.s.tasks;
    const auto& t = tasks[std::size_t(i)];
    const cudaStream_t st = stream(t.stream);
    for (int d : t.after)
      if (d >= 0 && is_gpu(tasks[std::size_t(d)]) && tasks[std::size_t(d)].stream != t.stream)
        BOX_CUDA(cudaStreamWaitEvent(st, end_[std::size_t(d)].get(), 0));
    start_[std::size_t(i)].record(st);
    run(t, st);
    end_[std::size_t(i)].record(st);
  }

  void run(const sim::Task& t, cudaStream_t st) {
    if (!t.phases.empty()) return collective(t, st);
    switch (t.category) {
      case sim::Category::Forward:
      case sim::Category::Backward: return compute(t, st);
      case sim::Category::CompressionKernel:
        if (stages_ && run_compression_task(*engine_, *stages_, sh_.setup, sh_.policy, t)) return;
        [[fallthrough]];
      default:
        if (t.seconds > 0) stream_bytes(t.seconds * hbm_rate(), st);
    }
  }

  static std::tuple<std::size_t, std::size_t, std::size_t> key_of(const models::Kernel& a) {
    return {std::size_t(a.batch_heads), std::size_t(a.seq), std::size_t(a.head_dim)};
  }

  // The optimizer over a whole unsharded model reads and writes more than the GPU holds (AdamW over
  // 7B parameters on one GPU: ~190 GB), so traffic past the buffers runs as passes over them; at
  // that size the rate is flat, and one more launch per GiB is noise.
  static constexpr double kTrafficBuffer = 2.0 * (1 << 30);
  void stream_bytes(double bytes, cudaStream_t st) {
    for (; bytes > kTrafficBuffer; bytes -= kTrafficBuffer) kern::traffic(tout_.get(), tin_.get(), kTrafficBuffer, st);
    kern::traffic(tout_.get(), tin_.get(), bytes, st);
  }

  // The unit's kernels of this pass, in the order the simulator times them.
  void compute(const sim::Task& t, cudaStream_t st) {
    const auto& kl = kernels_of(sh_.setup.units[std::size_t(t.unit)]);
    for (const auto& k : t.category == sim::Category::Backward ? kl.backward : kl.forward) switch (k.kind) {
        case models::KernelKind::Gemm:
          gemm_->run({.m = std::size_t(k.m), .n = std::size_t(k.n), .k = std::size_t(k.k), .a = ga_.get(),
                      .lda = std::size_t(k.m), .b = gb_.get(), .ldb = std::size_t(k.k), .c = gc_.get(),
                      .ldc = std::size_t(k.m)},
                     type_, st);
          break;
        case models::KernelKind::Attention: {
          auto& a = *attention_.at(key_of(k));
          k.backward ? a.backward(k.causal, st) : a.forward(k.causal, st);
          break;
        }
        case models::KernelKind::Memory:
          if (k.bytes > 0) stream_bytes(k.bytes, st);
          break;
      }
  }

  void collective(const sim::Task& t, cudaStream_t st) {
    const auto& L = *sh_.nccl;
    const int slot = int(t.stream) == int(sim::Stream::AllReduce) || int(t.stream) == int(sim::Stream::ReduceScatter)
                         ? int(t.stream)
                         : int(sim::Stream::AllGather);
    for (const auto& ph : t.phases) {
      const int ranks = ph.plan.group.ranks();
      ncclComm_t comm = sh_.comms.at({int(t.stream), ranks}).by_gpu[std::size_t(rank_)];
      const std::size_t elems = std::max<std::size_t>(1, std::size_t(ph.plan.bytes / 4));
      const std::size_t part = std::max<std::size_t>(1, elems / std::size_t(ranks));
      const void* in = send_[slot].get();
      void* out = recv_[slot].get();
      for (int k = 0; k < ph.count; ++k) {
        switch (ph.plan.op) {
          case sim::CollectiveOp::AllGather: check_nccl(L.AllGather(in, out, part, ncclFloat32, comm, st), "ncclAllGather"); break;
          case sim::CollectiveOp::ReduceScatter:
            check_nccl(L.ReduceScatter(in, out, part, ncclFloat32, ncclSum, comm, st), "ncclReduceScatter");
            break;
          case sim::CollectiveOp::AllReduce:
            check_nccl(L.AllReduce(in, out, elems, ncclFloat32, ncclSum, comm, st), "ncclAllReduce");
            break;
          case sim::CollectiveOp::Reduce:
            check_nccl(L.Reduce(in, out, elems, ncclFloat32, ncclSum, 0, comm, st), "ncclReduce");
            break;
          case sim::CollectiveOp::Broadcast:
            check_nccl(L.Broadcast(in, out, elems, ncclFloat32, 0, comm, st), "ncclBroadcast");
            break;
          case sim::CollectiveOp::AllToAll:  // no FSDP schedule issues one
            throw std::runtime_error("calibrate check: an all-to-all in a schedule is not supported");
        }
      }
    }
  }

  Shared& sh_;
  int rank_, dev_;
  std::array<std::unique_ptr<Stream>, sim::kStreams> streams_;
  std::unique_ptr<Gemm> gemm_;
  GemmType type_ = GemmType::Bf16;
  std::map<std::tuple<std::size_t, std::size_t, std::size_t>, std::unique_ptr<MathAttention>> attention_;
  DeviceBuffer ga_, gb_, gc_, tin_, tout_;
  std::array<DeviceBuffer, sim::kStreams> send_, recv_;
  std::unique_ptr<kernels::Engine> engine_;
  std::unique_ptr<StageBuffers> stages_;
  std::unique_ptr<Event> base_;
  std::vector<Event> start_, end_;
};

}  // namespace

MeasuredRun execute(const sim::StepSetup& setup, const sim::Policy& policy, const sim::StepResult& predicted,
                    const CheckOptions& o, const Progress& progress) {
  const auto& s = predicted.schedule;
  const int n = int(o.gpus.size());
  if (n != setup.cluster.gpus())
    throw InputError(fmt::format("calibrate check: the scenario has {} GPUs, {} given", setup.cluster.gpus(), n));
  std::string why;
  Shared sh{setup, policy, s, o};
  sh.lt = cublaslt(why);
  if (!sh.lt) throw InputError("calibrate check: cuBLASLt is needed for the compute tasks: " + why);
  const bool collectives = std::any_of(s.tasks.begin(), s.tasks.end(), [](const auto& t) { return !t.phases.empty(); });
  sh.nccl = nccl(why);
  if (collectives && !sh.nccl) throw InputError("calibrate check: NCCL is needed for the collectives: " + why);
  if (progress) progress(fmt::format("check {}: {} tasks on {} GPU(s): setting up", policy.label, s.tasks.size(), n));
  if (collectives) make_comms(sh);
  const int total = o.warmup_steps + o.steps;
  sh.timings.resize(std::size_t(total));
  sh.step_s.assign(std::size_t(total), std::vector<double>(std::size_t(n)));
  std::barrier sync_point(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        Rank rank(sh, r);
        for (int k = 0; k < total; ++k) {
          sync_point.arrive_and_wait();  // every rank starts the step together
          std::vector<sim::TaskTiming> t;
          sh.step_s[std::size_t(k)][std::size_t(r)] = rank.step(t);
          if (r == 0) sh.timings[std::size_t(k)] = std::move(t);
        }
      } catch (...) {
        std::lock_guard lock(sh.error_mu);
        if (!sh.error) sh.error = std::current_exception();
        sync_point.arrive_and_drop();
        return;
      }
    });
  for (auto& t : threads) t.join();
  for (auto& [key, cs] : sh.comms)
    for (auto& group : cs.owned)
      for (auto c : group) sh.nccl->CommDestroy(c);
  if (sh.error) std::rethrow_exception(sh.error);

  MeasuredRun m;
  m.policy = policy.label;
  m.gpus = n;
  const auto info = box_info({o.gpus.front()});
  m.box = fmt::format("{} x {}, driver {}, CUDA {}, NCCL {}, cuBLASLt {}", n, info.gpus.front().name, info.driver,
                      info.cuda_runtime, info.nccl, info.cublaslt);
  std::vector<std::pair<double, int>> order;
  for (int k = o.warmup_steps; k < total; ++k) {
    const double step = *std::max_element(sh.step_s[std::size_t(k)].begin(), sh.step_s[std::size_t(k)].end());
    m.step_times.push_back(step);
    order.push_back({step, k});
    if (progress) progress(fmt::format("check {}: step {}: {:.3f} ms", policy.label, k - o.warmup_steps + 1, step * 1e3));
  }
  std::sort(order.begin(), order.end());
  m.timings = sh.timings[std::size_t(order[order.size() / 2].second)];
  m.notes = {"rank 0's timeline of the median step; GPU tasks timed by CUDA events, host tasks by the host clock",
             o.emulate_host ? "host tasks spin for their modelled time (hooks, kernel issue), so the host lags the GPU "
                              "as modelled; the real issue work of this executor comes on top"
                            : "host tasks take only this executor's own issue time (no emulation)",
             "attention runs math-blocked on cuBLASLt (calibrate/box/attention.hpp), not a fused flash kernel",
             "each memory-bound kernel of the units' kernel lists runs as one streaming kernel of its bytes"};
  return m;
}

}  // namespace tagcsim::calibrate::box
