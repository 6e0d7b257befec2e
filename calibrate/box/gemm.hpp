// GEMMs through cuBLASLt on one GPU: the measured shapes, and the building block of the
// math-blocked attention and of `calibrate check`'s compute tasks.
#pragma once

#include "calibrate/box/cuda_util.hpp"
#include "calibrate/box/libs.hpp"

#include <map>
#include <string>
#include <tuple>

namespace tagcsim::calibrate::box {

// Fp8: e4m3 inputs, bf16 output (torch._scaled_mm's, which torchao's float8 Linears call).
enum class GemmType { Bf16, Fp16, Tf32, Fp8 };
GemmType parse_gemm_type(const std::string& dtype);  // bf16, fp16, tf32, fp8
std::size_t element_bytes(GemmType t);                // of the inputs A and B
std::size_t output_bytes(GemmType t);                 // of C

// Column-major, as cuBLAS: C[m x n] = op(A) op(B), op(A) m x k, op(B) k x n, `batch` strided copies.
struct GemmCall {
  std::size_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  const void* a = nullptr;
  std::size_t lda = 0;
  long long stride_a = 0;
  const void* b = nullptr;
  std::size_t ldb = 0;
  long long stride_b = 0;
  void* c = nullptr;
  std::size_t ldc = 0;
  long long stride_c = 0;
  int batch = 1;
  float beta = 0;  // 1 accumulates into C (gradients summed over key blocks)
};

class Gemm {
 public:
  explicit Gemm(const CublasLt& lib);  // on the current device
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  ~Gemm();
  void run(const GemmCall& g, GemmType t, cudaStream_t s);
  // A plain m x n x k GEMM on fresh (uniform random) operands, `warmup` then `iters` timed runs:
  // the median seconds.
  double time(std::size_t m, std::size_t n, std::size_t k, GemmType t, int warmup, int iters, cudaStream_t s);

 private:
  const CublasLt& lib_;
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  struct Plan;
  std::map<std::tuple<std::size_t, std::size_t, std::size_t, bool, bool, int, int, float>, Plan*> plans_;
  Plan& plan(const GemmCall& g, GemmType t);
};

}  // namespace tagcsim::calibrate::box
