// CUDA: error feedback, bisection probes, and radix-select top-k.
#include "kernels/cuda/common.cuh"

namespace tagcsim::kernels::cuda {
namespace {

// out = grad + residual; optionally the histogram of the top 8 magnitude bits
// (the first radix pass, fused so top-k reads the data once less).
template <bool kHist>
__global__ void ef_add_kernel(const float* __restrict__ g, const float* __restrict__ r, float* __restrict__ out,
                              std::size_t n, Scratch* sc) {
  __shared__ unsigned sh[256];
  if (kHist) {
    for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) sh[i] = 0;
    __syncthreads();
  }
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float a = __fadd_rn(g[i], r[i]);
    out[i] = a;
    if (kHist) atomicAdd(&sh[magnitude_key(a) >> 24], 1u);
  }
  if (kHist) {
    __syncthreads();
    for (unsigned i = threadIdx.x; i < 256; i += blockDim.x)
      if (sh[i]) atomicAdd(&sc->hist[i], sh[i]);
  }
}

// Histogram of bits [shift, shift+8) among elements matching the prefix so far.
__global__ void radix_hist_kernel(const float* __restrict__ v, std::size_t n, Scratch* sc, int shift) {
  __shared__ unsigned sh[256];
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) sh[i] = 0;
  __syncthreads();
  const unsigned prefix = sc->prefix, mask = sc->mask;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    unsigned key = magnitude_key(v[i]);
    if ((key & mask) == prefix) atomicAdd(&sh[(key >> shift) & 0xffu], 1u);
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x)
    if (sh[i]) atomicAdd(&sc->hist[i], sh[i]);
}

// One thread: picks the bin holding the remaining-th largest, the same scan
// as the CPU reference, and clears the histogram for the next pass.
__global__ void radix_select_kernel(Scratch* sc, int shift) {
  unsigned long long remaining = sc->remaining;
  int bin = 255;
  for (; bin > 0; --bin) {
    unsigned long long h = sc->hist[bin];
    if (h >= remaining) break;
    remaining -= h;
  }
  sc->remaining = remaining;
  sc->prefix |= unsigned(bin) << shift;
  sc->mask |= 0xffu << shift;
  for (int i = 0; i < 256; ++i) sc->hist[i] = 0;
  if (shift == 0) sc->thr_key = sc->prefix;
}

__global__ void select_init_kernel(Scratch* sc, unsigned long long keep) {
  sc->prefix = 0;
  sc->mask = 0;
  sc->remaining = keep;
  for (int i = 0; i < 256; ++i) sc->hist[i] = 0;
}

__global__ void set_key_kernel(Scratch* sc, unsigned key) { sc->thr_key = key; }

__global__ void count_below_kernel(const float* __restrict__ v, std::size_t n, unsigned key,
                                   unsigned long long* counter) {
  unsigned c = 0;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    c += magnitude_key(v[i]) < key ? 1u : 0u;
  warp_count(c, counter);
}

// Splits acc (in out) into the kept part (out) and the remainder (residual).
__global__ void apply_kernel(float* __restrict__ out, float* __restrict__ residual, std::size_t n,
                             const Scratch* sc) {
  const unsigned thr = sc->thr_key;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float a = out[i];
    bool keep = magnitude_key(a) >= thr;
    out[i] = keep ? a : 0.0f;
    residual[i] = keep ? 0.0f : a;
  }
}

}  // namespace

SparsifyResult sparsify(const Ctx& c, const float* grad, float* residual, float* out, std::size_t n,
                        SparsifyMethod method, double sparsity, float* threshold) {
  SparsifyResult result;
  const std::size_t keep = topk_keep_count(n, sparsity);  // validates sparsity (host)
  if (n == 0) return result;
  const unsigned grid = grid_for(n, c);
  if (method == SparsifyMethod::TopK && keep > 0 && keep < n) {
    select_init_kernel<<<1, 1, 0, c.stream>>>(c.scratch, keep);
    TAGC_LAUNCHED(select_init_kernel);
    ef_add_kernel<true><<<grid, kThreads, 0, c.stream>>>(grad, residual, out, n, c.scratch);
    TAGC_LAUNCHED(ef_add_kernel);
    radix_select_kernel<<<1, 1, 0, c.stream>>>(c.scratch, 24);
    TAGC_LAUNCHED(radix_select_kernel);
    for (int shift = 16; shift >= 0; shift -= 8) {
      radix_hist_kernel<<<grid, kThreads, 0, c.stream>>>(out, n, c.scratch, shift);
      TAGC_LAUNCHED(radix_hist_kernel);
      radix_select_kernel<<<1, 1, 0, c.stream>>>(c.scratch, shift);
      TAGC_LAUNCHED(radix_select_kernel);
    }
  } else {
    ef_add_kernel<false><<<grid, kThreads, 0, c.stream>>>(grad, residual, out, n, c.scratch);
    TAGC_LAUNCHED(ef_add_kernel);
    unsigned key;
    if (method == SparsifyMethod::TopK) {
      key = keep == 0 ? kKeepNothingKey : 0u;
    } else {
      // The reference's bisection: each probe counts on the device and reads
      // the count back (a host sync), exactly as the CPU reference decides.
      auto table = bisect_thresholds();
      std::size_t lo = 0, hi = table.size();
      while (lo < hi) {
        std::size_t mid = (lo + hi) / 2;
        TAGC_CUDA(cudaMemsetAsync(&c.scratch->counter, 0, sizeof(unsigned long long), c.stream));
        count_below_kernel<<<grid, kThreads, 0, c.stream>>>(out, n, magnitude_key(table[mid]), &c.scratch->counter);
        TAGC_LAUNCHED(count_below_kernel);
        std::size_t below = read_counter(c);
        ++result.host_syncs;
        if (double(below) >= sparsity * double(n))
          hi = mid;
        else
          lo = mid + 1;
      }
      key = magnitude_key(table[lo < table.size() ? lo : table.size() - 1]);
    }
    set_key_kernel<<<1, 1, 0, c.stream>>>(c.scratch, key);
    TAGC_LAUNCHED(set_key_kernel);
  }
  apply_kernel<<<grid, kThreads, 0, c.stream>>>(out, residual, n, c.scratch);
  TAGC_LAUNCHED(apply_kernel);
  if (threshold)  // the key's bits are the threshold's bits (it is non-negative)
    TAGC_CUDA(cudaMemcpyAsync(threshold, &c.scratch->thr_key, sizeof(float), cudaMemcpyDeviceToDevice, c.stream));
  return result;
}

}  // namespace tagcsim::kernels::cuda
