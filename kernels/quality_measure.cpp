// `tagcsim kernels quality`: decode quality measured with the real kernels
// on synthetic ranks.
#include "kernels/quality.hpp"

#include "common/input.hpp"
#include "kernels/rules.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>

namespace tagcsim::kernels {
namespace {

double uniform(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

// Each rank's sparsified shard. Positions follow the overlap model
// (quality.hpp); chosen positions get magnitudes 1 + Exp(1), the others
// noise below 0.5, so the real top-k keeps exactly the chosen ones.
std::vector<std::vector<float>> synthetic_ranks(Engine& e, const QualityCase& c) {
  if (c.ranks < 1) throw InputError(fmt::format("quality: ranks must be at least 1, got {}", c.ranks));
  if (!(c.sparsity >= 0.5 && c.sparsity < 1))
    throw InputError(fmt::format("quality: sparsity must be in [0.5, 1), got {}", c.sparsity));
  if (!(c.overlap >= 0 && c.overlap <= 1))
    throw InputError(fmt::format("quality: overlap must be in [0, 1], got {}", c.overlap));
  if (c.blocks < 1) throw InputError("quality: a shard needs at least one block");
  const std::size_t n = c.blocks * kBlock;
  const std::size_t k = topk_keep_count(n, c.sparsity);
  const std::size_t shared = std::size_t(std::llround(c.overlap * double(k)));
  std::mt19937_64 rng(c.seed);
  auto value = [&] {
    float m = float(1.0 - std::log(1.0 - uniform(rng)));
    return (rng() & 1) ? m : -m;
  };
  // stamp: 1 = shared position, r + 2 = already chosen by rank r.
  std::vector<std::uint32_t> stamp(n, 0);
  std::vector<std::size_t> common;
  while (common.size() < shared) {
    std::size_t i = rng() % n;
    if (stamp[i] == 0) stamp[i] = 1, common.push_back(i);
  }
  std::vector<std::vector<float>> out;
  Buffer<float> grad(e, n), res(e, n), sparse(e, n);
  for (int r = 0; r < c.ranks; ++r) {
    std::vector<float> g(n);
    for (auto& x : g) x = float((uniform(rng) - 0.5) * 0.99);
    for (std::size_t i : common) g[i] = value();
    for (std::size_t own = shared; own < k;) {
      std::size_t i = rng() % n;
      if (stamp[i] == 1 || stamp[i] == std::uint32_t(r) + 2) continue;
      stamp[i] = std::uint32_t(r) + 2;
      g[i] = value();
      ++own;
    }
    grad.upload(g);
    res.zero();
    e.sparsify(grad.get(), res.get(), sparse.get(), n, SparsifyMethod::TopK, c.sparsity, nullptr);
    out.push_back(sparse.download());
  }
  return out;
}

}  // namespace

std::vector<double> default_curve_loads() {
  std::vector<double> loads = {0.05, 0.1, 0.2, 0.3, 0.4};
  for (int i = 0; i <= 14; ++i) loads.push_back(0.5 + 0.05 * i);
  for (double l : {1.3, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 6.0, 10.0}) loads.push_back(l);
  return loads;
}

std::vector<QualityPoint> measure_quality(Engine& e, const QualityCase& c, std::span<const IndexEncoding> encodings,
                                          std::span<const double> ratios, const std::string& set) {
  const auto ranks = synthetic_ranks(e, c);
  const std::size_t n = c.blocks * kBlock;
  // The exact sum (double), the magnitude of what went into it, the union.
  std::vector<double> exact(n, 0.0), magnitude(n, 0.0);
  std::vector<std::uint8_t> in_union(n, 0);
  for (const auto& r : ranks)
    for (std::size_t i = 0; i < n; ++i) {
      exact[i] += r[i];
      magnitude[i] += std::abs(r[i]);
      in_union[i] |= r[i] != 0.0f;
    }
  std::size_t union_count = 0;
  double norm2 = 0;
  for (std::size_t i = 0; i < n; ++i) union_count += in_union[i], norm2 += exact[i] * exact[i];

  std::vector<QualityPoint> points;
  std::vector<std::pair<std::vector<std::uint8_t>, std::size_t>> seen;  // flags -> first point of that decode
  Buffer<float> vals(e, n), out(e, n);
  Buffer<std::uint8_t> state(e, n);
  for (auto enc : encodings) {
    if (enc == IndexEncoding::Bit4Sum && c.ranks > kMaxRanks4BitSum) continue;  // overflows: not a policy
    const std::size_t ib = index_bytes(n, enc);
    Buffer<std::uint8_t> mine(e, ib), global(e, ib);
    for (int r = 0; r < c.ranks; ++r) {
      vals.upload(ranks[r]);
      e.create_index(vals.get(), n, enc, r == 0 ? global.get() : mine.get());
      if (r > 0) e.aggregate_index(global.get(), mine.get(), n, enc);
    }
    const auto gidx = global.download();
    std::vector<std::uint8_t> flags(n);
    std::size_t lost = 0, invented = 0;
    for (std::size_t i = 0; i < n; ++i) {
      flags[i] = std::uint8_t(index_flag(gidx.data(), i, enc));
      lost += in_union[i] && !flags[i];
      invented += !in_union[i] && flags[i];
    }
    // Same flags -> same values after read index -> same sketches and decode.
    const QualityPoint* same = nullptr;
    for (auto& [f, first] : seen)
      if (f == flags) same = &points[first];
    if (same) {
      std::size_t first = std::size_t(same - points.data());
      for (std::size_t j = 0; j < ratios.size(); ++j) {
        QualityPoint p = points[first + j];
        p.encoding = enc;
        points.push_back(p);
      }
      continue;
    }
    seen.emplace_back(std::move(flags), points.size());

    for (double ratio : ratios) {
      const SketchShape shape = sketch_shape(n, ratio);
      Buffer<float> sketch(e, shape.counters()), summed(e, shape.counters());
      Buffer<std::uint32_t> mapping(e, shape.counters());
      summed.zero();
      for (const auto& r : ranks) {
        vals.upload(r);
        e.read_index(vals.get(), global.get(), n, enc);
        e.compress(vals.get(), shape, sketch.get(), nullptr);
        e.accumulate(summed.get(), sketch.get(), shape.counters());
      }
      e.build_mapping(global.get(), enc, shape, mapping.get());
      DecodeResult d = e.decode(summed.get(), mapping.get(), global.get(), enc, shape, out.get(), state.get());
      const auto decoded = out.download();
      double err2 = 0;
      std::size_t exact_hits = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double diff = double(decoded[i]) - exact[i];
        err2 += diff * diff;
        if (in_union[i] && std::abs(diff) <= 1e-5 * magnitude[i]) ++exact_hits;
      }
      QualityPoint p;
      p.set = set;
      p.encoding = enc;
      p.ranks = c.ranks;
      p.sparsity = c.sparsity;
      p.overlap = c.overlap;
      p.ratio = ratio;
      p.blocks = c.blocks;
      p.rows = shape.rows;
      p.union_density = double(union_count) / double(n);
      p.load = double(union_count) / double(shape.counters());
      p.flags_lost = union_count ? double(lost) / double(union_count) : 0.0;
      p.flags_invented = union_count ? double(invented) / double(union_count) : 0.0;
      p.recovered_fraction = union_count ? double(exact_hits) / double(union_count) : 1.0;
      p.relative_l2_error = norm2 > 0 ? std::sqrt(err2 / norm2) : 0.0;
      p.decode_rounds = d.rounds;
      points.push_back(p);
    }
  }
  return points;
}

std::vector<QualityPoint> run_quality(Engine& e, const QualityGrid& g,
                                      const std::function<void(const std::string&)>& progress) {
  std::vector<QualityPoint> all;
  unsigned seed = g.seed * 7919u;
  auto note = [&](const std::vector<QualityPoint>& pts) {
    if (progress)
      for (const auto& p : pts)
        progress(fmt::format("{:<5} {:<8} ranks {:>2} sparsity {:<5} overlap {:<4} ratio {:<4} rows {:>4}: load {:.3f} "
                             "recovered {:.4f} rel L2 {:.3g} rounds {:.0f}",
                             p.set, to_string(p.encoding), p.ranks, p.sparsity, p.overlap, p.ratio, p.rows, p.load,
                             p.recovered_fraction, p.relative_l2_error, p.decode_rounds));
    all.insert(all.end(), pts.begin(), pts.end());
  };
  // The peeling curve: the exact encodings depend on the union pattern only
  // through the load (and the row count), so two independent ranks and a
  // sweep of sparsities (and, past load 1.2, ratios) cover every load.
  const IndexEncoding exact[] = {IndexEncoding::Bit1Or};
  for (std::size_t rows : g.curve_rows) {
    for (double load : g.curve_loads) {
      const double ratio = load <= 1.2 ? 2.0 : load / 0.6;
      const double density = load / ratio;
      const auto blocks = std::max<std::size_t>(1, std::size_t(std::floor(ratio * double(rows) + 1e-9)));
      QualityCase c{2, std::sqrt(1.0 - density), 0.0, blocks, ++seed};
      const double ratios[] = {ratio};
      note(measure_quality(e, c, exact, ratios, "curve"));
    }
  }
  for (int r : g.ranks)
    for (double s : g.sparsity)
      for (double o : g.overlap) note(measure_quality(e, QualityCase{r, s, o, g.blocks, ++seed}, g.encodings, g.ratio));
  return all;
}

}  // namespace tagcsim::kernels
