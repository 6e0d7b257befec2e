#include "kernels/pipeline.hpp"

#include <stdexcept>

namespace tagcsim::kernels {
namespace {

std::size_t common_length(std::span<const std::vector<float>> ranks) {
  if (ranks.empty()) throw std::invalid_argument("pipeline: no ranks");
  for (const auto& r : ranks)
    if (r.size() != ranks[0].size()) throw std::invalid_argument("pipeline: ranks differ in length");
  return ranks[0].size();
}

// Global index of one shard: every rank's index, aggregated (the all-reduce).
Buffer<std::uint8_t> global_index(Engine& e, std::span<const std::vector<float>> ranks, std::size_t offset,
                                  std::size_t n, IndexEncoding enc) {
  const std::size_t ib = index_bytes(n, enc);
  Buffer<float> vals(e, n);
  Buffer<std::uint8_t> mine(e, ib), global(e, ib);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    vals.upload(std::span(ranks[r]).subspan(offset, n));
    e.create_index(vals.get(), n, enc, r == 0 ? global.get() : mine.get());
    if (r > 0) e.aggregate_index(global.get(), mine.get(), n, enc);
  }
  return global;
}

// Owner side: mapping from the global index, decode, plain tail.
ShardPipelineResult finish(Engine& e, Buffer<float>& summed, Buffer<std::uint8_t>& global, IndexEncoding enc,
                           const SketchShape& shape, std::span<const std::vector<float>> ranks, std::size_t offset) {
  ShardPipelineResult res;
  res.sketch = summed.download();
  res.global_index = global.download();
  Buffer<std::uint32_t> mapping(e, shape.counters());
  if (shape.rows) e.build_mapping(global.get(), enc, shape, mapping.get());
  Buffer<float> out(e, shape.elements);
  out.zero();
  Buffer<std::uint8_t> state(e, shape.blocked());
  res.decode = e.decode(summed.get(), mapping.get(), global.get(), enc, shape, out.get(), state.get());
  res.decoded = out.download();
  res.state = state.download();
  // The tail travels uncompressed: a plain SUM, in rank order.
  for (std::size_t i = shape.blocked(); i < shape.elements; ++i) {
    float s = 0;
    for (const auto& r : ranks) s += r[offset + i];
    res.decoded[i] = s;
  }
  return res;
}

}  // namespace

ShardPipelineResult run_shard_pipeline(Engine& e, std::span<const std::vector<float>> ranks, IndexEncoding enc,
                                       double ratio) {
  const std::size_t n = common_length(ranks);
  check_index_ranks(enc, static_cast<int>(ranks.size()));
  const SketchShape shape = sketch_shape(n, ratio);
  auto global = global_index(e, ranks, 0, n, enc);
  Buffer<float> vals(e, n), sketch(e, shape.counters()), summed(e, shape.counters());
  summed.zero();
  for (const auto& r : ranks) {
    vals.upload(r);
    e.read_index(vals.get(), global.get(), n, enc);
    if (shape.rows) {
      e.compress(vals.get(), shape, sketch.get(), nullptr);
      e.accumulate(summed.get(), sketch.get(), shape.counters());  // the reduce to the owner
    }
  }
  return finish(e, summed, global, enc, shape, ranks, 0);
}

std::vector<ShardPipelineResult> run_unit_per_shard(Engine& e, std::span<const std::vector<float>> units,
                                                    IndexEncoding enc, double ratio) {
  const std::size_t total = common_length(units), shards = units.size();
  if (total % shards) throw std::invalid_argument("pipeline: unit length is not a multiple of the rank count");
  const std::size_t n = total / shards;
  std::vector<ShardPipelineResult> out;
  for (std::size_t s = 0; s < shards; ++s) {
    std::vector<std::vector<float>> slice;
    for (const auto& u : units) slice.emplace_back(u.begin() + s * n, u.begin() + (s + 1) * n);
    out.push_back(run_shard_pipeline(e, slice, enc, ratio));
  }
  return out;
}

std::vector<ShardPipelineResult> run_unit_batched(Engine& e, std::span<const std::vector<float>> units,
                                                  IndexEncoding enc, double ratio) {
  const std::size_t total = common_length(units), shards = units.size();
  if (total % shards) throw std::invalid_argument("pipeline: unit length is not a multiple of the rank count");
  check_index_ranks(enc, static_cast<int>(shards));
  const std::size_t n = total / shards;
  const SketchShape shape = sketch_shape(n, ratio);
  const std::size_t c = shape.counters();
  std::vector<Buffer<std::uint8_t>> globals;
  for (std::size_t s = 0; s < shards; ++s) globals.push_back(global_index(e, units, s * n, n, enc));

  Buffer<float> vals(e, total), sketches(e, shards * c), summed(e, shards * c);
  summed.zero();
  for (const auto& u : units) {
    vals.upload(u);
    for (std::size_t s = 0; s < shards; ++s) e.read_index(vals.get() + s * n, globals[s].get(), n, enc);
    if (c) {
      e.compress_batched(vals.get(), shards, shape, sketches.get(), nullptr);  // one pass, N sketches
      e.accumulate(summed.get(), sketches.get(), shards * c);                   // the one reduce-scatter
    }
  }
  std::vector<ShardPipelineResult> out;
  for (std::size_t s = 0; s < shards; ++s) {
    Buffer<float> mine(e, c);
    if (c) e.copy(mine.get(), summed.get() + s * c, c * sizeof(float));  // owner s's slice
    out.push_back(finish(e, mine, globals[s], enc, shape, units, s * n));
  }
  return out;
}

}  // namespace tagcsim::kernels
