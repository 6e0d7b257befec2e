// MurmurHash3, x86 32-bit variant, written from the published algorithm.
// The CPU and CUDA back ends call this same code, so both hash every block
// identically.
#pragma once

#include "kernels/types.hpp"

#include <cstddef>
#include <cstdint>

namespace tagcsim::kernels {

TAGC_HD std::uint32_t murmur3_rotl(std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// Final avalanche: every input bit affects every output bit.
TAGC_HD std::uint32_t murmur3_fmix(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// Mixes one 4-byte word into the running hash.
TAGC_HD std::uint32_t murmur3_mix_word(std::uint32_t h, std::uint32_t k) {
  k *= 0xcc9e2d51u;
  k = murmur3_rotl(k, 15);
  k *= 0x1b873593u;
  h ^= k;
  h = murmur3_rotl(h, 13);
  return h * 5u + 0xe6546b64u;
}

// Hash of an arbitrary byte string (words read little-endian).
TAGC_HD std::uint32_t murmur3_32(const std::uint8_t* data, std::size_t len, std::uint32_t seed) {
  std::uint32_t h = seed;
  const std::size_t words = len / 4;
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint8_t* p = data + 4 * i;
    std::uint32_t k = std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) |
                      (std::uint32_t(p[3]) << 24);
    h = murmur3_mix_word(h, k);
  }
  // The 1..3 trailing bytes are mixed without the rotate-and-add step.
  const std::uint8_t* tail = data + 4 * words;
  std::uint32_t k = 0;
  switch (len & 3) {
    case 3: k ^= std::uint32_t(tail[2]) << 16; [[fallthrough]];
    case 2: k ^= std::uint32_t(tail[1]) << 8; [[fallthrough]];
    case 1:
      k ^= tail[0];
      k *= 0xcc9e2d51u;
      k = murmur3_rotl(k, 15);
      k *= 0x1b873593u;
      h ^= k;
  }
  h ^= std::uint32_t(len);
  return murmur3_fmix(h);
}

// Hash of one 32-bit key given as its 4 little-endian bytes: what the sketch
// hashes (the block number). Equal to murmur3_32(bytes of key, 4, seed).
TAGC_HD std::uint32_t murmur3_32_u32(std::uint32_t key, std::uint32_t seed) {
  std::uint32_t h = murmur3_mix_word(seed, key);
  h ^= 4u;
  return murmur3_fmix(h);
}

}  // namespace tagcsim::kernels
