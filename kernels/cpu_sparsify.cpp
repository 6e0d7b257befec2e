// CPU reference: error feedback and threshold choice.
#include "kernels/cpu_reference.hpp"
#include "kernels/rules.hpp"

#include <array>

namespace tagcsim::kernels::cpu {

std::uint32_t topk_threshold_key(const float* values, std::size_t n, std::size_t keep) {
  if (keep == 0) return kKeepNothingKey;
  if (keep >= n) return 0;
  // MSB-first radix select over the 31 magnitude bits: each pass histograms
  // the next 8 bits of the elements that share the prefix chosen so far, then
  // picks the bin holding the keep-th largest.
  std::uint32_t prefix = 0, mask = 0;
  RadixCount remaining = keep;
  for (int shift = 24; shift >= 0; shift -= 8) {
    std::array<RadixCount, kRadixBins> hist{};
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t key = magnitude_key(values[i]);
      if ((key & mask) == prefix) ++hist[(key >> shift) & 0xffu];
    }
    const int bin = radix_pick(hist.data(), remaining);
    prefix |= std::uint32_t(bin) << shift;
    mask |= 0xffu << shift;
  }
  return prefix;
}

SparsifyResult sparsify(const float* grad, float* residual, float* out, std::size_t n, SparsifyMethod method,
                        double sparsity, float* threshold) {
  SparsifyResult result;
  const std::size_t keep = topk_keep_count(n, sparsity);  // validates sparsity too
  if (n == 0) {  // nothing to keep: no probes, and the keep-nothing threshold (as on the GPU)
    if (threshold) *threshold = bits_float(kKeepNothingKey);
    return result;
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = add_rn(grad[i], residual[i]);

  std::uint32_t thr;
  if (method == SparsifyMethod::TopK) {
    thr = topk_threshold_key(out, n, keep);
  } else {
    // Smallest table entry whose zeroed fraction reaches `sparsity`: binary
    // search over entries 0..24 plus "none" (25). Each probe is one count
    // over the data (a device-to-host sync in the reference).
    auto table = bisect_thresholds();
    std::size_t lo = 0, hi = table.size();
    while (lo < hi) {
      std::size_t mid = (lo + hi) / 2;
      std::uint32_t key = magnitude_key(table[mid]);
      std::size_t below = 0;
      for (std::size_t i = 0; i < n; ++i) below += magnitude_key(out[i]) < key;
      ++result.host_syncs;
      if (double(below) >= sparsity * double(n))
        hi = mid;
      else
        lo = mid + 1;
    }
    thr = magnitude_key(table[lo < table.size() ? lo : table.size() - 1]);
  }

  for (std::size_t i = 0; i < n; ++i) {
    float a = out[i];
    bool keep_it = magnitude_key(a) >= thr;
    out[i] = keep_it ? a : 0.0f;
    residual[i] = keep_it ? 0.0f : a;
  }
  if (threshold) *threshold = bits_float(thr);
  return result;
}

}  // namespace tagcsim::kernels::cpu
