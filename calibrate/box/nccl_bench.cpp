// NCCL's collectives as nccl-tests times them, in one process: ncclCommInitAll over the GPUs of a
// sweep, one stream per GPU, the ranks' calls in one group, CUDA events around each call on every
// GPU; the time of a run is the slowest GPU's, and the median of the timed runs is kept. Results
// are then checked once per size: inputs are small integers, so every sum is exact and any
// element that differs is wrong (nccl-tests' #wrong).
#include "calibrate/box/cuda_util.hpp"
#include "calibrate/box/kernels.hpp"
#include "calibrate/box/libs.hpp"
#include "calibrate/box/measure_parts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

namespace tagcsim::calibrate::box {
namespace {

struct Comms {
  const Nccl& lib;
  std::vector<int> devices;
  std::vector<ncclComm_t> comms;
  std::vector<Stream> streams;
  Comms(const Nccl& l, std::vector<int> devs) : lib(l), devices(std::move(devs)), comms(devices.size()) {
    check_nccl(lib.CommInitAll(comms.data(), int(devices.size()), devices.data()), "ncclCommInitAll");
    for (int d : devices) {
      BOX_CUDA(cudaSetDevice(d));
      streams.emplace_back();
    }
  }
  ~Comms() {
    for (auto c : comms) lib.CommDestroy(c);
  }
};

// Elements per rank's send (all_gather) or receive (reduce_scatter) buffer, or of the whole buffer.
std::size_t count_for(const std::string& op, double bytes, int n) {
  const std::size_t elems = std::size_t(bytes / 4);
  if (op == "all_gather" || op == "reduce_scatter") return elems / std::size_t(n);
  return elems;
}

void launch(const Comms& c, const std::string& op, std::size_t count, const std::vector<DeviceBuffer>& send,
            const std::vector<DeviceBuffer>& recv) {
  const auto& L = c.lib;
  check_nccl(L.GroupStart(), "ncclGroupStart");
  for (std::size_t r = 0; r < c.comms.size(); ++r) {
    const cudaStream_t s = c.streams[r].get();
    const void* in = send[r].get();
    void* out = recv[r].get();
    ncclResult_t st = ncclSuccess;
    if (op == "all_gather") st = L.AllGather(in, out, count, ncclFloat32, c.comms[r], s);
    else if (op == "reduce_scatter") st = L.ReduceScatter(in, out, count, ncclFloat32, ncclSum, c.comms[r], s);
    else if (op == "all_reduce") st = L.AllReduce(in, out, count, ncclFloat32, ncclSum, c.comms[r], s);
    else if (op == "reduce") st = L.Reduce(in, out, count, ncclFloat32, ncclSum, 0, c.comms[r], s);
    else st = L.Broadcast(in, out, count, ncclFloat32, 0, c.comms[r], s);
    check_nccl(st, op.c_str());
  }
  check_nccl(L.GroupEnd(), "ncclGroupEnd");
}

// Fills the inputs with the pattern, runs the collective once and counts wrong elements.
long check(const Comms& c, const std::string& op, std::size_t count, const std::vector<DeviceBuffer>& send,
           const std::vector<DeviceBuffer>& recv) {
  const int n = int(c.devices.size());
  const std::size_t in_count = op == "reduce_scatter" ? count * n : count;
  for (int r = 0; r < n; ++r) {
    BOX_CUDA(cudaSetDevice(c.devices[r]));
    kern::fill_pattern(send[r].as<float>(), in_count, r, 0, c.streams[r].get());
    BOX_CUDA(cudaMemsetAsync(recv[r].get(), 0, recv[r].bytes(), c.streams[r].get()));
  }
  launch(c, op, count, send, recv);
  long wrong = 0;
  for (int r = 0; r < n; ++r) {
    BOX_CUDA(cudaSetDevice(c.devices[r]));
    DeviceBuffer counter(sizeof(unsigned long long));
    const cudaStream_t s = c.streams[r].get();
    BOX_CUDA(cudaMemsetAsync(counter.get(), 0, sizeof(unsigned long long), s));
    auto* w = counter.as<unsigned long long>();
    const float* x = recv[r].as<float>();
    if (op == "all_gather")
      for (int q = 0; q < n; ++q) kern::count_wrong(x + std::size_t(q) * count, count, n, q, 0, false, w, s);
    else if (op == "reduce_scatter") kern::count_wrong(x, count, n, r, std::size_t(r) * count, true, w, s);
    else if (op == "all_reduce" || (op == "reduce" && r == 0)) kern::count_wrong(x, count, n, r, 0, true, w, s);
    else if (op == "broadcast") kern::count_wrong(x, count, n, 0, 0, false, w, s);
    unsigned long long host = 0;
    BOX_CUDA(cudaMemcpyAsync(&host, w, sizeof host, cudaMemcpyDeviceToHost, s));
    BOX_CUDA(cudaStreamSynchronize(s));
    wrong += long(host);
  }
  return wrong;
}

}  // namespace

std::vector<NcclSample> run_nccl(const BoxPlan& plan, std::vector<std::string>& notes, const Progress& progress) {
  std::vector<NcclSample> out;
  std::string why;
  const Nccl* lib = nccl(why);
  if (!lib) {
    notes.push_back("NCCL not measured: " + why);
    if (progress) progress("NCCL: skipped: " + why);
    return out;
  }
  std::map<int, int> position;  // device -> index in the box's GPU list
  for (std::size_t i = 0; i < plan.gpus.size(); ++i) position[plan.gpus[i]] = int(i);
  std::map<std::vector<int>, std::unique_ptr<Comms>> comms;
  for (const auto& sweep : plan.nccl) {
    auto& c = comms[sweep.ranks];
    if (!c) c = std::make_unique<Comms>(*lib, sweep.ranks);
    const int n = int(sweep.ranks.size());
    const double max_bytes = *std::max_element(sweep.sizes.begin(), sweep.sizes.end());
    std::vector<DeviceBuffer> send, recv;
    for (int d : sweep.ranks) {
      BOX_CUDA(cudaSetDevice(d));
      send.emplace_back(std::size_t(max_bytes) + 256);
      recv.emplace_back(std::size_t(max_bytes) + 256);
    }
    for (double size : sweep.sizes) {
      const std::size_t count = count_for(sweep.op, size, n);
      if (count == 0) continue;  // smaller than one element per rank
      const bool split = sweep.op == "all_gather" || sweep.op == "reduce_scatter";
      const double bytes = double(count) * 4 * (split ? n : 1);
      for (int i = 0; i < plan.warmup; ++i) launch(*c, sweep.op, count, send, recv);
      std::vector<Event> start, stop;  // each on its GPU
      for (int r = 0; r < n; ++r) {
        BOX_CUDA(cudaSetDevice(sweep.ranks[r]));
        start.emplace_back();
        stop.emplace_back();
      }
      std::vector<double> times;
      for (int it = 0; it < plan.iterations; ++it) {
        for (int r = 0; r < n; ++r) {
          BOX_CUDA(cudaSetDevice(sweep.ranks[r]));
          start[r].record(c->streams[r].get());
        }
        launch(*c, sweep.op, count, send, recv);
        double slowest = 0;
        for (int r = 0; r < n; ++r) {
          BOX_CUDA(cudaSetDevice(sweep.ranks[r]));
          stop[r].record(c->streams[r].get());
        }
        for (int r = 0; r < n; ++r) {
          BOX_CUDA(cudaEventSynchronize(stop[r].get()));
          slowest = std::max(slowest, stop[r].since(start[r]));
        }
        times.push_back(slowest);
      }
      NcclSample s;
      s.op = sweep.op;
      for (int d : sweep.ranks) s.ranks.push_back(position.at(d));
      s.bytes = bytes;
      s.time_s = median(times);
      s.time_min_s = *std::min_element(times.begin(), times.end());
      s.iterations = plan.iterations;
      s.wrong = check(*c, sweep.op, count, send, recv);
      out.push_back(s);
      if (progress)
        progress(fmt::format("NCCL {:<14} {} GPUs {:>12} B {:>10.2f} us{}", s.op, n, bytes, s.time_s * 1e6,
                             s.wrong ? fmt::format("  {} WRONG", s.wrong) : ""));
    }
  }
  return out;
}

}  // namespace tagcsim::calibrate::box
