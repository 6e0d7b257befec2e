#include "calibrate/check_stages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace tagcsim::calibrate {
namespace {

bool starts(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

const char* to_string(StageCall::Kind k) {
  switch (k) {
    case StageCall::Kind::Sparsify: return "sparsify";
    case StageCall::Kind::IndexCreate: return "index_create";
    case StageCall::Kind::IndexRead: return "index_read";
    case StageCall::Kind::Compress: return "compress";
    case StageCall::Kind::CompressBatched: return "compress_batched";
    case StageCall::Kind::Decode: return "decode";
  }
  return "?";
}

std::vector<StageCall> compression_stages(const sim::StepSetup& setup, const sim::Policy& policy, const sim::Task& t) {
  using K = StageCall::Kind;
  if (t.category != sim::Category::CompressionKernel || t.unit < 0) return {};
  const auto& unit = setup.units[std::size_t(t.unit)];
  const auto p = sim::unit_policy(policy, unit);
  if (!p) return {};
  const int N = setup.shard_size();
  const double all = double(unit.params), shard = all / N;
  auto prepare = [&](double n, int repeat) {
    std::vector<StageCall> v;
    if (p->sparsity > 0) v.push_back({K::Sparsify, n, 1, repeat});
    v.push_back({K::IndexCreate, n, 1, repeat});
    return v;
  };
  const std::string& name = t.name;
  // Names as sim/policy.cpp's tagc_unit, batched_unit and lhc_unit give them.
  if (starts(name, "tagc sparsify+index shard 0 ")) return prepare(shard, 1);
  if (starts(name, "tagc kernels x")) {
    auto v = N > 1 ? prepare(shard, N - 1) : std::vector<StageCall>{};
    v.push_back({K::IndexRead, shard, 1, N});
    v.push_back({K::Compress, shard, 1, N});
    return v;
  }
  if (starts(name, "tagc decode ") || starts(name, "batched decode "))
    return {{K::IndexRead, shard, 1, 1}, {K::Decode, shard, 1, 1}};
  if (starts(name, "batched sparsify+index ")) return prepare(all, 1);
  if (starts(name, "batched sketch ")) return {{K::CompressBatched, all, N, 1}};
  if (starts(name, "lhc index+sketch ")) {
    auto v = prepare(all, 1);
    v.push_back({K::IndexRead, all, 1, 1});
    v.push_back({K::Compress, all, 1, 1});
    return v;
  }
  if (starts(name, "lhc decode ")) return {{K::IndexRead, all, 1, 1}, {K::Decode, all, 1, 1}};
  return {};
}

StageBuffers::StageBuffers(kernels::Engine& e, std::size_t n, int shards)
    : grad(e, n), residual(e, n), values(e, n), decoded(e, n),
      sketch(e, n + std::size_t(std::max(shards, 1)) * kernels::kBlock), index(e, n), state(e, n),
      mapping(e, n + std::size_t(std::max(shards, 1)) * kernels::kBlock), capacity(n) {
  // Gradient-like values: random signs, magnitudes spread over decades, so that sparsification and
  // the sketches have real work to do.
  std::vector<float> g(n);
  std::uint64_t s = 0x2545f4914f6cdd1dull;
  for (auto& x : g) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x = float((s & 1) ? 1 : -1) * std::ldexp(float((s >> 11) & 0xffff) / 65536.0f + 0.5f, -int((s >> 40) % 20));
  }
  if (n) grad.upload(g);
  residual.zero();
}

bool run_compression_task(kernels::Engine& e, StageBuffers& b, const sim::StepSetup& setup, const sim::Policy& policy,
                          const sim::Task& task) {
  const auto calls = compression_stages(setup, policy, task);
  if (calls.empty()) return false;
  const auto p = *sim::unit_policy(policy, setup.units[std::size_t(task.unit)]);
  const auto method = p.exact_topk ? kernels::SparsifyMethod::TopK : kernels::SparsifyMethod::Bisect;
  for (const auto& c : calls) {
    const std::size_t n = std::min(b.capacity, std::size_t(c.elements));
    for (int r = 0; r < c.repeat; ++r) switch (c.kind) {
        case StageCall::Kind::Sparsify:
          e.sparsify(b.grad.get(), b.residual.get(), b.values.get(), n, method, p.sparsity, nullptr);
          break;
        case StageCall::Kind::IndexCreate: e.create_index(b.values.get(), n, p.index, b.index.get()); break;
        case StageCall::Kind::IndexRead: e.read_index(b.values.get(), b.index.get(), n, p.index); break;
        case StageCall::Kind::Compress:
          e.compress(b.values.get(), kernels::sketch_shape(n, p.ratio), b.sketch.get(), b.mapping.get());
          break;
        case StageCall::Kind::CompressBatched: {
          const std::size_t per = n / std::size_t(std::max(c.shards, 1));
          e.compress_batched(b.values.get(), std::size_t(c.shards), kernels::sketch_shape(per, p.ratio), b.sketch.get(),
                             b.mapping.get());
          break;
        }
        case StageCall::Kind::Decode:
          e.decode(b.sketch.get(), b.mapping.get(), b.index.get(), p.index, kernels::sketch_shape(n, p.ratio),
                   b.decoded.get(), b.state.get());
          break;
      }
  }
  return true;
}

}  // namespace tagcsim::calibrate
