#include "calibrate/box/cuda_util.hpp"
#include "calibrate/box/kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>

namespace tagcsim::calibrate::box::kern {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return unsigned(std::min<std::size_t>(std::max<std::size_t>(b, 1), 65535u * 8));
}

__device__ __forceinline__ float pattern(int rank, std::size_t i) {
  // Small integers (|x| <= 8): any sum over ranks is exact in fp32.
  return float(int((i * 2654435761u + std::size_t(rank) * 40503u) % 17u) - 8);
}

__global__ void fill_pattern_kernel(float* x, std::size_t n, int rank, std::size_t offset) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = pattern(rank, offset + i);
}

__global__ void count_wrong_kernel(const float* x, std::size_t n, int ranks, int rank, std::size_t offset, bool sum,
                                   unsigned long long* wrong) {
  unsigned long long bad = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    float want = 0;
    if (sum)
      for (int r = 0; r < ranks; ++r) want += pattern(r, offset + i);
    else
      want = pattern(rank, offset + i);
    bad += x[i] != want;
  }
  if (bad) atomicAdd(wrong, bad);
}

// copy, scale and add load and store 16 bytes per thread, as PyTorch's element-wise kernels do
// (its vectorized path): scalar 4-byte accesses reach only ~2.5 of the H200's ~4.3 TB/s on copy,
// which the box's first H200 run measured, and the simulator would then time PyTorch's
// memory-bound kernels at that rate. The tail past a multiple of 4 runs scalar.
template <class Op>
__global__ void map_kernel(float* y, const float* x, const float* w, std::size_t n, Op op) {
  const std::size_t n4 = n / 4, stride = std::size_t(gridDim.x) * blockDim.x;
  const auto* x4 = reinterpret_cast<const float4*>(x);
  const auto* w4 = reinterpret_cast<const float4*>(w);
  auto* y4 = reinterpret_cast<float4*>(y);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    const float4 a = x4[i], b = w ? w4[i] : float4{};
    y4[i] = float4{op(a.x, b.x), op(a.y, b.y), op(a.z, b.z), op(a.w, b.w)};
  }
  for (std::size_t i = 4 * n4 + blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride)
    y[i] = op(x[i], w ? w[i] : 0.0f);
}
struct CopyOp { __device__ float operator()(float a, float) const { return a; } };
struct ScaleOp { float s; __device__ float operator()(float a, float) const { return s * a; } };
struct AddOp { __device__ float operator()(float a, float b) const { return a + b; } };

__global__ void copy_bytes_kernel(uint4* b, const uint4* a, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

// One block per row: the mean square, then the scaled row.
__global__ void rms_norm_kernel(float* y, const float* x, std::size_t row) {
  __shared__ float part[kThreads];
  const float* xr = x + blockIdx.x * row;
  float s = 0;
  for (std::size_t i = threadIdx.x; i < row; i += blockDim.x) s += xr[i] * xr[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  const float inv = rsqrtf(part[0] / float(row) + 1e-6f);
  for (std::size_t i = threadIdx.x; i < row; i += blockDim.x) y[blockIdx.x * row + i] = xr[i] * inv;
}

__global__ void empty_kernel() {}

// Spins on the global timer, as an NCCL block polls its peers' flags: it holds its SM and does no work.
__global__ void spin_kernel(long long ns) {
  long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  while (now - start < ns);
}

template <class T>
__global__ void fill_uniform_kernel(T* x, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed * 2246822519u ^ unsigned(i >> 32);
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    const float v = float(h & 0xffffffu) / float(1u << 23) - 1.0f;
    if constexpr (sizeof(T) == 4) x[i] = v;
    else x[i] = T(v);
  }
}

// One block per row of scores (bf16, fp32 arithmetic).
__global__ void softmax_kernel(__nv_bfloat16* s, std::size_t cols, float scale, bool causal, std::size_t q0,
                               std::size_t block_rows) {
  __shared__ float red[kThreads];
  __nv_bfloat16* r = s + blockIdx.x * cols;
  const std::size_t want = q0 + blockIdx.x % block_rows + 1;
  const std::size_t visible = causal && want < cols ? want : cols;
  float mx = -INFINITY;
  for (std::size_t i = threadIdx.x; i < visible; i += blockDim.x) mx = fmaxf(mx, scale * __bfloat162float(r[i]));
  red[threadIdx.x] = mx;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + w]);
    __syncthreads();
  }
  mx = red[0];
  __syncthreads();
  float sum = 0;
  for (std::size_t i = threadIdx.x; i < visible; i += blockDim.x) sum += __expf(scale * __bfloat162float(r[i]) - mx);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  const float inv = 1.0f / red[0];
  for (std::size_t i = threadIdx.x; i < cols; i += blockDim.x)
    r[i] = __float2bfloat16(i < visible ? __expf(scale * __bfloat162float(r[i]) - mx) * inv : 0.0f);
}

__global__ void softmax_backward_kernel(__nv_bfloat16* dp, const __nv_bfloat16* p, std::size_t cols) {
  __shared__ float red[kThreads];
  __nv_bfloat16* d = dp + blockIdx.x * cols;
  const __nv_bfloat16* q = p + blockIdx.x * cols;
  float dot = 0;
  for (std::size_t i = threadIdx.x; i < cols; i += blockDim.x) dot += __bfloat162float(d[i]) * __bfloat162float(q[i]);
  red[threadIdx.x] = dot;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  dot = red[0];
  for (std::size_t i = threadIdx.x; i < cols; i += blockDim.x)
    d[i] = __float2bfloat16(__bfloat162float(q[i]) * (__bfloat162float(d[i]) - dot));
}

void check_launch() { BOX_CUDA(cudaGetLastError()); }

}  // namespace

void fill_pattern(float* x, std::size_t n, int rank, std::size_t offset, cudaStream_t s) {
  fill_pattern_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, rank, offset);
  check_launch();
}
void count_wrong(const float* x, std::size_t n, int ranks, int rank, std::size_t offset, bool sum,
                 unsigned long long* wrong, cudaStream_t s) {
  count_wrong_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n, ranks, rank, offset, sum, wrong);
  check_launch();
}
void copy(float* y, const float* x, std::size_t n, cudaStream_t s) {
  map_kernel<<<blocks_for((n + 3) / 4), kThreads, 0, s>>>(y, x, nullptr, n, CopyOp{});
  check_launch();
}
void scale(float* y, const float* x, float a, std::size_t n, cudaStream_t s) {
  map_kernel<<<blocks_for((n + 3) / 4), kThreads, 0, s>>>(y, x, nullptr, n, ScaleOp{a});
  check_launch();
}
void add(float* z, const float* x, const float* y, std::size_t n, cudaStream_t s) {
  map_kernel<<<blocks_for((n + 3) / 4), kThreads, 0, s>>>(z, x, y, n, AddOp{});
  check_launch();
}
void rms_norm(float* y, const float* x, std::size_t rows, std::size_t row, cudaStream_t s) {
  for (std::size_t r0 = 0; r0 < rows; r0 += 65535) {  // grid.x limit per launch
    const std::size_t nr = std::min<std::size_t>(65535, rows - r0);
    rms_norm_kernel<<<unsigned(nr), kThreads, 0, s>>>(y + r0 * row, x + r0 * row, row);
  }
  check_launch();
}
void traffic(void* b, const void* a, double bytes, cudaStream_t s) {
  const std::size_t n = std::size_t(bytes / 2 / sizeof(uint4));
  if (n == 0) return;
  copy_bytes_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<uint4*>(b), static_cast<const uint4*>(a), n);
  check_launch();
}
void fill_uniform(void* x, std::size_t n, Fill type, unsigned seed, cudaStream_t s) {
  if (type == Fill::Bf16) fill_uniform_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(x), n, seed);
  else if (type == Fill::Fp16) fill_uniform_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__half*>(x), n, seed);
  else if (type == Fill::Fp8E4M3)
    fill_uniform_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__nv_fp8_e4m3*>(x), n, seed);
  else fill_uniform_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<float*>(x), n, seed);
  check_launch();
}
void empty(cudaStream_t s) {
  empty_kernel<<<1, 1, 0, s>>>();
  check_launch();
}

void spin(int blocks, int threads, double seconds, cudaStream_t s) {
  spin_kernel<<<blocks, threads, 0, s>>>(static_cast<long long>(seconds * 1e9));
  check_launch();
}
void softmax_bf16(void* scores, std::size_t rows, std::size_t cols, float scale, bool causal, std::size_t q0,
                  std::size_t block_rows, cudaStream_t s) {
  auto* p = static_cast<__nv_bfloat16*>(scores);
  for (std::size_t r0 = 0; r0 < rows; r0 += 65535 * 16) {
    const std::size_t nr = std::min<std::size_t>(65535 * 16, rows - r0);
    // Rows of one block share the query offset pattern: r0 is a multiple of block_rows when
    // block_rows divides 65535 * 16; otherwise the mask is off by the remainder, which moves
    // no work (the same number of rows and columns).
    softmax_kernel<<<unsigned(nr), kThreads, 0, s>>>(p + r0 * cols, cols, scale, causal, q0, block_rows);
  }
  check_launch();
}
void softmax_backward_bf16(void* dp, const void* p, std::size_t rows, std::size_t cols, cudaStream_t s) {
  for (std::size_t r0 = 0; r0 < rows; r0 += 65535 * 16) {
    const std::size_t nr = std::min<std::size_t>(65535 * 16, rows - r0);
    softmax_backward_kernel<<<unsigned(nr), kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(dp) + r0 * cols,
                                                              static_cast<const __nv_bfloat16*>(p) + r0 * cols, cols);
  }
  check_launch();
}

}  // namespace tagcsim::calibrate::box::kern
