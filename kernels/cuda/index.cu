// CUDA: index create (warp ballots), aggregate (bytewise), read (low bit).
#include "kernels/cuda/common.cuh"

namespace tagcsim::kernels::cuda {
namespace {

// One flag per thread; the warp's 32 flags are gathered with a ballot and
// written as 4 bytes (1-bit) or 16 bytes (4-bit). The loop bound is uniform
// across the block so every lane reaches the ballot.
template <int kBits>
__global__ void create_packed_kernel(const float* __restrict__ v, std::size_t n, std::uint8_t* __restrict__ idx) {
  const std::size_t nbytes = kBits == 1 ? (n + 7) / 8 : (n + 1) / 2;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  const unsigned lane = threadIdx.x & 31u;
  for (std::size_t base = std::size_t(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const std::size_t i = base + threadIdx.x;
    const unsigned f = i < n ? nonzero_flag(v[i]) : 0u;
    const unsigned ballot = __ballot_sync(0xffffffffu, f);
    const std::size_t w0 = base + (threadIdx.x & ~31u);  // first element of this warp (multiple of 32)
    if (kBits == 1) {
      const std::size_t byte = w0 / 8 + lane;
      if (lane < 4 && byte < nbytes) idx[byte] = std::uint8_t(ballot >> (8 * lane));
    } else {
      const std::size_t byte = w0 / 2 + lane;
      if (lane < 16 && byte < nbytes)
        idx[byte] = std::uint8_t(((ballot >> (2 * lane)) & 1u) | (((ballot >> (2 * lane + 1)) & 1u) << 4));
    }
  }
}

__global__ void create_bytes_kernel(const float* __restrict__ v, std::size_t n, std::uint8_t* __restrict__ idx) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    idx[i] = std::uint8_t(nonzero_flag(v[i]));
}

__global__ void aggregate_kernel(std::uint8_t* __restrict__ acc, const std::uint8_t* __restrict__ other,
                                 std::size_t nbytes, IndexEncoding enc) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t j = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < nbytes; j += stride)
    acc[j] = aggregate_byte(acc[j], other[j], enc);
}

__global__ void read_index_kernel(float* __restrict__ v, const std::uint8_t* __restrict__ idx, std::size_t n,
                                  IndexEncoding enc) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    v[i] = with_flag(v[i], index_flag(idx, i, enc));
}

__global__ void accumulate_kernel(float* __restrict__ acc, const float* __restrict__ x, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    acc[i] = add_rn(acc[i], x[i]);  // NaN canonical, as on the CPU
}

}  // namespace

void create_index(const Ctx& c, const float* values, std::size_t n, IndexEncoding enc, std::uint8_t* index) {
  if (n == 0) return;
  const unsigned grid = grid_for(n, c);
  switch (enc) {
    case IndexEncoding::Bit1Sum:
    case IndexEncoding::Bit1Or: create_packed_kernel<1><<<grid, kThreads, 0, c.stream>>>(values, n, index); break;
    case IndexEncoding::Bit4Sum: create_packed_kernel<4><<<grid, kThreads, 0, c.stream>>>(values, n, index); break;
    case IndexEncoding::Bit8Max: create_bytes_kernel<<<grid, kThreads, 0, c.stream>>>(values, n, index); break;
  }
  TAGC_LAUNCHED(create_index);
}

void aggregate_index(const Ctx& c, std::uint8_t* acc, const std::uint8_t* other, std::size_t n, IndexEncoding enc) {
  const std::size_t nbytes = index_bytes(n, enc);
  if (nbytes == 0) return;
  aggregate_kernel<<<grid_for(nbytes, c), kThreads, 0, c.stream>>>(acc, other, nbytes, enc);
  TAGC_LAUNCHED(aggregate_kernel);
}

void read_index(const Ctx& c, float* values, const std::uint8_t* index, std::size_t n, IndexEncoding enc) {
  if (n == 0) return;
  read_index_kernel<<<grid_for(n, c), kThreads, 0, c.stream>>>(values, index, n, enc);
  TAGC_LAUNCHED(read_index_kernel);
}

void accumulate(const Ctx& c, float* acc, const float* x, std::size_t n) {
  if (n == 0) return;
  accumulate_kernel<<<grid_for(n, c), kThreads, 0, c.stream>>>(acc, x, n);
  TAGC_LAUNCHED(accumulate_kernel);
}

}  // namespace tagcsim::kernels::cuda
