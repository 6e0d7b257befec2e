// The per-element rules both back ends apply: block hashing, index bit
// layout, magnitude keys, median of three. One copy of each rule, compiled
// for the host and (under nvcc) for the device, is what makes the back ends
// agree bit for bit.
#pragma once

#include "kernels/murmur3.hpp"
#include "kernels/types.hpp"

#include <cstdint>
#if !defined(__CUDA_ARCH__)
#include <bit>
#endif

namespace tagcsim::kernels {

// Where block `block` lands: for hash k (seed k), row h_k mod rows, and the
// sign is negative when the top bit of h_k is set. Rows of different hashes
// may coincide; the element is then added (and later subtracted) twice there.
struct BlockHash {
  std::uint32_t row[kHashes];
  bool negative[kHashes];
};

TAGC_HD BlockHash block_hash(std::uint32_t block, std::uint32_t rows) {
  BlockHash bh{};
  for (int k = 0; k < kHashes; ++k) {
    std::uint32_t h = murmur3_32_u32(block, std::uint32_t(k));
    bh.row[k] = h % rows;
    bh.negative[k] = (h >> 31) != 0;
  }
  return bh;
}

TAGC_HD float apply_sign(float v, bool negative) { return negative ? -v : v; }

TAGC_HD std::uint32_t float_bits(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(v);
#else
  return std::bit_cast<std::uint32_t>(v);
#endif
}

TAGC_HD float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

// Magnitude as an unsigned key: the bits without the sign. For non-NaN floats
// it orders exactly like |v|, so thresholds and radix select work on integers.
TAGC_HD std::uint32_t magnitude_key(float v) { return float_bits(v) & 0x7fffffffu; }

// Threshold key that keeps nothing finite (+inf).
inline constexpr std::uint32_t kKeepNothingKey = 0x7f800000u;

// Nonzero test used for index flags (-0.0 counts as zero).
TAGC_HD unsigned nonzero_flag(float v) { return magnitude_key(v) != 0 ? 1u : 0u; }

// The aggregated flag of element i, read from an index in encoding `enc`.
TAGC_HD unsigned index_flag(const std::uint8_t* index, std::size_t i, IndexEncoding enc) {
  switch (enc) {
    case IndexEncoding::Bit1Sum:
    case IndexEncoding::Bit1Or: return (index[i >> 3] >> (i & 7)) & 1u;
    case IndexEncoding::Bit4Sum: return ((index[i >> 1] >> ((i & 1) * 4)) & 0xfu) != 0 ? 1u : 0u;
    case IndexEncoding::Bit8Max: return index[i] != 0 ? 1u : 0u;
  }
  return 0;
}

// One byte of the NCCL-style elementwise reduction of two index buffers.
TAGC_HD std::uint8_t aggregate_byte(std::uint8_t a, std::uint8_t b, IndexEncoding enc) {
  switch (enc) {
    case IndexEncoding::Bit1Sum:
    case IndexEncoding::Bit4Sum: return std::uint8_t(a + b);  // NCCL uint8 SUM wraps
    case IndexEncoding::Bit1Or: return std::uint8_t(a | b);
    case IndexEncoding::Bit8Max: return a > b ? a : b;
  }
  return 0;
}

// Writes the flag into the lowest mantissa bit (perturbs a value by <= 1 ulp).
TAGC_HD float with_flag(float v, unsigned flag) { return bits_float((float_bits(v) & ~1u) | (flag & 1u)); }

// ---- fp32 arithmetic, one definition for both back ends ----
//
// IEEE arithmetic alone does not make the back ends agree bit for bit:
// - NaN payloads: the GPU writes the canonical NaN (0x7fffffff) for any NaN
//   result, the CPU propagates an operand's payload. `add_rn` canonicalises
//   on both sides, so a NaN gradient gives the same bits everywhere and all
//   NaNs tie in the magnitude order (as the largest keys, above +inf).
// - Subnormals: fp32 atomics (PTX atom/red.add.f32) flush subnormal inputs and
//   results to a zero of the same sign; plain adds keep them (we never compile
//   with -ftz). `sketch_add` is the atomic's rule, and the CPU applies it to
//   every sketch counter update, so a flagged zero (read index makes it
//   2^-149) or a subnormal gradient changes no counter on either back end.
inline constexpr std::uint32_t kCanonicalNaN = 0x7fffffffu;

TAGC_HD bool is_nan_bits(std::uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

// Branch-free (selects on bits), so that the CPU's loops vectorise.
TAGC_HD float canonical_nan(float v) {
  const std::uint32_t u = float_bits(v);
  return bits_float(is_nan_bits(u) ? kCanonicalNaN : u);
}

// a + b, rounded to nearest, NaN canonical: error feedback and accumulate.
TAGC_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return canonical_nan(__fadd_rn(a, b));
#else
  return canonical_nan(a + b);
#endif
}

// Subnormal (or zero) magnitude: the exponent field is 0.
TAGC_HD bool is_tiny(float v) { return (float_bits(v) & 0x7f800000u) == 0; }

TAGC_HD float flush_subnormal(float v) {
  const std::uint32_t u = float_bits(v);
  return bits_float(u & ((u & 0x7f800000u) != 0 ? 0xffffffffu : 0x80000000u));
}

// Whether adding `x` to a counter can change it. A zero or subnormal `x` is
// flushed to zero by the atomic, and the counter is never subnormal (every
// update flushes its result), so skipping the update is exact. Both back
// ends skip it: the GPU saves an atomic per flagged zero.
TAGC_HD bool sketch_contributes(float x) { return !is_tiny(x); }

// counter + x exactly as atom.add.f32 computes it: subnormal inputs and
// result flushed to a zero of their sign, round to nearest, canonical NaN.
TAGC_HD float sketch_add(float counter, float x) {
  return flush_subnormal(add_rn(flush_subnormal(counter), flush_subnormal(x)));
}

// ---- top-k radix select, one definition for both back ends ----
//
// Histogram counts are 64-bit on both back ends (a shard of 2^32 or more
// elements would wrap a 32-bit bin and keep the wrong number of elements).
using RadixCount = unsigned long long;
inline constexpr int kRadixBins = 256;
static_assert(sizeof(RadixCount) == 8, "radix counts must not wrap below 2^64");

// One MSB-first radix step: scanning from the largest bin down, the bin that
// holds the remaining-th largest key among those counted. `remaining` becomes
// the rank inside that bin. Bin 0 when the counts run out (keep >= n).
TAGC_HD int radix_pick(const RadixCount* hist, RadixCount& remaining) {
  int bin = kRadixBins - 1;
  for (; bin > 0; --bin) {
    if (hist[bin] >= remaining) break;
    remaining -= hist[bin];
  }
  return bin;
}

TAGC_HD float median3(float a, float b, float c) {
  float lo = a < b ? a : b;
  float hi = a < b ? b : a;
  float m = hi < c ? hi : c;  // min(max(a,b), c)
  return lo > m ? lo : m;     // max(min(a,b), min(max(a,b), c))
}

}  // namespace tagcsim::kernels
