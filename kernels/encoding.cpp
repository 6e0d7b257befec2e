// Names, sizes and checks shared by every part of the kernels library.
#include "common/input.hpp"
#include "kernels/tagc.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace tagcsim::kernels {

const char* to_string(IndexEncoding e) {
  switch (e) {
    case IndexEncoding::Bit1Sum: return "1bit-sum";
    case IndexEncoding::Bit1Or: return "1bit-or";
    case IndexEncoding::Bit4Sum: return "4bit-sum";
    case IndexEncoding::Bit8Max: return "8bit-max";
  }
  return "?";
}

IndexEncoding parse_index_encoding(std::string_view text, std::string_view what) {
  for (auto e : kAllEncodings)
    if (text == to_string(e)) return e;
  throw InputError(
      fmt::format("{}: expected one of: 1bit-sum, 1bit-or, 4bit-sum, 8bit-max; got '{}'", what, text));
}

IndexEncoding parse_index_encoding(const Input& in) {
  return parse_index_encoding(in.as_choice({"1bit-sum", "1bit-or", "4bit-sum", "8bit-max"}), in.where());
}

double index_bytes_per_element(IndexEncoding e) {
  switch (e) {
    case IndexEncoding::Bit1Sum:
    case IndexEncoding::Bit1Or: return 1.0 / 8;
    case IndexEncoding::Bit4Sum: return 1.0 / 2;
    case IndexEncoding::Bit8Max: return 1.0;
  }
  return 0;
}

std::size_t index_bytes(std::size_t n, IndexEncoding e) {
  switch (e) {
    case IndexEncoding::Bit1Sum:
    case IndexEncoding::Bit1Or: return (n + 7) / 8;
    case IndexEncoding::Bit4Sum: return (n + 1) / 2;
    case IndexEncoding::Bit8Max: return n;
  }
  return 0;
}

bool is_lossy(IndexEncoding e) { return e == IndexEncoding::Bit1Sum; }

void check_index_ranks(IndexEncoding e, int ranks) {
  if (ranks < 1) throw InputError(fmt::format("index aggregation: expected at least 1 rank, got {}", ranks));
  if (e == IndexEncoding::Bit4Sum && ranks > kMaxRanks4BitSum)
    throw InputError(fmt::format(
        "index encoding 4bit-sum: a 4-bit field overflows when more than {} ranks set it (got {} ranks); "
        "use 8bit-max or 1bit-or",
        kMaxRanks4BitSum, ranks));
}

const char* to_string(Stage s) {
  switch (s) {
    case Stage::SparsifyBisect: return "sparsify_bisect";
    case Stage::SparsifyTopk: return "sparsify_topk";
    case Stage::IndexCreate: return "index_create";
    case Stage::IndexRead: return "index_read";
    case Stage::Compress: return "compress";
    case Stage::CompressBatched: return "compress_batched";
    case Stage::DecodeRound: return "decode_round";
    case Stage::Estimate: return "estimate";
  }
  return "?";
}

Stage parse_stage(std::string_view text, std::string_view what) {
  for (auto s : kAllStages)
    if (text == to_string(s)) return s;
  std::string names;
  for (auto s : kAllStages) names += (names.empty() ? "" : ", ") + std::string(to_string(s));
  throw InputError(fmt::format("{}: expected a stage ({}), got '{}'", what, names, text));
}

bool stage_uses_encoding(Stage s) { return s == Stage::IndexCreate || s == Stage::IndexRead; }

std::span<const float> bisect_thresholds() {
  // Geometric from 1e-20 to 0.5: fine steps where gradients live, and a
  // floor low enough that "keep everything nonzero" is reachable.
  static const std::array<float, 25> table = [] {
    std::array<float, 25> t{};
    for (int j = 0; j < 25; ++j) t[j] = float(1e-20 * std::pow(0.5 / 1e-20, j / 24.0));
    t[24] = 0.5f;
    return t;
  }();
  return table;
}

const char* to_string(TopkHistogram h) { return h == TopkHistogram::Shared ? "shared" : "warp"; }

TopkHistogram parse_topk_histogram(std::string_view text, std::string_view what) {
  for (auto h : {TopkHistogram::Warp, TopkHistogram::Shared})
    if (text == to_string(h)) return h;
  throw InputError(fmt::format("{}: expected warp or shared, got '{}'", what, text));
}

std::size_t topk_keep_count(std::size_t n, double sparsity) {
  if (!(sparsity >= 0 && sparsity <= 1))
    throw InputError(fmt::format("sparsify: sparsity must be in [0, 1], got {}", sparsity));
  auto zeros = static_cast<std::size_t>(std::llround(sparsity * double(n)));
  return zeros >= n ? 0 : n - zeros;
}

SketchShape sketch_shape(std::size_t elements, double ratio) {
  if (!std::isfinite(ratio) || ratio <= 1)
    throw InputError(fmt::format(
        "count sketch: the compression ratio must be a number greater than 1 (uncompressed / sketch size), "
        "got {}",
        ratio));
  SketchShape s;
  s.elements = elements;
  s.blocks = elements / kBlock;
  s.tail = elements % kBlock;
  s.ratio = ratio;
  if (s.blocks) {
    // The tiny slack keeps ratios like 1.5 on 3 blocks at 2 rows despite
    // rounding in blocks / ratio.
    double r = std::ceil(double(s.blocks) / ratio * (1 - 1e-12));
    s.rows = std::max<std::size_t>(1, static_cast<std::size_t>(r));
  }
  if (s.blocks > 0xffffffffull) throw InputError("count sketch: more than 2^32 blocks in one shard");
  return s;
}

const char* to_string(Backend b) { return b == Backend::Cpu ? "cpu" : "cuda"; }

Backend parse_backend(std::string_view text, std::string_view what) {
  if (text == "cpu") return Backend::Cpu;
  if (text == "cuda") return Backend::Cuda;
  throw InputError(fmt::format("{}: expected cpu or cuda, got '{}'", what, text));
}

}  // namespace tagcsim::kernels
