// CPU reference: count-sketch compression and the mapping counters.
#include "kernels/cpu_reference.hpp"
#include "kernels/rules.hpp"

#include <algorithm>

namespace tagcsim::kernels::cpu {
namespace {

// Adds the blocks of one shard into its sketch, block by block and hash by
// hash: the fixed order makes every counter's rounding reproducible. Each
// update follows the GPU atomic's rule (sketch_add: subnormals flushed), so
// flagged zeros and subnormal gradients leave the counters as on the GPU.
void sketch_shard(const float* values, const SketchShape& shape, float* sketch, std::uint32_t* mapping) {
  for (std::size_t b = 0; b < shape.blocks; ++b) {
    const BlockHash bh = block_hash(std::uint32_t(b), std::uint32_t(shape.rows));
    const float* v = values + b * kBlock;
    for (int k = 0; k < kHashes; ++k) {
      float* row = sketch + std::size_t(bh.row[k]) * kBlock;
      for (std::size_t t = 0; t < kBlock; ++t) {  // branch-free: vectorises
        const float x = apply_sign(v[t], bh.negative[k]);
        const float sum = sketch_add(row[t], x);
        row[t] = sketch_contributes(x) ? sum : row[t];
      }
      if (mapping) {
        std::uint32_t* mrow = mapping + std::size_t(bh.row[k]) * kBlock;
        for (std::size_t t = 0; t < kBlock; ++t) mrow[t] += float_bits(v[t]) & 1u;
      }
    }
  }
}

}  // namespace

void compress(const float* values, const SketchShape& shape, float* sketch, std::uint32_t* mapping) {
  std::fill_n(sketch, shape.counters(), 0.0f);
  if (mapping) std::fill_n(mapping, shape.counters(), 0u);
  sketch_shard(values, shape, sketch, mapping);
}

void compress_batched(const float* values, std::size_t shards, const SketchShape& shape, float* sketches,
                      std::uint32_t* mappings) {
  const std::size_t c = shape.counters();
  std::fill_n(sketches, shards * c, 0.0f);
  if (mappings) std::fill_n(mappings, shards * c, 0u);
  for (std::size_t s = 0; s < shards; ++s)
    sketch_shard(values + s * shape.elements, shape, sketches + s * c, mappings ? mappings + s * c : nullptr);
}

void build_mapping(const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape, std::uint32_t* mapping) {
  std::fill_n(mapping, shape.counters(), 0u);
  for (std::size_t b = 0; b < shape.blocks; ++b) {
    const BlockHash bh = block_hash(std::uint32_t(b), std::uint32_t(shape.rows));
    for (int k = 0; k < kHashes; ++k) {
      std::uint32_t* mrow = mapping + std::size_t(bh.row[k]) * kBlock;
      for (std::size_t t = 0; t < kBlock; ++t) mrow[t] += index_flag(index, b * kBlock + t, enc);
    }
  }
}

}  // namespace tagcsim::kernels::cpu
