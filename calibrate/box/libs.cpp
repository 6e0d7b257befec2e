#include "calibrate/box/libs.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace tagcsim::calibrate::box {
namespace {

// Where the libraries usually are, after the loader's own path (LD_LIBRARY_PATH, ldconfig).
std::vector<std::string> candidates(const std::string& soname) {
  std::vector<std::string> out = {soname};
  if (const char* d = std::getenv("TAGCSIM_CUDA_LIBS"))
    for (std::string s = d; !s.empty();) {
      const auto colon = s.find(':');
      out.push_back(s.substr(0, colon) + "/" + soname);
      s = colon == std::string::npos ? "" : s.substr(colon + 1);
    }
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/lib/x86_64-linux-gnu"})
    out.push_back(std::string(dir) + "/" + soname);
  return out;
}

void* open_first(const std::string& soname, std::string& path, std::string& why) {
  std::string tried;
  for (const auto& c : candidates(soname)) {
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      path = c;
      return h;
    }
    if (tried.empty()) tried = dlerror();
  }
  why = fmt::format("{} not found ({}); set TAGCSIM_CUDA_LIBS to its folder", soname, tried);
  return nullptr;
}

template <class F>
bool bind(void* h, const char* name, F& fn, std::string& why) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  if (!fn && why.empty()) why = fmt::format("symbol {} missing", name);
  return fn != nullptr;
}

struct Loaded {
  std::once_flag once;
  bool ok = false;
  std::string why;
};

}  // namespace

const Nccl* nccl(std::string& why) {
  static Loaded state;
  static Nccl lib;
  std::call_once(state.once, [&] {
    void* h = open_first("libnccl.so.2", lib.path, state.why);
    if (!h) return;
    std::string w;
    bool ok = bind(h, "ncclGetVersion", lib.GetVersion, w) & bind(h, "ncclCommInitAll", lib.CommInitAll, w) &
              bind(h, "ncclCommDestroy", lib.CommDestroy, w) & bind(h, "ncclGetErrorString", lib.GetErrorString, w) &
              bind(h, "ncclGroupStart", lib.GroupStart, w) & bind(h, "ncclGroupEnd", lib.GroupEnd, w) &
              bind(h, "ncclAllGather", lib.AllGather, w) & bind(h, "ncclReduceScatter", lib.ReduceScatter, w) &
              bind(h, "ncclAllReduce", lib.AllReduce, w) & bind(h, "ncclReduce", lib.Reduce, w) &
              bind(h, "ncclBroadcast", lib.Broadcast, w);
    if (!ok) {
      state.why = lib.path + ": " + w;
      return;
    }
    int v = 0;
    lib.GetVersion(&v);
    // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
    lib.version = fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
    state.ok = true;
  });
  why = state.why;
  return state.ok ? &lib : nullptr;
}

const CublasLt* cublaslt(std::string& why) {
  static Loaded state;
  static CublasLt lib;
  std::call_once(state.once, [&] {
    void* h = nullptr;
    for (const char* so : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})
      if ((h = open_first(so, lib.path, state.why))) break;
    if (!h) return;
    state.why.clear();
    std::string w;
    bool ok = bind(h, "cublasLtGetVersion", lib.GetVersion, w) & bind(h, "cublasLtCreate", lib.Create, w) &
              bind(h, "cublasLtDestroy", lib.Destroy, w) & bind(h, "cublasLtMatmul", lib.Matmul, w) &
              bind(h, "cublasLtMatmulDescCreate", lib.MatmulDescCreate, w) &
              bind(h, "cublasLtMatmulDescDestroy", lib.MatmulDescDestroy, w) &
              bind(h, "cublasLtMatmulDescSetAttribute", lib.MatmulDescSetAttribute, w) &
              bind(h, "cublasLtMatrixLayoutCreate", lib.MatrixLayoutCreate, w) &
              bind(h, "cublasLtMatrixLayoutDestroy", lib.MatrixLayoutDestroy, w) &
              bind(h, "cublasLtMatrixLayoutSetAttribute", lib.MatrixLayoutSetAttribute, w) &
              bind(h, "cublasLtMatmulPreferenceCreate", lib.MatmulPreferenceCreate, w) &
              bind(h, "cublasLtMatmulPreferenceDestroy", lib.MatmulPreferenceDestroy, w) &
              bind(h, "cublasLtMatmulPreferenceSetAttribute", lib.MatmulPreferenceSetAttribute, w) &
              bind(h, "cublasLtMatmulAlgoGetHeuristic", lib.MatmulAlgoGetHeuristic, w);
    if (!ok) {
      state.why = lib.path + ": " + w;
      return;
    }
    const std::size_t v = lib.GetVersion();  // major * 10000 + minor * 100 + patch
    lib.version = fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
    state.ok = true;
  });
  why = state.why;
  return state.ok ? &lib : nullptr;
}

std::string cudnn_version() {
  std::string path, why;
  void* h = open_first("libcudnn.so.9", path, why);
  if (!h) return "not found: " + why;
  using Fn = std::size_t (*)();
  auto fn = reinterpret_cast<Fn>(dlsym(h, "cudnnGetVersion"));
  if (!fn) return "not usable: " + path + " lacks cudnnGetVersion";
  const std::size_t v = fn();  // cuDNN 9: major * 10000 + minor * 100 + patch
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

namespace {

// The few NVML entry points used, declared from NVML's documented C API.
using nvmlDevice = void*;
struct Nvml {
  int (*Init)() = nullptr;
  int (*SystemGetDriverVersion)(char*, unsigned) = nullptr;
  int (*DeviceGetHandleByPciBusId)(const char*, nvmlDevice*) = nullptr;
  int (*DeviceGetNvLinkState)(nvmlDevice, unsigned, int*) = nullptr;
};

const Nvml* nvml() {
  static std::once_flag once;
  static Nvml lib;
  static bool ok = false;
  std::call_once(once, [] {
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    lib.Init = reinterpret_cast<int (*)()>(dlsym(h, "nvmlInit_v2"));
    lib.SystemGetDriverVersion = reinterpret_cast<int (*)(char*, unsigned)>(dlsym(h, "nvmlSystemGetDriverVersion"));
    lib.DeviceGetHandleByPciBusId =
        reinterpret_cast<int (*)(const char*, nvmlDevice*)>(dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2"));
    lib.DeviceGetNvLinkState = reinterpret_cast<int (*)(nvmlDevice, unsigned, int*)>(dlsym(h, "nvmlDeviceGetNvLinkState"));
    ok = lib.Init && lib.SystemGetDriverVersion && lib.DeviceGetHandleByPciBusId && lib.DeviceGetNvLinkState &&
         lib.Init() == 0;
  });
  return ok ? &lib : nullptr;
}

}  // namespace

std::string driver_version() {
  if (const Nvml* n = nvml()) {
    char buf[96] = {};
    if (n->SystemGetDriverVersion(buf, sizeof buf) == 0) return buf;
  }
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (f && std::getline(f, line)) {
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.03  ..."
    const auto k = line.find("Module");
    if (k != std::string::npos) {
      auto rest = line.substr(k + 6);
      const auto a = rest.find_first_not_of(' ');
      if (a != std::string::npos) return rest.substr(a, rest.find(' ', a) - a);
    }
  }
  return "unknown (no NVML, no /proc/driver/nvidia/version)";
}

int active_nvlinks(const std::string& pci) {
  const Nvml* n = nvml();
  if (!n) return -1;
  nvmlDevice dev = nullptr;
  if (n->DeviceGetHandleByPciBusId(pci.c_str(), &dev) != 0) return -1;
  int active = 0;
  for (unsigned link = 0; link < 18; ++link) {  // NVML_NVLINK_MAX_LINKS on Hopper
    int state = 0;
    if (n->DeviceGetNvLinkState(dev, link, &state) == 0 && state == 1) ++active;
  }
  return active;
}

void check_nccl(ncclResult_t r, const char* call) {
  if (r == ncclSuccess) return;
  std::string why;
  const Nccl* n = nccl(why);
  throw std::runtime_error(fmt::format("NCCL error: {} failed: {}", call, n ? n->GetErrorString(r) : std::to_string(int(r))));
}

void check_cublas(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("cuBLASLt error: {} failed: status {}", call, int(s)));
}

}  // namespace tagcsim::calibrate::box
