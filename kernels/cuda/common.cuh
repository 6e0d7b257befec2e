// Shared pieces of the CUDA back end: error checking, launch shapes, and the
// host-side launchers each .cu file defines.
#pragma once

#include "kernels/cuda/launch.hpp"
#include "kernels/rules.hpp"
#include "kernels/tagc.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tagcsim::kernels::cuda {

[[noreturn]] void throw_cuda(cudaError_t err, const char* call, const char* file, int line);

// Every CUDA call goes through this: a failure becomes a CudaError that names
// the call, where it was made, and CUDA's own description.
#define TAGC_CUDA(call)                                                                   \
  do {                                                                                    \
    cudaError_t tagc_err_ = (call);                                                       \
    if (tagc_err_ != cudaSuccess) ::tagcsim::kernels::cuda::throw_cuda(tagc_err_, #call, __FILE__, __LINE__); \
  } while (0)
// After each kernel launch (launch errors surface here, not at the next call).
#define TAGC_LAUNCHED(kernel) TAGC_CUDA(cudaPeekAtLastError())

// Device scratch shared by the stages of one engine: the radix-select state
// (so top-k needs no host round trip) and a counter for host reads. The
// histogram counts in 64 bits, as the CPU reference does (rules.hpp).
struct Scratch {
  RadixCount hist[kRadixBins];
  unsigned prefix;
  unsigned mask;
  RadixCount remaining;
  unsigned thr_key;  // magnitude key of the sparsify threshold
  unsigned pad;
  unsigned long long counter;
};
static_assert(sizeof(Scratch::hist[0]) == 8, "64-bit top-k histogram counts");

// What every launcher needs: the engine's stream, a grid size that fills the
// device (capped by the max_blocks test hook), its scratch, a pinned word to
// read the counter into, and the top-k histogram variant.
struct Ctx {
  cudaStream_t stream;
  int sms;
  unsigned max_blocks;
  TopkHistogram histogram;
  Scratch* scratch;
  unsigned long long* pinned;
};

// Grid-stride kernels: see launch.hpp.
inline unsigned grid_for(std::size_t items, const Ctx& c, unsigned per_block = kThreads) {
  return grid_blocks(items, c.sms, c.max_blocks, per_block);
}

// Sum over the warp, then one atomic per warp (all 32 lanes must call it).
__device__ __forceinline__ void warp_count(unsigned c, unsigned long long* counter) {
  for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31u) == 0 && c) atomicAdd(counter, (unsigned long long)c);
}

// Reads the device counter into host memory: one host round trip.
std::size_t read_counter(const Ctx& c);

// ---- launchers (sparsify.cu, index.cu, sketch.cu, decode.cu) ----
SparsifyResult sparsify(const Ctx& c, const float* grad, float* residual, float* out, std::size_t n,
                        SparsifyMethod method, double sparsity, float* threshold);
void create_index(const Ctx& c, const float* values, std::size_t n, IndexEncoding enc, std::uint8_t* index);
void aggregate_index(const Ctx& c, std::uint8_t* acc, const std::uint8_t* other, std::size_t n, IndexEncoding enc);
void read_index(const Ctx& c, float* values, const std::uint8_t* index, std::size_t n, IndexEncoding enc);
void accumulate(const Ctx& c, float* acc, const float* x, std::size_t n);
void compress(const Ctx& c, const float* values, std::size_t shards, const SketchShape& shape, float* sketches,
              std::uint32_t* mappings);
void build_mapping(const Ctx& c, const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape,
                   std::uint32_t* mapping);
void decode_begin(const Ctx& c, const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape, float* out,
                  std::uint8_t* state);
std::size_t peel_round(const Ctx& c, float* sketch, std::uint32_t* mapping, const SketchShape& shape, float* out,
                       std::uint8_t* state);
void estimate(const Ctx& c, const float* sketch, const SketchShape& shape, float* out, std::uint8_t* state);
std::size_t count_state(const Ctx& c, const std::uint8_t* state, std::size_t n, std::uint8_t value);

}  // namespace tagcsim::kernels::cuda
