// TAGC's per-shard pipeline over simulated ranks, run on one engine: what the
// communication hook does, with the collectives replaced by local sums. Used
// by the tests and by `tagcsim kernels quality`.
#pragma once

#include "kernels/tagc.hpp"

#include <span>
#include <vector>

namespace tagcsim::kernels {

struct ShardPipelineResult {
  std::vector<float> decoded;             // owner's shard: decoded blocks, plain-summed tail
  std::vector<float> sketch;              // the summed sketch the owner received
  std::vector<std::uint8_t> global_index; // aggregated index
  std::vector<std::uint8_t> state;        // decoder state of each blocked element
  DecodeResult decode;
};

// `rank_values[r]`: rank r's sparsified shard (all the same length).
// Index create -> aggregate -> read index -> compress -> SUM of the sketches;
// the owner builds the mapping from the global index and decodes; the tail
// (elements past the last whole block) is summed plain.
ShardPipelineResult run_shard_pipeline(Engine& e, std::span<const std::vector<float>> rank_values,
                                       IndexEncoding enc, double ratio);

// A unit of N shards on N ranks (`rank_units[r]` has N * shard values).
// Per shard: run_shard_pipeline for shard s, owner s.
std::vector<ShardPipelineResult> run_unit_per_shard(Engine& e, std::span<const std::vector<float>> rank_units,
                                                    IndexEncoding enc, double ratio);
// Batched: each rank sketches all N shards in one pass and one reduce-scatter
// hands owner s the sum of slice s. Linearity makes this equal to the above.
std::vector<ShardPipelineResult> run_unit_batched(Engine& e, std::span<const std::vector<float>> rank_units,
                                                  IndexEncoding enc, double ratio);

}  // namespace tagcsim::kernels
