// CPU reference: peeling decoder and median estimate.
#include "kernels/cpu_reference.hpp"
#include "kernels/rules.hpp"

namespace tagcsim::kernels::cpu {

void decode_begin(const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape, float* out,
                  std::uint8_t* state) {
  for (std::size_t i = 0; i < shape.blocked(); ++i) {
    out[i] = 0.0f;
    state[i] = index_flag(index, i, enc) ? kUnknown : kNotFlagged;
  }
}

std::size_t peel_round(float* sketch, std::uint32_t* mapping, const SketchShape& shape, float* out,
                       std::uint8_t* state) {
  // Two phases, as on the GPU: first every element reads the counters as
  // they were at the start of the round, then the peeled ones are removed.
  // A counter with mapping 1 holds one unknown element, so no two elements
  // peel from the same counter and the result does not depend on order.
  std::size_t peeled = 0;
  for (std::size_t b = 0; b < shape.blocks; ++b) {
    const BlockHash bh = block_hash(std::uint32_t(b), std::uint32_t(shape.rows));
    for (std::size_t t = 0; t < kBlock; ++t) {
      const std::size_t i = b * kBlock + t;
      if (state[i] != kUnknown) continue;
      for (int k = 0; k < kHashes; ++k) {
        const std::size_t c = std::size_t(bh.row[k]) * kBlock + t;
        if (mapping[c] == 1) {
          out[i] = apply_sign(sketch[c], bh.negative[k]);
          state[i] = kPeeled;
          ++peeled;
          break;
        }
      }
    }
  }
  for (std::size_t b = 0; b < shape.blocks; ++b) {
    const BlockHash bh = block_hash(std::uint32_t(b), std::uint32_t(shape.rows));
    for (std::size_t t = 0; t < kBlock; ++t) {
      const std::size_t i = b * kBlock + t;
      if (state[i] != kPeeled) continue;
      for (int k = 0; k < kHashes; ++k) {
        const std::size_t c = std::size_t(bh.row[k]) * kBlock + t;
        const float x = apply_sign(out[i], !bh.negative[k]);  // minus the signed value
        if (sketch_contributes(x)) sketch[c] = sketch_add(sketch[c], x);  // the GPU's atomic rule
        mapping[c] -= 1;
      }
      state[i] = kRecovered;
    }
  }
  return peeled;
}

void estimate(const float* sketch, const SketchShape& shape, float* out, std::uint8_t* state) {
  for (std::size_t b = 0; b < shape.blocks; ++b) {
    const BlockHash bh = block_hash(std::uint32_t(b), std::uint32_t(shape.rows));
    for (std::size_t t = 0; t < kBlock; ++t) {
      const std::size_t i = b * kBlock + t;
      if (state[i] != kUnknown) continue;
      float e[kHashes];
      for (int k = 0; k < kHashes; ++k)
        e[k] = apply_sign(sketch[std::size_t(bh.row[k]) * kBlock + t], bh.negative[k]);
      out[i] = median3(e[0], e[1], e[2]);
      state[i] = kEstimated;
    }
  }
}

}  // namespace tagcsim::kernels::cpu
