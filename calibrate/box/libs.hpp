// NCCL, cuBLASLt, NVML and cuDNN, loaded at run time (dlopen). A GPU machine may have the driver
// and nothing else, or these libraries in a Python wheel rather than the toolkit: the binary starts
// anyway, looks where they usually are (the loader's path, $TAGCSIM_CUDA_LIBS, the CUDA toolkit,
// pip's nvidia/* wheels on the loader path) and names what it could not find.
#pragma once

#include <cublasLt.h>
#include <nccl.h>

#include <string>

namespace tagcsim::calibrate::box {

struct Nccl {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclCommInitAll) CommInitAll = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
  decltype(&::ncclAllGather) AllGather = nullptr;
  decltype(&::ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
  decltype(&::ncclReduce) Reduce = nullptr;
  decltype(&::ncclBroadcast) Broadcast = nullptr;
  std::string path, version;  // version "2.28.9"
};

struct CublasLt {
  decltype(&::cublasLtGetVersion) GetVersion = nullptr;
  decltype(&::cublasLtCreate) Create = nullptr;
  decltype(&::cublasLtDestroy) Destroy = nullptr;
  decltype(&::cublasLtMatmul) Matmul = nullptr;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic = nullptr;
  std::string path, version;
};

// Loaded once per process; nullptr with `why` when the library is not there (or lacks a symbol).
const Nccl* nccl(std::string& why);
const CublasLt* cublaslt(std::string& why);
// "9.19.0" from cudnnGetVersion, or "not found: ..."; cuDNN is only asked for its version.
std::string cudnn_version();

// NVML, for what the CUDA runtime does not say: the driver version and NVLinks.
std::string driver_version();           // "580.159.03", or "unknown (...)"
int active_nvlinks(const std::string& pci_bus_id);  // -1 when NVML is missing

// Throws std::runtime_error naming the call and NCCL's / cuBLASLt's error.
void check_nccl(ncclResult_t r, const char* call);
void check_cublas(cublasStatus_t s, const char* call);

}  // namespace tagcsim::calibrate::box
