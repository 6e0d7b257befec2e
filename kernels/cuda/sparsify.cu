// CUDA: error feedback, bisection probes, and radix-select top-k.
#include "kernels/cuda/common.cuh"

namespace tagcsim::kernels::cuda {
namespace {

// ---- top-k histograms ----
// Each block counts into shared memory in 32 bits (launch.hpp keeps a
// block's share of the elements below 2^31), then adds its counts into the
// 64-bit device histogram. Two ways to count, chosen per engine:
//   Shared: one 256-bin histogram per block, one shared atomic per element.
//     Gradients crowd a few bins of the top 8 magnitude bits, so the lanes of
//     a warp mostly hit the same bin and their atomics serialise.
//   Warp: one sub-histogram per warp, and __match_any_sync folds the lanes
//     that hit one bin into a single atomic of their count: a crowded bin
//     costs one atomic per warp step instead of 32, and warps never contend.
inline constexpr unsigned kWarps = kThreads / 32;
inline constexpr unsigned kNoBin = kRadixBins;  // lanes with nothing to count

template <TopkHistogram kMode>
struct BlockHistogram {
  unsigned c[kMode == TopkHistogram::Warp ? kWarps : 1][kRadixBins];

  __device__ void clear() {
    for (unsigned i = threadIdx.x; i < sizeof(c) / sizeof(unsigned); i += blockDim.x) (&c[0][0])[i] = 0;
    __syncthreads();
  }
  // Every lane of the warp calls this (the loops below keep warps converged);
  // bin == kNoBin counts nothing.
  __device__ void add(unsigned bin) {
    if constexpr (kMode == TopkHistogram::Warp) {
      const unsigned peers = __match_any_sync(0xffffffffu, bin);
      const unsigned lane = threadIdx.x & 31u;
      if (bin != kNoBin && lane == unsigned(__ffs(peers) - 1)) atomicAdd(&c[threadIdx.x / 32][bin], __popc(peers));
    } else {
      if (bin != kNoBin) atomicAdd(&c[0][bin], 1u);
    }
  }
  __device__ void flush(Scratch* sc) {
    __syncthreads();
    for (unsigned b = threadIdx.x; b < kRadixBins; b += blockDim.x) {
      RadixCount sum = 0;
      for (unsigned w = 0; w < sizeof(c) / sizeof(c[0]); ++w) sum += c[w][b];
      if (sum) atomicAdd(&sc->hist[b], sum);
    }
  }
};

// Grid-stride loops below step by whole blocks (`base` is the same for every
// thread of a block), so all 32 lanes of a warp reach the warp-wide match
// even in the last, partial round.

// out = grad + residual (add_rn: NaN canonical, as on the CPU).
__global__ void ef_add_kernel(const float* __restrict__ g, const float* __restrict__ r, float* __restrict__ out,
                              std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = add_rn(g[i], r[i]);
}

// The same, fused with the first radix pass: the histogram of the top 8
// magnitude bits (top-k reads the data once less).
template <TopkHistogram kMode>
__global__ void ef_add_hist_kernel(const float* __restrict__ g, const float* __restrict__ r,
                                   float* __restrict__ out, std::size_t n, Scratch* sc) {
  __shared__ BlockHistogram<kMode> h;
  h.clear();
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t base = std::size_t(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const std::size_t i = base + threadIdx.x;
    unsigned bin = kNoBin;
    if (i < n) {
      const float a = add_rn(g[i], r[i]);
      out[i] = a;
      bin = magnitude_key(a) >> 24;
    }
    h.add(bin);
  }
  h.flush(sc);
}

// Histogram of bits [shift, shift+8) among elements matching the prefix so far.
template <TopkHistogram kMode>
__global__ void radix_hist_kernel(const float* __restrict__ v, std::size_t n, Scratch* sc, int shift) {
  __shared__ BlockHistogram<kMode> h;
  h.clear();
  const unsigned prefix = sc->prefix, mask = sc->mask;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t base = std::size_t(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const std::size_t i = base + threadIdx.x;
    unsigned bin = kNoBin;
    if (i < n) {
      const unsigned key = magnitude_key(v[i]);
      if ((key & mask) == prefix) bin = (key >> shift) & 0xffu;
    }
    h.add(bin);
  }
  h.flush(sc);
}

// One thread: picks the bin holding the remaining-th largest, the same scan
// as the CPU reference, and clears the histogram for the next pass.
__global__ void radix_select_kernel(Scratch* sc, int shift) {
  RadixCount remaining = sc->remaining;
  const int bin = radix_pick(sc->hist, remaining);
  sc->remaining = remaining;
  sc->prefix |= unsigned(bin) << shift;
  sc->mask |= 0xffu << shift;
  for (int i = 0; i < 256; ++i) sc->hist[i] = 0;
  if (shift == 0) sc->thr_key = sc->prefix;
}

__global__ void select_init_kernel(Scratch* sc, RadixCount keep) {
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

template <TopkHistogram kMode>
void radix_select(const Ctx& c, const float* grad, const float* residual, float* out, std::size_t n,
                  std::size_t keep, unsigned grid) {
  select_init_kernel<<<1, 1, 0, c.stream>>>(c.scratch, keep);
  TAGC_LAUNCHED(select_init_kernel);
  ef_add_hist_kernel<kMode><<<grid, kThreads, 0, c.stream>>>(grad, residual, out, n, c.scratch);
  TAGC_LAUNCHED(ef_add_hist_kernel);
  radix_select_kernel<<<1, 1, 0, c.stream>>>(c.scratch, 24);
  TAGC_LAUNCHED(radix_select_kernel);
  for (int shift = 16; shift >= 0; shift -= 8) {
    radix_hist_kernel<kMode><<<grid, kThreads, 0, c.stream>>>(out, n, c.scratch, shift);
    TAGC_LAUNCHED(radix_hist_kernel);
    radix_select_kernel<<<1, 1, 0, c.stream>>>(c.scratch, shift);
    TAGC_LAUNCHED(radix_select_kernel);
  }
}

}  // namespace

SparsifyResult sparsify(const Ctx& c, const float* grad, float* residual, float* out, std::size_t n,
                        SparsifyMethod method, double sparsity, float* threshold) {
  SparsifyResult result;
  const std::size_t keep = topk_keep_count(n, sparsity);  // validates sparsity (host)
  if (n == 0) {  // nothing to keep: no probes, and the keep-nothing threshold (as on the CPU)
    if (threshold) {
      set_key_kernel<<<1, 1, 0, c.stream>>>(c.scratch, kKeepNothingKey);
      TAGC_LAUNCHED(set_key_kernel);
      TAGC_CUDA(cudaMemcpyAsync(threshold, &c.scratch->thr_key, sizeof(float), cudaMemcpyDeviceToDevice, c.stream));
    }
    return result;
  }
  const unsigned grid = grid_for(n, c);
  if (method == SparsifyMethod::TopK && keep > 0 && keep < n) {
    const unsigned hgrid = histogram_blocks(n, grid);
    if (c.histogram == TopkHistogram::Shared)
      radix_select<TopkHistogram::Shared>(c, grad, residual, out, n, keep, hgrid);
    else
      radix_select<TopkHistogram::Warp>(c, grad, residual, out, n, keep, hgrid);
  } else {
    ef_add_kernel<<<grid, kThreads, 0, c.stream>>>(grad, residual, out, n);
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
