#include "calibrate/box/gemm.hpp"

#include "calibrate/box/kernels.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

namespace tagcsim::calibrate::box {
namespace {
constexpr std::size_t kWorkspace = std::size_t(64) << 20;  // cuBLASLt's recommendation for Hopper is 32 MiB
}

GemmType parse_gemm_type(const std::string& d) {
  if (d == "bf16") return GemmType::Bf16;
  if (d == "fp16") return GemmType::Fp16;
  if (d == "tf32") return GemmType::Tf32;
  if (d == "fp8") return GemmType::Fp8;
  throw std::runtime_error("unknown GEMM dtype " + d);
}

std::size_t element_bytes(GemmType t) { return t == GemmType::Tf32 ? 4 : t == GemmType::Fp8 ? 1 : 2; }
std::size_t output_bytes(GemmType t) { return t == GemmType::Tf32 ? 4 : 2; }

struct Gemm::Plan {
  const CublasLt* lib = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (a) lib->MatrixLayoutDestroy(a);
    if (b) lib->MatrixLayoutDestroy(b);
    if (c) lib->MatrixLayoutDestroy(c);
    if (desc) lib->MatmulDescDestroy(desc);
  }
};

Gemm::Gemm(const CublasLt& lib) : lib_(lib), workspace_(kWorkspace) { check_cublas(lib_.Create(&handle_), "cublasLtCreate"); }

Gemm::~Gemm() {
  for (auto& [k, p] : plans_) delete p;
  if (handle_) lib_.Destroy(handle_);
}

Gemm::Plan& Gemm::plan(const GemmCall& g, GemmType t) {
  const auto key = std::make_tuple(g.m, g.n, g.k, g.ta, g.tb, g.batch, int(t), g.beta);
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  auto* p = new Plan;
  p->lib = &lib_;
  plans_[key] = p;
  const cudaDataType_t data = t == GemmType::Bf16   ? CUDA_R_16BF
                              : t == GemmType::Fp16 ? CUDA_R_16F
                              : t == GemmType::Fp8  ? CUDA_R_8F_E4M3
                                                    : CUDA_R_32F;
  const cudaDataType_t out = t == GemmType::Fp8 ? CUDA_R_16BF : data;
  const cublasComputeType_t compute = t == GemmType::Tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check_cublas(lib_.MatmulDescCreate(&p->desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t opa = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_cublas(lib_.MatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa), "TRANSA");
  check_cublas(lib_.MatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb), "TRANSB");
  auto layout = [&](cublasLtMatrixLayout_t& l, std::size_t rows, std::size_t cols, std::size_t ld, long long stride,
                    cudaDataType_t type) {
    check_cublas(lib_.MatrixLayoutCreate(&l, type, rows, cols, ld), "cublasLtMatrixLayoutCreate");
    if (g.batch > 1) {
      const int32_t count = g.batch;
      check_cublas(lib_.MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "BATCH");
      check_cublas(lib_.MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
                   "STRIDE");
    }
  };
  layout(p->a, g.ta ? g.k : g.m, g.ta ? g.m : g.k, g.lda, g.stride_a, data);
  layout(p->b, g.tb ? g.n : g.k, g.tb ? g.k : g.n, g.ldb, g.stride_b, data);
  layout(p->c, g.m, g.n, g.ldc, g.stride_c, out);
  cublasLtMatmulPreference_t pref = nullptr;
  check_cublas(lib_.MatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const std::size_t ws = kWorkspace;
  lib_.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const auto st = lib_.MatmulAlgoGetHeuristic(handle_, p->desc, p->a, p->b, p->c, p->c, pref, 1, &result, &found);
  lib_.MatmulPreferenceDestroy(pref);
  check_cublas(st, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0)
    throw std::runtime_error(fmt::format("cuBLASLt has no algorithm for {} x {} x {} (batch {})", g.m, g.n, g.k, g.batch));
  p->algo = result.algo;
  return *p;
}

void Gemm::run(const GemmCall& g, GemmType t, cudaStream_t s) {
  Plan& p = plan(g, t);
  const float alpha = 1;
  check_cublas(lib_.Matmul(handle_, p.desc, &alpha, g.a, p.a, g.b, p.b, &g.beta, g.c, p.c, g.c, p.c, &p.algo,
                           workspace_.get(), workspace_.bytes(), s),
               "cublasLtMatmul");
}

double Gemm::time(std::size_t m, std::size_t n, std::size_t k, GemmType t, int warmup, int iters, cudaStream_t s) {
  const std::size_t e = element_bytes(t);
  DeviceBuffer a(m * k * e), b(k * n * e), c(m * n * output_bytes(t));
  const auto fill = t == GemmType::Bf16   ? kern::Fill::Bf16
                    : t == GemmType::Fp16 ? kern::Fill::Fp16
                    : t == GemmType::Fp8  ? kern::Fill::Fp8E4M3
                                          : kern::Fill::Fp32;
  kern::fill_uniform(a.get(), m * k, fill, 1, s);
  kern::fill_uniform(b.get(), k * n, fill, 2, s);
  // cuBLASLt's float8 GEMMs want A transposed (the "TN" layout torch._scaled_mm arranges).
  const bool ta = t == GemmType::Fp8;
  GemmCall g{.m = m, .n = n, .k = k, .ta = ta, .a = a.get(), .lda = ta ? k : m, .b = b.get(), .ldb = k, .c = c.get(),
             .ldc = m};
  for (int i = 0; i < warmup; ++i) run(g, t, s);
  Event start, stop;
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    start.record(s);
    run(g, t, s);
    stop.record(s);
    BOX_CUDA(cudaEventSynchronize(stop.get()));
    times.push_back(stop.since(start));
  }
  return median(times);
}

}  // namespace tagcsim::calibrate::box
