// Plain types shared by the host API and the device code. Kept free of the
// standard library's heavier headers so that the CUDA sources can include it.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define TAGC_HD __host__ __device__ __forceinline__
#else
#define TAGC_HD inline
#endif

namespace tagcsim::kernels {

// Elements per data block: one CUDA block of 1024 threads per data block in
// the reference, and the width of every sketch row.
inline constexpr std::size_t kBlock = 1024;
// Hashes per block (count-sketch rows each block lands in).
inline constexpr int kHashes = 3;
// 4-bit fields summed over more ranks than this carry into their neighbour.
inline constexpr int kMaxRanks4BitSum = 15;

// How the sparsity index is encoded on the wire and reduced across ranks.
enum class IndexEncoding {
  Bit1Sum,  // reference: 1 bit per element, NCCL SUM on bytes. Lossy: carries.
  Bit1Or,   // 1 bit per element, bitwise OR (MPI / custom kernel). Exact.
  Bit4Sum,  // 4 bits per element, SUM. Exact up to 15 ranks.
  Bit8Max,  // 8 bits per element, MAX. Exact for any rank count.
};

// The timed stages of the pipeline (see kernels/README.md for what each moves).
enum class Stage {
  SparsifyBisect,   // error feedback + reference's bisection over 25 thresholds
  SparsifyTopk,     // error feedback + exact top-k (radix select)
  IndexCreate,      // values -> index
  IndexRead,        // index -> low mantissa bit of each value
  Compress,         // values -> count sketch of one shard
  CompressBatched,  // values of all N shards of a unit -> N sketches, one pass
  DecodeRound,      // one peeling round (two launches + one host read)
  Estimate,         // median of three for what did not peel
};

enum class SparsifyMethod { Bisect, TopK };

// How the CUDA back end's top-k radix passes build their histograms. Real
// gradients crowd a few bins of the top 8 magnitude bits, where one
// shared-memory atomic per element serialises; the bench compares the two.
enum class TopkHistogram {
  Warp,    // per-warp sub-histograms; lanes that hit one bin add once (__match_any_sync)
  Shared,  // one shared-memory histogram per block, one atomic per element (the first version)
};

// Per-element state of the decoder (one byte each).
enum DecodeState : std::uint8_t {
  kNotFlagged = 0,  // not in the global index: output 0
  kUnknown = 1,     // flagged, not yet peeled
  kPeeled = 2,      // peeled this round; its counters still hold it
  kRecovered = 3,   // peeled and subtracted: exact
  kEstimated = 4,   // never peeled; median estimate
};

}  // namespace tagcsim::kernels
