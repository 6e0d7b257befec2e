// CUDA: count-sketch compression (per shard or batched) and the mapping.
// One CUDA block handles one data block at a time: three threads hash the
// block number into shared memory, then all threads add their elements to
// the three rows with coalesced atomics.
#include "kernels/cuda/common.cuh"

namespace tagcsim::kernels::cuda {
namespace {

__device__ __forceinline__ void load_hash(BlockHash& sh, std::uint32_t b, std::uint32_t rows) {
  if (threadIdx.x == 0) sh = block_hash(b, rows);
  __syncthreads();
}

// Blocks g = 0 .. shards * blocks - 1; g's shard is g / blocks and its block
// number inside the shard is g % blocks, as the per-shard compress numbers it.
__global__ void compress_kernel(const float* __restrict__ values, std::size_t shard_elements, std::size_t blocks,
                                std::size_t total_blocks, std::uint32_t rows, std::size_t counters,
                                float* __restrict__ sketches, std::uint32_t* __restrict__ mappings) {
  __shared__ BlockHash bh;
  for (std::size_t g = blockIdx.x; g < total_blocks; g += gridDim.x) {
    const std::size_t s = g / blocks, b = g % blocks;
    load_hash(bh, std::uint32_t(b), rows);
    const float* v = values + s * shard_elements + b * kBlock;
    float* sk = sketches + s * counters;
    std::uint32_t* mp = mappings ? mappings + s * counters : nullptr;
    for (unsigned t = threadIdx.x; t < kBlock; t += blockDim.x) {
      const float x = v[t];
      // Zeros and subnormals change no counter (the atomic flushes them), so
      // they are skipped, as the CPU reference skips them: most elements of a
      // sparsified gradient, flagged zeros (2^-149 after read index) included,
      // cost one load. Their flag still counts in the mapping.
      if (sketch_contributes(x))
        for (int k = 0; k < kHashes; ++k)
          atomicAdd(&sk[std::size_t(bh.row[k]) * kBlock + t], apply_sign(x, bh.negative[k]));
      if (mp && (float_bits(x) & 1u))
        for (int k = 0; k < kHashes; ++k) atomicAdd(&mp[std::size_t(bh.row[k]) * kBlock + t], 1u);
    }
    __syncthreads();  // bh is rewritten by the next iteration
  }
}

__global__ void mapping_kernel(const std::uint8_t* __restrict__ index, IndexEncoding enc, std::size_t blocks,
                               std::uint32_t rows, std::uint32_t* __restrict__ mapping) {
  __shared__ BlockHash bh;
  for (std::size_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    load_hash(bh, std::uint32_t(b), rows);
    for (unsigned t = threadIdx.x; t < kBlock; t += blockDim.x) {
      if (!index_flag(index, b * kBlock + t, enc)) continue;
      for (int k = 0; k < kHashes; ++k) atomicAdd(&mapping[std::size_t(bh.row[k]) * kBlock + t], 1u);
    }
    __syncthreads();
  }
}

}  // namespace

void compress(const Ctx& c, const float* values, std::size_t shards, const SketchShape& shape, float* sketches,
              std::uint32_t* mappings) {
  const std::size_t counters = shape.counters();
  if (counters == 0 || shards == 0) return;
  TAGC_CUDA(cudaMemsetAsync(sketches, 0, shards * counters * sizeof(float), c.stream));
  if (mappings) TAGC_CUDA(cudaMemsetAsync(mappings, 0, shards * counters * sizeof(std::uint32_t), c.stream));
  const std::size_t total = shards * shape.blocks;
  compress_kernel<<<grid_for(total, c, 1), kThreads, 0, c.stream>>>(
      values, shape.elements, shape.blocks, total, std::uint32_t(shape.rows), counters, sketches, mappings);
  TAGC_LAUNCHED(compress_kernel);
}

void build_mapping(const Ctx& c, const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape,
                   std::uint32_t* mapping) {
  if (shape.counters() == 0) return;
  TAGC_CUDA(cudaMemsetAsync(mapping, 0, shape.counters() * sizeof(std::uint32_t), c.stream));
  mapping_kernel<<<grid_for(shape.blocks, c, 1), kThreads, 0, c.stream>>>(index, enc, shape.blocks,
                                                                         std::uint32_t(shape.rows), mapping);
  TAGC_LAUNCHED(mapping_kernel);
}

}  // namespace tagcsim::kernels::cuda
