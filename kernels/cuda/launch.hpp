// Launch shapes of the CUDA back end, as plain host arithmetic (no CUDA
// headers), so that the CPU tests check the shapes the GPU will run: how many
// blocks a grid gets, how many times a grid-stride loop goes round, and that
// no block counts 2^32 elements into its 32-bit shared-memory histogram.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tagcsim::kernels::cuda {

inline constexpr unsigned kThreads = 256;     // threads per block, every kernel
inline constexpr unsigned kBlocksPerSm = 8;   // 8 x 256 threads fill an SM

// Blocks of a grid-stride kernel over `items` (elements, or data blocks with
// per_block = 1): enough to fill every SM, no more, and at most `max_blocks`
// when that test hook is set (0: no cap). Never 0.
inline unsigned grid_blocks(std::size_t items, int sms, unsigned max_blocks = 0, unsigned per_block = kThreads) {
  std::size_t want = (items + per_block - 1) / per_block;
  const std::size_t cap = std::size_t(sms > 0 ? sms : 1) * kBlocksPerSm;
  if (want > cap) want = cap;
  if (max_blocks && want > max_blocks) want = max_blocks;
  return unsigned(want ? want : 1);
}

// Times the grid-stride loop of a kernel with `grid` blocks goes round for
// `items` items (per_block items per block and round).
inline std::size_t grid_rounds(std::size_t items, unsigned grid, unsigned per_block = kThreads) {
  const std::size_t stride = std::size_t(grid) * per_block;
  return (items + stride - 1) / stride;
}

// The top-k histograms count per block in 32 bits (shared memory) before
// adding into the 64-bit device histogram. A block sees at most
// rounds x kThreads elements, so the grid is widened until that stays below
// 2^31, whatever the cap.
inline constexpr std::size_t kMaxHistogramPerBlock = std::size_t(1) << 31;
inline unsigned histogram_blocks(std::size_t n, unsigned grid) {
  const std::size_t per_round = kMaxHistogramPerBlock / kThreads;  // rounds a block may go
  const std::size_t need = (n + per_round * kThreads - 1) / (per_round * kThreads);
  return need > grid ? unsigned(need) : grid;
}

}  // namespace tagcsim::kernels::cuda
