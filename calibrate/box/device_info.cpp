// The box as the CUDA runtime, NVML and /proc describe it: what every output file records.
#include "calibrate/box/cuda_util.hpp"
#include "calibrate/box/libs.hpp"
#include "calibrate/box/measure_parts.hpp"

#include <fmt/format.h>

#include <ctime>
#include <fstream>
#include <thread>

namespace tagcsim::calibrate::box {
namespace {

std::string cuda_version(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

}  // namespace

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

BoxInfo box_info(const std::vector<int>& gpus) {
  BoxInfo b;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  b.cuda_driver = cuda_version(driver);
  b.cuda_runtime = cuda_version(runtime);
  b.driver = driver_version();
  std::string why;
  const Nccl* n = nccl(why);
  b.nccl = n ? n->version : "not found: " + why;
  const CublasLt* lt = cublaslt(why);
  b.cublaslt = lt ? lt->version : "not found: " + why;
  b.cudnn = cudnn_version();
  b.host = fmt::format("{}, {} hardware threads", cpu_model(), std::thread::hardware_concurrency());
  b.date = utc_now();
  std::vector<int> links;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const int d = gpus[i];
    cudaDeviceProp p{};
    BOX_CUDA(cudaGetDeviceProperties(&p, d));
    BoxGpu g;
    g.index = int(i);
    g.name = p.name;
    g.sm = p.major * 10 + p.minor;
    g.sms = p.multiProcessorCount;
    g.memory_bytes = double(p.totalGlobalMem);
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, d) == cudaSuccess) g.sm_clock_mhz = khz / 1000.0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, d) == cudaSuccess) g.memory_clock_mhz = khz / 1000.0;
    cudaDeviceGetAttribute(&g.bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, d);
    cudaGetLastError();
    char pci[32] = {};
    if (cudaDeviceGetPCIBusId(pci, sizeof pci, d) == cudaSuccess) g.pci = pci;
    b.gpus.push_back(g);
    links.push_back(active_nvlinks(g.pci));
  }
  // NVML gives each GPU's active NVLinks, not where they lead: a pair counts as NVLink-joined when
  // both have active links and peer access (an NVSwitch board joins every pair).
  for (std::size_t a = 0; a < gpus.size(); ++a)
    for (std::size_t c = a + 1; c < gpus.size(); ++c) {
      BoxLink l;
      l.a = int(a);
      l.b = int(c);
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, gpus[a], gpus[c]) == cudaSuccess) l.p2p = can != 0;
      int rank = -1;
      if (cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, gpus[a], gpus[c]) == cudaSuccess)
        l.performance_rank = rank;
      cudaGetLastError();
      l.nvlinks = links[a] < 0 || links[c] < 0 ? -1 : (l.p2p && links[a] > 0 && links[c] > 0 ? std::min(links[a], links[c]) : 0);
      b.links.push_back(l);
    }
  return b;
}

}  // namespace tagcsim::calibrate::box
