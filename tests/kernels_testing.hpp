// Helpers shared by the kernel tests (test_kernels*.cpp): test data, the CUDA
// skip, and the comparisons the CUDA-vs-CPU cases use.
#pragma once

#include "kernels/pipeline.hpp"
#include "kernels/rules.hpp"
#include "kernels/tagc.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace ktest {

using namespace tagcsim::kernels;

inline std::unique_ptr<Engine> cpu_engine() { return make_engine(Backend::Cpu); }

inline std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}
inline float from_bits(std::uint32_t u) {
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// Sparse integer-valued shard: about `density` of the entries are nonzero
// integers in [-50, 50] \ {0}. Integer sums are exact in fp32, so decoded
// values can be compared with ==.
inline std::vector<float> sparse_integers(std::size_t n, double density, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n, 0.0f);
  for (auto& x : v) {
    if (rng() < density * 4294967296.0) {
      int k = int(rng() % 100) - 50;
      x = float(k >= 0 ? k + 1 : k);
    }
  }
  return v;
}

// Gradient-like values: signed, magnitudes spread over several decades.
inline std::vector<float> gradient(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng) * std::pow(10.0f, float(int(rng() % 5)) - 4.0f);
  return v;
}

inline std::vector<std::uint8_t> make_index(Engine& e, const std::vector<float>& v, IndexEncoding enc) {
  std::vector<std::uint8_t> idx(index_bytes(v.size(), enc));
  e.create_index(v.data(), v.size(), enc, idx.data());
  return idx;
}

inline std::vector<unsigned> read_flags(const std::vector<std::uint8_t>& idx, std::size_t n, IndexEncoding enc) {
  std::vector<unsigned> f(n);
  for (std::size_t i = 0; i < n; ++i) f[i] = index_flag(idx.data(), i, enc);
  return f;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The CUDA back end, or null (with a SKIPPED message) where it cannot run:
// every CUDA twin starts with this. kernels/gpu-check.sh treats SKIPPED on a
// GPU machine as a failure.
inline std::unique_ptr<Engine> gpu_or_skip(const EngineOptions& options = {}) {
  std::string why = cuda_problem();
  if (!why.empty()) {
    MESSAGE("SKIPPED: CUDA-vs-CPU check needs a GPU: " << why);
    return nullptr;
  }
  return make_engine(Backend::Cuda, options);
}

// Per counter: the sum of |contribution| and their number, over the
// contributions that can change a counter (rules.hpp sketch_contributes),
// finite ones only. A sum of m terms in any order differs from another order
// by at most m * 2^-24 * sum|x| (fp32 atomics reorder; nothing else does).
struct SketchBound {
  std::vector<double> magnitude;
  std::vector<std::uint32_t> terms;
};
inline void add_to_bound(SketchBound& b, std::span<const float> values, const SketchShape& s, std::size_t shards = 1) {
  if (b.magnitude.empty()) {
    b.magnitude.assign(shards * s.counters(), 0.0);
    b.terms.assign(shards * s.counters(), 0);
  }
  for (std::size_t sh = 0; sh < shards; ++sh)
    for (std::size_t blk = 0; blk < s.blocks; ++blk) {
      const BlockHash bh = block_hash(std::uint32_t(blk), std::uint32_t(s.rows));
      for (int k = 0; k < kHashes; ++k)
        for (std::size_t t = 0; t < kBlock; ++t) {
          const float x = values[sh * s.elements + blk * kBlock + t];
          if (!sketch_contributes(x) || !std::isfinite(x)) continue;
          const std::size_t c = sh * s.counters() + bh.row[k] * kBlock + t;
          b.magnitude[c] += std::abs(double(x));
          b.terms[c] += 1;
        }
    }
}

// Equal bits, or both NaN (NaN payloads of atomics are the hardware's).
inline bool same_float(float a, float b) { return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b)); }

// Sketch counters: finite ones within the reordering bound, non-finite ones
// (a non-finite sum does not depend on the order) of the same class.
inline bool sketch_close(const std::vector<float>& gpu, const std::vector<float>& cpu, const SketchBound& b) {
  if (gpu.size() != cpu.size() || b.magnitude.size() != cpu.size()) return false;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    if (!std::isfinite(cpu[i]) || !std::isfinite(gpu[i])) {
      if (!same_float(gpu[i], cpu[i])) return false;
      continue;
    }
    if (std::abs(double(gpu[i]) - double(cpu[i])) > double(b.terms[i]) * 0x1p-24 * b.magnitude[i]) return false;
  }
  return true;
}

// Decoded values: a peeled value is a counter after other peeled values were
// subtracted from it, so the reordering error of a few counters adds up;
// 2^-14 of the largest counter magnitude is far below a wrong value's error.
inline bool decoded_close(const std::vector<float>& gpu, const std::vector<float>& cpu, double scale) {
  if (gpu.size() != cpu.size()) return false;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    if (!std::isfinite(cpu[i]) || !std::isfinite(gpu[i])) {
      if (!same_float(gpu[i], cpu[i])) return false;
      continue;
    }
    if (std::abs(double(gpu[i]) - double(cpu[i])) > 0x1p-14 * scale) return false;
  }
  return true;
}

inline double max_of(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, x);
  return m;
}

// Every stage on one engine, from a gradient and a residual to the decoded
// shard: what the CUDA twins compare and the CPU cases check by hand.
struct StageParams {
  SparsifyMethod method = SparsifyMethod::TopK;
  double sparsity = 0.8;
  IndexEncoding enc = IndexEncoding::Bit1Or;
  double ratio = 2.0;
};
struct Stages {
  std::vector<float> out, residual, flagged, sketch, decoded;
  float threshold = 0;
  SparsifyResult sparsify;
  std::vector<std::uint8_t> index, state;
  std::vector<std::uint32_t> mapping, built;
  DecodeResult decode;
  SketchShape shape;
};
inline Stages run_stages(Engine& e, const std::vector<float>& grad, const std::vector<float>& residual,
                         const StageParams& p) {
  Stages r;
  const std::size_t n = grad.size();
  r.shape = sketch_shape(n, p.ratio);
  const SketchShape& s = r.shape;
  Buffer<float> g(e, grad), res(e, residual), out(e, n), thr(e, 1), sketch(e, s.counters()), dec(e, n);
  Buffer<std::uint8_t> idx(e, index_bytes(n, p.enc)), state(e, s.blocked());
  Buffer<std::uint32_t> mapping(e, s.counters()), built(e, s.counters());
  r.sparsify = e.sparsify(g.get(), res.get(), out.get(), n, p.method, p.sparsity, thr.get());
  r.out = out.download();
  r.residual = res.download();
  r.threshold = thr.download()[0];
  e.create_index(out.get(), n, p.enc, idx.get());
  r.index = idx.download();
  e.read_index(out.get(), idx.get(), n, p.enc);
  r.flagged = out.download();
  if (s.rows) {
    e.compress(out.get(), s, sketch.get(), mapping.get());
    r.sketch = sketch.download();
    r.mapping = mapping.download();
    e.build_mapping(idx.get(), p.enc, s, built.get());
    r.built = built.download();
    dec.zero();
    r.decode = e.decode(sketch.get(), built.get(), idx.get(), p.enc, s, dec.get(), state.get());
    r.decoded = dec.download();
    r.state = state.download();
  }
  return r;
}

// CUDA against CPU on one run_stages: everything exact except the sketch and
// the decoded values, which fp32 atomics may round in another order.
inline void check_same_stages(const Stages& gpu, const Stages& cpu) {
  CHECK(gpu.sparsify.host_syncs == cpu.sparsify.host_syncs);
  CHECK(bits(gpu.threshold) == bits(cpu.threshold));
  CHECK(same_bits(gpu.out, cpu.out));
  CHECK(same_bits(gpu.residual, cpu.residual));
  CHECK(gpu.index == cpu.index);
  CHECK(same_bits(gpu.flagged, cpu.flagged));
  CHECK(gpu.mapping == cpu.mapping);
  CHECK(gpu.built == cpu.built);
  SketchBound b;
  add_to_bound(b, cpu.flagged, cpu.shape);
  CHECK(sketch_close(gpu.sketch, cpu.sketch, b));
  CHECK(gpu.decode.rounds == cpu.decode.rounds);
  CHECK(gpu.decode.recovered == cpu.decode.recovered);
  CHECK(gpu.decode.estimated == cpu.decode.estimated);
  CHECK(gpu.state == cpu.state);
  CHECK(decoded_close(gpu.decoded, cpu.decoded, max_of(b.magnitude)));
}

// Sizes of the multi-iteration cases. 2441 data blocks (2.5M elements): on a
// GPU of 108-132 SMs (8 blocks of 256 threads each) every element-wise loop
// goes round 10-12 times and every per-data-block loop 3 times. The capped
// size, with the grid capped at 1-2 blocks, makes them go round hundreds of
// times. Neither is a multiple of 32, 256 or 1024.
inline constexpr std::size_t kMultiIterationElements = 2441 * kBlock + 333;
inline constexpr std::size_t kCappedElements = 300 * kBlock + 77;

inline const float kInf = std::numeric_limits<float>::infinity();

// Edge data, each through every stage (run_stages): the CPU cases check what
// the reference does with it, the CUDA twin that the GPU does the same.
struct EdgeCase {
  std::string name;
  std::vector<float> grad, residual;
  StageParams params;
};

inline std::vector<EdgeCase> edge_cases() {
  std::vector<EdgeCase> cases;
  const std::size_t n = 6 * kBlock + 37;
  auto add = [&](std::string name, std::vector<float> g, std::vector<float> r, StageParams p) {
    cases.push_back({std::move(name), std::move(g), std::move(r), p});
  };
  const std::vector<float> zeros(n, 0.0f);

  // NaN (several payloads and signs), +-inf and -0.0 among gradient values.
  std::vector<float> special = gradient(n, 41);
  for (std::size_t i = 0; i < n; i += 97) special[i] = from_bits(0x7fc00000u + std::uint32_t(i));
  for (std::size_t i = 13; i < n; i += 131) special[i] = from_bits(0xffc00001u);
  for (std::size_t i = 29; i < n; i += 113) special[i] = (i & 1) ? kInf : -kInf;
  for (std::size_t i = 5; i < n; i += 7) special[i] = -0.0f;
  for (auto enc : {IndexEncoding::Bit1Or, IndexEncoding::Bit8Max}) {
    add("nan-inf top-k", special, zeros, {SparsifyMethod::TopK, 0.9, enc, 2.0});
    add("nan-inf bisect", special, zeros, {SparsifyMethod::Bisect, 0.5, enc, 3.0});
  }

  // Ties: three magnitudes only, so the threshold falls inside a tie.
  std::vector<float> ties(n);
  for (std::size_t i = 0; i < n; ++i) ties[i] = float(i % 2 ? 1 : -1) * (i % 10 == 0 ? 2.0f : i % 3 ? 0.25f : 1.0f);
  add("ties top-k", ties, zeros, {SparsifyMethod::TopK, 0.8, IndexEncoding::Bit4Sum, 2.0});
  add("ties bisect", ties, gradient(n, 42), {SparsifyMethod::Bisect, 0.8, IndexEncoding::Bit1Sum, 2.0});

  // -0.0 in gradient and residual: -0 + -0 = -0 is kept at sparsity 0, never flagged.
  std::vector<float> negz = gradient(n, 43), negz_r(n, 0.0f);
  for (std::size_t i = 0; i < n; i += 3) negz[i] = -0.0f, negz_r[i] = i % 2 ? -0.0f : 0.0f;
  add("negative zero keep-all", negz, negz_r, {SparsifyMethod::TopK, 0.0, IndexEncoding::Bit8Max, 2.0});

  // All-zero shards.
  add("all-zero top-k", zeros, zeros, {SparsifyMethod::TopK, 0.9, IndexEncoding::Bit1Sum, 2.0});
  add("all-zero bisect", zeros, zeros, {SparsifyMethod::Bisect, 0.9, IndexEncoding::Bit4Sum, 2.0});

  // Sparsity 0 (keep all) and near 1 (keep 3).
  const auto g = gradient(n, 44), r = gradient(n, 45);
  const double near_one = 1.0 - 3.0 / double(n);
  add("sparsity 0 top-k", g, r, {SparsifyMethod::TopK, 0.0, IndexEncoding::Bit1Or, 2.0});
  add("sparsity 0 bisect", g, r, {SparsifyMethod::Bisect, 0.0, IndexEncoding::Bit1Or, 2.0});
  add("sparsity near 1 top-k", g, r, {SparsifyMethod::TopK, near_one, IndexEncoding::Bit4Sum, 1.5});
  add("sparsity near 1 bisect", g, r, {SparsifyMethod::Bisect, 0.999, IndexEncoding::Bit8Max, 1.5});

  // Subnormal gradients among normal ones of at least ~2^-100 (so every
  // partial sum of the sketch is a multiple of 2^-123: never subnormal, in
  // any order). Kept at sparsity 0, they are flagged but add nothing.
  std::vector<float> sub = gradient(n, 46);
  for (std::size_t i = 0; i < n; ++i) {
    const float m = std::max(std::abs(sub[i]), 1e-6f) * 0x1p-80f;
    sub[i] = i % 4 == 1 ? from_bits(std::uint32_t(1 + i * 2654435761u % 0x7fffffu) | (i & 2 ? 0x80000000u : 0u))
                        : (sub[i] < 0 ? -m : m);
  }
  add("subnormal keep-all", sub, zeros, {SparsifyMethod::TopK, 0.0, IndexEncoding::Bit1Or, 2.0});
  return cases;
}

}  // namespace ktest
