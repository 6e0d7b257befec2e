// CUDA: decoder set-up, peeling rounds, median estimate, state counts.
// A round is two launches: phase 1 reads the counters as the round found
// them and peels; phase 2 subtracts what was peeled. The peel decisions use
// integer mappings only, so they match the CPU reference exactly; the values
// differ from it only by the order of the fp32 atomic subtractions (the CPU
// applies the atomics' subnormal flushing itself: rules.hpp sketch_add).
#include "kernels/cuda/common.cuh"

namespace tagcsim::kernels::cuda {
namespace {

__global__ void begin_kernel(const std::uint8_t* __restrict__ index, IndexEncoding enc, std::size_t n,
                             float* __restrict__ out, std::uint8_t* __restrict__ state) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = 0.0f;
    state[i] = index_flag(index, i, enc) ? kUnknown : kNotFlagged;
  }
}

__global__ void peel_kernel(const float* __restrict__ sketch, const std::uint32_t* __restrict__ mapping,
                            std::size_t blocks, std::uint32_t rows, float* __restrict__ out,
                            std::uint8_t* __restrict__ state, unsigned long long* counter) {
  __shared__ BlockHash bh;
  unsigned peeled = 0;
  for (std::size_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    if (threadIdx.x == 0) bh = block_hash(std::uint32_t(b), rows);
    __syncthreads();
    for (unsigned t = threadIdx.x; t < kBlock; t += blockDim.x) {
      const std::size_t i = b * kBlock + t;
      if (state[i] != kUnknown) continue;
      for (int k = 0; k < kHashes; ++k) {
        const std::size_t c = std::size_t(bh.row[k]) * kBlock + t;
        if (mapping[c] == 1u) {
          out[i] = apply_sign(sketch[c], bh.negative[k]);
          state[i] = kPeeled;
          ++peeled;
          break;
        }
      }
    }
    __syncthreads();
  }
  warp_count(peeled, counter);
}

__global__ void subtract_kernel(float* __restrict__ sketch, std::uint32_t* __restrict__ mapping, std::size_t blocks,
                                std::uint32_t rows, const float* __restrict__ out, std::uint8_t* __restrict__ state) {
  __shared__ BlockHash bh;
  for (std::size_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    if (threadIdx.x == 0) bh = block_hash(std::uint32_t(b), rows);
    __syncthreads();
    for (unsigned t = threadIdx.x; t < kBlock; t += blockDim.x) {
      const std::size_t i = b * kBlock + t;
      if (state[i] != kPeeled) continue;
      const float x = out[i];
      for (int k = 0; k < kHashes; ++k) {
        const std::size_t c = std::size_t(bh.row[k]) * kBlock + t;
        const float minus = apply_sign(x, !bh.negative[k]);
        // A subnormal or zero x would be flushed by the atomic anyway; the CPU
        // reference skips it too (rules.hpp sketch_contributes).
        if (sketch_contributes(minus)) atomicAdd(&sketch[c], minus);
        atomicSub(&mapping[c], 1u);
      }
      state[i] = kRecovered;
    }
    __syncthreads();
  }
}

__global__ void estimate_kernel(const float* __restrict__ sketch, std::size_t blocks, std::uint32_t rows,
                                float* __restrict__ out, std::uint8_t* __restrict__ state) {
  __shared__ BlockHash bh;
  for (std::size_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    if (threadIdx.x == 0) bh = block_hash(std::uint32_t(b), rows);
    __syncthreads();
    for (unsigned t = threadIdx.x; t < kBlock; t += blockDim.x) {
      const std::size_t i = b * kBlock + t;
      if (state[i] != kUnknown) continue;
      float e[kHashes];
      for (int k = 0; k < kHashes; ++k)
        e[k] = apply_sign(sketch[std::size_t(bh.row[k]) * kBlock + t], bh.negative[k]);
      out[i] = median3(e[0], e[1], e[2]);
      state[i] = kEstimated;
    }
    __syncthreads();
  }
}

__global__ void count_state_kernel(const std::uint8_t* __restrict__ state, std::size_t n, std::uint8_t value,
                                   unsigned long long* counter) {
  unsigned c = 0;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    c += state[i] == value ? 1u : 0u;
  warp_count(c, counter);
}

}  // namespace

void decode_begin(const Ctx& c, const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape, float* out,
                  std::uint8_t* state) {
  const std::size_t n = shape.blocked();
  if (n == 0) return;
  begin_kernel<<<grid_for(n, c), kThreads, 0, c.stream>>>(index, enc, n, out, state);
  TAGC_LAUNCHED(begin_kernel);
}

std::size_t peel_round(const Ctx& c, float* sketch, std::uint32_t* mapping, const SketchShape& shape, float* out,
                       std::uint8_t* state) {
  if (shape.blocks == 0) return 0;
  const unsigned grid = grid_for(shape.blocks, c, 1);
  const std::uint32_t rows = std::uint32_t(shape.rows);
  TAGC_CUDA(cudaMemsetAsync(&c.scratch->counter, 0, sizeof(unsigned long long), c.stream));
  peel_kernel<<<grid, kThreads, 0, c.stream>>>(sketch, mapping, shape.blocks, rows, out, state, &c.scratch->counter);
  TAGC_LAUNCHED(peel_kernel);
  // Enqueued before the count is read: when nothing peeled it does nothing,
  // and the round costs one host round trip instead of two.
  subtract_kernel<<<grid, kThreads, 0, c.stream>>>(sketch, mapping, shape.blocks, rows, out, state);
  TAGC_LAUNCHED(subtract_kernel);
  return read_counter(c);  // the peeling loop's flag: the one host sync per round
}

void estimate(const Ctx& c, const float* sketch, const SketchShape& shape, float* out, std::uint8_t* state) {
  if (shape.blocks == 0) return;
  estimate_kernel<<<grid_for(shape.blocks, c, 1), kThreads, 0, c.stream>>>(sketch, shape.blocks,
                                                                          std::uint32_t(shape.rows), out, state);
  TAGC_LAUNCHED(estimate_kernel);
}

std::size_t count_state(const Ctx& c, const std::uint8_t* state, std::size_t n, std::uint8_t value) {
  if (n == 0) return 0;
  TAGC_CUDA(cudaMemsetAsync(&c.scratch->counter, 0, sizeof(unsigned long long), c.stream));
  count_state_kernel<<<grid_for(n, c), kThreads, 0, c.stream>>>(state, n, value, &c.scratch->counter);
  TAGC_LAUNCHED(count_state_kernel);
  return read_counter(c);
}

}  // namespace tagcsim::kernels::cuda
