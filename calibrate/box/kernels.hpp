// The few kernels the measurements need (calibrate/box/kernels.cu): patterns to check NCCL's
// results, the memory-bound kernels of the sweep, the empty kernel of the launch floor, and the
// softmax of the math-blocked attention. Plain launchers, so the callers need no nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace tagcsim::calibrate::box::kern {

// x[i] = pattern(rank, offset + i): small integers, exact in fp32 sums over up to 2^16 ranks.
void fill_pattern(float* x, std::size_t n, int rank, std::size_t offset, cudaStream_t s);
// Counts elements of x that differ from sum over r in [0, ranks) of pattern(r, offset + i) (sum),
// or pattern(rank, offset + i) (copy). `wrong` is one device counter, added to.
void count_wrong(const float* x, std::size_t n, int ranks, int rank, std::size_t offset, bool sum,
                 unsigned long long* wrong, cudaStream_t s);

// Memory-bound kernels over n floats: copy (8 B/element), scale (8), add (12), norm (an RMSNorm
// over rows of `row` elements: read x twice through the cache, write y: 8 B/element in HBM).
void copy(float* y, const float* x, std::size_t n, cudaStream_t s);
void scale(float* y, const float* x, float a, std::size_t n, cudaStream_t s);
void add(float* z, const float* x, const float* y, std::size_t n, cudaStream_t s);
void rms_norm(float* y, const float* x, std::size_t rows, std::size_t row, cudaStream_t s);
// Moves `bytes` through HBM (a copy of bytes / 2 from a to b): the element-wise work of a unit.
void traffic(void* b, const void* a, double bytes, cudaStream_t s);
void empty(cudaStream_t s);
// `blocks` blocks of `threads` that spin for `seconds` on the global timer, holding their SMs.
void spin(int blocks, int threads, double seconds, cudaStream_t s);
// Uniform values in [-1, 1) (not zeros: a GEMM on zeros draws less power and runs faster).
enum class Fill { Bf16, Fp16, Fp32, Fp8E4M3 };
void fill_uniform(void* x, std::size_t n, Fill type, unsigned seed, cudaStream_t s);

// Softmax over the last dimension of `rows` rows of `cols` bf16 scores, in place, scaled by
// `scale`; causal: row r (global query position q0 + r % block_rows) sees columns <= q0 + r % block_rows.
void softmax_bf16(void* scores, std::size_t rows, std::size_t cols, float scale, bool causal, std::size_t q0,
                  std::size_t block_rows, cudaStream_t s);
// dS = P * (dP - sum(dP * P)) per row, in place on dP (bf16).
void softmax_backward_bf16(void* dp, const void* p, std::size_t rows, std::size_t cols, cudaStream_t s);

}  // namespace tagcsim::calibrate::box::kern
