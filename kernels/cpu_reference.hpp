// The CPU reference back end: plain loops in a fixed order, so results are
// deterministic. It is the oracle the CUDA back end is tested against. The
// semantics of each function are those of the Engine method of the same name
// (kernels/tagc.hpp).
#pragma once

#include "kernels/tagc.hpp"

namespace tagcsim::kernels::cpu {

SparsifyResult sparsify(const float* grad, float* residual, float* out, std::size_t n, SparsifyMethod method,
                        double sparsity, float* threshold);
// Magnitude key of the keep-th largest |value| (radix select, 8 bits a pass).
std::uint32_t topk_threshold_key(const float* values, std::size_t n, std::size_t keep);

void create_index(const float* values, std::size_t n, IndexEncoding enc, std::uint8_t* index);
void aggregate_index(std::uint8_t* acc, const std::uint8_t* other, std::size_t n, IndexEncoding enc);
void read_index(float* values, const std::uint8_t* index, std::size_t n, IndexEncoding enc);

void compress(const float* values, const SketchShape& shape, float* sketch, std::uint32_t* mapping);
void compress_batched(const float* values, std::size_t shards, const SketchShape& shape, float* sketches,
                      std::uint32_t* mappings);
void build_mapping(const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape, std::uint32_t* mapping);

void decode_begin(const std::uint8_t* index, IndexEncoding enc, const SketchShape& shape, float* out,
                  std::uint8_t* state);
std::size_t peel_round(float* sketch, std::uint32_t* mapping, const SketchShape& shape, float* out,
                       std::uint8_t* state);
void estimate(const float* sketch, const SketchShape& shape, float* out, std::uint8_t* state);

}  // namespace tagcsim::kernels::cpu
